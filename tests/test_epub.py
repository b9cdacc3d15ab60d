"""The EPUB loader: books the tests make (zipfile), one of them the Debian guide's HTML edition packed as an EPUB."""
import zipfile

import pytest

from conftest import debian_html_pages, make_epub, needs_shared, write
from thread_rag.errors import IngestError
from thread_rag.ingest.loaders import SUPPORTED_SUFFIXES, load_document


def chapter(title: str, body: str) -> bytes:
    return (f'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head>'
            f"<title>{title}</title></head><body>{body}</body></html>").encode()


def test_chapters_in_spine_order_with_heading_paths_under_the_title(tmp_path):
    book = make_epub(tmp_path / "b.epub", [
        ("text/two.xhtml", chapter("Two", "<h1>Installing</h1><p>Run the installer.</p><h2>USB</h2>"
                                          "<pre># cp debian.iso /dev/sdX\n# sync</pre>")),
        ("text/one.xhtml", chapter("One", "<h1>Preface</h1><p>Read this first.</p>")),
        ("notes.xhtml", chapter("Notes", "<p>A footnote.</p>"))],
        title="The Guide", linear_no=("notes.xhtml",))
    doc = load_document(book)
    assert doc.kind == "epub" and ".epub" in SUPPORTED_SUFFIXES
    texts = [b.text for b in doc.blocks]
    assert texts == ["The Guide", "Installing", "Run the installer.", "USB", "# cp debian.iso /dev/sdX\n# sync",
                     "Preface", "Read this first.", "Notes", "A footnote."]  # spine order; linear="no" last
    usb = next(b for b in doc.blocks if b.text.startswith("# cp"))
    assert usb.heading_path == ("The Guide", "Installing", "USB")


def test_a_missing_spine_item_is_a_warning_and_the_rest_is_read(tmp_path):
    book = make_epub(tmp_path / "b.epub", [("a.xhtml", chapter("A", "<p>First chapter.</p>")),
                                           ("b.xhtml", chapter("B", "<p>Lost.</p>")),
                                           ("c.xhtml", chapter("C", "<p>Third chapter.</p>"))], drop=("b.xhtml",))
    doc = load_document(book)
    assert "First chapter." in doc.full_text and "Third chapter." in doc.full_text
    assert doc.warnings == ["spine item OEBPS/b.xhtml is missing from the book: skipped"]


@pytest.mark.parametrize("make, reason", [
    (lambda p: write(p, b"plain words, not a zip"), "not an EPUB (not a zip container"),
    (lambda p: zipfile.ZipFile(p, "w").writestr("mimetype", "application/epub+zip") or p, "no package file"),
    (lambda p: make_epub(p, [("a.xhtml", chapter("A", "<p>x</p>"))], extra={
        "META-INF/encryption.xml": '<encryption xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
                                   '<enc:CipherData><enc:CipherReference URI="OEBPS/a.xhtml"/></enc:CipherData>'
                                   '</enc:EncryptedData></encryption>'}), "encrypted EPUB (DRM)"),
    (lambda p: make_epub(p, [("a.xhtml", b"\x00\x01\x02" * 200)]), "no text content"),
])
def test_bad_books_are_one_line(tmp_path, make, reason):
    p = tmp_path / "bad.epub"
    make(p)
    with pytest.raises(IngestError, match=reason.replace("(", r"\(").replace(")", r"\)")) as exc:
        load_document(p)
    assert "\n" not in str(exc.value)


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path):
    p = tmp_path / "bomb.epub"
    make_epub(p, [("a.xhtml", chapter("A", "<p>x</p>"))], extra={"OEBPS/big.xhtml": b"\0" * (300 * 2**20)})
    with pytest.raises(IngestError, match="would unpack to 300 MiB"):
        load_document(p)
    d = tmp_path / "bomb.docx"
    with zipfile.ZipFile(d, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("word/document.xml", b" " * (100 * 2**20))  # 100 MiB of spaces pack to ~100 KiB
    with pytest.raises(IngestError, match="zip bomb"):
        load_document(d)


def test_a_page_that_rel_up_links_name_is_read_once_for_the_whole_book(tmp_path, monkeypatch):
    """Every chapter under one part named the part page by rel="up": the part was unpacked again for each."""
    top = b'<html><head><title>The Book</title></head><body><h1>Contents</h1></body></html>'
    part = (b'<html><head><title>Part One</title><link rel="up" href="index.xhtml"/></head>'
            b'<body><h1>Part One</h1></body></html>')
    page = lambda n: (f'<html><head><title>S{n}</title><link rel="up" href="part.xhtml" title="Part One"/></head>'  # noqa: E731
                      f'<body><h2>Section {n}</h2><p>Text {n}.</p></body></html>').encode()
    book = make_epub(tmp_path / "b.epub", [("index.xhtml", top), ("part.xhtml", part)] + [(f"s{n}.xhtml", page(n)) for n in range(4)])
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **k: opened.append(str(getattr(name, "filename", name))) or real_open(self, name, *a, **k))
    doc = load_document(book)
    assert opened.count("OEBPS/part.xhtml") <= 2  # its own reading, and once as the pages' parent
    path = next(b.heading_path for b in doc.blocks if b.text == "Text 3.")
    assert path[:2] == ("A Book", "Part One") and path[-1] == "Section 3"


@needs_shared
def test_the_debian_guide_packed_as_an_epub_reads_like_its_html_edition(tmp_path):
    pages = debian_html_pages()
    book = make_epub(tmp_path / "debian.epub", [(p.name, p.read_bytes()) for p in pages],
                     title="Debian GNU/Linux Installation Guide")
    epub = load_document(book)
    html = [b for p in pages for b in load_document(p).blocks]
    assert [b.text for b in epub.blocks[1:]] == [b.text for b in html]  # every page's blocks, in reading order
    assert "# cp debian.iso /dev/sdX\n# sync" in epub.full_text
    usb = next(b for b in epub.blocks if b.text.startswith("# cp debian.iso"))
    # under the book's title, the chapter its page's rel="up" names (a chapter of the book), then the page's own
    assert usb.heading_path == ("Debian GNU/Linux Installation Guide", "Chapter 4. Obtaining System Installation Media",
                                "4.3. Preparing Files for USB Memory Stick Booting",
                                "4.3.1. Preparing a USB stick using a hybrid CD/DVD image")
    assert all(e.heading_path[-len(h.heading_path):] == h.heading_path
               and len(e.heading_path) - len(h.heading_path) <= 1 for e, h in zip(epub.blocks[1:], html))  # as the HTML edition's, under the book's title
