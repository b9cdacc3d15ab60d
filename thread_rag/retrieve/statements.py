"""A question that names a financial statement reads that statement first.

"What is FY2018 capital expenditure? Use the cash flow statement." names a part of a filing by one of the names
accountants give it; the filing titles it "Consolidated Statements of Cash Flows". The retriever finds the chunks
under that title (their heading, or a table line near their start, as the PDF loader prints a table's title) and
ranks them first (the retriever's ``SECTION_FIRST``; setting ``STATEMENTS``). The names are the standard ones of US GAAP and IFRS filings; nothing here knows a question.
A question that names no statement but asks for a metric of a fiscal period ("FY2022 working capital") reads the
statements that print the metric or its inputs, after the search's best hit (a weaker sign; ``metrics.json``: written by a session that saw no question, page or
code of the project).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .search_index import PERIOD

_OF = r"statements?\s+of\s+(?:consolidated\s+)?"
TITLE_LEAD = 4  # words a title may follow in its heading or cell


@dataclass(frozen=True)
class Statement:
    name: str
    asked: re.Pattern       # how a question names it
    titled: re.Pattern      # how a filing titles it: at the start of a heading or of a table cell
    terms: tuple            # BM25 terms one of which a titled chunk holds (a library-wide search reads only those)


def _re(*alternatives: str) -> re.Pattern:
    return re.compile("|".join(rf"\b{a}\b" for a in alternatives), re.I)


def _title(*alternatives: str) -> re.Pattern:
    """A title at the start of a heading or table cell, after at most ``TITLE_LEAD`` words ("U.S. GAAP Condensed
    Consolidated Statements of Cash Flows", "3M Company Consolidated Balance Sheet")."""
    return re.compile(rf"(?:^|\|)\s*(?:[\w.&'’-]+\s+){{0,{TITLE_LEAD}}}?(?:{'|'.join(alternatives)})\b", re.I)


STATEMENTS = (
    Statement("cash flow statement",
              _re(r"cash[\s-]+flows?\s+statements?", _OF + r"cash[\s-]+flows?"),
              _title(_OF + r"cash[\s-]+flows?", r"cash[\s-]+flows?\s+statements?"),
              ("cash",)),
    Statement("balance sheet",
              _re(r"balance\s+sheets?", _OF + r"financial\s+(?:position|condition)"),
              _title(r"balance\s+sheets?", _OF + r"financial\s+(?:position|condition)"),
              ("balance", "financial")),
    Statement("income statement",
              _re(r"income\s+statements?", _OF + r"(?:income|operations|earnings)",
                  r"p\s?&\s?l", r"profit\s+(?:and|&)\s+loss(?:\s+statement)?"),
              _title(r"income\s+statements?", _OF + r"(?:income|operations|earnings)",
                     r"profit\s+(?:and|&)\s+loss"),
              ("statement", "statements", "income", "operations", "earnings", "profit")),
)

RUN_GAP = 2      # chunks of one statement lie within this many positions of each other
TABLE_LINES = 3  # a table line among a chunk's first lines may carry the title (the PDF loader repeats it)
_LETTER_APART = re.compile(r"(?<=[a-z]{2}) (?=[a-z]\b)", re.I)  # "Balance Shee t": a PDF's spacing split a word


def named(query: str) -> tuple[list[Statement], bool]:
    """The statements ``query`` names, in the order of STATEMENTS, and True; when it names none but asks about a
    fiscal period ("FY2022", "Q1 2021"), those holding the metrics it names (``implied``), and False."""
    said = [s for s in STATEMENTS if s.asked.search(query)]
    return (said, True) if said else (implied(query), False)


EVERYDAY = {"revenue", "revenues", "sales", "profit", "cash", "investments", "securities", "inventory", "inventories",
            "stock", "assets", "liabilities", "equity", "borrowings", "bonds", "leverage", "taxes", "dividends",
            "depreciation", "amortization", "overhead", "goodwill", "intangibles", "accruals", "payables",
            "receivables", "liquidity"}  # one everyday word names no metric on its own


@lru_cache(maxsize=1)
def _items() -> tuple[dict, ...]:
    return tuple(json.loads(Path(__file__).with_name("metrics.json").read_text(encoding="utf-8"))["items"])


def _specific(forms: list[str]) -> list[str]:
    """The forms that name a metric on their own: several words, or one word that is not everyday."""
    return [f for f in forms if " " in f or f.lower() not in EVERYDAY]


def _asked(forms: list[str]) -> re.Pattern:
    return re.compile(r"(?<![\w&/])(?:" + "|".join(re.escape(f) for f in forms) + r")(?![\w&/])", re.I)


@lru_cache(maxsize=1)
def _metrics() -> tuple[tuple[re.Pattern, tuple], ...]:
    """(how a question names a metric, the statements that print it or its inputs), from ``metrics.json``."""
    by_name = {s.name: s for s in STATEMENTS}
    out = []
    for it in _items():
        forms = _specific(it["asked"])
        if forms:
            out.append((_asked(forms), tuple(by_name[n] for n in it["statements"])))
    return tuple(out)


LABEL_FILLER = {"net", "by", "from", "of", "the", "and", "in", "used", "provided", "for", "total", "to", "a", "an",
                "on", "at", "end", "year", "period", "or", "less", "including", "excluding"}


def _content(text: str) -> set[str]:
    return set(re.findall(r"[a-z&]+", text.lower())) - LABEL_FILLER


@lru_cache(maxsize=1)
def _printed() -> tuple[tuple[re.Pattern, re.Pattern | None, tuple, tuple], ...]:
    """Per metric of ``metrics.json``: how a question names it by a specific form (several words, or one that is
    not everyday) and by an everyday word alone ("cash"; None: no such form), its printed row labels, and the
    content words of those of its labels that have several ("net cash provided by operating activities": cash,
    operating, activities)."""
    out = []
    for it in _items():
        specific = _specific(it["asked"])
        everyday = [f for f in it["asked"] if f not in specific]
        words = tuple(w for w in (frozenset(_content(x)) for x in it["printed"]) if len(w) > 1)
        out.append((_asked(specific) if specific else None, _asked(everyday) if everyday else None,
                    tuple(it["printed"]), words))
    return tuple(out)


def printed_labels(query: str) -> list[str]:
    """The row labels ("purchases of property, plant and equipment") under which statements print the metrics
    ``query`` names ("capital expenditure") or their inputs, each once, in the order of ``metrics.json``. A metric
    is named by a specific form of it, or by holding every content word of one of its printed labels ("cash flow
    from operating activities"); only when none is, by one everyday word ("revenue"), which counts here because
    the labels only order rows already found."""
    words = _content(query)
    named = [labels for specific, _, labels, printed in _printed()
             if (specific is not None and specific.search(query)) or any(w <= words for w in printed)]
    if not named:
        named = [labels for _, everyday, labels, _ in _printed() if everyday is not None and everyday.search(query)]
    out: list[str] = []
    for labels in named:
        out += [x for x in labels if x not in out]
    return out


def row_label(row: str) -> str:
    """A table row's label as ``printed_labels`` spells labels: its first cell, lower case, without a bracketed
    aside ("(PP&E)"), spaces collapsed, no trailing colon."""
    cell = row.strip().strip("|").split("|")[0]
    cell = re.sub(r"\s*\([^)]*\)", "", cell.lower())
    return " ".join(cell.split()).rstrip(":;. ")


def row_labelled(row: str, labels: list[str]) -> int | None:
    """The position in ``labels`` of the label a table row (``| label | cells |``) is printed under; None if none."""
    return labelled(row_label(row), labels)


def labelled(label: str, labels: list[str]) -> int | None:
    """The position in ``labels`` of the first one ``label`` is (or begins with, up to a word's end); None if none."""
    for i, x in enumerate(labels):
        if label == x or (label.startswith(x) and not label[len(x)].isalnum()):
            return i
    return None


def implied(query: str) -> list[Statement]:
    """The statements holding the metrics ``query`` names ("working capital": the balance sheet), when it asks about
    a fiscal period; none otherwise."""
    if not PERIOD.search(query):
        return []
    got = {st.name for pattern, sts in _metrics() if pattern.search(query) for st in sts}
    return [s for s in STATEMENTS if s.name in got]


def under(statement: Statement, heading: list, text: str) -> bool:
    """Whether a chunk is part of ``statement``: its nearest heading is the title, or one of its first table lines
    holds it (prose that mentions the statement is not under it)."""
    if heading and statement.titled.search(_LETTER_APART.sub("", heading[-1])):
        return True
    lines = (text or "").splitlines()[:TABLE_LINES]
    return any(ln.lstrip().startswith("|") and statement.titled.search(_LETTER_APART.sub("", ln)) for ln in lines)


def longest_runs(rows: list[tuple[int, int, int]]) -> list[int]:
    """Of (serial, position, row) triples under one statement, the rows of each document's longest run of chunks
    (positions at most ``RUN_GAP`` apart; the first of equal runs): the statement itself, not a note's table that
    names it in a column ("Gross amounts offset in the Consolidated Balance Sheet")."""
    best: dict[int, list] = {}
    run: list = []
    for serial, position, row in sorted(rows) + [(None, None, None)]:
        if run and (serial != run[-1][0] or position - run[-1][1] > RUN_GAP):
            if len(run) > len(best.get(run[0][0], [])):
                best[run[0][0]] = run
            run = []
        run.append((serial, position, row))
    return [row for kept in best.values() for _, _, row in kept]
