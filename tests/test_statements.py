"""A question that names a financial statement reads that statement first (issue 61): the names a question gives
it, the titles a filing prints, and a search over a filing whose notes and prose outscore the statement itself."""
from __future__ import annotations

from pathlib import Path

import pytest

from table_pdf import write_pdf
from thread_rag.retrieve.pipeline import Pipeline
from thread_rag.retrieve.statements import STATEMENTS, longest_runs, named, under

BY_NAME = {s.name: s for s in STATEMENTS}


def test_the_names_a_question_gives_a_statement():
    cases = {"Answer from the cash flow statement": ["cash flow statement"],
             "per the statements of cash flows": ["cash flow statement"],
             "on the statement of financial position": ["balance sheet"],
             "What does the balance sheet say?": ["balance sheet"],
             "using the statement of operations": ["income statement"],
             "From the P&L, what was revenue?": ["income statement"],
             "the income statement and the cash flow statement": ["cash flow statement", "income statement"],
             "What was comprehensive income?": [], "What was net income in 2022?": [],
             "How do I reset the database?": []}
    for question, names in cases.items():
        assert [s.name for s in named(question)[0]] == names, question


def test_a_metric_named_with_a_fiscal_period_implies_the_statements_that_print_it():
    cases = {"Does Acme have positive working capital based on FY2022 data?": ["balance sheet"],
             "What is the FY2019 fixed asset turnover ratio?": ["balance sheet", "income statement"],
             "What was FY2020 capex?": ["cash flow statement"],
             "What is the working capital?": [],  # no period: not a question about a filing's figure
             "How much stock did the FY2022 plan sell?": [],  # one everyday word names no metric
             "What was the FY2021 effective tax rate?": []}  # a note's figure, not a statement's
    for question, names in cases.items():
        assert [s.name for s in named(question)[0]] == names, question
        assert named(question)[1] is False
    # a statement named outright wins over those a metric implies
    assert named("From the cash flow statement, what was FY2020 working capital?") == ([BY_NAME["cash flow statement"]],
                                                                                      True)


def test_a_statement_is_its_heading_or_a_table_line_at_the_chunk_s_start_not_prose():
    cash, sheet, income = BY_NAME["cash flow statement"], BY_NAME["balance sheet"], BY_NAME["income statement"]
    assert under(cash, ["U.S. GAAP Condensed Consolidated Statements of Cash Flows (Unaudited)"], "")
    assert under(sheet, ["Consolidated Balance Shee t"], "")  # a PDF's spacing split the word
    assert under(income, ["Consolidated Statements of Earnings"], "")
    assert not under(income, ["CONSOLIDATED STATEMENTS OF COMPREHENSIVE INCOME"], "")
    assert not under(sheet, ["Offsetting"], "| Gross Amounts Offset in the Consolidated Balance Sheet | 2018 |")
    row = "| Product sales | CONSOLIDATED STATEMENTS OF OPERATIONS (Amounts in millions) 2019: $ 1,975 |"
    assert under(income, ["ACME INC."], "| --- | --- |\n| Net revenues |\n" + row)  # a title the loader put in a cell
    assert not under(cash, ["Liquidity"], "Our consolidated statements of cash flows show that cash grew.")


def test_the_statement_is_the_longest_run_of_titled_chunks_in_each_document():
    # document 1: a note's table at 40 names the statement; the statement itself is 10-13 (12 missing: a page
    # break's prose inside it); document 2 has one titled chunk
    rows = [(1, 10, 100), (1, 11, 101), (1, 13, 103), (1, 40, 140), (2, 5, 205)]
    assert sorted(longest_runs(rows)) == [100, 101, 103, 205]
    assert longest_runs([]) == []


