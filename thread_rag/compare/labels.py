"""Labels for an alignment: same / changed / only-in-A / only-in-B, decided on the text, not the vectors.

Chunk boundaries differ between versions (a sentence more in one chapter shifts every later cut), so a
chunk is never compared with its counterpart alone: chunk ``A_i`` is compared with the *window* of the
other thread around its counterpart (``B_{j-1} .. B_{j+1}``, widened to the counterparts of its aligned
neighbours where the other version was cut into smaller chunks; for a chunk without counterpart, the chunks
between its aligned neighbours). Its **coverage** is the share of its words found, in order, in that
window (difflib on normalised word keys). A pair is ``same`` when both chunks' coverage reaches
``SAME_MIN_COVERAGE``; a chunk without counterpart whose text is covered by its neighbours' counterparts
was only cut differently and joins them (``merged``, labelled by its coverage like a pair).

What is *not* a change (rendering, not content):

- Unicode compatibility forms (ligatures, non-breaking spaces), case, punctuation and quote styles, hyphens
  inside words and at line breaks (``in-\\nstaller`` = ``installer``), whitespace and line wrapping, a word
  split differently (``Alt F1`` = ``AltF1``, ``/usr/ share`` = ``/usr/share``; at either end of a chunk
  only against the window's words right next to it, ``_beside``);
- footnote marks (``¹``, ``^[4]``, ``^[a]``, also when a line break splits ``^`` from ``[4]``), and where
  the footnote text stands: at the foot of a page in one rendering, at the end of the chapter in another.
  A footnote's words count as found when the other version has that footnote anywhere (``_Notes``);
- cross-reference titles, running headers (upper-case header lines the thread repeats from page to page; a
  one-off upper-case line is content) and the heading of a table of contents (``ignore_pattern``, ``_hidden``);
- a table of contents where the other version prints none: its entries are compared with the other
  version's table of contents when the window holds one, and are not a change when it holds none
  (``_toc_positions``: numbered entries with evidence of a table of contents, a ``Contents`` heading, nested
  numbers or page numbers; a numbered list of steps is content);
- table rules drawn with box characters (``│Type│RAM`` = ``Type RAM``) and, between a version that draws its
  tables (box characters, or pipe rows as the TXT loader writes them) and one that does not, the order of the
  cells (``_found_in_table``).

Whether a token is a footnote, a running header or a table-of-contents entry is decided on the thread, not
on the chunk alone (``keyed_thread``: the chunks joined without their overlap), so one that a chunk boundary
cuts is still recognised. Runs of four or more words that pagination moved a few chunks away (floats) count
as found. Everything else is a change, including a single number (``1.5`` is not ``15``, ``-5`` not ``5``).

``SAME_MIN_COVERAGE`` is 1.0: every normalised word must be found. Chosen on the dev pair (the two TXT
editions) from a sweep of 1.0 / 0.99 / 0.98 / 0.97 / 0.95 / 0.9: anything lower calls a one-word edit in a
150-word chunk (``amd64`` -> ``arm64``, a size, a section number) "same" (bench compare, bench_results/DETAILS.md).
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..ingest.text import numbering_follows
from .vectors import unit_rows

SAME = "same"
CHANGED = "changed"
ONLY_A = "only-in-A"
ONLY_B = "only-in-B"
LABELS = (SAME, CHANGED, ONLY_A, ONLY_B)


# the rules that tell rendering from content, each switchable for the benchmark's leave-one-out (bench compare):
# the thread read as one stream (else chunk by chunk), footnotes looked up anywhere, tables of contents the
# other version lacks, words broken elsewhere at a chunk's edge, table cells in any order across renderings
RULES = ("thread", "footnotes", "toc", "edges", "table_cells")


@dataclass(frozen=True)
class LabelParams:
    same_min_coverage: float = 1.0      # every word found: best on the Debian editions (bench_results/DETAILS.md)
    changed_min_coverage: float = 0.5   # a chunk without counterpart joins its neighbours' counterpart above this
    window: int = 1                     # neighbours on each side of the counterpart searched for a chunk's words
    max_gap_window: int = 6             # at most this many chunks between aligned neighbours are searched
    moved_min_similarity: float = 0.9   # an only-in chunk whose text stands elsewhere in the other thread: moved
    nearby: int = 5                     # runs of >= nearby_min_run words not in the window are looked for this many
    nearby_min_run: int = 4             # chunks further (floats and tables that pagination moved); 0: off
    rules: tuple = RULES                # all on; the benchmark leaves one out at a time


# ------------------------------------------------------------------------------------------ headings
_NUMBERING = re.compile(r"^\s*(?:(?:chapter|appendix|section|part)\s+)?(?:[0-9]+|[A-Z])(?:\.[0-9]+)*\.?\s+(?=\S)",
                        re.I)


def heading_key(path: Sequence[str] | None) -> str:
    """The deepest heading, without its numbering (numbers shift between editions), as lower-case words."""
    if not path:
        return ""
    title = _NUMBERING.sub("", str(path[-1]))
    return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", title).lower()))


def heading_titles(*thread_paths) -> set[str]:
    """Every heading title of the given threads' heading paths, without numbering (for :func:`ignore_pattern`)."""
    out = set()
    for paths in thread_paths:
        for path in paths:
            for title in path or ():
                t = " ".join(_NUMBERING.sub("", str(title)).split())
                if t:
                    out.add(t)
    return out


