"""The quote: the manual's own words that answer the question, chosen by code from what was read, verbatim.

``units`` cuts a chunk's text into what a quote may hold, each a slice of the text as stored: sentences of a
paragraph, numbered or bulleted steps (with their continuation lines, also those wrapped to the step's text column),
code blocks (fenced, indented, or command lines after a prompt), a step's text going on under its command (``more``),
and table rows (shown under their header row). A chunk that starts inside a fenced block begun before it (the
chunker cut between a block and its closing fence) starts outside it after that fence: the state is carried from
chunk to chunk of a source, and judged from the text for its first chunk. ``choose`` scores every unit of the sources
read against the question with the packaged cross-encoder, keeps the best and those close to it, adds what a kept
unit needs to be followed (the code block, list or table a sentence ending in ':' or announcing "the following
command." leads into, the lead-in of a kept code block, the steps between two kept steps of one list), and cuts the
rest to a word budget. The quote keeps each document's order; each line names its source number, chunk id and page.

Then four rules make the quote whole, whatever the other lines scored:

- a title is never quoted alone: a section title the loader left as a line of its own ("Changing the port", a
  Markdown heading without its '#', a bold "**To create a package**") brings the body under it, up to the next
  title, while the words fit;
- asked for a procedure ("how do I ...", "how to", steps, stages, install, set up, configure, "what should I
  check"), a quoted step, or the line leading into a list, brings the whole list: its lead-in, then every step with
  its code and the text the loader set beside it (up to ``LIST_GAP`` units between two steps), from the first step
  on, within ``PROCEDURE_ROOM`` times the word budget; when it still does not fit, lines that only scored well give
  way to it; the steps that do not fit are named in ``choose_quote``'s note (``Quote.cut``: "steps 4-7 of 7 not
  shown (word budget)"). Such a question whose quote holds no command takes the best code block near the best line;
- asked for a figure (how much, an amount, a ratio, a margin, "in USD millions"), the best table row close to the
  best line is quoted too, under its header row, when no row is quoted yet;
- a warning travels with its command: a line that warns ("Warning:", "Note:", "There is no undo", "This deletes
  ...", "could cause", "intended for advanced users", "make sure", "back up first") standing directly before or
  after a quoted command, code block or step of the same source (past the lines quoted beside it, across a chunk
  boundary, never across a heading) is quoted with it, with the rest of its warning; a labelled warning
  ("Important", "Warning", "Caution") up to ``LABEL_REACH`` paragraphs after the command, or right after a quoted
  instruction sentence, comes too, and so does a warning sentence right after a quoted sentence of its paragraph.
  Only lines beside what is quoted are looked at, so an ordinary sentence is never pulled in.

The best unit's score is the evidence the sources answer the question: under ``QUOTE_MIN`` the answer path says
the documents do not answer it and shows the nearest lines as related, not as an answer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .check import COMMAND_LINE, FENCE
from ..retrieve.search_index import PERIOD
from ..retrieve.statements import printed_labels, row_labelled

ITEM = re.compile(r"^\s*(?:\d{1,3}[.)]|[a-zA-Z][.)]|[-*•+–])\s+\S")
ITEM_MARK = re.compile(r"^\s*(?:\d{1,3}[.)]|[a-zA-Z][.)]|[-*•+–])\s+")  # up to the step's text column
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
TABLE_RULE = re.compile(r"^\s*\|?[\s:|+=-]+\|?\s*$")
MD_HEADING = re.compile(r"^\s*#{1,6}\s+\S")
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?(?:\*\*|__)?[A-Z0-9])")
ABBREV_END = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|Fig|No|approx|Mr|Mrs|Dr|St|Inc|Ltd|Co|Sec|Art)|\b[A-Z])\.$")
# a line that warns: a label ("Warning:", "Note:", a label on a line of its own) or words that say what is lost
LABEL = re.compile(r"^\W*(?:warning|caution|danger|important|attention|note)\b\s*(?:[:!\u2013\u2014-]|$|\*\*|__)", re.I)
# ... of those, the labels that warn (a "Note" may only be a tip): they reach a little further (``_warnings``)
STRONG_LABEL = re.compile(r"^\W*(?:warning|caution|danger|important|attention)\b\s*(?:[:!\u2013\u2014-]|$|\*\*|__)",
                          re.I)
WARNING = re.compile(LABEL.pattern + r"|\b(?:no undo|can ?not be undone|can't be undone|irreversibl[ey]|deletes|erases|"
                     r"overwrites|destroys|wipes|will (?:erase|delete|remove|destroy|overwrite|wipe)|make sure|"
                     r"be sure to|back (?:it |them |this |everything )?up (?:first|before)|data loss|"
                     r"(?:could|can|may|might|will) (?:cause|result in|render|corrupt|break|damage|lose)|"
                     r"improper(?:ly)?|incorrect(?:ly)? use|advanced users|(?:is|are) not secure|insecure|"
                     r"at your own risk|permanently|cannot be recovered|be careful|with care|use caution)\b", re.I)
# a question that asks for a procedure: its list is quoted whole
PROCEDURE = re.compile(r"\b(?:how (?:do|does|can|could|should|would|to)\b|steps?\b|install|set ?up\b|setting up|"
                       r"configur|procedure|stages\b|each case\b|start to finish|walk me through|"
                       r"what (?:should|must) (?:i|we|you) (?:do|check|try)\b|"
                       r"what do (?:i|we) do (?:if|when|for|in|about|next|now|first)\b)", re.I)
# a sentence that announces what follows it, though it ends in a full stop ("... with the following command.")
ANNOUNCES = re.compile(r"\b(?:the following (?:commands?|example|steps?|procedure|lines?|code|output|settings?)|"
                       r"as follows)\b[^.]*\.\W*$", re.I)
FIGURE = re.compile(r"\b(?:how much|amount|ratio|margin|percent(?:age)?|"
                    r"in (?:usd|us\$|\$|dollars|euros?|millions|billions|thousands))\b", re.I)


@dataclass
class Unit:
    """One piece a quote may hold: ``text`` is ``chunk_text[start:end]`` exactly."""

    text: str
    kind: str                 # sentence | step | code | row | heading
    start: int
    end: int
    block: int                # the block it belongs to (a paragraph, a list, a code block, a table)
    lead: bool = False        # a sentence ending in ':' that leads into the next block
    header: str = ""          # a table row's header row (as stored)
    chunk: int = 0            # index of its chunk among the source's chunks
    source: int = 0           # the source's number [n]
    order: int = 0            # position among all units of the sources (document order within a source)
    score: float = float("-inf")


@dataclass
class QuoteLine:
    """One quoted piece as shown: its text (verbatim), source number, chunk id and page."""

    text: str
    kind: str
    source: int
    chunk_id: str
    pages: str
    score: float
    header: str = ""
    doc_name: str = ""

    def shown(self, after: "QuoteLine | None" = None) -> str:
        """The text as a person reads it: prose on one line, code, steps and rows with their lines; a table row under
        its header row, unless it follows a row of the same table (``after``: the line shown before it)."""
        if self.kind == "sentence":
            return " ".join(self.text.split())
        body = self.text.strip("\n")
        same = after is not None and after.kind == "row" and after.header == self.header and \
            (after.source, after.chunk_id) == (self.source, self.chunk_id)
        if self.kind == "row" and self.header and not same:
            return self.header.strip("\n") + "\n" + body
        return body


@dataclass
class Quote:
    lines: list = field(default_factory=list)   # QuoteLine, grouped by source, document order
    best: float | None = None                   # the best unit's cross-encoder logit (None: nothing to score)
    units: int = 0                              # units scored
    seconds: float = 0.0
    note: str = ""                              # why there is no quote (the cross-encoder could not load)
    reading: list = field(default_factory=list)  # QuoteLine: what the explanation reads (the quote and more)
    cut: str = ""                               # what of a quoted procedure the word budget left out
    #                                             ("steps 4-7 of 7 not shown (word budget)"; from ``choose_quote``)
    margin: float | None = None                 # how far the best unit stands above the best of the other sources
    spread: float | None = None                 # ... and above the median unit of what was read
    top: set = field(default_factory=set)       # (source, order) of the units scored best: a part of the question
    #                                             is scored among them (``outcome.PART_UNITS``)

    def text(self) -> str:
        return "\n".join(x.shown(prev) for prev, x in zip([None] + self.lines, self.lines))


# --- cutting a chunk into units ---------------------------------------------------------------------------------
def _lines(text: str) -> list[tuple[int, str]]:
    out, at = [], 0
    for line in text.splitlines(keepends=True):
        out.append((at, line))
        at += len(line)
    return out


def _code_line(line: str, in_list: bool) -> bool:
    if COMMAND_LINE.match(line):
        return True
    indent = len(line) - len(line.lstrip(" "))
    return not in_list and (indent >= 4 or line.startswith("\t")) and bool(line.strip())


HEADING_LINE = re.compile(r"^\s*(?:#{1,6}\s+\S.*|(?:(?:Chapter|Appendix|Part|Section|Article)\s+[\w.]+|\d+(?:\.\d+)+\.?|\d+\.|"
                          r"[A-Z]\.\d+(?:\.\d+)*\.?)\s+[A-Z\"“(].{0,120})$")  # "2.5 Memory ...", "B.2.2 Using ..."


def _heading_line(line: str) -> bool:
    """A section title standing on its own line ("2.5 Memory and Disk Space Requirements", "## Install"): no
    sentence of its own, at most 14 words, no closing full stop."""
    s = line.strip()
    if MD_HEADING.match(s) and not COMMAND_LINE.match(s):
        return True
    return bool(HEADING_LINE.match(s)) and len(s.split()) <= 14 and not s.endswith((".", ":", ";", ","))


def _continues(line: str, nxt: str) -> bool:
    """``nxt`` carries on the paragraph of ``line`` (a wrapped line): no sentence end before it, lower case after."""
    return bool(nxt.strip()) and not line.rstrip().endswith((".", "!", "?", ":")) and nxt.lstrip()[:1].islower()


def units(text: str, inside: bool | None = None) -> list[Unit]:
    """``text`` cut into quotable units, in order; every unit's ``text`` is ``text[start:end]``. Stored chunks hold a
    block per line (loaders reflow paragraphs), so a line is a paragraph unless the next one plainly continues it.
    ``inside``: whether the text starts inside a fenced code block begun before it (None: judged from the text)."""
    return _Cutter(text).cut(inside)


class _Cutter:
    """The state of :func:`units` over one text: its lines, the units so far, the block count, and the list a
    step belongs to. Each ``_kind`` method cuts the unit starting at line ``i`` and returns the line after it."""

    def __init__(self, text: str):
        self.text, self.lines, self.out = text, _lines(text), []
        self.block, self.in_list, self.cur_list = 0, False, None
        self.fences = [i for i, (_, ln) in enumerate(self.lines) if FENCE.match(ln)]  # the fence lines

    def cut(self, inside: bool | None) -> list[Unit]:
        """The text's units (:func:`units`)."""
        i = self.closing_fence(inside)
        while i < len(self.lines):
            i = self.next_unit(i)
        return self.out

    def closing_fence(self, inside: bool | None) -> int:
        """Where cutting starts: after the fence that closes a code block begun in the chunk before when the text
        starts inside one (the lines before that fence are the block's end, a code unit); else 0. ``inside`` None:
        judged from the text (:meth:`starts_inside`)."""
        fences = self.fences
        if not fences or inside is False or (inside is None and not self.starts_inside()):
            return 0
        f = fences[0]
        before = [i for i in range(f) if self.lines[i][1].strip()]
        if before:
            self.block += 1
            _unit(self.out, self.text, "code", self.lines[before[0]][0], self._end(f), self.block)
        return f + 1

    def starts_inside(self) -> bool:
        """Whether the text reads better as starting inside a fenced block than outside: the fences paired both ways,
        the way whose code holds more command lines and fewer prose lines, steps or titles (a tie: outside)."""
        fences = set(self.fences)
        if not fences:
            return False

        def code_score(inside: bool) -> int:
            score, indent = 0, 0
            for i, (_, ln) in enumerate(self.lines):
                if i in fences:
                    inside, indent = not inside, _indent(ln)
                elif inside and ln.strip():
                    score += 1 if PROMPTED.match(ln) else -1 if (_prose(ln) or ITEM.match(ln) or
                                                                  _indent(ln) < indent) else 0
            return score
        return code_score(True) > code_score(False)

    def next_unit(self, i: int) -> int:
        line = self.lines[i][1]
        if not line.strip():
            return i + 1
        if self.cur_list is not None and self.out and self.out[-1].kind == "code" and _step_prose(line):
            return self._more(i)
        self.block += 1
        if not ITEM.match(line) and not (self.cur_list is not None and _code_line(line, False)):
            self.cur_list = None
        if FENCE.match(line):
            return self._fence(i)
        if TABLE_ROW.match(line):
            return self._table(i)
        if _code_line(line, self.in_list):
            return self._code(i)
        if ITEM.match(line):
            return self._step(i)
        if _heading_line(line):
            _unit(self.out, self.text, "heading", self.lines[i][0], self.lines[i][0] + len(line), self.block)
            self.in_list = False
            return i + 1
        return self._paragraph(i)

    def _end(self, j: int) -> int:
        """The text offset where line ``j`` ends."""
        return self.lines[j][0] + len(self.lines[j][1])

    def _fence(self, i: int) -> int:
        lines, n = self.lines, len(self.lines)
        j = i + 1
        while j < n and not FENCE.match(lines[j][1]):
            j += 1
        _unit(self.out, self.text, "code", lines[i][0], self._end(min(j, n - 1)), self.block)
        self.in_list = False
        return j + 1

    def _table(self, i: int) -> int:
        lines, n = self.lines, len(self.lines)
        j = i
        while j < n and TABLE_ROW.match(lines[j][1]):
            j += 1
        rows = [(a, ln) for a, ln in lines[i:j] if not TABLE_RULE.match(ln)]
        ruled = j > i + 1 and bool(TABLE_RULE.match(lines[i + 1][1]))
        header = ""
        if len(rows) > 1 and (ruled or lines[i][0] > 0):  # a table that starts the chunk may go on from the one before
            header, rows = rows[0][1] + (lines[i + 1][1] if ruled else ""), rows[1:]
        for a, ln in rows:
            _unit(self.out, self.text, "row", a, a + len(ln), self.block, header=header)
        self.in_list = False
        return j

    def _code(self, i: int) -> int:
        lines, n, in_list = self.lines, len(self.lines), self.in_list
        j = i
        while j < n and (_code_line(lines[j][1], in_list) or (not lines[j][1].strip() and j + 1 < n
                                                             and _code_line(lines[j + 1][1], in_list))):
            if j > i and self.cur_list is not None and _step_prose(lines[j][1]):
                break  # a step's text going on under its command
            j += 1
        _unit(self.out, self.text, "code", lines[i][0], self._end(j - 1), self.block)
        return j

    def _more(self, i: int) -> int:
        """A step's text going on under the command it led into ("This will scan all volumes ..."): a unit of kind
        ``more`` in the step's list, up to the next step, command or blank line."""
        lines, n = self.lines, len(self.lines)
        j = i + 1
        while j < n and lines[j][1].strip() and lines[j][1][:1] in " \t" and not ITEM.match(lines[j][1]) \
                and not COMMAND_LINE.match(lines[j][1]):
            j += 1
        _unit(self.out, self.text, "more", lines[i][0], self._end(j - 1), self.cur_list)
        return j

    def _step(self, i: int) -> int:
        lines, n = self.lines, len(self.lines)
        col = len(ITEM_MARK.match(lines[i][1]).group(0))
        j = i + 1
        while j < n and lines[j][1].strip() and lines[j][1][:1] in " \t" and not ITEM.match(lines[j][1]) \
                and not COMMAND_LINE.match(lines[j][1]) \
                and (not _code_line(lines[j][1], False) or _indent(lines[j][1]) <= col):
            j += 1
        if self.cur_list is not None:
            self.block -= 1
            item_block = self.cur_list  # the next item of the same list (code under a step stays inside it)
        else:
            item_block = self.cur_list = self.block
        self.in_list = not _leads(lines[j - 1][1])  # a step that leads into indented lines: they are its code
        _unit(self.out, self.text, "step", lines[i][0], self._end(j - 1), item_block, lead=_leads(lines[j - 1][1]))
        return j

    def _paragraph(self, i: int) -> int:
        lines, n = self.lines, len(self.lines)
        j = i + 1
        while j < n and _continues(lines[j - 1][1], lines[j][1]) and not any(
                p.match(lines[j][1]) for p in (ITEM, TABLE_ROW, FENCE)) and not _code_line(lines[j][1], False):
            j += 1
        _sentences(self.out, self.text, lines[i][0], self._end(j - 1), self.block)
        self.in_list = False
        return j


