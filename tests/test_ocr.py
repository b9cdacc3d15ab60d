"""OCR of pages with no text layer, with the PP-OCRv4 models packaged in rapidocr-onnxruntime (the real models on one
rendered page of the Debian guide), and the line and space rules it applies to what the models return."""
import pytest

from conftest import DATA, needs_shared, write
from thread_rag.errors import IngestError
from thread_rag.ingest import ocr
from thread_rag.ingest.loaders import load_document

DEBIAN_PDF = DATA / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf"


@pytest.fixture(scope="module")
def usb_page_image():
    return ocr.render_pdf_page(DEBIAN_PDF, 27)  # p.28: the USB stick procedure, '# cp debian.iso /dev/sdX'


@needs_shared
def test_a_scanned_pdf_page_is_read_by_the_packaged_models(tmp_path, usb_page_image):
    scan = tmp_path / "scan.pdf"
    usb_page_image.save(scan, resolution=144)  # an image-only PDF, as a scanner writes it (JPEG inside)
    seen = []
    doc = load_document(scan, progress=lambda *a: seen.append(a))
    assert doc.ocr_pages == [1] and doc.pages == 1 and all(b.page == 1 for b in doc.blocks)
    assert doc.warnings == ["1 page had no text layer and was read by OCR (page 1): check what is quoted from it "
                            "against the page"]
    lines = [ln for b in doc.blocks for ln in b.text.split("\n")]
    assert any(ln.startswith("# cp debian.iso /dev/sd") for ln in lines)  # the command, a line of its own
    assert "# sync" in lines
    assert "The procedures described in this section" in doc.full_text  # spaces put back (the model ran these together)
    # a scan has no bookmarks: its numbered section lines are its headings, and the commands are filed under them
    cmd = next(b for b in doc.blocks if b.text.startswith("# cp"))
    assert cmd.heading_path and cmd.heading_path[-1].startswith("4.3.1 Preparing a USB stick")
    assert seen[0] == ("OCR page 1", 0, 1) and seen[-1] == ("OCR", 1, 1)


def test_an_ocr_d_chapter_page_files_its_sections_under_the_chapter_s_title(tmp_path, monkeypatch):
    """A scan has no bookmarks: "Chapter 2", a gap, "System Requirements" on an OCR'd page make one heading, the
    chapter's title in the path of the sections under it (as the PDF's outline gives it), the running header left
    out. The OCR reader is replaced by the lines it would return; the PDF and its loader are real."""
    from PIL import Image

    pages = [["Chapter 2", "", "System Requirements", "", "This section says what hardware you need.", "",
              "2.1 Supported Hardware", "", "Debian supports many machines."],
             ["CHAPTER 2. SYSTEM REQUIREMENTS 2.2. MEMORY", "", "2.2 Memory", "", "You need 780MB of memory."]]
    scan = tmp_path / "scan.pdf"
    imgs = [Image.new("RGB", (300, 400), "white") for _ in pages]
    imgs[0].save(scan, save_all=True, append_images=imgs[1:])
    monkeypatch.setattr(ocr, "available", lambda: True)
    monkeypatch.setattr(ocr, "render_pdf_page", lambda p, i, scale=2.0: i)
    monkeypatch.setattr(ocr, "read_image", lambda i: list(pages[i]))
    doc = load_document(scan)
    assert doc.ocr_pages == [1, 2]
    paths = {b.text: b.heading_path for b in doc.blocks if not b.is_heading}
    assert paths["This section says what hardware you need."] == ("Chapter 2 System Requirements",)
    assert paths["You need 780MB of memory."] == ("Chapter 2 System Requirements", "2.2 Memory")


def test_ocr_off_or_a_blank_image_is_one_line(tmp_path):
    from PIL import Image

    scan = tmp_path / "blank.pdf"
    Image.new("RGB", (600, 800), "white").save(scan)
    with pytest.raises(IngestError, match=r"no extractable text \(a scanned page\? OCR is off: set OCR=auto\)"):
        load_document(scan, ocr=False)
    with pytest.raises(IngestError, match=r"no extractable text \(OCR read nothing on its pages\)"):
        load_document(scan)
    png = tmp_path / "blank.png"
    Image.new("RGB", (300, 200), "white").save(png)
    with pytest.raises(IngestError, match=r"no text found in the image \(OCR read nothing on it\)"):
        load_document(png)
    with pytest.raises(IngestError, match="not an image this reader knows"):
        load_document(write(tmp_path / "fake.jpg", b"\xff\xd8 not really a jpeg" * 10))


def test_boxes_on_one_line_join_left_to_right_and_a_gap_parts_paragraphs():
    box = lambda x, y, h=20: [[x, y], [x + 100, y], [x + 100, y + h], [x, y + h]]  # noqa: E731
    result = [(box(300, 102), "column", 0.9), (box(10, 100), "Hardware", 0.9), (box(10, 130), "Network", 0.9),
              (box(10, 200), "Next paragraph.", 0.9), (box(10, 230), " ", 0.9)]
    assert ocr.page_lines(result) == ["Hardware column", "Network", "", "Next paragraph."]


