"""PDF loader (pypdf): each page's lines as blocks with page numbers, in reading order.

Headings come from the outline (bookmarks); without one, from an OCR'd scan's numbered section lines, else from
the type (a short line set larger than the body text, or bold before a paragraph); lines in a monospaced font
(commands, code) and captioned tables' rows (``| cell | cell |``, read from pypdf's layout mode) are lines of their
own; running headers and footers and table-of-contents lines are left out. Pages with no text layer that draw an
image (scans) are read by OCR (``ocr.py``).
"""
from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import IngestError, counted
from ..records import Block, LoadedDocument
from .pdf_tables import MONO_FONT
from .text import bare_word_heading, numbered_headings

logging.getLogger("pypdf").setLevel(logging.ERROR)


def _norm_line(s: str) -> str:
    return re.sub(r"\d+", "#", " ".join(s.split())).lower()


def _outline_entries(reader) -> list[tuple[int, int, str]]:
    """(page_index, depth, title) for every outline (bookmark) entry, in order."""
    out: list[tuple[int, int, str]] = []

    def walk(items, depth):
        for it in items:
            if isinstance(it, list):
                walk(it, depth + 1)
                continue
            try:
                page = reader.get_destination_page_number(it)
            except Exception:  # noqa: BLE001 - broken bookmarks are skipped
                continue
            title = " ".join(str(getattr(it, "title", "") or "").split())
            if title and page is not None and page >= 0:
                out.append((page, depth, title))

    try:
        walk(reader.outline, 0)
    except Exception:  # noqa: BLE001
        return []
    return out


def load_pdf(p: Path, password: str | None, ocr: bool = True, progress=None) -> LoadedDocument:
    reader, n_pages = _open_pdf(p, password)
    page_lines, code_lines, styles, failed = _read_pages_in_parts(p, password, n_pages) or _read_pages(reader)
    titles = _figure_tables(p, password, page_lines, code_lines, styles)
    ocr_pages = _ocr_blank_pages(p, reader, page_lines, code_lines, failed, progress) if ocr else []
    running, running_prefix = _running_lines(page_lines, n_pages)
    by_page = _headings_by_page(reader, page_lines, styles, code_lines, ocr_pages, running, running_prefix)
    built = _Built(words=printed_words(page_lines))
    for pg, lines in enumerate(page_lines):
        _page_blocks(built, pg, lines, code_lines[pg], list(by_page.get(pg, [])), running, running_prefix,
                     titles.get(pg, {}))
    return LoadedDocument(path=str(p), kind="pdf", blocks=built.blocks, pages=n_pages,
                          warnings=_pdf_warnings(failed, n_pages, ocr_pages), ocr_pages=ocr_pages)


def _figure_tables(p: Path, password: str | None, page_lines: list, code_lines: list, styles: list) -> dict:
    """Read the tables of figures (``pdf_tables``) in place: each page that holds one gets pdfium's lines with the
    tables as labelled rows; a line pypdf read the same keeps its type style and code mark. Pages whose captioned
    tables were read already keep theirs. Page index -> {line index: table title}."""
    from .pdf_tables import read_tables

    captioned = {pg for pg, lines in enumerate(page_lines) if any(_PIPE_ROW.match(ln.strip()) for ln in lines)}
    found = read_tables(p, password, page_lines, captioned)
    for pg, (lines, _) in found.items():
        same = lambda ln: " ".join(ln.split())  # noqa: E731 - a line pypdf and pdfium both read keeps its marks
        style = {same(ln): st for ln, st in zip(page_lines[pg], styles[pg])}
        mono = {same(page_lines[pg][i]) for i in code_lines[pg] if i < len(page_lines[pg])}
        page_lines[pg], styles[pg] = lines, [style.get(same(ln)) for ln in lines]
        code_lines[pg] = {i for i, ln in enumerate(lines) if same(ln) in mono}
    return {pg: titles for pg, (_, titles) in found.items()}


