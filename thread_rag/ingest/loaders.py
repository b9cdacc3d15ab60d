"""Loaders: ``load_document`` reads a file by its suffix into a :class:`LoadedDocument` of blocks in reading order.

One module per format, each returning the document's blocks: PDF (``pdf.py``, pypdf: page numbers per block,
headings from the outline, lines in a monospaced font and captioned tables' rows as lines, scanned pages by OCR),
DOCX (``docx.py``, python-docx: paragraphs, headings and tables in body order), TXT/Markdown (``text.py``: encoding
detection, Markdown heading paths; plain text's numbered section lines as headings, box-drawn tables as pipe rows),
HTML (``html.py``: h1-h6 heading paths, pre blocks, lists, tables as pipe rows, navigation left out), EPUB
(``epub.py``: chapters in spine order, each read as HTML); an image (here) is its OCR'd lines (``ocr.py``). This
module checks the file first (exists, supported, not empty, a text not too large) and turns any parser failure
into one line: every failure is an :class:`IngestError` naming the file and the reason.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import IngestError
from ..records import Block, LoadedDocument
from .docx import load_docx
from .epub import load_epub
from .html import load_html
from .pdf import COMMAND_LINE, load_pdf, printed_words, reflow
from .text import assign_offsets, load_text

LOADER_VERSION = 12  # part of the index recipe: a changed loader re-indexes on the next run (3: 2026-12-03,
#                    appendix running headers, DOCX text boxes once, cp1250/cp1252 by symbols inside words; 4: plain
#                    text's numbered section lines are headings, box-drawn tables pipe rows, comment and laid-out
#                    lines keep their breaks, and the chunker keeps a block's line breaks and indentation; 5: a PDF's
#                    lines in a monospaced font and its captioned tables' rows are lines of their own; 6: a DOCX
#                    table is one block of pipe rows, spans repeated under their columns, content controls read, list
#                    and heading numbers written as Word shows them; 7: an HTML page is filed under the pages above
#                    it (rel="up"), OCR'd words joined and parted from the document's own spelling, a DOCX chart
#                    the table of its data; 8: a bare "Chapter 2" takes its title from the line after a gap,
#                    a PDF without bookmarks its headings from its type, a DOCX equation is read as LaTeX; 9: a PDF
#                    page's tables of figures are rows with their labels, column headers, units and title, and a
#                    chunk that starts inside a table repeats its header row; 10: a sparse column is its own, a
#                    table's title and header never come from the table above, contents pages and code no tables;
#                    11: a statement's title at the margin beside the company's name over the columns is its title;
#                    12: a PDF's word broken at a line's end is joined as the document prints it elsewhere, a path
#                    broken after its "/" whole, two English words keep their hyphen: ``pdf.reflow``)

SUPPORTED_SUFFIXES = {".pdf": "pdf", ".docx": "docx", ".txt": "text", ".text": "text", ".md": "markdown",
                      ".markdown": "markdown", ".rst": "text", ".html": "html", ".htm": "html",
                      ".epub": "epub", ".png": "image", ".jpg": "image", ".jpeg": "image", ".tif": "image",
                      ".tiff": "image", ".bmp": "image", ".webp": "image"}

FOLDER_SUFFIXES = {k: v for k, v in SUPPORTED_SUFFIXES.items() if v != "image"}  # what a folder walk (index DIR,
#   watch) takes: an image is indexed when it is named, a folder's images are left out (a saved docs site holds
#   icons and screenshots by the hundred)

TEXT_MAX_BYTES = 64 * 2**20  # a text, Markdown or HTML file past this is refused before it is read (a 200 MB log
#                              would take hours to embed and gigabytes to hold; split it)


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
            doc = load_pdf(p, password, ocr, progress)
        elif kind == "image":
            doc = _load_image(p, ocr)
        elif kind == "docx":
            doc = load_docx(p)
        elif kind == "html":
            doc = load_html(p)
        elif kind == "epub":
            doc = load_epub(p)
        else:
            doc = load_text(p, markdown=(kind == "markdown"))
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
    assign_offsets(doc.blocks)
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
    lines = ocr_mod.respace([ocr_mod.read_image(ocr_mod.load_image(p))], keep=COMMAND_LINE.match)[0]
    read = any(ln.strip() for ln in lines)
    return LoadedDocument(path=str(p), kind="image", blocks=_line_blocks(lines, 1), pages=1,
                          ocr_pages=[1] if read else [],
                          warnings=["read by OCR: check what is quoted from it against the image"] if read else [])


def _line_blocks(lines: list[str], page: int) -> list[Block]:
    """OCR'd lines as blocks: paragraphs ("" between them) reflowed (a broken word joined as the image prints it
    elsewhere), command lines kept as lines of their own."""
    blocks, para, kept = [], [], []
    words = printed_words([lines])

    def rejoined(which: list) -> str:
        return reflow(which, words)

    def flush(which: list, text) -> None:
        if which:
            blocks.append(Block(text=text(which), page=page))
            which.clear()

    for ln in lines + [""]:
        if COMMAND_LINE.match(ln):
            flush(para, rejoined)
            kept.append(ln)
        elif not ln.strip():
            flush(para, rejoined)
            flush(kept, "\n".join)
        else:
            flush(kept, "\n".join)
            para.append(ln)
    return blocks