def _leads(line: str) -> bool:
    """The line leads into the block after it: it ends in ':' or announces "the following command."."""
    s = line.rstrip()
    return s.endswith(":") or bool(ANNOUNCES.search(s))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


PROMPTED = re.compile(r"^\s*(?:\[[^\]\n]{1,60}\]\s*)?(?:\$|#|>|sudo)\s+\S")  # "$ ls", "[ec2-user ~]$ ls", "# apt ..."


def _prose(line: str) -> bool:
    """A line of prose (a capital or emphasis first, then four words or more), not a command, step, fence or row."""
    s = line.strip().lstrip("*_")
    return not COMMAND_LINE.match(line) and not ITEM.match(line) and s[:1].isupper() and len(s.split()) >= 4 \
        and not any(p.match(line) for p in (FENCE, TABLE_ROW))


def _step_prose(line: str) -> bool:
    """An indented line of prose: a step's text going on under its command."""
    return line[:1] in " \t" and _prose(line)


def _unit(out: list, text: str, kind: str, start: int, end: int, block: int, lead: bool = False, header: str = "") -> None:
    while start < end and text[start] in "\r\n":
        start += 1
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    if end > start:
        out.append(Unit(text[start:end], kind, start, end, block, lead=lead, header=header))


def _sentences(out: list, text: str, start: int, end: int, block: int) -> None:
    para, at = text[start:end], 0
    cuts = [m.start() for m in SENTENCE_END.finditer(para) if not ABBREV_END.search(para[:m.start()].rstrip())]
    for cut in cuts + [len(para)]:
        piece = para[at:cut]
        if piece.strip():
            s = start + at + (len(piece) - len(piece.lstrip()))
            _unit(out, text, "sentence", s, start + cut, block, lead=_leads(piece))
        at = cut
    if out and out[-1].block == block and out[-1].kind == "sentence":
        out[-1].lead = _leads(out[-1].text)


