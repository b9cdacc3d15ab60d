"""One comparison, from two documents' chunks and vectors to JSON-able rows (no Engine here).

The caller (``thread_rag.tools.compare_documents``) reads the threads and vectors from the store and
the topic hits from the retriever, and passes them in as :class:`Side` objects and positions.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .align import AlignParams, align, heading_ids
from .labels import CHANGED, LABELS, ONLY_A, ONLY_B, SAME, Labeller, LabelParams, Row, heading_key, heading_titles


@dataclass
class Side:
    """What a comparison needs of one document: its ordered chunks and their vectors."""

    doc_id: str
    name: str
    chunks: list                     # records with chunk_id, text, page_start/page_end, heading_path, pages_label
    vectors: np.ndarray
    content_hash: str = ""           # names the explanation cache file
    label: str = ""                  # the name a person is shown (records.distinct_names); "" = the name

    def info(self) -> dict:
        return {"doc_id": self.doc_id, "name": self.name, "label": self.label or self.name, "chunks": len(self.chunks)}


@dataclass
class Comparison:
    doc_a: dict
    doc_b: dict
    counts: dict                     # rows per label (whole documents, or the topic's region)
    rows: list                       # dicts, in thread order
    topic: str | None = None
    focus: dict = field(default_factory=dict)   # the search hits the region was built around
    timings_ms: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)


def chunk_info(c, with_text: bool) -> dict:
    d = {"chunk_id": c.chunk_id, "pages": c.pages_label, "page_start": c.page_start, "page_end": c.page_end,
         "heading_path": list(c.heading_path or [])}
    if with_text:
        d["text"] = c.text
    return d


def _unmatched(mask) -> list | None:
    """Token positions (``labels.tokens`` of the chunk text) not found on the other side."""
    return None if mask is None else [k for k, ok in enumerate(mask) if not ok]


def focus_rows(rows: list[Row], a_chunks, b_chunks, a_pos: int | None, b_pos: int | None, radius: int = 2,
               max_rows: int = 40) -> list[int]:
    """Row indices of the aligned region around the topic's hits: the hit's row, widened while the rows stay
    in the hit chunk's section (deepest heading) on either side, at least ``radius`` rows each way. Two regions
    at most ``2 * radius`` rows apart are one (a gap of one row between them was shown as "1 rows outside")."""
    def section(r: Row) -> set:
        keys = set()
        if r.a is not None and a_chunks[r.a].heading_path:
            keys.add(heading_key(a_chunks[r.a].heading_path))
        if r.b is not None and b_chunks[r.b].heading_path:
            keys.add(heading_key(b_chunks[r.b].heading_path))
        return keys

    keep: set[int] = set()
    for side, pos in (("a", a_pos), ("b", b_pos)):
        if pos is None:
            continue
        hits = [k for k, r in enumerate(rows) if getattr(r, side) == pos]
        if not hits:
            continue
        centre = hits[0]
        sect = section(rows[centre])
        lo = hi = centre
        while lo > 0 and centre - lo < max_rows // 2 and \
                (centre - lo < radius or (sect & section(rows[lo - 1]))):
            lo -= 1
        while hi < len(rows) - 1 and hi - centre < max_rows // 2 and \
                (hi - centre < radius or (sect & section(rows[hi + 1]))):
            hi += 1
        keep.update(range(lo, hi + 1))
    kept = sorted(keep)
    for x, y in zip(kept, kept[1:]):
        if 1 < y - x <= 2 * radius + 1:
            keep.update(range(x + 1, y))
    return sorted(keep)


def compare_sides(a: Side, b: Side, *, align_params: AlignParams | None = None,
                  label_params: LabelParams | None = None, focus: tuple | None = None, topic: str | None = None,
                  explain: Callable[[Row, dict, dict], str] | None = None, explain_limit: int = 10,
                  explain_within: int | None = None) -> Comparison:
    """Align, label and describe. ``focus``: (position in A, position in B) of the topic's hits (either may be
    None): only the aligned region around them is returned, rows left out before and after it are counted
    (``skipped_before`` / ``skipped_after``). ``explain(row, a_dict, b_dict)``: one sentence per changed row,
    for the first ``explain_limit`` changed rows, and only among the first ``explain_within`` changed-or-only
    rows when given (what a view limited to that many rows shows; only when asked: the default path calls no
    model)."""
    ap, lp = align_params or AlignParams(), label_params or LabelParams()
    t0 = time.perf_counter()
    ha, hb = heading_ids([c.heading_path for c in a.chunks], [c.heading_path for c in b.chunks])
    pairs = align(a.vectors, b.vectors, ha, hb, ap)
    t1 = time.perf_counter()
    labeller = Labeller([c.text for c in a.chunks], [c.text for c in b.chunks], lp,
                        titles=heading_titles([c.heading_path for c in a.chunks], [c.heading_path for c in b.chunks]))
    rows = labeller.rows(pairs, vectors=(a.vectors, b.vectors))
    t2 = time.perf_counter()
    chosen = list(range(len(rows)))
    focus_info = {}
    if focus is not None:
        chosen = focus_rows(rows, a.chunks, b.chunks, focus[0], focus[1])
        focus_info = {"a": None if focus[0] is None else a.chunks[focus[0]].chunk_id,
                      "b": None if focus[1] is None else b.chunks[focus[1]].chunk_id}
    out, counts = [], dict.fromkeys(LABELS, 0)
    t_explain, explained, prev, listed = 0.0, 0, -1, 0
    for k in chosen:
        r = rows[k]
        counts[r.label] += 1
        d = row_dict(r, a, b, labeller)
        if focus is not None and k - prev > 1:
            d["skipped_before"] = k - prev - 1  # rows outside the topic's region(s) left out here
        prev = k
        listed += r.label != SAME
        if r.label == CHANGED and explain is not None and explained < explain_limit and \
                (explain_within is None or listed <= explain_within):
            explained += 1
            te = time.perf_counter()
            d["explanation"] = explain(r, d["a"], d["b"])
            t_explain += time.perf_counter() - te
        out.append(d)
    if focus is not None and out and prev < len(rows) - 1:
        out[-1]["skipped_after"] = len(rows) - 1 - prev  # the rows after the last region
    timings = {"align_ms": round((t1 - t0) * 1000, 1), "label_ms": round((t2 - t1) * 1000, 1)}
    if explain is not None:
        counts["explained"] = explained
        timings["explain_ms"] = round(t_explain * 1000, 1)
    return Comparison(doc_a=a.info(), doc_b=b.info(), counts=counts, rows=out, topic=topic, focus=focus_info,
                      timings_ms=timings,
                      settings={"match_min": ap.match_min, "gap": ap.gap, "heading_bonus": ap.heading_bonus,
                                "same_min_coverage": lp.same_min_coverage})


def row_dict(r: Row, a: Side, b: Side, labeller: Labeller) -> dict:
    """One row as JSON: the label and both chunks (with their text unless same); changed rows add the words
    found on one side only, a word diff and the unmatched token positions; only-in rows whose text stands
    elsewhere say where (``moved_to`` / ``moved_from``)."""
    show_text = r.label != SAME
    d = {"label": r.label, "merged": r.merged,
         "a": None if r.a is None else chunk_info(a.chunks[r.a], show_text),
         "b": None if r.b is None else chunk_info(b.chunks[r.b], show_text),
         "similarity": r.similarity, "coverage_a": r.coverage_a, "coverage_b": r.coverage_b}
    if r.label == CHANGED:
        d["removed"], d["added"] = r.removed, r.added
        if r.a is not None and r.b is not None:
            d["diff"] = labeller.diff(r.a, r.b)
        d["unmatched_a"] = _unmatched(r.mask_a)
        d["unmatched_b"] = _unmatched(r.mask_b)
    if r.label in (ONLY_A, ONLY_B) and r.moved is not None:
        if r.label == ONLY_A:
            d["moved_to"] = b.chunks[r.moved].chunk_id
        else:
            d["moved_from"] = a.chunks[r.moved].chunk_id
    return d
