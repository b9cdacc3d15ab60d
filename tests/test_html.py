"""The HTML loader: hand-made pages, and a page of the Debian installation guide's HTML edition."""
import pytest

from conftest import DATA, needs_shared, write
from thread_rag.errors import IngestError
from thread_rag.ingest.loaders import SUPPORTED_SUFFIXES, load_document

DEBIAN_HTML = DATA / "docs-debian-procedural/installation-guide-amd64-en"


def page(tmp_path, body: str, head: str = "", name: str = "page.html"):
    html = f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'>{head}</head>\n<body>\n{body}\n</body></html>\n"
    return load_document(write(tmp_path / name, html))


def texts(doc) -> list[str]:
    return [b.text for b in doc.blocks]


def block_with(doc, needle: str):
    return next(b for b in doc.blocks if needle in b.text)


def test_headings_nest_into_heading_paths(tmp_path):
    doc = page(tmp_path, "<h1>Install</h1><p>Intro.</p><h2>Prepare</h2><p>Get the image.</p>"
                         "<h3>USB</h3><p>Write it.</p><h2>Boot</h2><p>Press F12.</p><h4>Deep</h4><p>Odd.</p>",
               head="<title>Guide</title>")
    assert doc.kind == "html" and doc.pages is None
    heads = [(b.text, b.heading_path) for b in doc.blocks if b.is_heading]
    assert heads == [("Install", ("Install",)), ("Prepare", ("Install", "Prepare")),
                     ("USB", ("Install", "Prepare", "USB")), ("Boot", ("Install", "Boot")),
                     ("Deep", ("Install", "Boot", "Deep"))]
    assert block_with(doc, "Write it.").heading_path == ("Install", "Prepare", "USB")
    assert block_with(doc, "Press F12.").heading_path == ("Install", "Boot")
    assert "Guide" not in doc.full_text  # an h1 is there: the title is not a heading


def test_title_is_the_top_heading_without_an_h1_and_not_repeated(tmp_path):
    doc = page(tmp_path, "<p>Before.</p><h2>Part</h2><p>Text.</p>", head="<title>The  Manual</title>")
    assert doc.blocks[0].is_heading and doc.blocks[0].text == "The Manual"
    assert block_with(doc, "Before.").heading_path == ("The Manual",)
    assert block_with(doc, "Text.").heading_path == ("The Manual", "Part")
    same = page(tmp_path, "<h2>4.3. Files</h2><p>Text.</p>", head="<title>4.3. Files</title>", name="same.html")
    assert texts(same) == ["4.3. Files", "Text."] and same.blocks[1].heading_path == ("4.3. Files",)


def test_navigation_scripts_and_styles_are_left_out(tmp_path):
    doc = page(tmp_path, """
        <header><a href="/">Site Home</a></header>
        <nav><ul><li><a href="a.html">Menu entry</a></li></ul></nav>
        <div role="navigation">Role nav</div>
        <div class="breadcrumbs">Docs &gt; Guide</div>
        <div class="navheader"><table><tr><td><a href="p.html">Prev</a></td><td><a href="n.html">Next</a></td></tr>
        </table></div>
        <script>var hidden = "script text";</script><style>p { color: red }</style>
        <noscript>Enable JavaScript</noscript><aside>Related links</aside>
        <form><label>Search</label><input name="q"></form>
        <h1>Title<a class="headerlink" href="#t">¶</a></h1>
        <p>Real content.</p>
        <div class="navfooter"><a href="index.html">Home</a> <a href="up.html">Up</a></div>
        <footer>Copyright footer</footer>""")
    assert texts(doc) == ["Title", "Real content."]


def test_an_articles_header_keeps_its_heading(tmp_path):
    doc = page(tmp_path, "<header><h1>Site name</h1></header><main><article><header><h1>Post</h1>"
                         "<p>By someone</p></header><p>Body.</p></article></main>")
    assert texts(doc) == ["Post", "Body."] and doc.blocks[1].heading_path == ("Post",)


def test_pre_keeps_lines_and_indentation(tmp_path):
    doc = page(tmp_path, "<p>Run:</p><pre>\n<code># </code><b>cp debian.iso /dev/sdX</b>\nif true; then\n"
                         "    echo  two   spaces\nfi\n</pre><p>Done   with\n   it.</p>")
    assert texts(doc) == ["Run:", "# cp debian.iso /dev/sdX\nif true; then\n    echo  two   spaces\nfi",
                          "Done with it."]