# --- choosing ---------------------------------------------------------------------------------------------------
@dataclass
class QuoteSettings:
    margin: float = 3.0       # keep units whose logit is within this of the best one's (QUOTE_MARGIN)
    floor: float = -2.0       # ... and at least this: beside a weak best unit, weaker ones are not quoted
    words: int = 200          # word budget of a quote; the best unit and what it needs always stay (QUOTE_WORDS)
    max_units: int = 6        # units chosen by score (before what they need is added)


def source_units(sources: list) -> list[Unit]:
    """Every unit of the numbered sources with its source number, chunk index and order; of a chunk that begins
    with the sentences ending the chunk before it (the overlap), those are left out (the chunk before has them).
    A unit that runs on past the overlap (the chunker cut "2." from "2. Install the package.") is kept whole, and
    the piece of it that ends the chunk before is left out instead."""
    from ..threads.passages import strip_overlap

    out: list[Unit] = []
    for src in sources:
        texts = src.chunk_texts or [src.text]
        end_inside = False
        for ci, text in enumerate(texts):
            skip = len(text) - len(strip_overlap(texts[ci - 1], text)) if ci else 0
            cut = _Cutter(text)
            # inside a code block at its start: as the chunk before ended, less the fences of the overlap
            overlap = sum(1 for f in cut.fences if FENCE.match(cut.lines[f][1][:max(skip - cut.lines[f][0], 0)]))
            inside = end_inside != (overlap % 2 == 1) if ci else cut.starts_inside()
            end_inside = inside != (len(cut.fences) % 2 == 1)
            for u in cut.cut(inside):
                if u.end <= skip:
                    continue
                if u.start < skip:
                    at = _in_chunk_before(texts[ci - 1], text, skip, u.start)
                    while out and out[-1].source == src.n and out[-1].chunk == ci - 1 and out[-1].start >= at:
                        out.pop()
                u.chunk, u.source, u.order = ci, src.n, len(out)
                u.block = u.block + 10000 * (ci + 1) + 10 ** 6 * src.n
                out.append(u)
    return out


