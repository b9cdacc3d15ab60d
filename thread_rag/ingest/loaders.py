"""Loaders: one function per format, each returning a :class:`LoadedDocument` of blocks in reading order.

PDF (pypdf: page numbers per block, headings from the outline, lines in a monospaced font and captioned tables' rows
as lines), DOCX (python-docx: paragraphs, headings and tables in body order), TXT/Markdown (encoding detection,
Markdown heading paths; plain text's numbered section lines as headings, box-drawn tables as pipe rows), HTML
(``html.py``: h1-h6 heading paths, pre blocks, lists, tables as pipe rows, navigation left out).
Every failure is an :class:`IngestError` naming the file and the reason in one line.
"""
from __future__ import annotations

import logging
import re
import unicodedata
import zipfile
from collections import Counter
from pathlib import Path

from ..errors import IngestError, counted
from ..records import Block, LoadedDocument

LOADER_VERSION = 6  # part of the index recipe: a changed loader re-indexes on the next run (3: 2026-12-03,
#                    appendix running headers, DOCX text boxes once, cp1250/cp1252 by symbols inside words; 4: plain
#                    text's numbered section lines are headings, box-drawn tables pipe rows, comment and laid-out
#                    lines keep their breaks, and the chunker keeps a block's line breaks and indentation; 5: a PDF's
#                    lines in a monospaced font and its captioned tables' rows are lines of their own; 6: a DOCX
#                    table is one block of pipe rows, spans repeated under their columns, content controls read, list
#                    and heading numbers written as Word shows them)

SUPPORTED_SUFFIXES = {".pdf": "pdf", ".docx": "docx", ".txt": "text", ".text": "text", ".md": "markdown",
                      ".markdown": "markdown", ".rst": "text", ".html": "html", ".htm": "html",
                      ".epub": "epub", ".png": "image", ".jpg": "image", ".jpeg": "image", ".tif": "image",
                      ".tiff": "image", ".bmp": "image", ".webp": "image"}

FOLDER_SUFFIXES = {k: v for k, v in SUPPORTED_SUFFIXES.items() if v != "image"}  # what a folder walk (index DIR,
#   watch) takes: an image is indexed when it is named, a folder's images are left out (a saved docs site holds
#   icons and screenshots by the hundred)

TEXT_MAX_BYTES = 64 * 2**20  # a text, Markdown or HTML file past this is refused before it is read (a 200 MB log
#                              would take hours to embed and gigabytes to hold; split it)

logging.getLogger("pypdf").setLevel(logging.ERROR)


def load_document(path: str | Path, password: str | None = None, shown: str | Path | None = None,
                  ocr: bool = True, progress=None) -> LoadedDocument:
    """The file's text blocks, or IngestError naming the file as ``shown`` (the path as the user gave it, where
    ``path`` is the resolved one). ``ocr``: PDF pages with no text layer and image files are read by OCR (``ocr.py``),
    ``progress(stage, done, total)`` told of each page read so."""
    try:
        return _load_document(Path(path), password, ocr, progress)
    except IngestError as exc:
        if shown is None:
            raise
        raise exc.named(shown) from None


def _load_document(p: Path, password: str | None, ocr: bool = True, progress=None) -> LoadedDocument:
    if not p.exists():
        raise IngestError(p, "no such file")
    if p.is_dir():
        raise IngestError(p, "is a directory (index a directory with `thread-rag index DIR`)")
    kind = SUPPORTED_SUFFIXES.get(p.suffix.lower())
    if kind is None:
        raise IngestError(p, f"unsupported file type '{p.suffix or '(none)'}' "
                          f"(supported: {', '.join(sorted(SUPPORTED_SUFFIXES))})")
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise IngestError(p, f"cannot read ({exc.strerror})") from None
    if size == 0:
        raise IngestError(p, "empty file (0 bytes)")
    if kind in ("text", "markdown", "html") and size > TEXT_MAX_BYTES:
        raise IngestError(p, f"too large to index as one text ({size / 2**20:.0f} MiB; the limit is "
                          f"{TEXT_MAX_BYTES // 2**20} MiB, about 8 million words: split the file)")
    try:
        if kind == "pdf":
            doc = _load_pdf(p, password, ocr, progress)
        elif kind == "image":
            doc = _load_image(p, ocr)
        elif kind == "docx":
            doc = _load_docx(p)
        elif kind == "html":
            from .html import load_html  # here: html.py reads text with this module's decoder

            doc = load_html(p)
        elif kind == "epub":
            from .epub import load_epub

            doc = load_epub(p)
        else:
            doc = _load_text(p, markdown=(kind == "markdown"))
    except IngestError:
        raise
    except PermissionError:
        raise IngestError(p, "permission denied") from None
    except Exception as exc:  # noqa: BLE001 - any parser failure becomes one clear line
        raise IngestError(p, f"cannot be parsed as {kind.upper()} ({exc.__class__.__name__}: "
                          f"{str(exc).splitlines()[0][:160] if str(exc) else 'no detail'})") from None
    if not any(b.text.strip() for b in doc.blocks):
        if kind in ("pdf", "image"):
            raise IngestError(p, _no_text_reason(kind, ocr))
        raise IngestError(p, "no text content (empty or whitespace only)")
    _assign_offsets(doc.blocks)
    return doc


