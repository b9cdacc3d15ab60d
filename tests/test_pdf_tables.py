"""Tables of figures in PDFs (issue 61): rows with their labels, column headers, units and title; a chunk that
starts inside a table repeats its header; the quote of a figure holds its row. A statement PDF the tests write
themselves, and a filing of ../shared/data/financebench-dev as a regression guard."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from table_pdf import statement_pdf
from thread_rag.ingest.chunker import SentenceChunker, table_head
from thread_rag.ingest.loaders import load_document
from thread_rag.threads.passages import join_thread

FILINGS = Path(__file__).resolve().parents[2] / "shared/data/financebench-dev/pdfs"
needs_filings = pytest.mark.skipif(not FILINGS.is_dir(), reason="../shared/data/financebench-dev not present")


def _rows(doc) -> dict[str, tuple]:
    """Each pipe row's label -> (the row, its block's page and heading path)."""
    out = {}
    for b in doc.blocks:
        for ln in b.text.split("\n"):
            if ln.startswith("| ") and not ln.startswith("| ---"):
                out.setdefault(ln.split(" | ")[0][2:].rstrip(" |"), (ln, b.page, b.heading_path))
    return out


def test_a_statement_s_rows_keep_their_label_headers_units_and_title(tmp_path):
    doc = load_document(statement_pdf(tmp_path / "widget.pdf"))
    rows = _rows(doc)
    assert rows["Service revenue"][0] == "| Service revenue | 2023: 1,204 | 2022: 1,118 |"
    assert rows["Product revenue"][0] == "| Product revenue | 2023: $ 3,410 | 2022: $ 3,002 |"
    assert rows["Cost of revenue"][0] == "| Cost of revenue | 2023: (1,877) | 2022: (1,650) |"
    assert rows["Operating expenses"][0] == "| Operating expenses |"  # a sub-heading inside the table
    head = next(b.text.split("\n")[0] for b in doc.blocks if b.text.startswith("| Consolidated"))
    assert head == ("| Consolidated Statements of Operations, (In millions, except per share data) "
                    "| Year Ended December 31, 2023 | Year Ended December 31, 2022 |")  # a spanning header
    line, page, path = rows["Operating income"]
    assert page == 2 and path[-1] == "Consolidated Statements of Operations"
    after = next(b for b in doc.blocks if b.text.startswith("The accompanying notes"))
    assert "Consolidated Statements of Operations" not in after.heading_path  # the title heads the rows only
    prose = next(b for b in doc.blocks if b.text.startswith("Widget Corp makes widgets"))
    assert "|" not in prose.text and prose.page == 1  # a page of prose is read as before


def test_a_chunk_that_starts_inside_a_table_repeats_its_header_and_the_walk_shows_it_once(tmp_path):
    doc = load_document(statement_pdf(tmp_path / "widget.pdf"))
    words = lambda texts: [len(t.split()) for t in texts]  # noqa: E731 - a word is a token here
    chunks = SentenceChunker(words, target=120, overlap=0, min_tokens=8).chunk(doc)
    inside = [c for c in chunks if c.text.startswith("| Consolidated") and "| Service revenue |" not in c.text]
    assert inside, [c.text[:80] for c in chunks]
    head = table_head(inside[0].text)
    assert head.endswith("| --- | --- | --- |") and "(In millions" in head
    assert all(c.n_tokens <= 120 for c in chunks if "|" in c.text)  # the repeated header counts in the budget
    long_head = SentenceChunker(words, target=60, overlap=0, min_tokens=8).chunk(doc)  # a header over a third
    assert sum(c.text.count("| Consolidated") for c in long_head) == 1  # of the budget is not repeated
    joined = join_thread(chunks)
    assert joined.count("| Consolidated Statements of Operations") == 1
    for label in ("Service revenue", "Sales and marketing", "Operating income"):
        assert joined.count(f"| {label} |") == 1, label


def test_a_figure_s_quote_holds_its_row_and_header(tmp_path, make_engine):
    from thread_rag.agent.loop import quote_answer

    engine = make_engine()
    doc_id = engine.index_file(statement_pdf(tmp_path / "widget.pdf")).doc_id
    q = quote_answer(engine, "What was the service revenue in 2023?", doc_id=doc_id)
    shown = "\n".join(f"{ln['header']}\n{ln['text']}" for ln in q["quote"])
    assert "| Service revenue | 2023: 1,204 | 2022: 1,118 |" in shown, shown
    assert "(In millions" in shown  # the units come with the row


@needs_filings
def test_a_filing_s_statements_keep_rows_headers_units_and_pages():
    """A regression guard on a real filing: a loader change that loses a statement's rows, their headers or
    units, or moves a figure to another page, fails here."""
    doc = load_document(FILINGS / "AMCOR_2023Q4_EARNINGS.pdf")
    rows = _rows(doc)
    capex = rows["Purchase of property, plant, and equipment and other intangible assets"]
    assert capex[0].endswith("| 2022: (527) | 2023: (526) |") and capex[1] == 9
    assert capex[2][-1] == "U.S. GAAP Condensed Consolidated Statements of Cash Flows (Unaudited)"
    ppe = rows["Property, plant and equipment, net"]
    assert ppe[0] == "| Property, plant and equipment, net | 2022: 3,646 | 2023: 3,762 |" and ppe[1] == 9
    heads = [ln for b in doc.blocks for ln in b.text.split("\n") if ln.startswith("| U.S. GAAP Condensed")]
    assert any(re.search(r"Balance Sheets \(Unaudited\), \(\$ million\) \| June 30, 2022 \| June 30, 2023 \|", h)
               for h in heads), heads
    assert rows["Net sales"][0].startswith("| Net sales | 2022 $ million: 14,544 | 2023 $ million: 14,694")


def test_rows_of_one_table_quoted_together_show_its_header_once():
    from thread_rag.agent.quote import Quote, QuoteLine

    head = "| Statement, (In millions) | 2023 | 2022 |\n| --- | --- | --- |\n"
    row = lambda text, chunk="DOC1_004": QuoteLine(text, "row", 1, chunk, "p.2", 1.0, header=head)  # noqa: E731
    quote = Quote(lines=[row("| Service revenue | 2023: 1,204 |"), row("| Total revenue | 2023: 4,614 |"),
                         row("| Net income | 2023: 99 |", chunk="DOC1_005")])
    assert quote.text().count("| Statement, (In millions)") == 2  # once per chunk's run of rows
    assert quote.text().startswith("| Statement, (In millions) | 2023 | 2022 |\n| --- | --- | --- |\n| Service")


def _long_pdf(path: Path, pages: int = 44) -> Path:
    from table_pdf import write_pdf

    import random

    rng = random.Random(7)
    word = lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))  # noqa: E731
    body = [[(72, 720 - 16 * i, f"Page {n} line {i}: " + " ".join(word() for _ in range(10)) + ".", 10)
             for i in range(6)] for n in range(1, pages + 1)]
    return write_pdf(path, body)


def test_a_long_pdf_is_read_by_two_workers_exactly_as_by_one(tmp_path, monkeypatch):
    """Issue 61, indexing speed: a PDF of PARALLEL_PAGES pages or more is read by two worker processes (pypdf on one
    core is most of a long PDF's reading time); the blocks are the same as read here, and a worker that cannot run
    leaves the reading to this process."""
    import sys

    from thread_rag.ingest import pdf

    f = _long_pdf(tmp_path / "long.pdf")
    (tmp_path / "json.py").write_text("raise SystemExit(3)\n")  # a module in the current folder never runs in a worker
    monkeypatch.chdir(tmp_path)
    used = []
    real = pdf._read_pages_in_parts
    monkeypatch.setattr(pdf, "_read_pages_in_parts", lambda *a: used.append(real(*a)) or used[-1])
    two = load_document(f)
    assert used and used[-1] is not None and two.pages == 44
    monkeypatch.setattr(pdf, "PARALLEL_PAGES", 10 ** 6)
    one = load_document(f)
    assert used[-1] is None and [b.__dict__ for b in two.blocks] == [b.__dict__ for b in one.blocks]
    assert any("Page 44 line 3:" in b.text and b.page == 44 for b in two.blocks)
    monkeypatch.setattr(pdf, "PARALLEL_PAGES", 40)
    monkeypatch.setattr(sys, "executable", "/bin/false")  # a worker that fails: read here, the same
    again = load_document(f)
    assert used[-1] is None and [b.__dict__ for b in again.blocks] == [b.__dict__ for b in one.blocks]


def test_contents_pages_and_code_in_columns_are_no_tables_of_figures(tmp_path):
    """A table of contents (entries, dot leaders, page numbers) and a configuration file set in a monospaced font
    with columns of numbers (an /etc/fstab) hold many numbers in columns: neither becomes pipe rows (the contents
    lines are left out as before, the code keeps its lines)."""
    from table_pdf import write_pdf

    toc = [item for i in range(1, 8) for item in ((72, 700 - 18 * i, f"{i}.1 Section title number {i} " + ". " * 30, 10),
                                                  (-520, 700 - 18 * i, str(10 * i + 3), 10))]
    fstab = [(72, 720, "Mount the partitions as this file says:", 10)] + [
        item for i in range(1, 6) for item in ((72, 700 - 14 * i, f"/dev/sda{i}", 9, "Courier"),
                                               (200, 700 - 14 * i, f"/mnt/p{i} ext4 defaults", 9, "Courier"),
                                               (-420, 700 - 14 * i, "10", 9, "Courier"),
                                               (-460, 700 - 14 * i, str(i + 10), 9, "Courier"),
                                               (-500, 700 - 14 * i, str(100 + i), 9, "Courier"))]
    doc = load_document(write_pdf(tmp_path / "toc.pdf", [toc, fstab]))
    assert not any("| --- |" in b.text for b in doc.blocks), [b.text[:80] for b in doc.blocks]
    assert any("/dev/sda3" in b.text for b in doc.blocks)


def test_reading_tables_waits_for_pdfium_held_by_another_thread(tmp_path):
    """pdfium is not thread-safe, and the HTTP server renders a page while it indexes an upload: reading a PDF's
    tables holds the one pdfium lock (a page at a time), as the page renderer and OCR do."""
    import threading
    import time

    from thread_rag.ingest.pdf_tables import read_tables
    from thread_rag.pdfium_lock import PDFIUM

    f = statement_pdf(tmp_path / "widget.pdf")
    texts = [["x"], ["1,204 1,118 3,410 3,002 4,614 4,120 1,877 1,650 512 498 301 287 1,924 1,685"]]
    got = {}
    with PDFIUM:
        reader = threading.Thread(target=lambda: got.update(read_tables(f, None, texts, set())))
        reader.start()
        time.sleep(0.3)
        assert reader.is_alive() and not got  # waiting for the lock, not reading
    reader.join(10)
    assert list(got) == [1] and any("| Service revenue | 2023: 1,204" in ln for ln in got[1][0])


def test_a_sparse_column_a_list_above_and_a_table_below_keep_their_places(tmp_path):
    """Found in review: a "Change" column filled on one row was merged into its neighbour ("2022 Change: 1,118"); a
    list above a table without a header became its rows, headed by the page's running title; and a second table
    right under a first took the first's last row ("Net income $ 1,000 $ 1,000") as its title."""
    from table_pdf import write_pdf

    items = [(-540, 760, "Widget Corp Annual Report 2018", 9)]
    items += [(72, 740 - 12 * i, f"Point {w} of the plan", 9) for i, w in enumerate(("one", "two", "three", "four"))]
    items += [(-430, 680, "2023", 9), (-500, 680, "2022", 9), (-560, 680, "Change", 9)]
    rows = [("Service revenue", "1,204", "1,118", "8%"), ("Product revenue", "3,410", "3,002", None),
            ("Net income", "$ 1,000", "$ 1,000", None)]
    y = 664
    for label, a, b, c in rows:
        items += [(72, y, label, 9), (-430, y, a, 9), (-500, y, b, 9)] + ([(-560, y, c, 9)] if c else [])
        y -= 14
    items += [(-430, y, "Q4", 9), (-500, y, "Q3", 9)]
    for label, a, b in (("Units sold", "310", "290"), ("Units returned", "12", "19"), ("Units kept", "298", "281")):
        y -= 14
        items += [(72, y, label, 9), (-430, y, a, 9), (-500, y, b, 9)]
    doc = load_document(write_pdf(tmp_path / "report.pdf", [items]))
    rows = _rows(doc)
    assert rows["Service revenue"][0] == "| Service revenue | 2023: 1,204 | 2022: 1,118 | Change: 8% |"
    assert rows["Product revenue"][0] == "| Product revenue | 2023: 3,410 | 2022: 3,002 |"
    assert not {"Point one of the plan", "Point two of the plan", "Point three of the plan"} & set(rows)  # text
    assert rows["Units sold"][0] == "| Units sold | Q4: 310 | Q3: 290 |"
    assert sum(b.text.count("| Net income |") for b in doc.blocks) == 1
    assert not any("Net income" in " ".join(b.heading_path) for b in doc.blocks)


def test_a_headerless_table_takes_at_most_two_label_lines_above_it_and_nothing_of_the_table_above():
    """Found in review: without a header, every short line above a table became its sub-heading rows (the walk's
    limit compared the wrong line); and a table's title or header was looked for inside the table above it."""
    from thread_rag.ingest.pdf_tables import Cell, Line, find_tables, table_lines

    def line(label, *figures):
        cells = [Cell(label, 72, 72 + 5 * len(label))] if label else []
        return Line(cells + [Cell(f, 430 - 70 * k - 5 * len(f), 430 - 70 * k) for k, f in enumerate(figures)], 0, 9)

    lines = [Line([Cell("Widget Corp Annual Report 2018", 300, 430)], 0, 9)]  # a running title over the columns
    lines += [line(f"Point {w}") for w in ("one", "two", "three", "four", "five")]
    lines += [line("Service revenue", "1,204", "1,118"), line("Product revenue", "3,410", "3,002"),
              line("Net income", "$ 1,000", "$ 1,000"), line("", "Q4", "Q3")]
    lines[-1].cells = [Cell("Q4", 420, 430), Cell("Q3", 350, 360)]
    lines += [line("Units sold", "310", "290"), line("Units returned", "12", "19"), line("Units kept", "298", "281")]
    first, second = find_tables(lines, 612)
    rows = table_lines(first)
    assert "| Point one |" not in rows and "| Point two |" not in rows and "| Point three |" not in rows
    assert first.last <= second.first and second.title != "Net income $ 1,000 $ 1,000"


def test_a_statement_title_beside_the_company_name_is_the_title_not_a_column_header(tmp_path):
    """Found on a filing: "Consolidated Balance Sheets" at the margin with the company's name set over the figure
    columns on the same line was read as a header line (the name went into every column's header, the title was
    lost) and the page's running "Table of Contents" above it became the table's title."""
    from table_pdf import write_pdf

    items = [(19, 767, "Table of Contents", 9), (19, 747, "Consolidated Balance Sheets", 11),
             (-594, 747, "Widget Corp and Subsidiary Companies", 9), (500, 729, "December 31,", 9),
             (19, 718, "(in millions, except per share amounts)", 9), (-473, 718, "2023", 9), (-559, 718, "2022", 9)]
    y = 700
    for label, a, b in (("Cash and cash equivalents", "$ 1,671", "$ 2,148"), ("Inventories", "2,904", "2,481"),
                        ("Other current assets", "1,157", "1,026"), ("Total current assets", "7,453", "7,659"),
                        ("Goodwill, net", "2,394", "2,421"), ("Total assets", "27,499", "30,154")):
        items += [(34, y, label, 9), (-501, y, a, 9), (-588, y, b, 9)]
        y -= 12
    doc = load_document(write_pdf(tmp_path / "sheet.pdf", [items]))
    rows = _rows(doc)
    line, page, path = rows["Total current assets"]
    assert line == "| Total current assets | 2023: 7,453 | 2022: 7,659 |", line
    assert path[-1].startswith("Consolidated Balance Sheets"), path
    head = next(ln for b in doc.blocks for ln in b.text.split("\n") if ln.startswith("| Consolidated"))
    assert "Widget Corp" not in head.split(" | ", 1)[1], head  # the name heads no column
    assert "(in millions" in head
    # the years on the title's own line still head the columns (found in review)
    items = [(19, 747, "Consolidated Statements of Operations", 11), (-473, 747, "2023", 9), (-559, 747, "2022", 9),
             (19, 733, "(in millions)", 9)]
    y = 715
    for label, a, b in (("Net sales", "$ 1,671", "$ 2,148"), ("Cost of sales", "904", "981"),
                        ("Gross margin", "767", "1,167"), ("Operating expenses", "457", "526"),
                        ("Operating income", "310", "641"), ("Net income", "$ 245", "$ 498")):
        items += [(34, y, label, 9), (-501, y, a, 9), (-588, y, b, 9)]
        y -= 12
    rows = _rows(load_document(write_pdf(tmp_path / "ops.pdf", [items])))
    assert rows["Net sales"][0] == "| Net sales | 2023: $ 1,671 | 2022: $ 2,148 |", rows["Net sales"]


def test_periods_are_matched_by_their_year_and_model_names_are_left_alone():
    from thread_rag.retrieve.search_index import bm25_tokenize

    (got,) = bm25_tokenize(["FY2018 capex, FY22, Q1'21, Q12021; an H100, h264 video, a Q400 plane, CY2019"])
    assert got == ["fy", "2018", "capex", "fy", "2022", "q1", "2021", "q1", "2021", "h100", "h264", "video", "q400",
                   "plane", "cy", "2019"]


def test_review_fixes_quote_rows_figure_words_and_rule_line_tokens():
    """The smaller review fixes: a row quoted from another source shows its header again; FIGURE is a figure
    question's words, not a manual's "baud rate" or "how many"; a chunk that starts at a table's rule line counts
    the header row it repeats."""
    from thread_rag.agent.quote import FIGURE, Quote, QuoteLine
    from thread_rag.ingest.chunker import Unit

    head = "| Statement | 2023 |\n| --- | --- |\n"
    a = QuoteLine("| Revenue | 2023: 1 |", "row", 1, "DOC1_004", "p.2", 1.0, header=head)
    b = QuoteLine("| Revenue | 2023: 2 |", "row", 2, "DOC1_004", "p.2", 1.0, header=head)  # another source, same id
    assert Quote(lines=[a, b]).text().count("| Statement |") == 2
    assert FIGURE.search("What is the FY2018 capital expenditure amount (in USD millions)?")
    assert not FIGURE.search("What baud rate does the console use?") and not FIGURE.search("How many disks?")
    words = lambda texts: [len(t.split()) for t in texts]  # noqa: E731
    text = "| Title of it | 2023 | 2022 |\n| --- | --- | --- |\n" + "".join(f"| Row {i} | 2023: {i} | 2022: {i} |\n"
                                                                           for i in range(30))
    from thread_rag.records import Block, LoadedDocument
    from thread_rag.ingest.text import assign_offsets

    doc = LoadedDocument(path="x.pdf", kind="pdf", blocks=[Block(text=text.rstrip("\n"), page=1)], pages=1)
    assign_offsets(doc.blocks)
    units = SentenceChunker(words, target=60, overlap=0, min_tokens=8).units(doc)
    rule = next(u for u in units if u.text.startswith("| ---"))
    assert rule.table_head == "| Title of it | 2023 | 2022 |" and rule.head_tokens == 9  # the header row alone (0 before the fix)
    assert isinstance(rule, Unit)


def test_the_page_check_cache_notices_a_same_size_copy_that_kept_its_mtime(tmp_path):
    import hashlib
    import os
    import shutil

    from thread_rag import page_view
    from thread_rag.errors import ThreadRagError

    f, other = tmp_path / "a.pdf", tmp_path / "b.pdf"
    f.write_bytes(b"%PDF-1.4 one")
    other.write_bytes(b"%PDF-1.4 two")
    good = hashlib.sha256(b"%PDF-1.4 one").hexdigest()
    assert page_view.checked_file(str(f), good) == f
    st = f.stat()
    shutil.copyfile(other, f)  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the modification time kept, as cp -p would
    with pytest.raises(ThreadRagError, match="changed since it was indexed"):
        page_view.checked_file(str(f), good)