def _in_chunk_before(prev: str, text: str, skip: int, at: int) -> int:
    """Where offset ``at`` of ``text``'s overlap (``text[:skip]``, the end of ``prev`` again) lies in ``prev``."""
    head = text[:skip]
    return len(prev.rstrip()) - len(head.strip()) + at - (len(head) - len(head.lstrip()))


def scored_text(u: Unit, heading: str) -> str:
    """What the cross-encoder reads of a unit: its section heading, a table row under its header row."""
    body = (u.header.strip() + "\n" if u.kind == "row" and u.header else "") + u.text
    return f"{heading}\n{' '.join(body.split())}" if heading else " ".join(body.split())


def score_units(question: str, sources: list, logits: Callable[[str, list[str]], np.ndarray],
                among: set | None = None) -> list[Unit]:
    """The sources' units, each with the cross-encoder's logit for (question, unit); headings are not scored.
    ``among``: only the units whose (source, order) it holds are scored; the others keep -inf (still there for what
    a quoted unit needs)."""
    us = [u for u in source_units(sources) if u.kind != "heading"]
    heading = {s.n: s.heading for s in sources}
    todo = us if among is None else [u for u in us if (u.source, u.order) in among]
    if todo:
        vals = logits(question, [scored_text(u, heading.get(u.source, "")) for u in todo])
        for u, v in zip(todo, vals):
            u.score = float(v)
    return us