def _open_pdf(p: Path, password: str | None):
    """The file's PdfReader (decrypted) and its page count; a file that is not a PDF, is corrupt or stays
    encrypted is an IngestError."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    with p.open("rb") as fh:
        head = fh.read(1024)
    if b"%PDF" not in head:
        raise IngestError(p, "not a PDF (no %PDF header; corrupt or misnamed file)")
    try:
        reader = PdfReader(str(p), strict=False)
    except PdfReadError as exc:
        raise IngestError(p, f"corrupt PDF ({str(exc)[:120]})") from None
    if reader.is_encrypted:
        ok = 0
        for pw in ([password] if password else []) + [""]:
            try:
                ok = reader.decrypt(pw)
            except Exception:  # noqa: BLE001
                ok = 0
            if ok:
                break
        if not ok:
            raise IngestError(p, "encrypted PDF (password required)")
    try:
        n_pages = len(reader.pages)
    except (PdfReadError, FileNotDecryptedError) as exc:
        raise IngestError(p, f"corrupt PDF ({str(exc)[:120]})") from None
    return reader, n_pages


def _read_pages(reader) -> tuple[list[list[str]], list[set[int]], list[list], list[int]]:
    """Every page's lines, the indexes of its monospaced lines, each line's type style ((size, bold), None where
    mixed or unknown), and the numbers of the pages that failed."""
    return _gathered([_read_page(page) for page in reader.pages])


def _read_page(page) -> tuple[list[str], set[int], list, bool]:
    """One page's lines, code lines and styles (``_page_lines``), and whether it failed: one bad page does not sink
    the document, but is reported."""
    try:
        return (*_page_lines(page), False)
    except Exception:  # noqa: BLE001
        return [], set(), [], True


def _gathered(pages: list[tuple]) -> tuple[list[list[str]], list[set[int]], list[list], list[int]]:
    """``_read_page``'s results, page after page, as ``_read_pages`` gives them."""
    return ([lines for lines, *_ in pages], [code for _, code, *_ in pages], [style for *_, style, _ in pages],
            [number for number, (*_, bad) in enumerate(pages, start=1) if bad])


PARALLEL_PAGES = 40  # a PDF of this many pages or more is read by two processes (pypdf is ~6 pages a second on one core)