# ------------------------------------------------------------------------------------------ words
_SUPERSCRIPTS = "\u00b9\u00b2\u00b3\u2070-\u2079"
_FOOTNOTE_MARK = re.compile(r"\^\[(?:\d+|[a-z])\]|[" + _SUPERSCRIPTS + "]+")
_BOX = re.compile(r"[\u2500-\u257f]+")           # box drawing: the rules of a table in a TXT rendering
_MARK_BROKEN = re.compile(r"\^\s+\[(?=(?:\d+|[a-z])\])")  # ``country^`` / ``[4],`` on the next line


# what a key keeps: letters and digits, a decimal point or separator between digits (``1.5``, ``10.0.0.1``,
# ``1,000``) and a minus sign before a digit that starts the word (``-5``, ``(-5)``, ``−5``); every other
# character (quotes, brackets, a sentence's full stop, hyphens inside a word) is rendering and dropped
_KEY_PART = re.compile(r"[^\W_]+|(?<=\d)[.,](?=\d)|(?<![\w.,\-\u2212])[\-\u2212](?=\d)")


def word_key(token: str) -> str:
    """A whitespace token as compared: footnote marks dropped, compatibility form, lower case, letters and
    digits, and the points and minus signs that make a number (``1.5`` is not ``15``, ``-5`` not ``5``)."""
    text = unicodedata.normalize("NFKC", _FOOTNOTE_MARK.sub("", token)).lower()
    return "".join(_KEY_PART.findall(text)).replace("\u2212", "-")


def _mend(text: str) -> str:
    """Words hyphenated across a line break joined, footnote marks broken across lines mended."""
    return _MARK_BROKEN.sub("^[", re.sub(r"(?<=[^\W\d_])-\s*\n\s*(?=[^\W\d_])", "-", text))


def tokens(text: str) -> list[str]:
    """The whitespace tokens of a chunk as compared (positions in ``unmatched_a/b`` index this list)."""
    return _BOX.sub(" ", _mend(text)).split()


# a drawn table's row: from the first to the last box character of a line, or a line of pipe rows as the TXT loader
# writes a box-drawn table ("| Install Type | RAM |")
_DRAWN_ROW = re.compile(r"[\u2500-\u257f][^\n]*[\u2500-\u257f]|(?<![^\n])\|[^\n]*\|(?![^\n])")


def _stream(text: str) -> tuple[list[str], list[bool], list[bool]]:
    """Tokens and, for each, whether a line break precedes it and whether it is a cell of a table drawn with
    box characters (between the first and the last box character of its line) or written as pipe rows."""
    mended = _mend(text)
    tables = [m.span() for m in _DRAWN_ROW.finditer(mended)]
    prepared = _BOX.sub(lambda m: " " * len(m.group()), mended)
    toks, nl, cell, end = [], [], [], 0
    for m in re.finditer(r"\S+", prepared):
        toks.append(m.group())
        nl.append("\n" in prepared[end:m.start()])
        cell.append(any(a <= m.start() < b for a, b in tables))
        end = m.end()
    return toks, nl, cell


# ------------------------------------------------------------------------------- printed, not content
_CAPS = r"[A-Z0-9][A-Z0-9/\u2019'(),:.\u2026*-]*"
# running header candidates a PDF loader left in the text (they land at other places in another edition or
# rendering), on one line: ``APPENDIX B. AUTOMATING THE INSTALLATION B.4. CONTENTS OF THE ...``, ``B.2. USING
# PRESEEDING`` (a header's section number ends with a dot: ``6.4 GB WDC`` in a listing is no header), a
# ``CONTENTS`` that starts a line. A candidate is hidden only when the thread repeats it (``_hidden``).
_RUNNING = (r"(?<!\S)(?P<running>(?:APPENDIX|CHAPTER)[^\S\n]+[A-Z0-9]{1,2}\.?(?:[^\S\n]+" + _CAPS + r")+"
            r"|[A-Z0-9]{1,2}(?:\.[0-9]+)+\.(?:[^\S\n]+" + _CAPS + r"){2,}|(?<![^\n])CONTENTS)(?!\S)")