def top_units(scored: list[Unit], n: int) -> set:
    """The (source, order) of the ``n`` best-scored units."""
    return {(u.source, u.order) for u in sorted(scored, key=lambda u: -u.score)[:n]}


def _needs(u: Unit, us: list[Unit], words: int) -> list[Unit]:
    """What ``u`` needs to be followed: the block a lead-in sentence or step introduces (its units in order while
    they fit ``words``, the first always), a code block's or table row's lead-in."""
    i = us.index(u)
    out: list[Unit] = []
    if u.lead and i + 1 < len(us) and us[i + 1].source == u.source:
        block, used = us[i + 1].block, 0
        for x in us[i + 1:]:
            if x.block != block or x.source != u.source or (out and used + len(x.text.split()) > words):
                break
            out.append(x)
            used += len(x.text.split())
    if u.kind in ("code", "row") and i > 0 and us[i - 1].lead and us[i - 1].source == u.source:
        out.append(us[i - 1])
    return out


def _between(kept: list[Unit], us: list[Unit]) -> list[Unit]:
    """What lies between two kept steps of one list: its steps and the code under them (no hole inside a
    procedure)."""
    out = []
    by_block: dict = {}
    for u in kept:
        if u.kind == "step":
            by_block.setdefault(u.block, []).append(u.order)
    for block, orders in by_block.items():
        if len(orders) > 1:
            out += [x for x in us if min(orders) < x.order < max(orders) and x.kind in LISTED]
    return out


def choose(scored: list[Unit], cfg: QuoteSettings = QuoteSettings(), start: list[Unit] = (),
           question: str = "") -> list[Unit]:
    """The units a quote holds, in order (:func:`choose_quote` without its note)."""
    return choose_quote(question, scored, cfg, start)[0]


def choose_quote(question: str, scored: list[Unit], cfg: QuoteSettings = QuoteSettings(),
                 start: list[Unit] = ()) -> tuple[list[Unit], str]:
    """The units a quote holds, in order, and a note on what of a quoted procedure the word budget left out ("" when
    nothing was). Chosen by score (:func:`_by_score`); then a quoted section title brings the body under it, a
    quoted step brings its whole list when the question asks how to do something, and a quoted command, code block
    or step brings the warning beside it. ``start``: units already held (their words count)."""
    picked = _by_score(scored, cfg, start)
    listed = bool(_listed(picked, scored))  # a line chosen by score is part of a list or leads into one
    picked += _bodies(picked, scored, cfg.words)
    cut = ""
    if FIGURE.search(question) or PERIOD.search(question):
        picked += _figure_rows(question, picked, scored)
    if FIGURE.search(question):
        picked += _best_near("row", picked, scored, cfg.margin + STEP_REACH)
    if PROCEDURE.search(question):
        picked += _best_near("step", picked, scored, cfg.margin + STEP_REACH)
        if not any(u.kind == "code" or (u.kind == "step" and _holds_code(u)) for u in picked):
            picked += _best_near("code", picked, scored, cfg.margin + STEP_REACH)
        room = cfg.words * PROCEDURE_ROOM
        more, cut, hidden = _procedures(picked, scored, room)
        if hidden and listed:  # a procedure that scored takes the budget before lines that only scored well
            core = _procedure_core(picked, scored)
            more2, cut2, hidden2 = _procedures(core, scored, room)
            if hidden2 < hidden:
                picked, more, cut = core, more2, cut2
        picked += more
    picked += _warnings(picked, scored)
    return sorted(picked, key=lambda u: u.order), cut


PROCEDURE_ROOM = 2  # a procedure asked for may fill this many times the word budget, its steps whole
STEP_REACH = 2.0  # a procedure question: a step this much past the quote margin still brings its list


FIGURE_ROWS = 4  # a figure question: at most this many rows printing what it names, one per label
YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")


def _figure_rows(question: str, picked: list[Unit], scored: list[Unit]) -> list[Unit]:
    """A question asking for a figure it names ("the FY2023 capital expenditure"): the rows read that print it under
    a label statements print it by ("Purchases of property, plant and equipment"; ``statements.printed_labels``),
    the best-scored row of each label, up to ``FIGURE_ROWS``. When the question names a year and some of the rows'
    tables hold it, only those (not a five-year summary's row)."""
    labels = printed_labels(question)
    if not labels:
        return []
    found = [(row_labelled(u.text, labels), u) for u in scored if u.kind == "row" and u not in picked]
    found = [(i, u) for i, u in found if i is not None]
    years = set(YEAR.findall(question))
    dated = [(i, u) for i, u in found if years & set(YEAR.findall(u.header + u.text))]
    best: dict[int, Unit] = {}
    for i, u in sorted(dated or found, key=lambda iu: -iu[1].score):
        best.setdefault(i, u)
    return sorted(best.values(), key=lambda u: -u.score)[:FIGURE_ROWS]