def _no_text_reason(kind: str, ocr: bool) -> str:
    from . import ocr as ocr_mod

    what = "no extractable text" if kind == "pdf" else "no text found in the image"
    if not ocr:
        return f"{what} (a scanned page? OCR is off: set OCR=auto)"
    if not ocr_mod.available():
        return f"{what} (a scanned page? OCR is not installed: pip install rapidocr-onnxruntime)"
    return f"{what} (OCR read nothing on {'its pages' if kind == 'pdf' else 'it'})"


def _load_image(p: Path, ocr: bool) -> LoadedDocument:
    """An image of a page: its OCR'd lines as page 1."""
    from . import ocr as ocr_mod

    if not ocr or not ocr_mod.available():
        return LoadedDocument(path=str(p), kind="image", blocks=[], pages=1)
    lines = ocr_mod.respace([ocr_mod.read_image(ocr_mod.load_image(p))])[0]
    read = any(ln.strip() for ln in lines)
    return LoadedDocument(path=str(p), kind="image", blocks=_line_blocks(lines, 1), pages=1,
                          ocr_pages=[1] if read else [],
                          warnings=["read by OCR: check what is quoted from it against the image"] if read else [])


def _line_blocks(lines: list[str], page: int) -> list[Block]:
    """OCR'd lines as blocks: paragraphs ("" between them) reflowed, command lines kept as lines of their own."""
    blocks, para, kept = [], [], []

    def flush(which: list, text) -> None:
        if which:
            blocks.append(Block(text=text(which), page=page))
            which.clear()

    for ln in lines + [""]:
        if _COMMAND_LINE.match(ln):
            flush(para, _reflow)
            kept.append(ln)
        elif not ln.strip():
            flush(para, _reflow)
            flush(kept, "\n".join)
        else:
            flush(kept, "\n".join)
            para.append(ln)
    return blocks


_COMMAND_LINE = re.compile(r"^\s*(?:[#$]\s?\S|>\s)")  # "# cp debian.iso /dev/sdX", "$ make", "> dir"


def _assign_offsets(blocks: list[Block]) -> None:
    pos = 0
    for b in blocks:
        b.char_start = pos
        pos += len(b.text) + 2


# ----------------------------------------------------------------------------------------- text
_HEADING_MD = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_ADORN = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")  # plain text's (reStructuredText's) title adornments
_FENCE = re.compile(r"^\s*(```|~~~)")


_CODE_PAGES = {"cp1250": "Central European", "cp1252": "Western European"}  # short texts fit both alike


def _odd_in_words(text: str) -> int:
    """Symbols, superscripts and inverted marks touching a letter ("³azienk¹", "¿ó³w": Polish read as cp1252): a
    reading that has more of them than another is not as clean, whatever the detector says."""
    n = 0
    for i, c in enumerate(text):
        cat = unicodedata.category(c)
        if cat[0] == "S" or cat == "No" or c in "¿¡":
            n += (i > 0 and text[i - 1].isalpha()) or (i + 1 < len(text) and text[i + 1].isalpha())
    return n