def _filing(path):
    """Three pages: management's discussion (prose about revenue), the statement of operations, and a note whose
    table and text say "total revenue" more often than the statement does."""
    said = ("Total revenue grew in 2023. Total revenue rose as more widgets sold; total revenue in 2023 was higher",
            "than in 2022 because total revenue from services grew in every region where the company sells widgets.",
            "Management expects total revenue to grow again next year as new widget lines reach more customers.")
    prose = [(72, 720, "Management's discussion", 14)] + [(72, 690 - 14 * i, said[i % 3], 10) for i in range(18)]
    statement = [(72, 724, "Consolidated Statements of Operations", 11), (400, 700, "Year Ended December 31,", 9),
                 (72, 686, "(In millions)", 9), (-430, 686, "2023", 9), (-520, 686, "2022", 9)]
    y = 668
    for label, a, b in (("Service revenue", "1,204", "1,118"), ("Product revenue", "3,410", "3,002"),
                        ("Total revenue", "4,614", "4,120"), ("Cost of revenue", "(1,877)", "(1,650)"),
                        ("Operating income", "1,924", "1,685")):
        statement += [(72, y, label, 9), (-430, y, a, 9), (-520, y, b, 9)]
        y -= 16
    note = [(72, 724, "Note 3. Total revenue by region", 11),
            (72, 700, "What was total revenue in 2023 by region? Total revenue in 2023 by region follows.", 10),
            (72, 670, "(In millions)", 9), (-430, 670, "2023", 9), (-520, 670, "2022", 9)]
    y = 652
    for label, a, b in (("Total revenue, Americas", "2,100", "1,900"), ("Total revenue, Europe", "1,514", "1,320"),
                        ("Total revenue, Asia", "1,000", "900")):
        note += [(72, y, label, 9), (-430, y, a, 9), (-520, y, b, 9)]
        y -= 16
    return write_pdf(path, [prose, statement, note])


def test_a_question_naming_the_income_statement_reads_it_first(tmp_path, make_engine):
    engine = make_engine(RERANKER="packaged:ms-marco-MiniLM-L-12-v2")
    doc_id = engine.index_file(_filing(tmp_path / "filing.pdf")).doc_id
    question = "Using the income statement, what was total revenue in 2023?"
    row = "| Total revenue | 2023: 4,614 | 2022: 4,120 |"
    plain = engine.retriever.search(question, doc_id=doc_id, k=3, pipeline=Pipeline(statements=False))
    assert row not in plain.hits[0].text  # the note outscores the statement on its own
    found = engine.retriever.search(question, doc_id=doc_id, k=3)
    assert row in found.hits[0].text and found.hits[0].page_end >= 2 and found.hits[0].ranked_by == "statement"
    assert "section_ms" in found.timings_ms
    plain_q = "What was total revenue in 2023?"  # names no statement (and no fiscal period): searched as before
    other = engine.retriever.search(plain_q, doc_id=doc_id, k=3)
    before = engine.retriever.search(plain_q, doc_id=doc_id, k=3, pipeline=Pipeline(statements=False))
    assert [(h.chunk_id, h.score, h.ranked_by) for h in other.hits] == \
        [(h.chunk_id, h.score, h.ranked_by) for h in before.hits]
    one = engine.retriever.search(question, doc_id=doc_id, k=1).hits  # k=1: the statement's best hit
    assert len(one) == 1 and row in one[0].text
    off = make_engine(RERANKER="packaged:ms-marco-MiniLM-L-12-v2", STATEMENTS=False)  # the setting turns it off
    assert [h.chunk_id for h in off.retriever.search(question, doc_id=doc_id, k=3).hits] == \
        [h.chunk_id for h in plain.hits]
    library = engine.retriever.search(question, k=3)  # the whole library: the statement's terms find it
    assert row in library.hits[0].text


def test_a_statement_s_hits_go_first_or_after_the_best_hit():
    from thread_rag.retrieve.pipeline import _Ranked

    whole = _Ranked([5, 6, 7, 8], {5: 0.9, 6: 0.8, 7: 0.7, 8: 0.6}, {}, {}, {})
    section = _Ranked([7, 9, 5], {7: 0.99, 9: 0.5, 5: 0.1}, {}, {}, {})
    named = section.before(whole, 2)
    assert named.cand == [7, 9, 5, 6, 8] and named.final[7] == 0.99 and named.final[5] == 0.9
    implied = section.before(whole, 2, after=1)
    assert implied.cand == [5, 7, 9, 6, 8] and implied.final[5] == 0.9


FILINGS = Path(__file__).resolve().parents[2] / "shared/data/financebench-dev/pdfs"