def _holds_code(u: Unit) -> bool:
    """A step with its command inside it (a fenced block or a prompt line indented under it)."""
    return any(FENCE.match(ln) or COMMAND_LINE.match(ln) for ln in u.text.splitlines()[1:])


def _best_near(kind: str, picked: list[Unit], scored: list[Unit], reach: float) -> list[Unit]:
    """The best unit of ``kind`` within ``reach`` of the best line, when no unit of that kind is held yet; else none.
    A question asking how to do something, answered by a line beside a procedure rather than by one of its steps
    ("Pre-heat before an offline session ..." under the steps that pre-heat), takes the best ``step`` too (its list
    then follows); one asking for a figure ("how much", an amount, a ratio, "in USD millions"), answered by a
    sentence beside the table that holds it, the best ``row`` (shown under its header row)."""
    if not picked or any(u.kind == kind for u in picked):
        return []
    best = max(u.score for u in scored)
    near = [u for u in scored if u.kind == kind and u.score >= best - reach and u not in picked]
    return [max(near, key=lambda u: u.score)] if near else []


def _by_score(scored: list[Unit], cfg: QuoteSettings, start: list[Unit] = ()) -> list[Unit]:
    """The best unit, those within ``margin`` of it (and over ``floor``), each with what it needs, while the words
    fit ``words`` (the best and what it needs always), and the steps between two kept steps of one list."""
    if not scored:
        return []
    ranked = sorted(scored, key=lambda u: -u.score)
    best = ranked[0].score
    picked: list[Unit] = list(start)
    used = _words(picked)
    for rank, u in enumerate(ranked[:cfg.max_units]):
        if rank and (u.score < best - cfg.margin or u.score < cfg.floor):
            break
        if u in picked:
            continue
        group = [u] + [x for x in _needs(u, scored, cfg.words) if x not in picked and x is not u]
        words = _words(group)
        if rank and used + words > cfg.words:
            continue
        picked += group
        used += words
    for x in _between(picked, scored):
        if x not in picked:
            picked.append(x)
    return picked


def _words(us) -> int:
    return sum(len(x.text.split()) for x in us)


def _next_to(a: Unit, b: Unit) -> bool:
    """``b`` comes directly after ``a`` in one source: no unit, and no heading, between them."""
    return a.source == b.source and b.order == a.order + 1


def _beside(i: int, step: int, us: list[Unit], held: set) -> int | None:
    """The index of the unit not yet quoted directly before (``step`` -1) or after (+1) the command ``us[i]``, past
    the quoted lines that go with it (its lead-in, the steps and code blocks of its list); None at the end of its
    source, at a heading, or at another quoted line (a sentence, a title: the command's neighbours end there)."""
    while 0 <= i + step < len(us):
        if not (_next_to(us[i], us[i + 1]) if step > 0 else _next_to(us[i - 1], us[i])):
            return None
        i += step
        if us[i].order not in held:
            return i
        if us[i].kind not in LISTED and not (step < 0 and us[i].lead):
            return None
    return None


# --- a title brings its body ------------------------------------------------------------------------------------
def _title_line(i: int, us: list[Unit]) -> bool:
    """``us[i]`` is a section title cut as a sentence ("Changing the port": loaders keep a Markdown heading's text
    without its '#'): a paragraph of one short line, a capital first, no sentence end or ':', not the line a
    lead-in ("Set the port on this line:") leads into."""
    u = us[i]
    if u.kind != "sentence" or "\n" in u.text or len(u.text.split()) > 12 or not u.text.lstrip("*_")[:1].isupper():
        return False
    if u.text.rstrip().endswith((".", "!", "?", ":", ";", ",")):
        return False
    alone = all(us[k].block != u.block for k in (i - 1, i + 1) if 0 <= k < len(us))
    led = i > 0 and _next_to(us[i - 1], u) and us[i - 1].lead
    return alone and not led


def _bodies(picked: list[Unit], us: list[Unit], words: int) -> list[Unit]:
    """A title is never quoted alone: a quoted section title whose next line is not quoted brings the body under it,
    its units in order up to the next title (or heading, or the source's end) while the words fit ``words``, the
    first always."""
    held = {x.order for x in picked}
    used, out = _words(picked), []
    for i, u in enumerate(us):
        if u.order not in held or not _title_line(i, us) or i + 1 == len(us) or not _next_to(u, us[i + 1]) \
                or us[i + 1].order in held:  # not a title, or nothing under it, or its body is quoted already
            continue
        k = i + 1
        while k < len(us) and _next_to(us[k - 1], us[k]) and not _title_line(k, us):
            if us[k].order not in held:
                n = len(us[k].text.split())
                if k > i + 1 and used + n > words:
                    break
                out.append(us[k])
                held.add(us[k].order)
                used += n
            k += 1
    return out


# --- a quoted step brings its list (a procedure question) -------------------------------------------------------
LISTED = ("step", "code", "more")  # what a list is made of: steps, the code under them, their text after the code


def _list_at(i: int, us: list[Unit]) -> tuple[int, int]:
    """Where the list holding the step ``us[i]`` begins and ends in ``us`` (``us[a:b]``): the run of steps and code
    blocks around it in its source (across its chunks, no heading between), from its first step to its last step
    and the code under that."""
    a = b = i
    while (k := _next_step(a, -1, us)) is not None:
        a = k
    while (k := _next_step(b, 1, us)) is not None:
        b = k
    while b + 1 < len(us) and _next_to(us[b], us[b + 1]) and us[b + 1].kind in ("code", "more"):
        b += 1
    return a, b + 1