def _read_pages_in_parts(p: Path, password: str | None, n_pages: int):
    """``_read_pages`` done by two worker processes, each reading every other page of its own copy of the file, for
    a PDF of ``PARALLEL_PAGES`` pages or more on a machine with two cores or more; None where that does not hold or
    a worker fails (the caller reads the pages here). A worker is a fresh interpreter running this module alone
    (not multiprocessing: its children import the caller's main script again, and a script without a main guard
    would run twice); the job goes in on its standard input as JSON, the pages come back as JSON on its standard
    output (nothing is unpickled)."""
    import json
    import os
    import subprocess
    import sys

    if n_pages < PARALLEL_PAGES or (os.cpu_count() or 1) < 2 or not sys.executable:
        return None
    # the current folder off the worker's path first: a json.py or pypdf/ there must not run in it
    code = "import sys; sys.path.pop(0); from thread_rag.ingest.pdf import _pages_worker; _pages_worker()"
    root = str(Path(__file__).resolve().parents[2])  # where the thread_rag package lives, for the worker's import
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH")) if x)}
    parts = []
    try:
        workers = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=env) for _ in (0, 1)]
        try:
            for k, w in enumerate(workers):  # both get their job before either is read: they work at once
                w.stdin.write(json.dumps([str(p), password, k]).encode())
                w.stdin.close()
                w.stdin = None  # closed: communicate() only reads
            for w in workers:
                out, _ = w.communicate(timeout=3600)
                parts.append(json.loads(out) if w.returncode == 0 else None)
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
                    w.wait()
    except Exception:  # noqa: BLE001 - a worker that cannot start, hangs or answers nonsense: the pages are read here
        return None
    if any(not isinstance(x, list) or len(x) != len(range(k, n_pages, 2)) for k, x in enumerate(parts)):
        return None  # a worker failed, or read another version of the file (one being saved)
    return _gathered([(lines, set(code), [tuple(st) if st is not None else None for st in style], bad)
                      for lines, code, style, bad in (parts[pg % 2][pg // 2] for pg in range(n_pages))])


def _pages_worker() -> None:
    """A worker of ``_read_pages_in_parts``: [path, password, k] as JSON on standard input; [lines, code lines,
    styles, failed] of pages k, k + 2, ... as JSON on standard output."""
    import json
    import sys

    path, password, k = json.loads(sys.stdin.buffer.read())
    reader, n_pages = _open_pdf(Path(path), password)
    out = [(lines, sorted(code), style, bad)
           for lines, code, style, bad in (_read_page(reader.pages[pg]) for pg in range(k, n_pages, 2))]
    sys.stdout.buffer.write(json.dumps(out).encode())


def _running_lines(page_lines: list[list[str]], n_pages: int) -> tuple[set, set]:
    """The running headers and footers (normalised lines) and the running headers' first words (keys)."""
    # running headers/footers: a normalised line seen at the top/bottom of many pages
    edge = Counter()
    for lines in page_lines:
        cand = [ln for ln in lines if ln.strip()]
        for ln in set(cand[:2] + cand[-2:]):
            edge[_norm_line(ln)] += 1
    threshold = max(3, n_pages // 5)
    running = {k for k, c in edge.items() if c >= threshold and len(k) < 160}
    running |= {k for k in edge if re.fullmatch(r"[#ivxlc\s.\-–—]*", k)}  # bare page numbers
    # running headers that carry the section title: same first words, mostly upper case, on many pages
    prefix = Counter()
    for lines in page_lines:
        cand = [ln for ln in lines if ln.strip()]
        for ln in set(cand[:1] + cand[-1:]):
            if _mostly_upper(ln):
                prefix[_header_key(ln)] += 1
    running_prefix = {k for k, c in prefix.items() if c >= threshold and k}
    return running, running_prefix


def _headings_by_page(reader, page_lines: list, styles: list, code_lines: list, ocr_pages: list[int],
                      running: set, running_prefix: set) -> dict[int, list[tuple]]:
    """Page index -> (depth, title, line index or None, lines it spans) of the headings that start on it: the
    outline's (found on the page by their titles), else an OCR'd scan's numbered section lines, else the lines set
    in a heading's type (``_styled_headings``)."""
    entries = [(pg, depth, title, None, 1) for pg, depth, title in _outline_entries(reader)]
    if not entries and ocr_pages:  # a scan has no bookmarks: its numbered section lines are its headings
        entries = [(pg, depth, title, None, 1)
                   for pg, depth, title in _ocr_headings(page_lines, ocr_pages, running, running_prefix)]
    if not entries:
        entries = _styled_headings(page_lines, styles, code_lines, running, running_prefix)
    by_page: dict[int, list[tuple]] = {}
    for pg, *entry in entries:
        by_page.setdefault(pg, []).append(tuple(entry))
    return by_page


def _styled_headings(page_lines: list, styles: list, code_lines: list, running: set,
                     running_prefix: set) -> list[tuple]:
    """(page index, depth, title, line index, lines) of a PDF's headings read from its type, for a PDF without
    bookmarks: a short line with no closing comma, colon or full stop, set wholly in one style that is larger than
    the body text (the size most of the text is set in) or bold at least as large, a style that is not a large
    share of the text. A heading wrapped over up to three lines in one style is one heading; more lines in that
    style on end (a list of names, a cover) are text, so is a bold line at the body's size not followed by a
    paragraph (a table's bold cells), and so are command lines, table rows, running headers and contents lines.
    Levels: larger type ranks higher, bold above regular at one size, at most three levels (smaller heading styles
    share the third)."""
    sizes: Counter = Counter()
    for lines, sts in zip(page_lines, styles):
        for ln, st in zip(lines, sts):
            if st:
                sizes[st] += len(ln.strip())
    if not sizes:
        return []
    body: Counter = Counter()
    for (sz, _), n in sizes.items():
        body[sz] += n
    body_size, total = body.most_common(1)[0][0], sum(sizes.values())

    def heading_style(pg: int, li: int):
        ln, st = page_lines[pg][li], styles[pg][li] if li < len(styles[pg]) else None
        words = ln.split()
        ok = bool(st) and 1 <= len(words) <= 12 and any(c.isalpha() for c in ln) and li not in code_lines[pg] \
            and not re.search(r"[.,;:]$", ln.strip()) and not _PIPE_ROW.match(ln.strip()) \
            and sizes[st] <= 0.2 * total and (st[0] >= 1.12 * body_size or (st[1] and st[0] >= body_size)) \
            and not _TOC_LINE.search(ln) and not _running_line(ln, running, running_prefix)
        return st if ok else None

    found = []
    for pg, lines in enumerate(page_lines):
        li = 0
        while li < len(lines):
            st = heading_style(pg, li)
            if st is None:
                li += 1
                continue
            n = 1
            while li + n < len(lines) and li + n < len(styles[pg]) and styles[pg][li + n] == st:
                n += 1
            title = " ".join(" ".join(lines[li:li + n]).split())
            after = next((x for x in lines[li + n:] if x.strip()), "")
            led = st[0] >= 1.12 * body_size or len(after.split()) >= 5  # bold at the body's size: before a paragraph
            if n <= 3 and led and all(heading_style(pg, k) for k in range(li + 1, li + n)) and len(title.split()) <= 16:
                found.append((pg, st, title, li, n))
            li += n
    ranked = sorted({f[1] for f in found}, key=lambda st: (-st[0], not st[1]))
    return [(pg, min(ranked.index(st), 2), title, li, n) for pg, st, title, li, n in found]


@dataclass
class _Built:
    """The document's blocks built so far and the heading path (depth, title) they are under."""
    blocks: list[Block] = field(default_factory=list)
    path: list[tuple[int, str]] = field(default_factory=list)
    words: frozenset = frozenset()  # the words the document prints whole (``printed_words``)

    def enter(self, depth: int, title: str) -> None:
        """Open a heading: it replaces those at its depth or deeper."""
        self.path = [h for h in self.path if h[0] < depth] + [(depth, title)]

    def leave_table(self) -> None:
        """Close a table of figures' title: the text after the table is under the headings before it."""
        self.path = [h for h in self.path if h[0] < TABLE_DEPTH]

    def add(self, text: str, pg: int, is_heading: bool = False) -> None:
        """Append a block on page index ``pg`` under the current heading path."""
        self.blocks.append(Block(text=text, page=pg + 1, heading_path=tuple(t for _, t in self.path),
                                 is_heading=is_heading))


def _flush(built: _Built, pg: int, para: list[str], kept: list[str]) -> None:
    """Emit the paragraph being gathered (reflowed), then the kept lines (code, table rows) as one block."""
    if para:
        built.add(reflow(para, built.words), pg)
        para.clear()
    if kept:
        built.add("\n".join(kept), pg)
        kept.clear()


def _page_blocks(built: _Built, pg: int, lines: list[str], code: set[int], pending: list[tuple],
                 running: set, running_prefix: set, titles: dict[int, str] | None = None) -> None:
    """One page's lines as blocks: paragraphs, kept code lines and table rows, and the headings ``pending`` on it
    (running headers and footers and table-of-contents lines left out); a table of figures' title (``titles``: at
    its header row's line) opens a heading one level below the deepest, for its rows only."""
    cand = [ln for ln in lines if ln.strip()]
    edges = set(cand[:2] + cand[-2:])
    para: list[str] = []
    kept: list[str] = []  # consecutive code lines or table rows: one block that keeps its lines
    max_len = max((len(ln) for ln in lines), default=0)
    title_below = ""  # after a bare "Chapter 2" whose heading is "Chapter 2 System Requirements": that title's line
    skip = range(0)  # the further lines of a heading wrapped over several
    for li, ln in enumerate(lines):
        s = ln.strip()
        while pending and pending[0][2] is not None and pending[0][2] < li:  # its line was left out: open it here
            built.enter(*pending.pop(0)[:2])
        if li in skip:
            continue
        if not s:
            _flush(built, pg, para, kept)
            continue
        if title_below and _title_match(s, title_below):
            title_below = ""
            continue
        title_below = ""
        if pending and pending[0][2] == li:  # a heading found by its type, at its line
            _flush(built, pg, para, kept)
            depth, title, _, n = pending.pop(0)
            built.enter(depth, title)
            built.add(title, pg, is_heading=True)
            skip = range(li + 1, li + n)
            continue
        if titles and li in titles:  # a table of figures: its rows under its title
            _flush(built, pg, para, kept)
            built.enter(TABLE_DEPTH, titles[li])
        if li in code or _PIPE_ROW.match(s):  # a command or a table row: a line of its own
            if para:
                _flush(built, pg, para, kept)
            kept.append(s)
            continue
        if kept:
            _flush(built, pg, para, kept)
            built.leave_table()
        if ln in edges and _running_line(ln, running, running_prefix):
            continue
        if _TOC_LINE.search(s):
            continue  # table-of-contents line with dot leaders: navigation, not content
        opens, rest = _opens(lines, li, pending[0][1]) if pending and pending[0][2] is None else (False, "")
        if opens:
            _flush(built, pg, para, kept)
            depth, title, *_ = pending.pop(0)
            built.enter(depth, title)
            built.add(title if rest else s, pg, is_heading=True)
            title_below = rest
            continue
        para.append(s)
        if len(ln) < 0.6 * max_len and s[-1:] in ".:!?)" and max_len > 40:
            _flush(built, pg, para, kept)
    _flush(built, pg, para, kept)
    built.leave_table()
    for depth, title, *_ in pending:
        built.enter(depth, title)


def _pdf_warnings(failed: list[int], n_pages: int, ocr_pages: list[int]) -> list[str]:
    """Warnings for the pages whose text could not be extracted and for those read by OCR."""
    warnings = []
    if failed:
        shown = ", ".join(map(str, failed[:20])) + (", ..." if len(failed) > 20 else "")
        warnings.append(f"text extraction failed on {len(failed)} of {n_pages} pages "
                        f"(page{'s' if len(failed) > 1 else ''} {shown}); their text is not indexed")
    if ocr_pages:
        many = len(ocr_pages) > 1
        warnings.append(f"{counted(len(ocr_pages), 'page')} had no text layer and {'were' if many else 'was'} read "
                        f"by OCR (page{'s' if many else ''} {_ranges(ocr_pages)}): check what is quoted from "
                        f"{'them' if many else 'it'} against the page")
    return warnings


def _ocr_headings(page_lines: list, ocr_pages: list[int], running: set, running_prefix: set) -> list[tuple]:
    """(page index, level, title) of the numbered section lines of OCR'd pages, found as plain text's are
    (``numbered_headings``: "4.3.1 Preparing a USB stick" standing alone, in a numbering), running headers left
    out."""
    lines, where = [], []
    for pg in sorted(p - 1 for p in ocr_pages):
        for ln in page_lines[pg] + [""]:
            lines.append("" if ln.strip() and _running_line(ln, running, running_prefix) else ln)
            where.append(pg)
    found, _ = numbered_headings(lines)  # a bare "Chapter 2"'s title is the line under it: in ``title``
    return [(where[i], level, title) for i, (level, title) in sorted(found.items())]


def _ocr_blank_pages(p: Path, reader, page_lines: list, code_lines: list, failed: list, progress) -> list[int]:
    """OCR each page that has no text but draws an image (a scan), in place in ``page_lines``/``code_lines``: the
    page numbers read so. Nothing when OCR is not installed (the caller names it if no page has text)."""
    from . import ocr as ocr_mod

    blank = [i for i, lines in enumerate(page_lines)
             if not any(ln.strip() for ln in lines) and i + 1 not in failed and _draws_image(reader.pages[i])]
    if not blank or not ocr_mod.available():
        return []
    done = []
    for k, i in enumerate(blank):
        if progress:
            progress(f"OCR page {i + 1}", k, len(blank))
        lines = ocr_mod.read_image(ocr_mod.render_pdf_page(p, i))
        if any(ln.strip() for ln in lines):
            page_lines[i] = lines
            code_lines[i] = {j for j, ln in enumerate(lines) if COMMAND_LINE.match(ln)}
            done.append(i + 1)
    read = ocr_mod.respace([page_lines[d - 1] for d in done], keep=COMMAND_LINE.match)  # commands as read
    for i, lines in zip([d - 1 for d in done], read):
        page_lines[i] = lines
    if progress:
        progress("OCR", len(blank), len(blank))
    return done


def _draws_image(page) -> bool:
    try:
        res = page.get("/Resources")
        res = res.get_object() if res is not None else {}
        xobjects = res.get("/XObject")
        return xobjects is not None and len(xobjects.get_object()) > 0
    except Exception:  # noqa: BLE001 - resources we cannot read: try the page
        return True


def _ranges(pages: list[int]) -> str:
    out, start = [], None
    for i, pg in enumerate(pages):
        if start is None:
            start = pg
        if i + 1 == len(pages) or pages[i + 1] != pg + 1:
            out.append(str(start) if start == pg else f"{start}-{pg}")
            start = None
    return ", ".join(out)


COMMAND_LINE = re.compile(r"^\s*(?:[#$]\s?\S|>\s)")  # "# cp debian.iso /dev/sdX", "$ make", "> dir"
TABLE_DEPTH = 9  # a table's title heads its rows, below any heading of the document's own
_TOC_LINE = re.compile(r"(\s?\.){6,}\s*[0-9ivxlc]+\s*$")
_PIPE_ROW = re.compile(r"^\|.*\|$")
_CAPTION = re.compile(r"^\s*Table\s+[A-Z]?\d+(?:[.-]\d+)*[.:]?\s+[A-Z(\"“]")  # "Table 3.2 Recommended ...", not
#                                                                               "Table 2-1 describes ..."
_BOLD = re.compile(r"bold|black|heavy|semibold|demi", re.I)
_COLUMN_GAP = re.compile(r"\S(\s{3,})(?=\S)")


def _page_lines(page) -> tuple[list[str], set[int], list]:
    """A page's text lines (pypdf's default extraction), the indexes of those set in a monospaced font (a command
    or code: kept as its own line, never run into the paragraph around it), each line's type style ((size in
    points, bold) where nine tenths of its letters share one, else None; a piece of text is measured where pypdf
    hands it over, so a line that changes size midway counts as its first piece's), and, on a page with a table
    caption ("Table 3.2 ..."), the table's rows as ``| cell | cell |`` lines (read from pypdf's layout mode, where
    columns stand apart; that mode costs ~2x, so only such pages pay it)."""
    pieces: list[tuple[str, bool, tuple[float, bool]]] = []

    def visit(text, cm, tm, font, size) -> None:
        name = str((font or {}).get("/BaseFont", "")) if hasattr(font, "get") else ""
        up = (tm[2] * cm[0] + tm[3] * cm[2], tm[2] * cm[1] + tm[3] * cm[3])  # the text's y axis on the page
        scale = math.hypot(*up)  # the type's height: font size x this
        pieces.append((text, bool(MONO_FONT.search(name)), (round(size * scale * 2) / 2, bool(_BOLD.search(name)))))

    txt = page.extract_text(visitor_text=visit) or ""
    joined = "".join(t for t, _, _ in pieces)
    per = [(m, st) for t, m, st in pieces for _ in t] if joined == txt else []  # the pieces make up the text
    lines, flags, at = [], [], 0
    for ln in txt.replace("\r", "\n").split("\n"):  # same length: the flags stay in step
        inked = [f for ch, f in zip(ln, per[at:at + len(ln)]) if not ch.isspace()] if per else []
        style, n = Counter(st for _, st in inked).most_common(1)[0] if inked else (None, 0)
        flags.append((len(inked) >= 2 and sum(m for m, _ in inked) >= 0.9 * len(inked),
                      style if n >= 0.9 * len(inked) else None))
        lines.append(ln.rstrip())
        at += len(ln) + 1
    if any(_CAPTION.match(ln) for ln in lines):
        lines, flags = _pdf_table_rows(page, lines, flags)
    return lines, {i for i, (mono, _) in enumerate(flags) if mono}, [st for _, st in flags]


def _pdf_table_rows(page, lines: list[str], flags: list[tuple]) -> tuple[list[str], list[tuple]]:
    """``lines`` (and their flags: monospaced, type style) with each captioned table's lines replaced by its rows as
    pipe rows (``| cell | cell |``). The rows come from pypdf's layout mode, where columns stand apart
    (``_layout_tables``); the default lines they replace are those the table's words make up (``_table_span``), and only
    when those lines hold the whole table (else the plain lines stand: never a row twice)."""
    try:
        layout = page.extract_text(extraction_mode="layout") or ""
    except Exception:  # noqa: BLE001 - the plain lines stand
        return lines, flags
    out, marks = list(lines), list(flags)
    for caption, rows in _layout_tables(layout.split("\n")).items():
        span = _table_span(out, caption, rows)
        if span is not None:
            out[span[0]:span[1]] = ["| " + " | ".join(row) + " |" for row in rows]
            marks[span[0]:span[1]] = [(False, None)] * len(rows)
    return out, marks


def _layout_tables(layout: list[str]) -> dict[str, list[list[str]]]:
    """Caption line (words joined by single spaces) -> its table's rows of cells, read from layout-mode lines: the
    first line after a caption with two or more cells (gaps of 3+ spaces) is the header and sets the columns; a line
    with a cell in the first column starts a row, one without adds its cells to the row above (a wrapped cell; before
    the first row's first cell, to that row: a first cell set beside the middle of its wrapped neighbour); the table
    ends at two blank lines, or at prose again (a line starting left of the first column, or one long cell)."""
    tables: dict[str, list[list[str]]] = {}
    caption, starts, rows, pending, blanks = None, [], [], None, 0
    for ln in layout + ["", ""]:
        s = ln.strip()
        if _CAPTION.match(s):
            if rows:
                tables[caption] = rows
            caption, starts, rows, pending, blanks = " ".join(s.split()), [], [], None, 0
            continue
        if caption is None:
            continue
        if not s:
            blanks += 1
            if blanks >= 2 and rows:
                tables[caption], caption = rows, None
            continue
        blanks = 0
        cells = [(m.start(), m.group(0)) for m in re.finditer(r"\S+(?:\s{1,2}\S+)*", ln)]
        if not starts:
            if len(cells) < 2:
                caption = None  # no columns after the caption: not a table this reader can follow
                continue
            starts, rows = [a for a, _ in cells], [[c for _, c in cells]]
            continue
        if cells[0][0] < starts[0] - 1 or (len(cells) == 1 and len(cells[0][1]) > 60 and cells[0][0] <= starts[0] + 2):
            tables[caption], caption = rows, None  # prose again
            continue
        col = [max([k for k, a in enumerate(starts) if a <= at + 2] or [0]) for at, _ in cells]
        if col[0] == 0:
            rows.append(pending or [""] * len(starts))
            pending = None
            target = rows[-1]
        elif len(rows) == 1:
            pending = target = pending or [""] * len(starts)
        else:
            target = rows[-1]
        for k, (_, text) in zip(col, cells):
            target[k] = (target[k] + " " + text).strip()
    return tables


def _table_span(lines: list[str], caption: str, rows: list[list[str]]) -> tuple[int, int] | None:
    """The default lines a table's words make up: from its header row's line (else the line after its caption) on,
    while each line's words are among the table's words not used yet."""
    from collections import Counter

    flat = [" ".join(ln.split()) for ln in lines]
    header = " ".join(" ".join(rows[0]).split())
    at = flat.index(header) if header in flat else (flat.index(caption) + 1 if caption in flat else None)
    if at is None:
        return None
    words = Counter(w for row in rows for cell in row for w in cell.split())
    end = at
    while end < len(lines) and lines[end].split() and not Counter(lines[end].split()) - words:
        words -= Counter(lines[end].split())
        end += 1
    return (at, end) if end > at and not words else None


def _header_key(line: str) -> str:
    """A running header's first two words, its label a wildcard: "APPENDIX D. RANDOM" and "CHAPTER 6. USING" count
    as "appendix #." and "chapter #." (one part's pages alone are often fewer than the threshold)."""
    words = _norm_line(line).split()[:2]
    if len(words) == 2 and re.fullmatch(r"(?:[a-z]|[ivxlc]+)\.", words[1]):
        words[1] = "#."
    return " ".join(words)


def _running_line(line: str, running: set, running_prefix: set) -> bool:
    """A page's running header or footer: a line seen at the edge of many pages, or one in capitals starting as
    such lines do (they carry the section's title)."""
    return _norm_line(line) in running or (_mostly_upper(line) and _header_key(line) in running_prefix)


def _mostly_upper(line: str) -> bool:
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 6 and sum(c.isupper() for c in letters) / len(letters) > 0.6


def _opens(lines: list[str], li: int, title: str) -> tuple[bool, str]:
    """Whether line ``li`` opens the heading ``title`` (found by its title, not its line), and the rest of the title
    where the line is a bare "Chapter 2" of "Chapter 2 System Requirements" whose title is the next line's."""
    line = lines[li].strip()
    a, b = _norm_words(line), _norm_words(title)
    if bare_word_heading(line) and len(b) > len(a) and b[:len(a)] == a:
        rest = " ".join(b[len(a):])
        below = next((x.strip() for x in lines[li + 1:] if x.strip()), "")
        return (True, rest) if _title_match(below, rest) else (False, "")
    return _title_match(line, title), ""


def _norm_words(text: str) -> list[str]:
    """A line's words as headings are compared: lower case, letters and digits (a-z, 0-9) only."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).split()


def _title_match(line: str, title: str) -> bool:
    """Whether a page's line prints the heading ``title`` (case, punctuation and a leading number aside)."""
    a, b = " ".join(_norm_words(line)), " ".join(_norm_words(title))
    if not a or not b:
        return False
    a = re.sub(r"^(chapter )?[0-9a-z]?[0-9. ]*\s", "", a + " ").strip() if len(a) > len(b) else a
    return a == b or a.endswith(" " + b) or (len(b) > 12 and a.startswith(b) and len(a) < len(b) + 12)


def printed_words(page_lines: list[list[str]]) -> frozenset:
    """The words a document prints whole, lower case: every piece between spaces and "/" of its lines (a line's
    last piece left out where the line ends in "-", and the next line's first: a break may have cut them), trimmed
    of punctuation, hyphens inside kept ("non-free", "installer-amd64"). What a word broken at a line's end is
    joined by (``reflow``)."""
    out = set()
    for lines in page_lines:
        broke = False
        for ln in lines:
            pieces, breaks = ln.split(), ln.rstrip().endswith("-")
            for piece in pieces[1 if broke else 0:-1 if breaks else None]:
                out.update(w for w in (_WORD_EDGE.sub("", x).lower() for x in piece.split("/")) if w)
            broke = breaks
    return frozenset(out)


_WORD_EDGE = re.compile(r"^[\W_]+|[\W_]+$")
_LEFT = re.compile(r"[^\W_][\w-]*-$|/-$")  # a line's broken word (and "/-": a path broken after a "/")
_RIGHT = re.compile(r"[^\W_]+")
_PREFIXES = frozenset("over under sub pre inter super out".split())  # "over-write": one word, not two
_SUFFIXES = frozenset("able ible less ness ment ward wards ship wise ful".split())  # "boot-able", "head-less"


def _broken(left: str, right: str, words: frozenset) -> str | None:
    """How a line ending in ``left`` (its last piece, ending in "-") joins the next line, beginning with ``right``:
    "" (the word whole), "-" (a hyphen of its own) or None (not a broken word: a space). The document's own spelling
    first (the word printed whole, then printed with its hyphen), then a path's "/-", a compound ("up-to-") or a name
    with a digit ("installer-amd64"), English words (the whole word known: joined; two known English words of three
    letters or more, neither a prefix nor a suffix: "laptop-specific", not "un-bootable" or "boot-able"), else joined
    as before between lower-case letters, the hyphen kept before a capital ("EEP-ROM"). A whole word is only joined
    across a capital when both halves are in capitals ("PAR-TICULAR"), never "A-" and "B testing"."""
    if left.endswith("--"):  # a dash, not a broken word
        return None
    m, r = _LEFT.search(left.split("/")[-1] if not left.endswith("/-") else left), _RIGHT.match(right)
    if not m or not r:
        return None
    head, tail = m.group(0)[:-1], r.group(0)
    if head.endswith("/"):
        return ""
    whole_ok = tail[:1].islower() or (len(head) > 1 and len(tail) > 1 and head.isupper() and tail.isupper())
    head, tail = head.lower(), tail.lower()
    if whole_ok and head + tail in words:
        return ""
    if f"{head}-{tail}" in words:
        return "-"
    if "-" in head or any(ch in "0123456789" for ch in head + tail):  # "up-to-date"; "installer-amd64", "SMF-28"
        return "-"
    known = _known_words()
    if whole_ok and head + tail in known:
        return ""
    if len(head) > 2 and len(tail) > 2 and head in known and tail in known and head not in _PREFIXES \
            and tail not in _SUFFIXES:
        return "-"
    return "" if head[-1:].isalpha() and right[:1].islower() else "-"  # "EEP-ROM", "10-12": the hyphen stays


_KNOWN: Collection[str] | None = None


def _known_words() -> Collection[str]:
    """English words (the packaged MiniLM's whole words, as OCR's respacing reads them); none if it is missing or
    unreadable (read once either way)."""
    global _KNOWN
    if _KNOWN is None:
        from ..errors import ModelUnavailableError
        from .ocr import _lexicon

        try:
            _KNOWN = _lexicon().keys()
        except (ModelUnavailableError, OSError, ValueError, KeyError):
            _KNOWN = frozenset()
    return _KNOWN


def reflow(lines: list[str], words: frozenset = frozenset()) -> str:
    """One paragraph's lines joined, a word broken at a line's end rejoined (``_broken``: as the document prints it,
    ``words`` from ``printed_words``) (a PDF page's, and an image's OCR'd lines: ``loaders._line_blocks``)."""
    out = ""
    for ln in lines:
        if not out:
            out = ln
            continue
        how = _broken(out.rsplit(None, 1)[-1], ln, words) if out.endswith("-") and len(out) > 1 else None
        if how is None:
            out += " " + ln
        else:
            out = out[:-1] + how + ln
    return out.replace("\xa0", " ")
