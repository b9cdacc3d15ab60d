"""A PDF page as an image, and where given lines stand on it (the HTTP page's "show me the quote on the page").

Positions come from the PDF's text layer (pypdfium2), looked up when asked: each line is matched in the page's text
with whitespace, case, quotes and end-of-line hyphens evened out (as the loader reads them), first whole, then by its
longest shared stretch when the loader composed the line differently; the characters it covers give one box per line
of print. Boxes are fractions of the page (0..1, from the top left), so they lay over the image at any size. A scanned
page has no text layer: its lines are not found (OCR boxes are not kept yet). pdfium is not thread-safe: every call
here holds one lock.
"""
from __future__ import annotations

import io
import threading
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path

from .errors import NotFoundError, ThreadRagError
from .llm.model_files import sha256_file
from .lru import LRU
from .pdfium_lock import PDFIUM

IMAGE_WIDTH = 1000           # pixels across a rendered page
MIN_SHARED = 12              # characters a line and the page must share, at least, to count as found there
QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u00ad": "", "\u2013": "-",
                        "\u2014": "-", "\ufb01": "fi", "\ufb02": "fl",
                        "\ufffe": ""})  # pdfium's mark of a hyphen it took for a line-end break (the break dropped)


@dataclass
class Box:
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass
class Located:
    line: int                # index in the lines asked for
    page: int                # from 1
    boxes: list[Box] = field(default_factory=list)
    whole: bool = True       # False: found by its longest shared stretch, not whole


def checked_file(path: str, content_hash: str) -> Path:
    """The document's file, if it is still the one indexed (else one line saying why not). A file is hashed once
    while its inode, size and change times stay the same (a click asks for its page and for where its lines stand)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        st = None
    if st is None or not p.is_file():
        raise NotFoundError(f"{path}: the file is no longer there, so its pages cannot be shown")
    key = (str(p), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, content_hash)  # ctime: a copy that kept
    #                                                                                  the mtime (cp -p) still changes it
    with _CHECKED_LOCK:
        known = _CHECKED.get(key)
    if known is None:
        known = sha256_file(p) == content_hash
        with _CHECKED_LOCK:
            _CHECKED[key] = known
    if not known:
        raise ThreadRagError(f"{path}: the file changed since it was indexed (index it again to show its pages)")
    return p


_CHECKED: LRU = LRU(64)  # (path, inode, size, mtime, ctime, hash) -> whether the file is the one indexed
_CHECKED_LOCK = threading.Lock()


def render_page(path: Path, page: int, width: int = IMAGE_WIDTH) -> bytes:
    """Page ``page`` (from 1) as PNG bytes, ``width`` pixels across."""
    import pypdfium2 as pdfium

    with PDFIUM:
        pdf = pdfium.PdfDocument(str(path))
        try:
            _check_page(pdf, page)
            p = pdf[page - 1]
            image = p.render(scale=width / p.get_width()).to_pil()
        finally:
            pdf.close()
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def locate(path: Path, lines: list[str], pages: range) -> tuple[list[Located], list[int]]:
    """Where each of ``lines`` stands, looked for on ``pages`` in order: (found, indexes of lines not found)."""
    import pypdfium2 as pdfium

    found, missing = [], []
    with PDFIUM:
        pdf = pdfium.PdfDocument(str(path))
        try:
            texts = {}
            for i, line in enumerate(lines):
                for n in pages:
                    if not 1 <= n <= len(pdf):
                        continue
                    if n not in texts:
                        texts[n] = _page_text(pdf[n - 1])
                    hit = _find(texts[n], line)
                    if hit:
                        found.append(Located(i, n, hit[0], hit[1]))
                        break
                else:
                    missing.append(i)
        finally:
            pdf.close()
    return found, missing


def _check_page(pdf, page: int) -> None:
    if not 1 <= page <= len(pdf):
        raise ThreadRagError(f"page {page}: the document has pages 1 to {len(pdf)}")


class _PageText:
    """A page's text evened out, each kept character's index in pdfium's text, and the page's boxes."""

    def __init__(self, textpage, width: float, height: float):
        self.textpage, self.width, self.height = textpage, width, height
        raw = textpage.get_text_range(0, textpage.count_chars())
        self.text, self.index = even(raw)

    def boxes(self, start: int, end: int) -> list[Box]:
        """One box per line of print covering the evened characters ``start:end``."""
        first, last = self.index[start], self.index[end - 1]
        tp, rows = self.textpage, []
        for k in range(tp.count_rects(first, last - first + 1)):
            left, bottom, right, top = tp.get_rect(k)
            for row in rows:  # the same line of print: overlapping heights
                if min(top, row[3]) - max(bottom, row[1]) > 0.5 * min(top - bottom, row[3] - row[1]):
                    row[:] = [min(row[0], left), min(row[1], bottom), max(row[2], right), max(row[3], top)]
                    break
            else:
                rows.append([left, bottom, right, top])
        w, h = self.width, self.height
        return [Box(round(a / w, 4), round((h - d) / h, 4), round(c / w, 4), round((h - b) / h, 4))
                for a, b, c, d in rows]


def _page_text(page) -> _PageText:
    return _PageText(page.get_textpage(), page.get_width(), page.get_height())


def even(raw: str) -> tuple[str, list[int]]:
    """``raw`` lowercased, quotes and dashes made plain, runs of space one space, a hyphen ending a line of print
    joined to the next, and a hyphen inside a word left out: the loader keeps or drops a broken word's hyphen by the
    document's spelling ("keep-alive", "installation"), so neither side's hyphen may decide a match. With each kept
    character's index in ``raw``."""
    out, index, i = [], [], 0
    while i < len(raw):
        c = raw[i].translate(QUOTES).lower()
        if c == "-" and raw[i + 1:i + 3] == "\r\n" and i + 3 < len(raw) and not raw[i + 3].isspace() and out \
                and (out[-1].isalnum() or out[-1] == "/"):
            i += 3  # "instal-\r\nlation", "keep-\r\nalive": the word, whole
            continue
        if c == "-" and out and out[-1].isalnum() and raw[i + 1:i + 2].isalnum():
            i += 1  # "keep-alive" as "keepalive", on the page and in the quote alike
            continue
        if not c or (c.isspace() and (not out or out[-1] == " ")):
            i += 1
            continue
        for ch in (" " if c.isspace() else c):
            out.append(ch)
            index.append(i)
        i += 1
    return "".join(out), index


def _find(page: _PageText, line: str) -> tuple[list[Box], bool] | None:
    want = even(line)[0].strip()
    if len(want) < 3:
        return None
    at = page.text.find(want)
    if at >= 0:
        return page.boxes(at, at + len(want)), True
    m = SequenceMatcher(None, page.text, want, autojunk=False).find_longest_match(0, len(page.text), 0, len(want))
    if m.size < max(MIN_SHARED, len(want) // 2):
        return None
    start = max(0, m.a - m.b)
    return page.boxes(start, min(len(page.text), start + len(want))), False