LIST_GAP = 6  # units that may stand between two steps of one list: their text, notes and code the loader set apart


def _next_step(i: int, step: int, us: list[Unit]) -> int | None:
    """The index of the step of the same list as the step ``us[i]`` next before (``step`` -1) or after (+1) it: a step
    of the same kind of marker ("1.", "•", "+"; numbered on from it, or each "1."), at most ``LIST_GAP`` units away,
    with no title, heading or other list's lead-in between; None when the list ends there."""
    mark, gap, j = _marker(us[i]), 0, i
    while gap <= LIST_GAP and 0 <= j + step < len(us):
        if not (_next_to(us[j], us[j + 1]) if step > 0 else _next_to(us[j - 1], us[j])):
            return None
        j += step
        if us[j].kind == "step" and _marker(us[j])[0] == mark[0]:
            first, then = (mark, _marker(us[j])) if step > 0 else (_marker(us[j]), mark)
            numbered_on = first[1] is None or then[1] == first[1] + 1 or first[1] == then[1] == 1
            return j if numbered_on else None
        if _title_line(j, us) or (step > 0 and _leads_into_list(j, us)):
            return None
        gap += 1
    return None


def _marker(u: Unit) -> tuple[str, int | None]:
    """A step's kind of marker ("n" for a number, "a" for a letter, else the bullet) and its number."""
    m = ITEM_MARK.match(u.text)
    mark = m.group(0).strip() if m else ""
    if mark[:1].isdigit():
        return "n", int(mark.rstrip(".)"))
    return ("a" if mark[:1].isalpha() else mark[:1]), None


def _steps(a: int, b: int, us: list[Unit]) -> list[list[Unit]]:
    """The whole steps of the list ``us[a:b]``: each step with the code blocks under it; the first with the list's
    lead-in (the sentence ending in ':' just before it)."""
    groups: list[list[Unit]] = []
    for x in us[a:b]:
        if x.kind == "step":
            groups.append([])
        groups[-1].append(x)
    if a > 0 and us[a - 1].kind == "sentence" and _leads_into_list(a - 1, us):
        groups[0].insert(0, us[a - 1])
    return groups


def _leads_into_list(i: int, us: list[Unit]) -> bool:
    """``us[i]`` leads into a list's first step: it ends in ':' (or announces the following steps), or it is the
    procedure's title ("**To create a deployment package**")."""
    return (us[i].lead or _title_line(i, us)) and i + 1 < len(us) and _next_to(us[i], us[i + 1]) \
        and us[i + 1].kind == "step"


def _listed(picked: list[Unit], us: list[Unit]) -> list[Unit]:
    """The lines of ``picked`` that belong to a list: its steps, their code and text, and the lines leading into one."""
    index = {u.order: i for i, u in enumerate(us)}
    return [u for u in picked if u.kind in LISTED or (u.order in index and _leads_into_list(index[u.order], us))]


def _procedure_core(picked: list[Unit], us: list[Unit]) -> list[Unit]:
    """Of the quote so far, what a procedure question keeps when its list does not fit: the best line with what it
    needs, the steps, code and lead-ins of lists."""
    best = max(picked, key=lambda u: u.score)
    keep = {best.order} | {x.order for x in _needs(best, us, 0)} | {u.order for u in _listed(picked, us)}
    return [u for u in picked if u.order in keep]


def _procedures(picked: list[Unit], us: list[Unit], words: int) -> tuple[list[Unit], str, int]:
    """A quoted step, or the lead-in of a list, brings the whole list: from its first step to its last, whole steps
    in order while the words fit ``words``. Returns the units added, a note on the steps left out ("steps 4-7 of
    7 not shown (word budget)"; "" when none were) and how many were."""
    held = {x.order for x in picked}
    used, out, notes, done, left = _words(picked), [], [], set(), 0
    for i, u in enumerate(us):
        if u.order not in held:
            continue
        if u.kind != "step" and not _leads_into_list(i, us):
            continue
        a, b = _list_at(i if u.kind == "step" else i + 1, us)
        if a in done:
            continue
        done.add(a)
        groups = _steps(a, b, us)
        for group in groups:
            extra = [x for x in group if x.order not in held]
            if extra and used + _words(extra) > words:
                break
            out += extra
            held.update(x.order for x in extra)
            used += _words(extra)
        hidden = [n for n, g in enumerate(groups, 1) if not any(x.kind == "step" and x.order in held for x in g)]
        if hidden:
            notes.append(f"{_numbers(hidden)} of {len(groups)} not shown (word budget)")
            left += len(hidden)
    return out, "; ".join(notes), left


def _numbers(ns: list[int]) -> str:
    """Step numbers as a person reads them: "step 4", "steps 4-7", "steps 2, 5-6"."""
    spans: list[list[int]] = []
    for n in ns:
        if spans and n == spans[-1][-1] + 1:
            spans[-1].append(n)
        else:
            spans.append([n])
    text = ", ".join(f"{s[0]}-{s[-1]}" if len(s) > 1 else f"{s[0]}" for s in spans)
    return ("steps " if len(ns) > 1 else "step ") + text