_HEADER_PART = re.compile(r"[^\S\n]+(?=[A-Z0-9]{1,2}(?:\.[0-9]+)+\.(?!\S))")  # ``... INSTALLATION | B.4. ...``
HEADER_MIN_REPEATS = 2  # a running header is printed on page after page; once, the line is content
_TOC_HEAD = re.compile(r"(?<!\S)(Table of Contents|List of Tables|List of Figures|List of Examples)(?!\S)")
_XREF = r"\b(?:Section|Chapter|Appendix|Table|Figure|Example)\s+[0-9A-Z][0-9A-Z.]*,\s*"
_XREF_QUOTED = re.compile(_XREF + r"(\"[^\"]{1,160}\"|\u201c[^\u201d]{1,160}\u201d)")


def ignore_pattern(titles=()) -> re.Pattern:
    """What is rendering, not content, and never counts as a change (each hidden part is a capture group):

    - cross-reference titles, which one rendering prints and another leaves out (a TXT made from HTML writes
      ``see Section 6.4, "Loading Missing Firmware"`` where the PDF writes ``see Section 6.4``): quoted titles
      after ``Section N,`` and, given the documents' heading titles, unquoted ones (``Chapter 3, Before
      Installing Debian GNU/Linux``, ``Appendix E, Administrivia``); the reference itself stays part of the
      text;
    - running headers left in a PDF's text (upper-case section titles after a section number, ``CONTENTS`` at
      the start of a line), group ``running``: hidden by :func:`_hidden` only where the thread repeats them;
    - the heading of a table of contents (its entries: ``_toc_positions``)."""
    names = sorted({" ".join(t.split()) for t in titles if len(" ".join(str(t).split())) >= 4},
                   key=len, reverse=True)
    alts = [_XREF_QUOTED.pattern, _RUNNING, _TOC_HEAD.pattern]
    if names:
        alts.append(_XREF + "(" + "|".join(re.escape(t).replace(r"\ ", r"\s+") for t in names[:2000]) + r")(?!\w)")
    return re.compile("|".join(f"(?:{a})" for a in alts))


def _header_parts(header: str) -> list[str]:
    """A running header line's parts: ``APPENDIX B. AUTOMATING THE INSTALLATION`` / ``B.4. CONTENTS OF ...``."""
    return [" ".join(x.split()) for x in _HEADER_PART.split(header)]


def _hidden(toks: list[str], nl: list[bool], ignore: re.Pattern) -> set[int]:
    """Token positions inside a hidden group of ``ignore`` (matched on the tokens joined again). Running header
    candidates (group ``running``) are hidden only on a line where one of their parts occurs at least
    ``HEADER_MIN_REPEATS`` times in the thread: a header repeats from page to page (the section part beside
    the chapter part changes), a one-off upper-case line is content."""
    starts, parts, pos = [], [], 0
    for t, n in zip(toks, nl):
        if parts:
            parts.append("\n" if n else " ")
            pos += 1
        starts.append(pos)
        parts.append(t)
        pos += len(t)
    text = "".join(parts)
    out: set[int] = set()

    def hide(a: int, b: int) -> None:
        out.update(range(bisect_right(starts, a - 1), bisect_right(starts, b - 1)))

    running = ignore.groupindex.get("running")
    lines: dict[int, list] = {}  # line start -> running header candidates on that line
    for m in ignore.finditer(text):
        for g in range(1, ignore.groups + 1):
            a, b = m.span(g)
            if b <= a:
                continue
            if g == running:
                lines.setdefault(text.rfind("\n", 0, a), []).append((a, b, _header_parts(text[a:b])))
            else:
                hide(a, b)
    seen = Counter(p for cands in lines.values() for _, _, ps in cands for p in ps)
    for cands in lines.values():
        if any(seen[p] >= HEADER_MIN_REPEATS for _, _, ps in cands for p in ps):
            for a, b, _ in cands:
                hide(a, b)
    return out


# ------------------------------------------------------------------------------- tables of contents
_ENTRY = re.compile(r"(?:[A-Z]|[0-9]{1,2})(?:\.[0-9]{1,2})*\.")
_REFERS = frozenset("chapter appendix section part table figure example step".split())


def _parts(entry: str) -> list[str]:
    return entry.rstrip(".").split(".")


def _is_title(toks: list[str], nl: list[bool], lo: int, hi: int) -> bool:
    """Tokens ``lo..hi`` can be one entry's title: 1-15 tokens on one line, none ending a sentence."""
    return 1 <= hi - lo <= 15 and not any(nl[lo:hi]) and \
        not any(t.endswith(".") and not t.endswith("..") for t in toks[lo:hi])


def _title_end(toks: list[str], nl: list[bool], k: int) -> int:
    """End of the title of the entry at ``k``, the last of its run: the end of its line within 12 tokens;
    without a line break there, its capitalised and short words (the title ran into the body text)."""
    end = k + 1
    while end < len(toks) and end - k <= 12 and not nl[end] and not _ENTRY.fullmatch(toks[end]):
        end += 1
    if end == len(toks) or end - k <= 12 or nl[end]:
        return end
    end = k + 1
    while end < len(toks) and (toks[end][:1].isupper() or len(toks[end]) <= 3):
        end += 1
    return end


