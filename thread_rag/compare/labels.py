"""Labels for an alignment: same / changed / only-in-A / only-in-B, decided on the text, not the vectors.

Chunk boundaries differ between versions (a sentence more in one chapter shifts every later cut), so a
chunk is never compared with its counterpart alone: chunk ``A_i`` is compared with the *window* of the
other thread around its counterpart (``B_{j-1} .. B_{j+1}``, widened to the counterparts of its aligned
neighbours where the other version was cut into smaller chunks; for a chunk without counterpart, the chunks
between its aligned neighbours). Its **coverage** is the share of its words found, in order, in that
window (difflib on normalised word keys). A pair is ``same`` when both chunks' coverage reaches
``SAME_MIN_COVERAGE``; a chunk without counterpart whose text is covered by its neighbours' counterparts
was only cut differently and joins them (``merged``, labelled by its coverage like a pair).

Normalisation (what is *not* a change): Unicode compatibility forms (ligatures, non-breaking spaces),
case, punctuation and quote styles, hyphens inside words and at line breaks (``command-line`` =
``command-\\nline`` = ``commandline``), whitespace and line wrapping, a word split differently
(``Alt F1`` = ``AltF1``, ``/usr/ share`` = ``/usr/share``), footnote marks, and what one rendering prints
and another does not (``ignore_pattern``: cross-reference titles, running headers, tables of contents).
Runs of four or more words that pagination moved a few chunks away (footnotes) count as found. Everything
else is a change, including a single number.

``SAME_MIN_COVERAGE`` is 1.0: every normalised word must be found. Chosen on the dev pair (the two TXT
editions) from a sweep of 1.0 / 0.99 / 0.98 / 0.97 / 0.95 / 0.9: anything lower calls a one-word edit in a
150-word chunk (``amd64`` -> ``arm64``, a size, a section number) "same" (bench compare, BENCHMARKS.md).
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Sequence

SAME = "same"
CHANGED = "changed"
ONLY_A = "only-in-A"
ONLY_B = "only-in-B"
LABELS = (SAME, CHANGED, ONLY_A, ONLY_B)


@dataclass(frozen=True)
class LabelParams:
    same_min_coverage: float = 1.0      # every word found: measured best on the Debian editions (BENCHMARKS.md)
    changed_min_coverage: float = 0.5   # a chunk without counterpart joins its neighbours' counterpart above this
    window: int = 1                     # neighbours on each side of the counterpart searched for a chunk's words
    max_gap_window: int = 6             # at most this many chunks between aligned neighbours are searched
    moved_min_similarity: float = 0.9   # an only-in chunk whose text stands elsewhere in the other thread: moved
    nearby: int = 5                     # runs of >= nearby_min_run words not in the window are looked for this many
    nearby_min_run: int = 4             # chunks further (footnotes and floats that pagination moved); 0: off


_NUMBERING = re.compile(r"^\s*(?:(?:chapter|appendix|section|part)\s+)?(?:[0-9]+|[A-Z])(?:\.[0-9]+)*\.?\s+(?=\S)",
                        re.I)


def heading_key(path: Sequence[str] | None) -> str:
    """The deepest heading, without its numbering (numbers shift between editions), as lower-case words."""
    if not path:
        return ""
    title = _NUMBERING.sub("", str(path[-1]))
    return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", title).lower()))


_FOOTNOTE_MARK = re.compile(r"\^\[\d+\]|[\u00b9\u00b2\u00b3\u2070-\u2079]+")
_XREF = r"\b(?:Section|Chapter|Appendix|Table|Figure|Example)\s+[0-9A-Z][0-9A-Z.]*,\s*"
_XREF_QUOTED = re.compile(_XREF + r"(\"[^\"]{1,160}\"|\u201c[^\u201d]{1,160}\u201d)")


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


def word_key(token: str) -> str:
    """A whitespace token as compared: footnote marks dropped, compatibility form, lower case, letters and
    digits only."""
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", _FOOTNOTE_MARK.sub("", token)).lower())


def _join_hyphens(text: str) -> str:
    return re.sub(r"(?<=[^\W\d_])-\s*\n\s*(?=[^\W\d_])", "-", text)


def tokens(text: str) -> list[str]:
    """Whitespace tokens of a chunk, with words hyphenated across a line break joined."""
    return _join_hyphens(text).split()


_CAPS = r"[A-Z0-9][A-Z0-9/\u2019'(),:.\u2026*-]*"
# running headers a PDF loader left in the text (they land at other places in another edition or rendering):
# ``APPENDIX B. AUTOMATING THE INSTALLATION B.4. CONTENTS OF THE ...``, ``B.2. USING PRESEEDING``
_RUNNING = (r"(?<!\S)((?:APPENDIX|CHAPTER)\s+[A-Z0-9]{1,2}\.?(?:\s+" + _CAPS + r")+"
            r"|[A-Z0-9]{1,2}(?:\.[0-9]+)+\.?(?:\s+" + _CAPS + r"){2,}|CONTENTS)(?!\S)")
# tables of contents (navigation a TXT rendering lists per chapter and a PDF loader drops): see _toc_tokens
_ENTRY = re.compile(r"(?:[A-Z]|[0-9]+)(?:\.[0-9]+)*\.")
_SMALL = frozenset("a an the of to for and or on in from with into up over using by your as at is via its not".split())
_TOC_HEAD = re.compile(r"(?<!\S)(Table of Contents|List of Tables|List of Figures|List of Examples)(?!\S)")


def _title_word(t: str) -> bool:
    return (t[:1].isupper() or t[:1].isdigit() or t[:1] in "(\"'\u201c\u2018" or t.lower() in _SMALL) and \
        t[-1:] not in ".,:;!"


def _toc_tokens(toks: list[str]) -> set[int]:
    """Token positions of table-of-contents runs: four or more ``6.3.1. Title`` entries in a row whose titles
    are at most 12 capitalised or small words (``of``, ``the``) that end no sentence, so numbered steps
    (``1. Download the image.``) and the body text after the list never match. Linear in the tokens."""
    hidden: set[int] = set()
    run: list[tuple[int, int]] = []  # (entry position, end of its title)

    def close() -> None:
        if len(run) >= 4:
            hidden.update(range(run[0][0], run[-1][1]))

    k = 0
    while k < len(toks):
        if not _ENTRY.fullmatch(toks[k]):
            close()
            run = []
            k += 1
            continue
        end = k + 1
        while end < len(toks) and end - k <= 12 and not _ENTRY.fullmatch(toks[end]) and _title_word(toks[end]):
            end += 1
        if end == k + 1:  # an entry without a title ends a run
            close()
            run = []
            k += 1
            continue
        run.append((k, end))
        if end < len(toks) and not _ENTRY.fullmatch(toks[end]):  # the title ran into other words: run ends
            close()
            run = []
        k = end
    close()
    return hidden


def ignore_pattern(titles=()) -> re.Pattern:
    """What is rendering, not content, and never counts as a change (each hidden part is a capture group):

    - cross-reference titles, which one rendering prints and another leaves out (a TXT made from HTML writes
      ``see Section 6.4, "Loading Missing Firmware"`` where the PDF writes ``see Section 6.4``): quoted titles
      after ``Section N,`` and, given the documents' heading titles, unquoted ones (``Chapter 3, Before
      Installing Debian GNU/Linux``); the reference itself (``Section 6.4``) stays part of the text;
    - running headers left in a PDF's text (upper-case section titles after a section number);
    - tables of contents (``Table of Contents``; the runs of entries are found on tokens, ``_toc_tokens``)."""
    names = sorted({" ".join(t.split()) for t in titles if len(str(t).split()) >= 2}, key=len, reverse=True)
    alts = [_XREF_QUOTED.pattern, _RUNNING, _TOC_HEAD.pattern]
    if names:
        alts.append(_XREF + "(" + "|".join(re.escape(t).replace(r"\ ", r"\s+") for t in names[:2000]) + r")(?!\w)")
    return re.compile("|".join(f"(?:{a})" for a in alts))




@dataclass
class Keyed:
    """A chunk's tokens and their comparison keys (empty key: punctuation, a footnote mark or a cross-reference
    title, never a change)."""

    toks: list
    keys: list

    @classmethod
    def of(cls, text: str, ignore: re.Pattern | None = None) -> "Keyed":
        joined = _join_hyphens(text)
        spans = []
        if ignore is not None:
            for m in ignore.finditer(joined):
                spans.extend(m.span(g) for g in range(1, (m.re.groups or 0) + 1) if m.group(g) is not None)
            spans = [sp for sp in spans if sp[1] > sp[0]]
        matches = list(re.finditer(r"\S+", joined))
        toks = [m.group() for m in matches]
        toc = _toc_tokens(toks) if ignore is not None else set()
        keys = ["" if k in toc or any(a <= m.start() < b for a, b in spans) else word_key(m.group())
                for k, m in enumerate(matches)]
        return cls(toks, keys)

    @property
    def words(self) -> int:
        return sum(1 for k in self.keys if k)


def match_mask(a: Keyed, window: Sequence[Keyed]) -> tuple[list, list]:
    """Which tokens of ``a`` occur, in order, in the concatenated ``window``: (mask over a's tokens,
    difflib opcodes of a's content keys vs the window's). Runs that differ only in where the spaces fall
    (``alt f1`` / ``altf1``) count as found."""
    a_idx = [i for i, k in enumerate(a.keys) if k]
    ak = [a.keys[i] for i in a_idx]
    wk = [k for w in window for k in w.keys if k]
    mask = [not k for k in a.keys]
    if not ak:
        return mask, []
    sm = difflib.SequenceMatcher(None, ak, wk, autojunk=False)
    ops = sm.get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" or (tag == "replace" and "".join(ak[i1:i2]) == "".join(wk[j1:j2])):
            for i in range(i1, i2):
                mask[a_idx[i]] = True
        elif tag == "replace":  # words broken elsewhere (``/usr/ share/doc`` vs ``/usr/share/doc``): by characters
            for i in _found_by_chars(ak[i1:i2], wk[j1:j2]):
                mask[a_idx[i1 + i]] = True
    return mask, ops


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


def label_rows(texts_a: Sequence[str], texts_b: Sequence[str], pairs: Sequence[tuple], sims=None,
               params: LabelParams | None = None, titles=()) -> list[Row]:
    """Rows for an alignment (``pairs`` from :func:`thread_rag.compare.align.align`).

    ``sims(i, j)``: cosine of two chunks (optional; recorded on aligned rows). ``titles``: the documents'
    heading titles (cross-references that print them are normalised away, see :func:`ignore_pattern`)."""
    p = params or LabelParams()
    ignore = ignore_pattern(titles)
    ka = [Keyed.of(t, ignore) for t in texts_a]
    kb = [Keyed.of(t, ignore) for t in texts_b]
    n, m = len(ka), len(kb)
    rows: list[Row] = []
    prev_anchor: list = [None] * len(pairs)
    next_anchor: list = [None] * len(pairs)
    last = None
    for k, pr in enumerate(pairs):
        prev_anchor[k] = last
        if pr[0] is not None and pr[1] is not None:
            last = pr
    last = None
    for k in range(len(pairs) - 1, -1, -1):
        next_anchor[k] = last
        if pairs[k][0] is not None and pairs[k][1] is not None:
            last = pairs[k]

    def label_for(ca: float, cb: float | None) -> str:
        worst = ca if cb is None else min(ca, cb)
        return SAME if worst >= p.same_min_coverage - 1e-9 else CHANGED

    for k, (i, j) in enumerate(pairs):
        if i is not None and j is not None:
            pa, na = prev_anchor[k], next_anchor[k]
            win_b = _window(j, m, p.window, pa and pa[1], na and na[1], cap=p.window + 2)
            win_a = _window(i, n, p.window, pa and pa[0], na and na[0], cap=p.window + 2)
            ma, _ = match_mask(ka[i], [kb[x] for x in win_b])
            mb, _ = match_mask(kb[j], [ka[x] for x in win_a])
            _found_nearby(ka[i], ma, kb, j, p)
            _found_nearby(kb[j], mb, ka, i, p)
            ca, cb = coverage(ma, ka[i]), coverage(mb, kb[j])
            rows.append(Row(label_for(ca, cb), i, j, similarity=None if sims is None else round(float(sims(i, j)), 4),
                            coverage_a=round(ca, 4), coverage_b=round(cb, 4), removed=runs(ka[i], ma),
                            added=runs(kb[j], mb), mask_a=ma, mask_b=mb))
            continue
        pa, na = prev_anchor[k], next_anchor[k]
        if i is not None:  # only in A: look for its words between the aligned neighbours' B chunks
            own, other, cnt, side = ka[i], kb, m, 1
        else:
            own, other, cnt, side = kb[j], ka, n, 0
        lo = pa[side] if pa else 0
        hi = na[side] if na else cnt - 1
        cand = list(range(lo, hi + 1)) if hi - lo + 1 <= p.max_gap_window else \
            sorted(set(range(lo, min(lo + p.window + 1, cnt))) | set(range(max(hi - p.window, 0), hi + 1)))
        cand = [x for x in cand if 0 <= x < cnt]
        mask, cov = [not key for key in own.keys], (1.0 if not own.words else 0.0)  # nothing to compare: no change
        if cand and own.words:
            mask, _ = match_mask(own, [other[x] for x in cand])
            _found_nearby(own, mask, other, (cand[0] + cand[-1]) // 2, p)
            cov = coverage(mask, own)
        if cand and cov >= p.changed_min_coverage:
            best = max(cand, key=lambda x: _shared(own, other[x]))  # the neighbour it shares most words with
            a, b = (i, best) if i is not None else (best, j)
            row = Row(label_for(cov, None), a, b, merged="a" if i is not None else "b",
                      similarity=None if sims is None else round(float(sims(a, b)), 4))
        else:
            row = Row(ONLY_A if i is not None else ONLY_B, i, j)
        if i is not None:
            row.coverage_a, row.mask_a, row.removed = round(cov, 4), mask, runs(own, mask)
        else:
            row.coverage_b, row.mask_b, row.added = round(cov, 4), mask, runs(own, mask)
        rows.append(row)
    return rows


def _found_nearby(own: Keyed, mask: list, other: Sequence[Keyed], centre: int, p: LabelParams) -> None:
    """Runs of at least ``nearby_min_run`` words missing from the window that stand, in order, within
    ``nearby`` chunks of it (a footnote or a table that pagination placed elsewhere) count as found. Single
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