def test_lists_become_dash_and_numbered_lines(tmp_path):
    doc = page(tmp_path, "<ul><li>Apples</li><li>Pears<ul><li>Green</li></ul></li></ul>"
                         "<ol><li>Download</li><li><p>Write</p><p>Then wait.</p></li><li>Boot</ol>"
                         "<ol start='4'><li>Four<li>Five</ol>")
    assert texts(doc) == ["- Apples\n- Pears\n  - Green", "1. Download\n2. Write\n   Then wait.\n3. Boot",
                          "4. Four\n5. Five"]


def test_table_becomes_pipe_rows_header_first(tmp_path):
    doc = page(tmp_path, "<table><caption>Table 3.2. Requirements</caption>"
                         "<tr><td>No desktop</td><td>256 MB</td></tr>"
                         "<thead><tr><th>Install Type</th><th>RAM</th></tr></thead>"
                         "<tr><td rowspan='2'>With Desktop</td><td>1 GB</td></tr><tr><td>2 GB</td></tr>"
                         "<tr><td>a | b</td><td></td></tr></table>")
    assert texts(doc) == ["Table 3.2. Requirements",
                          "| Install Type | RAM |\n| No desktop | 256 MB |\n| With Desktop | 1 GB |\n"
                          "| With Desktop | 2 GB |\n| a \\| b |  |"]


def test_a_framed_note_table_is_text(tmp_path):
    doc = page(tmp_path, "<div class='warning'><table><tr><td rowspan='2'><img alt='[Warning]' src='w.png'></td>"
                         "<th>Warning</th></tr><tr><td><p>This destroys the disk.</p></td></tr></table></div>")
    assert texts(doc) == ["Warning", "This destroys the disk."]


def test_br_entities_and_inline_elements(tmp_path):
    doc = page(tmp_path, "<p>Line one<br>Line <em>two</em> &amp; <code>three</code><br/>a&nbsp;b &lt;c&gt;</p>"
                         "<p>Para <a href='x'>link</a>, <strong>bold</strong><span>!</span></p>"
                         "<div>Div text<p>Inner</p>tail</div><dl><dt>Term</dt><dd>Meaning</dd></dl>"
                         "<blockquote>Quoted</blockquote><p>Old<br><br>style</p>")
    assert texts(doc) == ["Line one\nLine two & three\na b <c>", "Para link, bold!", "Div text", "Inner", "tail",
                          "Term", "Meaning", "Quoted", "Old", "style"]


def test_broken_html_still_yields_its_text(tmp_path):
    f = write(tmp_path / "broken.htm", "<html><head><title>Broken<p>First para<p>Second <b>bold <i>both"
                                       "<div>In div</span></td></table><ul><li>one<li>two</ul>Trailing <")
    doc = load_document(f)
    assert doc.kind == "html"
    for text in ("First para", "Second bold both", "In div", "- one\n- two", "Trailing"):
        assert any(text in t for t in texts(doc)), text


def test_charset_from_meta_and_bom(tmp_path):
    latin = "<html><head><meta http-equiv='Content-Type' content='text/html; charset=iso-8859-1'></head>" \
            "<body><p>Caf\xe9 na\xefve</p></body></html>"
    doc = load_document(write(tmp_path / "latin.html", latin.encode("latin-1")))
    assert texts(doc) == ["Café naïve"] and doc.encoding == "cp1252"
    bom = load_document(write(tmp_path / "bom.html", b"\xef\xbb\xbf<p>Caf\xc3\xa9</p>"))
    assert texts(bom) == ["Café"]
    bad = load_document(write(tmp_path / "bad.html", b"<meta charset='utf-8'><p>ok \xff here</p>"))
    assert texts(bad) == ["ok \ufffd here"]


def test_binary_file_named_html_is_one_line_error(tmp_path):
    with pytest.raises(IngestError, match=r"not an HTML file \(binary content\)") as e:
        load_document(write(tmp_path / "image.html", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8))
    assert "\n" not in str(e.value) and "image.html" in str(e.value)


def test_navigation_only_page_has_no_text(tmp_path):
    with pytest.raises(IngestError, match="no text content"):
        page(tmp_path, "<nav><a href='a.html'>A</a></nav><div class='navfooter'>Prev Next</div>"
                       "<script>x()</script>")


def test_folders_pick_up_html_pages(tmp_path):
    from thread_rag.engine import Engine
    from thread_rag.watch import supported

    class Walker:  # Engine's folder walk alone (no models, no store)
        supported = Engine.supported
        expand_paths = Engine.expand_paths

    assert SUPPORTED_SUFFIXES[".html"] == SUPPORTED_SUFFIXES[".htm"] == "html"
    for name in ("a.html", "b.HTM", "c.png", "c.css", "sub/d.html"):
        write(tmp_path / "site" / name, "<p>x</p>")
    # a site's images are left out of a folder walk (and of watch); named, an image is indexed (OCR)
    assert [p.name for p in Walker().expand_paths([tmp_path / "site"])] == ["a.html", "b.HTM", "d.html"]
    assert supported("x/page.htm") and not supported("x/c.png") and not supported("x/c.css")
    assert [p.name for p in Walker().expand_paths([tmp_path / "site" / "c.png"])] == ["c.png"]