@pytest.mark.slow
@pytest.mark.skipif(not FILINGS.is_dir(), reason="../shared/data/financebench-dev not present")
def test_a_real_filing_s_statements_are_read_first(make_engine):
    """A regression guard on a real earnings release: a loader or search change that loses its statements' titles
    fails here."""
    engine = make_engine()
    doc_id = engine.index_file(FILINGS / "AMCOR_2023Q4_EARNINGS.pdf").doc_id
    cases = {"Using the cash flow statement, how much did Amcor spend on capital expenditure in FY2023?":
             "Statements of Cash Flows",
             "From the balance sheet, what were Amcor's total current liabilities at June 30, 2023?": "Balance Sheet"}
    for question, title in cases.items():
        top = engine.retriever.search(question, doc_id=doc_id, k=3).hits[0]
        assert top.ranked_by == "statement" and top.page_start == 9 and title in top.heading_path[-1], \
            (question, top.chunk_id, top.heading_path)


def _cash_flows(path):
    """A cash flow statement of 36 rows on one page (several chunks), its capital expenditure printed as
    "Purchases of property, plant and equipment" in the middle, among rows that say "cash" and "capital" more."""
    rows = [f"{kind} of capital {what}" for kind in ("Cash proceeds", "Net cash change", "Capital cash flow")
            for what in ("leases", "notes", "grants", "stock", "units", "bonds")]
    rows = rows[:10] + ["Purchases of property, plant and equipment", "Proceeds from sale of equipment"] + rows[10:] + \
        [f"Other cash item {i}" for i in range(6)] + ["Net cash used in investing activities"]
    page = [(72, 740, "Consolidated Statements of Cash Flows", 11), (72, 726, "(In millions)", 9),
            (-430, 726, "2023", 9), (-520, 726, "2022", 9)]
    y = 708
    for i, label in enumerate(rows):
        page += [(72, y, label, 9), (-430, y, f"{(i * 37) % 900 + 100:,}", 9), (-520, y, f"{(i * 53) % 900 + 100:,}", 9)]
        y -= 17
    return write_pdf(path, [page])


def test_a_named_metric_reads_first_the_statement_chunk_printing_its_row(tmp_path, make_engine):
    """The cash flow statement of a filing spans several chunks; asked for capital expenditure, the statement's
    search read the chunks that say "cash" and "capital" most, not the one printing "Purchases of property, plant
    and equipment", so the quote could not hold the figure. A chunk with a row printed under one of the metric's
    labels (metrics.json ``printed``) goes first among the statement's hits."""
    engine = make_engine(RERANKER="packaged:ms-marco-MiniLM-L-12-v2")
    doc_id = engine.index_file(_cash_flows(tmp_path / "cash.pdf")).doc_id
    assert len(engine.retriever.search("cash flows", doc_id=doc_id, k=10).hits) >= 3  # the statement is split
    question = "Using the cash flow statement, what was the 2023 capital expenditure amount?"
    found = engine.retriever.search(question, doc_id=doc_id, k=3)
    assert "| Purchases of property, plant and equipment |" in found.hits[0].text, [h.text[:80] for h in found.hits]
    assert found.hits[0].ranked_by == "statement"


def test_a_metric_named_by_its_printed_words_outranks_an_everyday_word():
    """'cash flow from operating activities' is no form the list asks by, so only the everyday word 'cash' matched
    and the statement's cash balance rows were read first. A question holding a printed label's words ("net cash
    provided by operating activities": cash, operating, activities) names that metric, and a metric named so, or by
    a form of several words, outranks one named by a single everyday word."""
    from thread_rag.retrieve.statements import printed_labels

    q = "How much did Acme generate in cash flow from operating activities in FY2020?"
    labels = printed_labels(q)
    assert labels[0] == "net cash provided by operating activities" and "cash and cash equivalents" not in labels
    assert printed_labels("How much cash did Acme hold at the end of FY2020?")[0] == "cash and cash equivalents"
    assert printed_labels("What was the FY2018 capital expenditure?")[0] == "purchases of property, plant and equipment"
    assert printed_labels("How do I install the driver?") == []