def test_a_page_in_two_columns_is_read_column_by_column():
    box = lambda x, y, w=200: [[x, y], [x + w, y], [x + w, y + 20], [x, y + 20]]  # noqa: E731
    result = [(box(10, 10, 500), "A TITLE ACROSS BOTH COLUMNS", 0.9)]
    result += [(box(10, 40 + 25 * i), f"left {i}", 0.9) for i in range(5)]
    result += [(box(300, 40 + 25 * i), f"right {i}", 0.9) for i in range(5)]
    result += [(box(190, 91, 40), "1", 0.9)]  # a small mark over the gutter: its column's, no new band
    lines = [ln for ln in ocr.page_lines(result) if ln]
    assert lines[0] == "A TITLE ACROSS BOTH COLUMNS"
    assert lines[1:6] == ["left 0", "left 1", "left 2 1", "left 3", "left 4"]
    assert lines[6:] == [f"right {i}" for i in range(5)]


def test_spaces_the_model_left_out_are_put_back_from_the_character_columns():
    # "Theprocedures described": letters 2 columns apart, then a jump of 5 before "p"
    chars = list("Theprocedures")
    cols = [1, 3, 5, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28]
    info = [100, [chars, list("described")], [cols, [32, 34, 36, 38, 40, 42, 44, 46, 48]], [], []]
    assert ocr.spaced(info) == "The procedures described"
    # a wide letter stands further from its neighbours without a space: "method" stays one word
    assert ocr.spaced([40, [list("method")], [[1, 5, 7, 9, 11, 13]], [], []]) == "method"


def test_the_ocr_model_files_are_checked_against_their_package(monkeypatch):
    from thread_rag import model_check

    checked = []
    monkeypatch.setattr(model_check, "verify", lambda p: checked.append(p.name) or p)
    monkeypatch.setattr(ocr, "_engine", None)
    ocr._ocr_engine()
    assert sorted(checked) == sorted(n.split("/")[-1] for n in ocr.MODEL_FILES)


def test_words_run_together_are_parted_into_known_words_but_paths_and_names_stay():
    pages = [["copy it to /boot/newinstall/ once thestickisunmounted --preseedfile=x",
              "Debian netinst and Debian netinst: the Debiannetinstimage", "unetbootin stays unetbootin"]]
    assert ocr.respace(pages) == [["copy it to /boot/newinstall/ once the stick is un mounted --preseedfile=x",
                                   "Debian netinst and Debian netinst: the Debian netinst image",
                                   "unetbootin stays unetbootin"]]


def test_pieces_of_one_word_are_joined_where_the_pages_print_it_whole_and_phrases_run_together_are_parted():
    body = ["Load the firmware: it is in the memory of the installed system, your system. Log in to the system.",
            "Memory sizes: 512 M, 1 M, 2 M, 4 M; a memory stick."] * 3  # "M" stands alone more often than "memory"
    pages = [body + ["4.3 Preparing Files for USB M emory Stick Booting",
                     '6.4 Loading Missing Firm ware (see "Installat io n").', "6.3.7 Making YourSystem Bootable",
                     "6.4.2 Firmware and theInstalled System",
                     "Making YourSystem Bootable; installation and installation, your system"]]
    out = ocr.respace(pages)[0]
    assert out[:6] == body  # "Log in to": "in" and "to" stand alone more often than "into" is printed
    assert out[6:] == ["4.3 Preparing Files for USB Memory Stick Booting",
                       '6.4 Loading Missing Firmware (see "Installation").', "6.3.7 Making Your System Bootable",
                       "6.4.2 Firmware and the Installed System",
                       "Making Your System Bootable; installation and installation, your system"]
    # a name the pages print twice stays whole ("VirtualBox"), and so do a quoted word and a command line's words
    names = [["Start VirtualBox now. VirtualBox runs. JavaScript and JavaScript", 'Option "AutoAddDevices" off',
              "# systemctl restart thenetworkservice", "then the network service is back: thenetworkservice"]]
    assert ocr.respace(names, keep=lambda ln: ln.startswith("#")) == [
        ["Start VirtualBox now. VirtualBox runs. JavaScript and JavaScript", 'Option "AutoAddDevices" off',
         "# systemctl restart thenetworkservice", "then the network service is back: the network service"]]
    # a piece that stands alone more often than the joined word is printed is left apart: "boot loader", "set up"
    assert ocr.respace([["boot loader boot boot bootloader bootloader set up set set setup setup"]]) == [
        ["boot loader boot boot bootloader bootloader set up set set setup setup"]]


@needs_shared
def test_a_scanned_document_remembers_its_ocr_pages_and_its_chunks_say_so(make_engine, tmp_path, usb_page_image):
    scan = tmp_path / "scan.pdf"
    usb_page_image.save(scan, resolution=144)
    e = make_engine()
    r = e.index_file(scan)
    assert r.status == "indexed" and "read by OCR (page 1)" in r.warnings[0]
    rec = e.documents()[0]
    assert rec.ocr_pages == [1]
    chunks = e.thread(rec.doc_id).chunks
    assert chunks and all(c.ocr and c.pages_label == "p.1 (OCR)" for c in chunks)
    e.close()
    again = make_engine()  # read back from the catalog by a new engine
    assert again.documents()[0].ocr_pages == [1] and again.thread("DOC1").chunks[0].pages_label == "p.1 (OCR)"