def test_a_page_of_a_saved_site_is_filed_under_the_pages_above_it(tmp_path):
    site = tmp_path / "site"
    write(site / "index.html", "<title>The Guide</title><h1>The Guide</h1><p>Home.</p>")
    write(site / "ch04.html", '<title>Chapter 4. Media</title><link rel="up" href="index.html" title="The Guide">'
                              "<h1>Chapter 4. Media</h1><p>Chapter text.</p>")
    write(site / "ch04s03.html", '<head><title>4.3. USB</title><link href="ch04.html" rel="up"></head>'
                                 "<h2>4.3. USB</h2><p>Write it.</p><h3>4.3.1. Hybrid</h3><p>cp it.</p>")
    write(site / "loop.html", '<link rel="up" href="loop.html"><h2>Loop</h2><p>Self.</p>')
    write(site / "gone.html", '<link rel="up" href="missing.html"><h2>Gone</h2><p>x</p>')
    write(tmp_path / "x.html", "<title>Outside</title>")
    write(site / "out.html", '<link rel="up" href="../x.html"><h2>Out</h2><p>o</p>')
    write(site / "disc.iso", "<title>Not a page</title>")
    write(site / "iso.html", '<link rel="up" href="disc.iso"><h2>Iso</h2><p>i</p>')
    # Texinfo: the Top page links up out of the site ("(dir)"); it is the top, left out like a home page
    write(site / "Top.html", '<link rel="up" href="dir.html#Top" title="(dir)"><title>Top (Bash)</title><p>t</p>')
    write(site / "Shell.html", '<link rel="up" href="Top.html#Top" title="Top"><title>Syntax</title><p>s</p>')
    write(site / "Quoting.html", '<link rel="up" href="Shell.html?x=1" title="Shell Syntax"><h3>3.1 Quoting</h3>'
                                 "<p>q</p>")
    (site / "latin.html").write_bytes('<meta charset="iso-8859-1"><title>Chapitre 1. Démarrage</title>'
                                      '<link rel="up" href="index.html">'.encode("latin-1"))
    write(site / "fr.html", '<link rel="up" href="latin.html"><link rel="up" href="x"><h2>1.1 Écran</h2><p>f</p>')
    doc = load_document(site / "ch04s03.html")
    # the chain of rel="up" links (the site's top page left out: it is every page's), its title attribute or its page's
    assert block_with(doc, "cp it.").heading_path == ("Chapter 4. Media", "4.3. USB", "4.3.1. Hybrid")
    assert block_with(doc, "Write it.").heading_path == ("Chapter 4. Media", "4.3. USB")
    assert "Chapter 4. Media" not in doc.full_text  # a path, not text
    assert block_with(load_document(site / "ch04.html"), "Chapter text.").heading_path == ("Chapter 4. Media",)
    assert block_with(load_document(site / "loop.html"), "Self.").heading_path == ("Loop",)
    for name, needle, own in (("gone", "x", "Gone"), ("out", "o", "Out"), ("iso", "i", "Iso")):  # nothing above
        assert block_with(load_document(site / f"{name}.html"), needle).heading_path == (own,)
    assert block_with(load_document(site / "Quoting.html"), "q").heading_path == ("Shell Syntax", "3.1 Quoting")
    # a page above is read in the encoding it declares
    assert block_with(load_document(site / "fr.html"), "f").heading_path == ("Chapitre 1. Démarrage", "1.1 Écran")


@needs_shared
def test_debian_html_page_usb_stick_commands():
    doc = load_document(DEBIAN_HTML / "ch04s03.html")
    block = next(b for b in doc.blocks if "# cp debian.iso /dev/sdX" in b.text.splitlines())
    assert "# sync" in block.text.splitlines()
    assert block.heading_path == ("Chapter 4. Obtaining System Installation Media",  # the page above it (rel="up")
                                  "4.3. Preparing Files for USB Memory Stick Booting",
                                  "4.3.1. Preparing a USB stick using a hybrid CD/DVD image")
    nav = {"Prev", "Next", "Up", "Home", "4.2. Downloading Files from Debian Mirrors",
           "4.4. Preparing Files for Hard Disk Booting", "Chapter 4. Obtaining System Installation Media"}
    for b in doc.blocks:
        assert not nav & set(b.text.split("\n")) and not {"Prev", "Next", "Up", "Home"} & set(b.text.split())
    assert sum(b.is_heading for b in doc.blocks) == 2  # the title is the h2: not repeated above it