# --- a warning travels with its command -------------------------------------------------------------------------
def _warnings(picked: list[Unit], us: list[Unit]) -> list[Unit]:
    """The warnings standing directly before or after a quoted command, code block or step (past the lines quoted
    beside it), whatever their scores: a line that warns (``WARNING``) or a labelled paragraph, and the rest of its
    warning."""
    held = {x.order for x in picked}
    out: list[Unit] = []
    for i, u in enumerate(us):
        if u.order not in held:
            continue
        command = u.kind in LISTED
        for step in (-1, 1) if command else (1,):
            j = _beside(i, step, us, held)
            if j is None:
                continue
            new = [x for x in _warning_beside(u, j, step, us) if x.order not in held]
            out += new
            held.update(x.order for x in new)
    return out


def _warning_beside(u: Unit, j: int, step: int, us: list[Unit]) -> list[Unit]:
    """The warning ``us[j]`` begins or ends beside the quoted ``u`` (before it: ``step`` -1): beside a command, code
    block or step, a line that warns or a labelled warning up to ``LABEL_REACH`` paragraphs after it (not a note
    under the command before it, which is that command's); after a sentence, a labelled warning, or a warning
    sentence of its paragraph; [] otherwise."""
    if u.kind in LISTED:
        new = _warning_at(j, step, us) or (_labelled_at(j, us, LABEL_REACH) if step > 0 else [])
        return [] if new and step < 0 and _trails_a_command(min(x.order for x in new), us) else new
    if u.kind == "sentence":
        return _labelled_at(j, us, 0) or (_warning_at(j, 1, us) if us[j].block == u.block else [])
    return []


def _trails_a_command(order: int, us: list[Unit]) -> bool:
    """The unit at ``order`` comes directly after a command, code block or step (it warns about that one)."""
    i = next(k for k, u in enumerate(us) if u.order == order)
    return i > 0 and _next_to(us[i - 1], us[i]) and us[i - 1].kind in LISTED


LABEL_REACH = 2  # a labelled warning ("Important", "Warning: ...") this many paragraphs past a quoted command


def _labelled_at(j: int, us: list[Unit], reach: int) -> list[Unit]:
    """The warning under a label that warns ("Warning", "Important: ..."; not a plain "Note") beginning at ``us[j]``
    or at one of the ``reach`` paragraphs after it (no heading, no other source between); [] when there is none."""
    blocks = 0
    while True:
        if STRONG_LABEL.match(us[j].text) and (j == 0 or us[j - 1].block != us[j].block):
            return _warning_at(j, 1, us)
        k = j
        while k + 1 < len(us) and _next_to(us[k], us[k + 1]) and us[k + 1].block == us[j].block:
            k += 1
        blocks += 1
        if blocks > reach or k + 1 == len(us) or not _next_to(us[k], us[k + 1]):
            return []
        j = k + 1


def _warning_at(j: int, step: int, us: list[Unit]) -> list[Unit]:
    """The warning that ``us[j]`` begins (after a command; ``step`` +1) or ends (before one; -1), [] when it does not
    warn: the whole paragraph when it opens with a label ("Note: ..."), and after a label on a line of its own
    ("Warning") the paragraph it labels too; else ``us[j]`` when it warns, with the sentences of its paragraph next
    to it that warn too."""
    para = [x for x in us if x.block == us[j].block]
    if LABEL.match(para[0].text):
        alone = len(para) == 1 and _words(para) == 1
        if alone and step > 0 and j + 1 < len(us) and _next_to(us[j], us[j + 1]):
            return para + [x for x in us if x.block == us[j + 1].block]
        return para
    if not WARNING.search(us[j].text):
        return []
    run, k = [us[j]], j + step
    while 0 <= k < len(us) and us[k].block == us[j].block and WARNING.search(us[k].text):
        run.append(us[k])
        k += step
    return run


def reading(scored: list[Unit], quoted: list[Unit], words: int) -> list[Unit]:
    """What the explanation reads: the quote, then the next-best units of the sources (each with what it needs),
    while the words fit ``words``; in order."""
    return choose(scored, QuoteSettings(margin=float("inf"), floor=float("-inf"), words=words,
                                        max_units=len(scored)), start=quoted)


def quote_lines(chosen: list[Unit], sources: list) -> list[QuoteLine]:
    by_n = {s.n: s for s in sources}
    out = []
    for u in chosen:
        src = by_n[u.source]
        ci = min(u.chunk, len(src.chunk_ids) - 1)
        pages = src.chunk_pages[ci] if src.chunk_pages and ci < len(src.chunk_pages) else src.pages
        out.append(QuoteLine(u.text, u.kind, u.source, src.chunk_ids[ci], pages or src.pages, round(u.score, 3),
                             header=u.header, doc_name=src.doc_name))
    # grouped by document, the document holding the best line first; inside it, its sources in the document's
    # order (a later passage's step 3 after an earlier one's steps 1 and 2), each source's lines in order
    doc_of = {n: _doc_and_position(src) for n, src in by_n.items()}
    rank = {}
    for x in sorted(out, key=lambda x: -x.score):
        rank.setdefault(doc_of[x.source][0], len(rank))
    return sorted(out, key=lambda x: (rank[doc_of[x.source][0]], doc_of[x.source][1], x.source))


def _doc_and_position(src) -> tuple[str, int]:
    """(its document, the position of its first chunk)."""
    from ..ids import ChunkId

    return src.doc_id, ChunkId.parse(src.chunk_ids[0]).position