_TOC_TITLES = (("contents",), ("table", "of", "contents"), ("list", "of", "tables"), ("list", "of", "figures"),
               ("list", "of", "examples"))
_PAGE = re.compile(r"[0-9]{1,4}")
_LEADER = re.compile(r"\.{3,}|\u2026+|(?:\. ?){3,}")


def _headed(toks: list[str], nl: list[bool], k: int) -> bool:
    """Whether a ``Contents`` / ``Table of Contents`` / ``List of Tables`` line ends right before token ``k``."""
    for title in _TOC_TITLES:
        s = k - len(title)
        if s >= 0 and (s == 0 or nl[s]) and tuple(t.lower().rstrip(":") for t in toks[s:k]) == title:
            return True
    return False


def _paged(toks: list[str], titles: list[tuple[int, int]]) -> bool:
    """Whether entry titles look like a table of contents' lines: dot leaders in at least half of them
    (``Welcome ..... 1``), or at least three, and most, ending with page numbers that never decrease (a
    numbered procedure whose steps end with a value has no such run)."""
    leaders = sum(any(_LEADER.fullmatch(t) for t in toks[lo:hi]) for lo, hi in titles)
    pages = [int(toks[hi - 1]) for lo, hi in titles if hi > lo and _PAGE.fullmatch(toks[hi - 1])]
    return 2 * leaders >= len(titles) or \
        (len(pages) >= 3 and 2 * len(pages) >= len(titles) and pages == sorted(pages))


def _toc_positions(toks: list[str], nl: list[bool]) -> set[int]:
    """Token positions of tables of contents: runs of two or more entries (``2.4.5. Un*x or GNU system``) whose
    numbers follow each other (``numbering_follows``), each with a one-line title that ends no sentence, and with
    evidence that they list sections rather than steps (``1. Open the lid`` / ``2. Remove the battery`` is a
    procedure): a ``Contents`` heading line right before, a number with a dot inside (``2.4.``), or page
    numbers or dot leaders after most titles. An entry after ``Chapter``/``Appendix`` is a heading or a
    reference, never part of a run. Linear in the tokens."""
    entries = [k for k, t in enumerate(toks) if _ENTRY.fullmatch(t)
               and not (k and toks[k - 1].lower() in _REFERS)]
    out: set[int] = set()
    run: list[int] = []
    for e, nxt in zip(entries, entries[1:] + [None]):
        run.append(e)
        if nxt is not None and _is_title(toks, nl, e + 1, nxt) and numbering_follows(_parts(toks[e]), _parts(toks[nxt])):
            continue
        if len(run) >= 2:
            end = _title_end(toks, nl, run[-1])
            nested = any("." in toks[x].rstrip(".") for x in run)
            titles = [(x + 1, y) for x, y in zip(run, run[1:] + [end])]
            if nested or _headed(toks, nl, run[0]) or _paged(toks, titles):
                out.update(range(run[0], end))
        run = []
    return out


# ---------------------------------------------------------------------------------------- footnotes
_NOTE_START = re.compile(r"\^\[(?:\d+|[a-z])\]|[" + _SUPERSCRIPTS + r"]+[^\W\d_].*")


def _note_spans(toks: list[str], nl: list[bool]) -> list[tuple[int, int]]:
    """Footnote texts: from a token that starts one (``^[4]`` alone, as a TXT rendering writes it at the
    start of the note; ``¹With``, a PDF's mark glued to the note's first word; marks in the body are glued to
    the end of a word) to the end of its line or the next note."""
    starts = [k for k, t in enumerate(toks) if _NOTE_START.fullmatch(t)]
    spans = []
    for s, nxt in zip(starts, starts[1:] + [len(toks)]):
        end = s + 1
        while end < nxt and not nl[end]:
            end += 1
        spans.append((s, end))
    return spans


# ------------------------------------------------------------------------------------------ keyed chunks
@dataclass
class Keyed:
    """A chunk's tokens and their comparison keys (empty key: punctuation, a footnote mark or text that
    :func:`ignore_pattern` hides, never a change), which tokens belong to a table of contents or to a drawn
    table, and the footnote texts in it (token ranges). Made by :func:`keyed_thread`."""

    toks: list
    keys: list
    toc: list      # per token: part of a table of contents
    cell: list     # per token: a cell of a table drawn with box characters
    notes: list    # (start, end) token ranges of footnote texts

    @classmethod
    def of(cls, text: str, ignore: re.Pattern | None = None) -> "Keyed":
        return keyed_thread([text], ignore)[0]

    @property
    def words(self) -> int:
        return sum(1 for k in self.keys if k)

    @property
    def has_toc(self) -> bool:
        return any(self.toc)