def decode_text(p: Path, raw: bytes) -> tuple[str, str, list[str]]:
    """Decode bytes to text, detecting the encoding; reject binary data. Returns the text, the encoding and a
    warning when two code pages read it equally cleanly (the guess is then said, with the other reading)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", errors="replace"), "utf-8-sig", []
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16"), "utf-16", []
    sample = raw[:65536]
    if sample.count(b"\x00") > max(1, len(sample) // 1000):
        # UTF-16 without BOM looks like alternating NULs; anything else with NULs is binary
        for enc in ("utf-16-le", "utf-16-be"):
            try:
                text = raw.decode(enc)
            except UnicodeDecodeError:
                continue
            if _looks_like_text(text[:20000]):
                return text, enc, []
        raise IngestError(p, "binary data, not text (NUL bytes found)")
    warnings: list[str] = []
    try:
        text = raw.decode("utf-8")
        enc = "utf-8"
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes

        matches = from_bytes(raw[:1_000_000])
        best = matches.best()
        if best is None:
            raise IngestError(p, "binary data or unknown text encoding") from None
        enc = best.encoding
        # a short text fits many code pages equally cleanly (a French note "is" cp775): when the best guess is no
        # Windows code page and Windows-1252 (which extends Latin-1) is as clean, it is the likelier one; a Windows
        # guess (a short Polish or Czech note: cp1250) stands
        windows = tuple(f"cp125{i}" for i in range(9))
        if not enc.startswith(windows) and any(m.chaos <= best.chaos + 0.01 and "cp1252" in m.could_be_from_charset
                                               for m in matches):
            enc = "cp1252"
        text = raw.decode(enc, errors="replace")
        other = next((o for o in _CODE_PAGES if o != enc), None) if enc in _CODE_PAGES else None
        if other and any(m.encoding == other and m.chaos <= best.chaos + 0.01 for m in matches):
            # the two Windows code pages read a short text alike to the detector: symbols inside words decide
            # ("Pokój z ³azienk¹" is Polish read as cp1252); a tie is said, with the other reading
            alt = raw.decode(other, errors="replace")
            odd, odd_alt = _odd_in_words(text[:20000]), _odd_in_words(alt[:20000])
            if odd_alt < odd:
                enc, text = other, alt
            elif odd_alt == odd and alt != text:
                line = next((ln.strip() for ln in alt.splitlines() if not ln.isascii()), "")
                warnings.append(f"the text encoding is a guess: {enc} ({_CODE_PAGES[enc]}) was taken, "
                                f"{other} ({_CODE_PAGES[other]}) reads it as cleanly (\"{line[:60]}\"); if accented "
                                f"letters look wrong, save the file as UTF-8")
    if not _looks_like_text(text[:20000]):
        raise IngestError(p, "binary data, not text (too many control characters)")
    return text, enc, warnings


_LAID_OUT = re.compile(r"\S {3,}\S")  # a run of spaces inside a line: columns, a diagram
_KEEP_BREAK = re.compile(r"^\s*([-*+•]\s|\d+[.)]\s|[A-Za-z][.)]\s|\||>|#|\$ |```|~~~|[\u2500-\u257f])")  # last: trees


def _reflow_lines(lines: list[str], plain: bool = False) -> str:
    """Join hard-wrapped lines of one paragraph; keep breaks before list items, table rows, quotes,
    shell prompts and inside code (fenced or indented). In plain text also after a comment line ("#d-i ...") and
    around a line laid out with runs of spaces (a diagram, a header block)."""
    if any(_FENCE.match(ln) for ln in lines) or all(ln.startswith(("    ", "\t")) for ln in lines if ln.strip()):
        return "\n".join(lines)
    out: list[list[str]] = []  # each output line as its parts (joining strings one by one is O(n^2))
    for k, ln in enumerate(lines):
        before = lines[k - 1] if k else ""  # the line as written, not the joined one
        laid_out = plain and (before.lstrip().startswith("#") or bool(_LAID_OUT.search(ln) or _LAID_OUT.search(before)))
        if out and not laid_out and not _KEEP_BREAK.match(ln) and not ln.startswith(("    ", "\t")) \
                and not out[-1][-1].endswith("  ") and not out[-1][0].lstrip().startswith("|"):
            prev = out[-1][-1]
            if prev.endswith("-") and len(prev) > 1 and prev[-2].isalpha() and ln[:1].islower():
                out[-1][-1] = prev + ln.strip()  # hyphenated wrap
            else:
                out[-1][-1] = prev.rstrip()
                out[-1].append(ln.strip())
        else:
            out.append([ln.rstrip()])
    return "\n".join(" ".join(parts) for parts in out)


def _looks_like_text(sample: str) -> bool:
    if not sample:
        return True
    bad = sum(1 for ch in sample if unicodedata.category(ch) in ("Cc", "Co", "Cn") and ch not in "\n\r\t\f")
    return bad / len(sample) < 0.02


def _load_text(p: Path, markdown: bool) -> LoadedDocument:
    text, enc, warnings = decode_text(p, p.read_bytes())
    doc = parse_text(text, str(p), markdown, encoding=enc)
    doc.warnings.extend(warnings)
    return doc


def parse_text(text: str, path: str, markdown: bool, encoding: str | None = None) -> LoadedDocument:
    """Split already decoded text into blocks (Markdown headings give heading paths; in plain text, underlined
    titles and numbered section lines do, and box-drawn tables become pipe rows)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    numbered: dict[int, tuple[int, str]] = {}
    title_lines: set[int] = set()
    if not markdown:
        lines = _box_tables(lines)
        numbered, title_lines = _numbered_headings(lines)
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    para: list[str] = []
    in_fence = False

    def flush() -> None:
        if para:
            t = _reflow_lines(para, plain=not markdown).rstrip().lstrip("\n")
            t = t if re.search(r"\n[ \t]", t) else t.lstrip()  # a preformatted block keeps its first indentation
            if t:
                blocks.append(Block(text=t, heading_path=tuple(h for _, h in headings)))
            para.clear()

    adorned = _SETEXT if markdown else _ADORN  # a title's underline
    styles: list[tuple[str, bool]] = []  # plain text: adornment styles (character, overlined) in order of appearance
    skip: set[int] = set()

    def title_level(style: tuple[str, bool]) -> int:
        """Markdown: "=" 1, "-" 2; plain text (reStructuredText's rule): the style's order of first appearance."""
        if markdown:
            return 1 if style[0] == "=" else 2
        if style not in styles:
            styles.append(style)
        return styles.index(style) + 1

    def set_heading(level: int, title: str) -> None:
        nonlocal headings
        flush()
        headings = [h for h in headings if h[0] < level] + [(level, title)]
        blocks.append(Block(text=title, heading_path=tuple(h for _, h in headings), is_heading=True))

    for i, line in enumerate(lines):
        if markdown and _FENCE.match(line):
            in_fence = not in_fence
            para.append(line)
            continue
        if in_fence:
            para.append(line)
            continue
        m = _HEADING_MD.match(line) if markdown else None
        if m and m.group(2):
            set_heading(len(m.group(1)), m.group(2).strip())
            continue
        if i in skip:
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not markdown and not para and _ADORN.match(line) and nxt.strip() and len(nxt.strip()) < 120 \
                and i + 2 < len(lines) and lines[i + 2].strip()[:1] == line.strip()[0] and _ADORN.match(lines[i + 2]):
            set_heading(title_level((line.strip()[0], True)), nxt.strip())  # an overlined title
            skip.update((i + 1, i + 2))
            continue
        if line.strip() and adorned.match(nxt) and len(nxt.strip()) >= max(3, len(line.strip()) // 2) \
                and len(line.strip()) < 120 and not para:
            set_heading(title_level((nxt.strip()[0], False)), line.strip())
            continue
        if adorned.match(line) and blocks and blocks[-1].is_heading and not para:
            continue
        if i in numbered and not para:
            set_heading(*numbered[i])
            continue
        if i in title_lines:
            continue  # "DEFINITIONS" under "ARTICLE I": part of that heading
        if not line.strip():
            flush()
            continue
        para.append(line.rstrip())
    flush()
    _assign_offsets(blocks)
    return LoadedDocument(path=path, kind="markdown" if markdown else "text", blocks=blocks, encoding=encoding)


_BOX = re.compile("[\u2500-\u257f]")
_HORIZONTAL = re.compile("[\u2500\u2501\u2504\u2505\u2508\u2509\u254c\u254d\u2550]+")
_ROW_START, _ROW_END = "\u2502\u2503\u2551", "\u2502\u2503\u2551\u2524\u2528\u252b\u2562\u2563"


def _box_line(line: str) -> list[str] | None:
    """A line of a table drawn with box characters: [] for a rule, its cells for a row, None for any other line
    (a directory tree or lsblk's output draws with the same characters)."""
    s = line.strip()
    if not s or not _BOX.search(s):
        return None
    if not _BOX.sub("", s).strip():
        return [] if _HORIZONTAL.search(s) else None
    if s[0] not in _ROW_START or s[-1] not in _ROW_END:
        return None
    return [" ".join(c.split()) for c in _BOX.split(_HORIZONTAL.sub(" ", s))[1:-1]]  # bars and joints part cells


def _box_tables(lines: list[str]) -> list[str]:
    """Tables drawn with box characters as "| cell | cell |" rows, their rules dropped. Where rules part the rows,
    the lines between two rules are one row whose cells wrapped (joined cell by cell); a box of one column (a
    framed note) is its text."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        run: list[list[str]] = []
        while i + len(run) < len(lines) and (cells := _box_line(lines[i + len(run)])) is not None:
            run.append(cells)
        if not any(run):  # no table here (or rules alone: a separator line)
            if not run:
                out.append(lines[i])
            i += max(1, len(run))
            continue
        i += len(run)
        groups, cur = [], []
        for cells in run + [[]]:
            if cells:
                cur.append(cells)
            elif cur:
                groups.append(cur)
                cur = []
        rows = []
        for g in groups:
            ruled_apart = len(groups) > 2 and len(g) > 1 and len({len(c) for c in g}) == 1
            rows += [[" ".join(filter(None, col)) for col in zip(*g)]] if ruled_apart else g
        if all(len(r) == 1 for r in rows):
            out.append(" ".join(r[0] for r in rows if r[0]))
        else:
            out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


_WORD_RANK = {"Part": 0, "PART": 0, "Chapter": 1, "CHAPTER": 1, "Appendix": 1, "APPENDIX": 1, "Article": 1,
              "ARTICLE": 1, "Section": 2, "SECTION": 2}
_WORD_HEADING = re.compile(r"(?P<word>" + "|".join(_WORD_RANK) + r")\s+(?P<label>\d{1,3}|[A-Z]|[IVXLC]+)"
                           r"(?P<sub>(?:\.\d{1,3})*)[.:]?(?:\s+(?:[-\u2013\u2014]\s+)?(?P<title>[^\W\d_].*))?")
_NUM_HEADING = re.compile(r"(?P<num>[1-9]\d?|(?:[1-9]\d?|0|[A-Z])(?:\.(?:0|[1-9]\d{0,2}))+)\.?\s+(?P<title>[^\W\d_].*)")


def numbering_follows(a: list[str], b: list[str]) -> bool:
    """Whether section number ``b`` can come right after ``a`` (2.4.6 -> 2.5, 2.5 -> 2.5.1, 2.5 -> 3, 8 -> A,
    A.5 -> B), as parts: ["2", "4", "6"]."""
    if b == a + ["1"]:
        return True
    for d in range(len(a), 0, -1):
        p = a[d - 1]
        nxt = str(int(p) + 1) if p.isdigit() else chr(ord(p[-1]) + 1)
        if b == a[:d - 1] + [nxt]:
            return True
    return b == ["A"] and a[0].isdigit()


def _plain_title(title: str) -> bool:
    """A heading's title, not text: no lower-case start, no sentence inside or at its end, no page number or
    section number in it."""
    return not (title[:1].islower() or re.search(r"[.,;:]$|[.;:]\s|\s\d{1,4}$|\d\.\d", title))


def _numbered_headings(lines: list[str]) -> tuple[dict[int, tuple[int, str]], set[int]]:
    """Plain text's numbered section lines: {line index: (level, title)}, and the lines that only carried a title.
    "Chapter 2. System Requirements", "ARTICLE I" with "DEFINITIONS" on the next line (after a word: Part > Chapter,
    Appendix, Article > Section; a blank line before, the next line may be text), and, each standing between blank
    lines, "2.5. Memory and Disk Space Requirements" where dotted numbers form a numbering (two or more, most
    following the number before: a lone "1.5 GHz Processor" is text) and "1.  Introduction" where a single number
    leads into that numbering (its "1.1" comes next, or it follows a section: numbered steps "1. Download" stay
    text). Levels rank the kinds found: a word's, then numbers by their parts. Also text: a table of contents (no
    blank lines between its entries), a contents line ending in its page number, a line of cross-references and a
    heading run into its text ("4.7 LICENSE. Reseller shall")."""
    found, titles = [], {}  # found: (line index, rank, number parts, title, kind: word | dotted | single)
    for i, line in enumerate(lines):
        text = " ".join(line.split())
        before = i == 0 or not lines[i - 1].strip()
        after = "" if i + 1 == len(lines) else " ".join(lines[i + 1].split())
        if not text or len(text) > 80 or len(line) - len(line.lstrip()) > 3 or not before:
            continue
        m = _WORD_HEADING.fullmatch(text)
        if m and (not m.group("title") or _plain_title(m.group("title"))) \
                and not (_NUM_HEADING.fullmatch(after) or _WORD_HEADING.fullmatch(after)):  # not a contents entry
            parts = (m.group("label") + (m.group("sub") or "")).split(".")
            if not m.group("title") and after and len(after) <= 60 and _plain_title(after) \
                    and (i + 2 == len(lines) or not lines[i + 2].strip()):
                titles[i + 1] = after
                text += " " + after
            found.append((i, _WORD_RANK[m.group("word")] + len(parts) - 1, parts, text, "word"))
            continue
        m = _NUM_HEADING.fullmatch(text)
        if m and not after and _plain_title(m.group("title")):
            parts = m.group("num").split(".")
            found.append((i, 10 + len(parts), parts, text, "dotted" if len(parts) > 1 else "single"))
    leads = {n for n, (f, g) in enumerate(zip(found, found[1:]))  # "1." right before its "1.1."
             if f[4] == "single" and g[4] == "dotted" and g[2] == f[2] + ["1"]}
    sure = [f for n, f in enumerate(found) if f[4] != "single" or n in leads]
    following = sum(numbering_follows(a[2], b[2]) for a, b in zip(sure, sure[1:]))
    numbering = sum(f[4] == "dotted" for f in sure) >= 2 and following >= (len(sure) - 1) / 2
    kept = []
    for n, f in enumerate(found):
        if f[4] == "single":  # a single number leads into the numbering, or goes on from a kept section
            if not (numbering and (n in leads or (kept and numbering_follows(kept[-1][2], f[2])))):
                continue
        elif f[4] == "dotted" and not numbering:
            continue
        kept.append(f)
    levels = {r: n + 1 for n, r in enumerate(sorted({f[1] for f in kept}))}
    return {i: (levels[rank], text) for i, rank, _, text, _ in kept}, {i + 1 for i, *_ in kept if i + 1 in titles}


# ------------------------------------------------------------------------------------------ pdf
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


def _load_pdf(p: Path, password: str | None, ocr: bool = True, progress=None) -> LoadedDocument:
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
    page_lines: list[list[str]] = []
    code_lines: list[set[int]] = []   # per page: indexes of lines set in a monospaced font (commands, code)
    failed: list[int] = []
    for number, page in enumerate(reader.pages, start=1):
        try:
            lines, code = _page_lines(page)
        except Exception:  # noqa: BLE001 - one bad page does not sink the document, but is reported
            lines, code = [], set()
            failed.append(number)
        page_lines.append(lines)
        code_lines.append(code)
    ocr_pages = _ocr_blank_pages(p, reader, page_lines, code_lines, failed, progress) if ocr else []
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

    entries = _outline_entries(reader)
    if not entries and ocr_pages:  # a scan has no bookmarks: its numbered section lines are its headings
        entries = _ocr_headings(page_lines, ocr_pages, running, running_prefix)
    by_page: dict[int, list[tuple[int, str]]] = {}
    for pg, depth, title in entries:
        by_page.setdefault(pg, []).append((depth, title))
    path: list[tuple[int, str]] = []
    blocks: list[Block] = []

    def enter(depth: int, title: str) -> None:
        nonlocal path
        path = [h for h in path if h[0] < depth] + [(depth, title)]

    for pg, lines in enumerate(page_lines):
        pending = list(by_page.get(pg, []))
        cand = [ln for ln in lines if ln.strip()]
        edges = set(cand[:2] + cand[-2:])
        para: list[str] = []
        kept: list[str] = []  # consecutive code lines or table rows: one block that keeps its lines
        max_len = max((len(ln) for ln in lines), default=0)

        def flush() -> None:
            if para:
                blocks.append(Block(text=_reflow(para), page=pg + 1, heading_path=tuple(t for _, t in path)))
                para.clear()
            if kept:
                blocks.append(Block(text="\n".join(kept), page=pg + 1, heading_path=tuple(t for _, t in path)))
                kept.clear()

        for li, ln in enumerate(lines):
            s = ln.strip()
            if not s:
                flush()
                continue
            if li in code_lines[pg] or _PIPE_ROW.match(s):  # a command or a table row: a line of its own
                if para:
                    flush()
                kept.append(s)
                continue
            if kept:
                flush()
            if ln in edges and _running_line(ln, running, running_prefix):
                continue
            if _TOC_LINE.search(s):
                continue  # table-of-contents line with dot leaders: navigation, not content
            if pending and _title_match(s, pending[0][1]):
                flush()
                depth, title = pending.pop(0)
                enter(depth, title)
                blocks.append(Block(text=s, page=pg + 1, heading_path=tuple(t for _, t in path), is_heading=True))
                continue
            para.append(s)
            if len(ln) < 0.6 * max_len and s[-1:] in ".:!?)" and max_len > 40:
                flush()
        flush()
        for depth, title in pending:
            enter(depth, title)
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
    return LoadedDocument(path=str(p), kind="pdf", blocks=blocks, pages=n_pages, warnings=warnings,
                          ocr_pages=ocr_pages)


def _ocr_headings(page_lines: list, ocr_pages: list[int], running: set, running_prefix: set) -> list[tuple]:
    """(page index, level, title) of the numbered section lines of OCR'd pages, found as plain text's are
    (``_numbered_headings``: "4.3.1 Preparing a USB stick" standing alone, in a numbering), running headers left
    out."""
    lines, where = [], []
    for pg in sorted(p - 1 for p in ocr_pages):
        for ln in page_lines[pg] + [""]:
            lines.append("" if ln.strip() and _running_line(ln, running, running_prefix) else ln)
            where.append(pg)
    found, _ = _numbered_headings(lines)
    return [(where[i], level, " ".join(lines[i].split())) for i, (level, _title) in sorted(found.items())]


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
            code_lines[i] = {j for j, ln in enumerate(lines) if _COMMAND_LINE.match(ln)}
            done.append(i + 1)
    for i, lines in zip([d - 1 for d in done], ocr_mod.respace([page_lines[d - 1] for d in done])):
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


_TOC_LINE = re.compile(r"(\s?\.){6,}\s*[0-9ivxlc]+\s*$")
_PIPE_ROW = re.compile(r"^\|.*\|$")
_CAPTION = re.compile(r"^\s*Table\s+[A-Z]?\d+(?:[.-]\d+)*[.:]?\s+[A-Z(\"“]")  # "Table 3.2 Recommended ...", not
#                                                                               "Table 2-1 describes ..."
_MONO = re.compile(r"mono|courier|consol|menlo|typewriter|\bcmtt|inconsolata|code", re.I)
_COLUMN_GAP = re.compile(r"\S(\s{3,})(?=\S)")


def _page_lines(page) -> tuple[list[str], set[int]]:
    """A page's text lines (pypdf's default extraction), the indexes of those set in a monospaced font (a command
    or code: kept as its own line, never run into the paragraph around it), and, on a page with a table caption
    ("Table 3.2 ..."), the table's rows as ``| cell | cell |`` lines (read from pypdf's layout mode, where columns
    stand apart; that mode costs ~2x, so only such pages pay it)."""
    pieces: list[tuple[str, bool]] = []

    def visit(text, cm, tm, font, size) -> None:
        name = str((font or {}).get("/BaseFont", "")) if hasattr(font, "get") else ""
        pieces.append((text, bool(_MONO.search(name))))

    txt = page.extract_text(visitor_text=visit) or ""
    joined = "".join(t for t, _ in pieces)
    mono = [m for t, m in pieces for _ in t] if joined == txt else []  # the visitor's pieces make up the text
    lines, flags, at = [], [], 0
    for ln in txt.replace("\r", "\n").split("\n"):  # same length: the flags stay in step
        inked = [f for ch, f in zip(ln, mono[at:at + len(ln)]) if not ch.isspace()] if mono else []
        flags.append(len(inked) >= 2 and sum(inked) >= 0.9 * len(inked))
        lines.append(ln.rstrip())
        at += len(ln) + 1
    if any(_CAPTION.match(ln) for ln in lines):
        lines, flags = _pdf_table_rows(page, lines, flags)
    return lines, {i for i, f in enumerate(flags) if f}


def _pdf_table_rows(page, lines: list[str], flags: list[bool]) -> tuple[list[str], list[bool]]:
    """``lines`` (and their monospaced flags) with each captioned table's lines replaced by its rows as pipe rows
    (``| cell | cell |``). The rows come from pypdf's layout mode, where columns stand apart (``_layout_tables``); the
    default lines they replace are those the table's words make up (``_table_span``), and only when those lines hold
    the whole table (else the plain lines stand: never a row twice)."""
    try:
        layout = page.extract_text(extraction_mode="layout") or ""
    except Exception:  # noqa: BLE001 - the plain lines stand
        return lines, flags
    out, marks = list(lines), list(flags)
    for caption, rows in _layout_tables(layout.split("\n")).items():
        span = _table_span(out, caption, rows)
        if span is not None:
            out[span[0]:span[1]] = ["| " + " | ".join(row) + " |" for row in rows]
            marks[span[0]:span[1]] = [False] * len(rows)
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


def _title_match(line: str, title: str) -> bool:
    a = re.sub(r"[^a-z0-9]+", " ", line.lower()).strip()
    b = re.sub(r"[^a-z0-9]+", " ", title.lower()).strip()
    if not a or not b:
        return False
    a = re.sub(r"^(chapter )?[0-9a-z]?[0-9. ]*\s", "", a + " ").strip() if len(a) > len(b) else a
    return a == b or a.endswith(" " + b) or (len(b) > 12 and a.startswith(b) and len(a) < len(b) + 12)


def _reflow(lines: list[str]) -> str:
    out = ""
    for ln in lines:
        if not out:
            out = ln
        elif out.endswith("-") and ln[:1].islower() and len(out) > 1 and out[-2].isalpha():
            out = out[:-1] + ln
        else:
            out += " " + ln
    return out.replace("\xa0", " ")


# ----------------------------------------------------------------------------------------- zip containers
ZIP_ENTRY_MAX = 256 * 2**20  # bytes one entry of a DOCX or EPUB may unpack to
ZIP_TOTAL_MAX = 1024 * 2**20  # and all of them together
ZIP_RATIO_MAX = 200  # an entry over 1 MiB that unpacks to 200 times its packed size is a zip bomb


def zip_guard(p: Path, zf: zipfile.ZipFile) -> None:
    """Refuse a zip whose entries would unpack past the limits above, read from its directory before anything is
    unpacked (a zip bomb is one line, not a machine out of memory)."""
    total = 0
    for info in zf.infolist():
        total += info.file_size
        bomb = info.file_size > 2**20 and info.file_size > ZIP_RATIO_MAX * max(info.compress_size, 1)
        if info.file_size > ZIP_ENTRY_MAX or bomb or total > ZIP_TOTAL_MAX:
            raise IngestError(p, f"refused: {info.filename} would unpack to {info.file_size / 2**20:.0f} MiB from "
                              f"{info.compress_size / 2**20:.1f} MiB (a zip bomb, or a file too large to read)")


# ----------------------------------------------------------------------------------------- docx
def _load_docx(p: Path) -> LoadedDocument:
    if not zipfile.is_zipfile(p):
        raise IngestError(p, "not a DOCX (not a zip container; corrupt or misnamed file)")
    with zipfile.ZipFile(p) as zf:
        zip_guard(p, zf)
    try:
        import docx
        from docx.oxml.ns import qn
    except ImportError as exc:  # pragma: no cover
        raise IngestError(p, f"python-docx is not installed ({exc})") from None
    try:
        document = docx.Document(str(p))
    except KeyError as exc:
        if "officeDocument" in str(exc) or "strict" in str(exc).lower():
            raise IngestError(p, "DOCX cannot be opened (Strict OOXML is not supported by python-docx; "
                              "re-save it as a standard .docx)") from None
        raise IngestError(p, f"DOCX cannot be opened ({str(exc)[:120]})") from None
    except ValueError as exc:
        msg = str(exc)
        if "officeDocument" in msg:
            raise IngestError(p, "DOCX cannot be opened (Strict OOXML or not a Word document; "
                              "re-save it as a standard .docx)") from None
        raise IngestError(p, f"DOCX cannot be opened ({msg[:120]})") from None
    except zipfile.BadZipFile as exc:
        raise IngestError(p, f"corrupt DOCX ({exc})") from None
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    numbers = _Numbering(document, qn)
    for child in _body_items(document.element.body, qn):
        if child.tag == qn("w:p"):
            para = Paragraph(child, document)
            text = _para_text(child, qn)
            if not text.strip():
                continue
            style = (para.style.name if para.style is not None else "") or ""
            level = _heading_level(style)
            marker, depth = numbers.marker(child, para.style)
            if level is not None:
                title = (marker.strip() + " " if marker and marker.strip() != "-" else "") + text.strip()
                path = [h for h in path if h[0] < level] + [(level, title)]
                blocks.append(Block(text=title, heading_path=tuple(t for _, t in path), is_heading=True))
            else:
                if not marker and "List" in style:
                    marker = "- "
                blocks.append(Block(text="  " * depth + marker + text.strip(), heading_path=tuple(t for _, t in path)))
        else:
            text = _table_text(Table(child, document), qn)
            if text:
                blocks.append(Block(text=text, heading_path=tuple(t for _, t in path)))
    return LoadedDocument(path=str(p), kind="docx", blocks=blocks)


_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def _para_text(p_el, qn) -> str:
    """A paragraph's text; a text box's paragraphs each end a line, and an ``mc:Fallback`` (the same text box again,
    for older readers) is skipped: read, each box came twice, run together."""
    parts: list[str] = []
    t, tab, breaks, para = qn("w:t"), qn("w:tab"), (qn("w:br"), qn("w:cr")), qn("w:p")

    def walk(el) -> None:
        for node in el:
            if node.tag == _MC_FALLBACK:  # read only where its mc:Choice gave no text
                if not any(x.tag == t and x.text for c in el if c.tag != _MC_FALLBACK for x in c.iter()):
                    walk(node)
                continue
            if node.tag == t:
                parts.append(node.text or "")
            elif node.tag == tab:
                parts.append("\t")
            elif node.tag in breaks:
                parts.append("\n")
            else:
                walk(node)
                if node.tag == para and parts and not parts[-1].endswith("\n"):
                    parts.append("\n")  # a paragraph inside a text box

    walk(p_el)
    return "".join(parts)


def _heading_level(style: str) -> int | None:
    if style == "Title":
        return 0
    m = re.match(r"^Heading\s*(\d)", style)
    return int(m.group(1)) if m else None


class _Numbering:
    """Word's list and heading numbers, which the file does not hold as text: each numbered paragraph (its own
    ``w:numPr`` or its style's, up the ``basedOn`` chain) counts at its level of the list definition it uses, deeper
    levels restarting, and shows the level's ``lvlText`` ("%1.%2.") with each level's number in its format (decimal,
    letters, roman); bullets are "- ". A file without a numbering part, or a definition it lacks, numbers nothing."""

    _ROMAN = [(1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
              (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")]

    def __init__(self, document, qn) -> None:
        self.qn, self.nums, self.levels, self.counts, self.started = qn, {}, {}, {}, set()
        try:
            root = document.part.numbering_part.element
        except Exception:  # noqa: BLE001 - no numbering part (python-docx raises NotImplementedError or KeyError)
            return
        val = qn("w:val")
        for a in root.iterchildren(qn("w:abstractNum")):
            lv = {}
            for lvl in a.iterchildren(qn("w:lvl")):
                get = {t: lvl.find(qn(f"w:{t}")) for t in ("start", "numFmt", "lvlText")}
                lv[int(lvl.get(qn("w:ilvl"), "0"))] = (
                    _int_attr(get["start"], val, 1), get["numFmt"].get(val) if get["numFmt"] is not None else "decimal",
                    get["lvlText"].get(val, "") if get["lvlText"] is not None else "")
            self.levels[a.get(qn("w:abstractNumId"))] = lv
        for n in root.iterchildren(qn("w:num")):
            ref = n.find(qn("w:abstractNumId"))
            starts = {int(o.get(qn("w:ilvl"), "0")): _int_attr(o.find(qn("w:startOverride")), val, None)
                      for o in n.iterchildren(qn("w:lvlOverride"))}
            if ref is not None:
                self.nums[n.get(qn("w:numId"))] = (ref.get(val), {k: v for k, v in starts.items() if v is not None})

    def _num_pr(self, p_el, style):
        qn = self.qn
        pr = p_el.find(f"{qn('w:pPr')}/{qn('w:numPr')}")
        seen = 0
        while pr is None and style is not None and seen < 20:  # the style's numbering, or its base style's
            pr = style.element.find(f"{qn('w:pPr')}/{qn('w:numPr')}")
            style, seen = style.base_style, seen + 1
        if pr is None:
            return None
        num, ilvl = pr.find(qn("w:numId")), pr.find(qn("w:ilvl"))
        return (None if num is None else num.get(qn("w:val"))), _int_attr(ilvl, qn("w:val"), 0)

    def marker(self, p_el, style) -> tuple[str, int]:
        """(the paragraph's number or bullet with a space after it, its list level), or ("", 0)."""
        try:
            found = self._num_pr(p_el, style)
        except Exception:  # noqa: BLE001 - a malformed style chain numbers nothing
            return "", 0
        if not found or found[0] in (None, "0") or found[0] not in self.nums:
            return "", 0
        num_id, ilvl = found
        abstract, overrides = self.nums[num_id]
        levels = self.levels.get(abstract, {})
        if ilvl not in levels:
            return "", 0
        counts = self.counts.setdefault(abstract, {})
        if num_id not in self.started:  # a list that restarts its numbering (startOverride) starts again
            self.started.add(num_id)
            for k, v in overrides.items():
                counts[k] = v - 1
        start, fmt, text = levels[ilvl]
        counts[ilvl] = counts.get(ilvl, start - 1) + 1
        for deeper in [k for k in counts if k > ilvl]:
            del counts[deeper]
        for k in range(ilvl):  # a level shown before it had an item of its own counts as used, as Word counts it
            counts.setdefault(k, levels.get(k, (1, "decimal", ""))[0])
        if fmt == "bullet":
            return "- ", ilvl
        if fmt == "none" or not text:
            return "", ilvl

        def number(m) -> str:
            k = int(m.group(1)) - 1
            s, f, _ = levels.get(k, (1, "decimal", ""))
            return self._format(counts.get(k, s), f)

        return re.sub(r"%([1-9])", number, text).strip() + " ", ilvl

    @classmethod
    def _format(cls, n: int, fmt: str) -> str:
        if fmt in ("lowerLetter", "upperLetter") and n > 0:
            s = ""
            while n:
                n, r = divmod(n - 1, 26)
                s = chr(97 + r) + s
            return s.upper() if fmt == "upperLetter" else s
        if fmt in ("lowerRoman", "upperRoman") and 0 < n < 4000:
            s = ""
            for v, r in cls._ROMAN:
                while n >= v:
                    s, n = s + r, n - v
            return s.upper() if fmt == "upperRoman" else s
        return str(n)


def _int_attr(el, attr: str, default):
    try:
        return int(el.get(attr)) if el is not None else default
    except (TypeError, ValueError):
        return default


_CONTAINERS = ("w:sdt", "w:sdtContent", "w:customXml", "w:smartTag")  # content controls and tags hold content


def _body_items(parent, qn):
    """The paragraphs and tables of a body or a table cell in reading order, those inside content controls
    (``w:sdt``) and custom XML included (they were left out: a form's tables, a template's text)."""
    containers = {qn(t) for t in _CONTAINERS}
    for child in parent.iterchildren():
        if child.tag in (qn("w:p"), qn("w:tbl")):
            yield child
        elif child.tag in containers:
            yield from _body_items(child, qn)


def _table_text(table, qn) -> str:
    """A table as ``| cell | cell |`` lines, its first row (the header) first, one line a row; a cell spanning
    columns or rows repeats its text in each (each cell stays under its column's header); columns a row skips at its
    start (``w:gridBefore``) are empty cells. A cell's paragraphs, and a table nested in it, are one line of text. A
    table of one cell is a framed note or a layout box: its paragraphs come as plain lines (a table in it as a
    table)."""
    rows = []
    for row in table.rows:
        try:
            before = row.grid_cols_before
        except Exception:  # noqa: BLE001 - a malformed row property: read the cells alone
            before = 0
        rows.append([""] * before + [_cell_text(cell._tc, qn) for cell in row.cells])
    if sum(len(r) for r in rows) == 1:  # a box: its paragraphs as lines, a table in it as a table
        from docx.table import Table

        return "\n".join(_table_text(Table(item, table), qn) if item.tag == qn("w:tbl") else _para_text(item, qn)
                         for item in _body_items(table.rows[0].cells[0]._tc, qn)).strip()
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows if any(r)]
    return "\n".join(lines)


def _cell_text(tc, qn) -> str:
    """A cell's paragraphs, and the cells of a table nested in it, as one line of text."""
    parts = []
    for item in _body_items(tc, qn):
        if item.tag == qn("w:p"):
            parts.append(_para_text(item, qn))
        else:
            parts += [_cell_text(c, qn) for tr in item.iterchildren(qn("w:tr")) for c in tr.iterchildren(qn("w:tc"))]
    return " ".join(" ".join(parts).split())