def _shared(x: Keyed, y: Keyed) -> int:
    return len({k for k in x.keys if k} & {k for k in y.keys if k})


def mark_moved(rows: list[Row], texts_a, texts_b, vec_a, vec_b, params: LabelParams | None = None,
               titles=()) -> None:
    """An only-in-A chunk whose text stands, unchanged, at an only-in-B place (and vice versa) was moved:
    the alignment is monotone, so it cannot pair them, but the rows point at each other."""
    import numpy as np

    p = params or LabelParams()
    ra = [r for r in rows if r.label == ONLY_A]
    rb = [r for r in rows if r.label == ONLY_B]
    if not ra or not rb:
        return
    va = np.asarray(vec_a, dtype=np.float32)[[r.a for r in ra]]
    vb = np.asarray(vec_b, dtype=np.float32)[[r.b for r in rb]]
    va /= np.maximum(np.linalg.norm(va, axis=1, keepdims=True), 1e-12)
    vb /= np.maximum(np.linalg.norm(vb, axis=1, keepdims=True), 1e-12)
    for s in range(0, len(ra), 256):  # blocks of rows: memory stays linear
        sim = va[s:s + 256] @ vb.T
        for off, row in enumerate(ra[s:s + 256]):
            best = int(np.argmax(sim[off]))
            if sim[off, best] < p.moved_min_similarity or rb[best].moved is not None:
                continue
            other = rb[best]
            ignore = ignore_pattern(titles)
            ka, kb = Keyed.of(texts_a[row.a], ignore), Keyed.of(texts_b[other.b], ignore)
            ma, _ = match_mask(ka, [kb])
            mb, _ = match_mask(kb, [ka])
            if min(coverage(ma, ka), coverage(mb, kb)) >= p.same_min_coverage - 1e-9:
                row.moved, other.moved = other.b, row.a


def inline_diff(text_a: str, text_b: str, max_chars: int = 2000, ignore: re.Pattern | None = None) -> str:
    """Word-level diff of two texts: ``[-removed-]{+added+}`` inside the common words (difflib)."""
    a, b = Keyed.of(text_a, ignore), Keyed.of(text_b, ignore)
    sm = difflib.SequenceMatcher(None, a.keys, b.keys, autojunk=False)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" or (tag == "replace" and "".join(a.keys[i1:i2]) == "".join(b.keys[j1:j2])):
            out.append(" ".join(b.toks[j1:j2]))
            continue
        out.append(("[-" + " ".join(a.toks[i1:i2]) + "-]" if i2 > i1 else "")
                   + ("{+" + " ".join(b.toks[j1:j2]) + "+}" if j2 > j1 else ""))
    text = " ".join(x for x in out if x)
    return text if len(text) <= max_chars else text[:max_chars].rstrip() + " ..."