def _overlap(prev: list[str], cur: list[str]) -> int:
    """Tokens at the start of ``cur`` that repeat the end of ``prev`` (the chunker's overlap)."""
    for n in range(min(len(prev), len(cur)), 0, -1):
        if prev[-n] == cur[0] and prev[-n:] == cur[:n]:
            return n
    return 0


def keyed_thread(texts: Sequence[str], ignore: re.Pattern | None = None) -> list[Keyed]:
    """:class:`Keyed` chunks of one thread. What is hidden, a footnote or a table of contents is decided on the
    thread's text (the chunks joined, each without the overlap it repeats from the one before), so one that a
    chunk boundary cuts is still recognised."""
    toks: list[str] = []
    nl: list[bool] = []
    cell: list[bool] = []
    brk: list[bool] = []   # a line break, or a boundary where two chunks share no text (a running header ends)
    spans, prev = [], []
    for k, text in enumerate(texts):
        t, n, c = _stream(text)
        shared = _overlap(prev, t) if k else 0
        spans.append((len(toks) - shared, len(toks) + len(t) - shared))
        toks += t[shared:]
        nl += n[shared:]
        cell += c[shared:]
        brk += [n[x] or (x == 0 and k > 0) for x in range(shared, len(t))]
        prev = t
    hidden = _hidden(toks, brk, ignore) if ignore is not None else set()
    keys = ["" if k in hidden else word_key(t) for k, t in enumerate(toks)]
    toc = _toc_positions(toks, nl)
    notes = _note_spans(toks, nl)
    return [Keyed(toks[lo:hi], keys[lo:hi], [k in toc for k in range(lo, hi)], cell[lo:hi],
                  [(max(s, lo) - lo, min(e, hi) - lo) for s, e in notes if s < hi and e > lo]) for lo, hi in spans]


class _Notes:
    """All footnote texts of one thread, to look a footnote up wherever the other rendering placed it."""

    def __init__(self, thread: Sequence[Keyed]):
        pool: list[str] = []
        for kd in thread:
            for s, e in kd.notes:
                pool.extend(k for k in kd.keys[s:e] if k)
                pool.append("\x00")
        self.matcher = difflib.SequenceMatcher(None, autojunk=False)
        self.matcher.set_seq2(pool)
        self.empty = not pool

    def find(self, own: Keyed, mask: list) -> None:
        """Mark as found the words of ``own``'s footnotes that stand, in runs of three or more, in a footnote
        of this thread."""
        if self.empty:
            return
        for s, e in own.notes:
            idx = [k for k in range(s, e) if own.keys[k]]
            if all(mask[k] for k in idx):
                continue
            self.matcher.set_seq1([own.keys[k] for k in idx])
            for blk in self.matcher.get_matching_blocks():
                if blk.size >= 3:
                    for t in range(blk.a, blk.a + blk.size):
                        mask[idx[t]] = True


# ------------------------------------------------------------------------------------------ matching
def match_mask(a: Keyed, window: Sequence[Keyed], tables_differ: bool = False, rules: Sequence[str] = RULES) -> list:
    """Which tokens of ``a`` occur, in order, in the concatenated ``window``. Runs that differ only in where
    the spaces fall (``alt f1`` / ``altf1``) count as found; so does a table of contents when the window
    holds none (the other rendering prints none there). ``tables_differ``: one version draws its tables with
    box characters and the other does not (:func:`_found_in_table`). ``rules``: see :data:`RULES`."""
    skip_toc = "toc" in rules and a.has_toc and not any(w.has_toc for w in window)
    mask = [not k or (skip_toc and t) for k, t in zip(a.keys, a.toc)]
    a_idx = [i for i, ok in enumerate(mask) if not ok]
    ak = [a.keys[i] for i in a_idx]
    wk = [k for w in window for k in w.keys if k]
    if not ak:
        return mask
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ak, wk, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and "".join(ak[i1:i2]) == "".join(wk[j1:j2])):
            for i in range(i1, i2):
                mask[a_idx[i]] = True
        elif tag == "replace":  # words broken elsewhere (``/usr/ share/doc`` vs ``/usr/share/doc``): by characters
            beside = _beside(wk, i1, i2, j1, j2, len(ak)) if "edges" in rules else wk[j1:j2]
            for i in _found_by_chars(ak[i1:i2], beside):
                mask[a_idx[i1 + i]] = True
    if tables_differ and "table_cells" in rules:
        _found_in_table(a, mask, window)
    return mask


def _found_in_table(a: Keyed, mask: list, window: Sequence[Keyed]) -> None:
    """Table cells in any order, between a version that draws its tables with box characters and one that
    does not: they lay a table out differently (a TXT's drawn rows wrap cells over several lines, a PDF's
    text lists them column by column). A missing word of a drawn table counts as found when the window has it
    anywhere; a missing word of ``a`` counts as found when a drawn table in the window has it. Each word of
    the window serves once."""
    drawn = Counter(k for w in window for k, c in zip(w.keys, w.cell) if c and k)
    mine = any(a.cell)
    if not drawn and not mine:
        return
    bag = Counter(k for w in window for k in w.keys if k) if mine else drawn
    for i, (ok, key, c) in enumerate(zip(mask, a.keys, a.cell)):
        if not ok and (c or not mine) and bag[key] > 0:
            bag[key] -= 1
            mask[i] = True


def _beside(wk: list, i1: int, i2: int, j1: int, j2: int, n: int) -> list:
    """The window's words replaced by ``a``'s words ``i1..i2``; at an end of ``a`` (where the window runs on
    past the chunk's text) only the few words right next to the matched part."""
    width = 2 * (i2 - i1) + 3
    if i2 == n and i1 > 0:
        return wk[j1:min(j2, j1 + width)]
    if i1 == 0 and i2 < n:
        return wk[max(j1, j2 - width):j2]
    return wk[j1:j2]


def _found_by_chars(a_keys: list, w_keys: list, max_chars: int = 600) -> list[int]:
    """Positions in ``a_keys`` whose characters all occur, in order, in the concatenated ``w_keys`` (within a
    small replaced run; longer runs are left as they are)."""
    sa, sw = "".join(a_keys), "".join(w_keys)
    if not sa or not sw or len(sa) > max_chars or len(sw) > max_chars:
        return []
    found = bytearray(len(sa))
    for blk in difflib.SequenceMatcher(None, sa, sw, autojunk=False).get_matching_blocks():
        if blk.size >= 3:
            found[blk.a:blk.a + blk.size] = b"\x01" * blk.size
    out, pos = [], 0
    for i, k in enumerate(a_keys):
        if all(found[pos:pos + len(k)]):
            out.append(i)
        pos += len(k)
    return out


def _found_nearby(own: Keyed, mask: list, other: Sequence[Keyed], centre: int, p: LabelParams) -> None:
    """Runs of at least ``nearby_min_run`` words missing from the window that stand, in order, within
    ``nearby`` chunks of it (a float or a table that pagination placed elsewhere) count as found. Single
    words never do: a changed value or name stays a change."""
    if not p.nearby or not p.nearby_min_run:
        return
    run_list, cur = [], []
    for k, (ok, key) in enumerate(zip(mask, own.keys)):
        if key and not ok:
            cur.append(k)
        elif key and cur:
            run_list.append(cur)
            cur = []
    if cur:
        run_list.append(cur)
    run_list = [r for r in run_list if len(r) >= p.nearby_min_run]
    if not run_list:
        return
    wk = [key for x in range(max(0, centre - p.nearby), min(len(other), centre + p.nearby + 1))
          for key in other[x].keys if key]
    for r in run_list:
        sm = difflib.SequenceMatcher(None, [own.keys[k] for k in r], wk, autojunk=False)
        for blk in sm.get_matching_blocks():
            if blk.size >= 3:
                for t in range(blk.a, blk.a + blk.size):
                    mask[r[t]] = True


def coverage(mask: Sequence[bool], keyed: Keyed) -> float:
    n = keyed.words
    if n == 0:
        return 1.0
    return sum(1 for m, k in zip(mask, keyed.keys) if m and k) / n


def runs(keyed: Keyed, mask: Sequence[bool], limit: int = 12) -> list[str]:
    """The token runs not found on the other side (what was removed or added), as phrases."""
    out: list[str] = []
    cur: list[str] = []
    for tok, ok, key in zip(keyed.toks, mask, keyed.keys):
        if not ok:
            cur.append(tok)
        elif cur and key:
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return out[:limit]


# ------------------------------------------------------------------------------------------ rows
@dataclass
class Row:
    """One line of the comparison: chunk positions on each side (None = no counterpart) and the verdict."""

    label: str
    a: int | None
    b: int | None
    similarity: float | None = None
    coverage_a: float | None = None
    coverage_b: float | None = None
    merged: str | None = None            # "a"/"b": that side's chunk has no counterpart of its own; its text is in
    #                                      the other side's chunk shown beside it (the versions were cut elsewhere)
    moved: int | None = None             # only-in rows: the other side's chunk holding the same text (moved)
    removed: list = field(default_factory=list)  # A's words not found in B (phrases)
    added: list = field(default_factory=list)    # B's words not found in A (phrases)
    mask_a: list | None = field(default=None, repr=False)
    mask_b: list | None = field(default=None, repr=False)


def _window(k: int, count: int, size: int, lo: int | None = None, hi: int | None = None, cap: int = 3) -> range:
    """Chunks ``k - size .. k + size`` of the other thread, widened to ``lo .. hi`` (the counterparts of the
    neighbours: where the other version was cut into smaller chunks) but never past ``k +- cap``."""
    first, last = k - size, k + size
    if lo is not None:
        first = min(first, max(lo, k - cap))
    if hi is not None:
        last = max(last, min(hi, k + cap))
    return range(max(0, first), min(count, last + 1))


def _anchors(pairs: Sequence[tuple]) -> tuple[list, list]:
    """For each position of ``pairs``: the nearest aligned pair before it and after it (None: none)."""
    prev, nxt = [None] * len(pairs), [None] * len(pairs)
    last = None
    for k, pr in enumerate(pairs):
        prev[k] = last
        if pr[0] is not None and pr[1] is not None:
            last = pr
    last = None
    for k in range(len(pairs) - 1, -1, -1):
        nxt[k] = last
        if pairs[k][0] is not None and pairs[k][1] is not None:
            last = pairs[k]
    return prev, nxt


class Labeller:
    """Both threads keyed once (:func:`keyed_thread`): rows for an alignment, word diffs of pairs."""

    def __init__(self, texts_a: Sequence[str], texts_b: Sequence[str], params: LabelParams | None = None,
                 titles=()):
        self.p = params or LabelParams()
        ignore = ignore_pattern(titles)
        if "thread" in self.p.rules:
            self.ka, self.kb = keyed_thread(texts_a, ignore), keyed_thread(texts_b, ignore)
        else:  # leave-one-out only: each chunk decided on its own text
            self.ka = [keyed_thread([t], ignore)[0] for t in texts_a]
            self.kb = [keyed_thread([t], ignore)[0] for t in texts_b]
        self.notes_a, self.notes_b = _Notes(self.ka), _Notes(self.kb)
        # one version draws its tables with box characters, the other does not: cells in any order
        self.tables_differ = any(any(k.cell) for k in self.ka) != any(any(k.cell) for k in self.kb)

    def rows(self, pairs: Sequence[tuple], vectors: tuple | None = None) -> list[Row]:
        """Rows for an alignment (``pairs`` from :func:`thread_rag.compare.align.align`). ``vectors``: the two
        threads' chunk vectors (optional): cosine recorded on rows, moved text marked."""
        unit = None if vectors is None else tuple(unit_rows(v) for v in vectors)
        prev, nxt = _anchors(pairs)
        rows = []
        for k, (i, j) in enumerate(pairs):
            row = self._pair(i, j, prev[k], nxt[k]) if i is not None and j is not None else \
                self._gap(i, j, prev[k], nxt[k])
            if unit is not None and row.a is not None and row.b is not None:
                row.similarity = round(float(unit[0][row.a] @ unit[1][row.b]), 4)
            rows.append(row)
        if unit is not None:
            self._mark_moved(rows, *unit)
        return rows

    def _found(self, own: Keyed, side: int, window: Sequence[int], centre: int) -> tuple[list, float]:
        """Mask and coverage of ``own`` (a chunk of thread ``side``) against chunks ``window`` of the other
        thread: in order in the window, in runs a few chunks away, footnotes anywhere."""
        other, notes = (self.kb, self.notes_b) if side == 0 else (self.ka, self.notes_a)
        mask = match_mask(own, [other[x] for x in window], self.tables_differ, self.p.rules)
        _found_nearby(own, mask, other, centre, self.p)
        if "footnotes" in self.p.rules:
            notes.find(own, mask)
        return mask, coverage(mask, own)

    def _label(self, *covs: float) -> str:
        return SAME if min(covs) >= self.p.same_min_coverage - 1e-9 else CHANGED

    def _pair(self, i: int, j: int, prev, nxt) -> Row:
        w = self.p.window
        win_b = _window(j, len(self.kb), w, prev and prev[1], nxt and nxt[1], cap=w + 2)
        win_a = _window(i, len(self.ka), w, prev and prev[0], nxt and nxt[0], cap=w + 2)
        ma, ca = self._found(self.ka[i], 0, win_b, j)
        mb, cb = self._found(self.kb[j], 1, win_a, i)
        return Row(self._label(ca, cb), i, j, coverage_a=round(ca, 4), coverage_b=round(cb, 4),
                   removed=runs(self.ka[i], ma), added=runs(self.kb[j], mb), mask_a=ma, mask_b=mb)

    def _gap(self, i: int | None, j: int | None, prev, nxt) -> Row:
        """A chunk without counterpart: its words are looked for between its aligned neighbours' counterparts;
        found (``changed_min_coverage``), it joins the neighbour it shares most words with (``merged``)."""
        side = 0 if i is not None else 1
        own, other = (self.ka[i], self.kb) if side == 0 else (self.kb[j], self.ka)
        o = 1 - side
        lo, hi = (prev[o] if prev else 0), (nxt[o] if nxt else len(other) - 1)
        cand = list(range(lo, hi + 1)) if hi - lo + 1 <= self.p.max_gap_window else \
            sorted(set(range(lo, min(lo + self.p.window + 1, len(other)))) |
                   set(range(max(hi - self.p.window, 0), hi + 1)))
        cand = [x for x in cand if 0 <= x < len(other)]
        mask, cov = [not key for key in own.keys], (1.0 if not own.words else 0.0)  # nothing to compare: no change
        if cand and own.words:
            mask, cov = self._found(own, side, cand, (cand[0] + cand[-1]) // 2)
        if cand and cov >= self.p.changed_min_coverage:
            best = max(cand, key=lambda x: _shared(own, other[x]))  # the neighbour it shares most words with
            a, b = (i, best) if side == 0 else (best, j)
            row = Row(self._label(cov), a, b, merged="a" if side == 0 else "b")
        else:
            row = Row(ONLY_A if side == 0 else ONLY_B, i, j)
        if side == 0:
            row.coverage_a, row.mask_a, row.removed = round(cov, 4), mask, runs(own, mask)
        else:
            row.coverage_b, row.mask_b, row.added = round(cov, 4), mask, runs(own, mask)
        return row

    def _mark_moved(self, rows: list[Row], va: np.ndarray, vb: np.ndarray) -> None:
        """An only-in-A chunk whose text stands, unchanged, at an only-in-B place (and vice versa) was moved:
        the alignment is monotone, so it cannot pair them, but the rows point at each other."""
        ra = [r for r in rows if r.label == ONLY_A]
        rb = [r for r in rows if r.label == ONLY_B]
        if not ra or not rb:
            return
        sub_b = vb[[r.b for r in rb]]
        for s in range(0, len(ra), 256):  # blocks of rows: memory stays linear
            sim = va[[r.a for r in ra[s:s + 256]]] @ sub_b.T
            for off, row in enumerate(ra[s:s + 256]):
                best = int(np.argmax(sim[off]))
                other = rb[best]
                if sim[off, best] < self.p.moved_min_similarity or other.moved is not None:
                    continue
                ka, kb = self.ka[row.a], self.kb[other.b]
                covs = coverage(match_mask(ka, [kb], self.tables_differ, self.p.rules), ka), \
                    coverage(match_mask(kb, [ka], self.tables_differ, self.p.rules), kb)
                if self._label(*covs) == SAME:
                    row.moved, other.moved = other.b, row.a

    def diff(self, i: int, j: int, max_chars: int = 2000) -> str:
        """Word-level diff of chunk ``i`` of A and chunk ``j`` of B: ``[-removed-]{+added+}`` inside the common
        words (difflib on the content words; hidden text is shown as it stands in B, never as a change)."""
        return inline_diff(self.ka[i], self.kb[j], max_chars)


def _shared(x: Keyed, y: Keyed) -> int:
    return len({k for k in x.keys if k} & {k for k in y.keys if k})


def label_rows(texts_a: Sequence[str], texts_b: Sequence[str], pairs: Sequence[tuple],
               params: LabelParams | None = None, titles=(), vectors: tuple | None = None) -> list[Row]:
    """Rows for an alignment: :meth:`Labeller.rows` for two threads' texts (``titles``: the documents'
    heading titles, see :func:`ignore_pattern`)."""
    return Labeller(texts_a, texts_b, params, titles).rows(pairs, vectors)


def inline_diff(a: Keyed, b: Keyed, max_chars: int = 2000) -> str:
    """Word-level diff of two keyed chunks: ``[-removed-]{+added+}`` inside B's text (difflib on the content
    words, so punctuation and hidden text never show as changes; a table of contents the other chunk lacks
    neither)."""
    ia = [k for k, key in enumerate(a.keys) if key and not (a.toc[k] and not b.has_toc)]
    ib = [k for k, key in enumerate(b.keys) if key and not (b.toc[k] and not a.has_toc)]
    ak, bk = [a.keys[k] for k in ia], [b.keys[k] for k in ib]
    out: list[str] = []
    shown = 0  # B's tokens before this one are in ``out``
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ak, bk, autojunk=False).get_opcodes():
        start = ib[j1] if j1 < len(ib) else len(b.toks)
        end = ib[j2 - 1] + 1 if j2 > j1 else start
        if tag == "equal" or "".join(ak[i1:i2]) == "".join(bk[j1:j2]):
            out.append(" ".join(b.toks[shown:end]))
        else:
            out.append(" ".join(b.toks[shown:start]))
            out.append(("[-" + " ".join(a.toks[ia[i1]:ia[i2 - 1] + 1]) + "-]" if i2 > i1 else "")
                       + ("{+" + " ".join(b.toks[start:end]) + "+}" if j2 > j1 else ""))
        shown = max(shown, end)
    out.append(" ".join(b.toks[shown:]))
    text = " ".join(x for x in out if x)
    return text if len(text) <= max_chars else text[:max_chars].rstrip() + " ..."
