"""What the model reads: the code's JUMP (search hits) and WALK (neighbours), under a budget in LLM tokens.

``walk_sources``: from each entry chunk, walk forward while the walk signals hold (the next chunk
continues the topic: neighbour cosine >= ``WALK_THRESHOLD``, and it is still about the question:
cosine to the question >= ``walk_query_min``), at most ``max_walk`` steps, and backward on the same
signals at most ``max_back`` steps; consecutive chunks merge into
one source with the overlap removed. The budget is spent entry chunks first (by rank), then walked
chunks by their similarity to the question; what does not fit is left out.
``nested_sources``: ``nested_retrieve`` passages, best first, under the same budget.
The readings the walk is measured against (top-k, sentence window, parent document) live with the benchmark that
compares them (``bench/baselines.py``) and share the parts below. All return :class:`~thread_rag.agent.answer.Source` lists in entry-rank order.

Parts in: ``thread_of(serial)`` (a document's chunks), ``index`` (vectors and ``row_of``), the question
vector, and ``count`` (LLM tokens of a text).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..ids import ChunkId
from ..records import pages_label
from ..threads.passages import join_thread
from .answer import Source, number


def best_similarity(index, qvec: np.ndarray, chunk_ids: list[str]) -> float:
    """Best cosine between the question and any of the chunks (-1 if none is indexed)."""
    return closest(index, qvec, chunk_ids)[1]


def closest(index, vec: np.ndarray, chunk_ids: list[str]) -> tuple[str | None, float]:
    """The indexed chunk of ``chunk_ids`` nearest ``vec``, and its cosine ((None, -1) if none is indexed)."""
    rows = {c: index.row_of.get((i.serial, i.position)) for c, i in zip(chunk_ids, map(ChunkId.parse, chunk_ids))}
    rows = {c: r for c, r in rows.items() if r is not None}
    if not rows:
        return None, -1.0
    sims = np.asarray(index.vectors[list(rows.values())]) @ vec
    return list(rows)[int(np.argmax(sims))], float(np.max(sims))


def source_of(chunks: list, doc_name: str, role: str, count: Callable[[str], int], frame: Callable | None = None) -> Source:
    pages = [p for c in chunks for p in (c.page_start, c.page_end) if p is not None]
    label = pages_label(min(pages), max(pages)) if pages else ""
    heading = " > ".join(chunks[0].heading_path[-2:]) if chunks[0].heading_path else ""
    text = join_thread(chunks)
    if frame is not None:  # the THREAD window: what comes just before and after, as summaries
        before, after = frame(chunks[0], -1), frame(chunks[-1], +1)
        text = (f"(before: {before})\n" if before else "") + text + (f"\n(after: {after})" if after else "")
    src = Source(chunk_ids=[c.chunk_id for c in chunks], doc_id=chunks[0].doc_id, doc_name=doc_name, pages=label,
                 heading=heading, text=text, role=role, chunk_pages=[c.pages_label for c in chunks],
                 chunk_texts=[c.text for c in chunks])
    src.tokens = count(src.render())
    return src


def walk_sources(hits: list, k: int, thread_of: Callable, index, qvec: np.ndarray, count: Callable[[str], int],
                 budget: int, max_walk: int = 2, walk_threshold: float = 0.35,
                 walk_query_min: float = 0.2, frame: Callable | None = None, max_back: int = 0) -> list[Source]:
    """``max_back``: chunks walked backward from each entry chunk, on the same signals (the chunk before
    continues into the entry, and is about the question). ``frame(chunk, step)``: the summary of the chunk
    ``step`` positions away ("" past an end); when given, each source carries its neighbours' summaries (the
    THREAD window) and they count against the budget.
    A document the index holds at another generation than the hits were ranked at is not walked (its vectors
    would be another version's)."""
    ranked = {ChunkId.parse(h.chunk_id).serial: getattr(h, "generation", None) for h in hits}

    def vec(s: int, p: int):
        row = index.row_of.get((s, p))
        if row is None or ranked.get(s) not in (None, index.generation_of(s)):
            return None
        return np.asarray(index.vectors[row])

    picked, order = entry_chunks(hits, k)  # (serial, position) -> priority (higher first); entry order
    for serial, entry in order:
        n = len(thread_of(serial))
        for step, steps in ((+1, max_walk), (-1, max_back)):
            pos = entry
            for _ in range(steps):
                a, b = vec(serial, pos), vec(serial, pos + step)
                if not 0 <= pos + step < n or a is None or b is None:
                    break
                q_sim = float(b @ qvec)
                if float(a @ b) < walk_threshold or q_sim < walk_query_min:
                    break
                # never above the chunk it was reached through: the budget cuts a walk from its far end
                prio = min(q_sim, picked[(serial, pos)] - 1e-6)
                pos += step
                picked[(serial, pos)] = max(picked.get((serial, pos), -99.0), prio)
    return number(fit_sources(picked, order, thread_of, count, budget, frame))


ENTRY = 1000.0  # an entry chunk's priority before its rank; neighbours score a cosine (<= 1) or a negative distance


def entry_chunks(hits: list, k: int) -> tuple[dict, list]:
    """The first k hits as (serial, position) with priority ENTRY - rank (above any neighbour's), and their order."""
    picked: dict[tuple[int, int], float] = {}
    order = []
    for rank, h in enumerate(hits[:k]):
        e = ChunkId.parse(h.chunk_id)
        picked[(e.serial, e.position)] = max(picked.get((e.serial, e.position), -99.0), ENTRY - rank)
        order.append((e.serial, e.position))
    return picked, order


def fit_budget(picked: dict, thread_of: Callable, count: Callable[[str], int], budget: int) -> set:
    """Chunks by priority while their texts fit the budget (the first always stays). A neighbour is kept only
    next to a chunk already kept (neighbours' priorities fall away from their entry chunk), so the budget never
    leaves a hole between an entry chunk and a neighbour read beyond it (step 2 and step 4 without step 3)."""
    kept, used = set(), 0
    for key in sorted(picked, key=lambda x: -picked[x]):
        entry = picked[key] > ENTRY / 2
        if not entry and (key[0], key[1] - 1) not in kept and (key[0], key[1] + 1) not in kept:
            continue
        t = count(thread_of(key[0]).chunks[key[1]].text)
        if kept and used + t > budget:
            continue
        kept.add(key)
        used += t
    return kept


def fit_sources(picked: dict, order: list, thread_of: Callable, count: Callable[[str], int], budget: int,
                frame=None) -> list[Source]:
    """The sources of the chunks that fit ``budget``, LLM tokens of the text they read (``READ_BUDGET``): the chunks
    joined and, in a window, the neighbours' summaries (a source's numbered header is not counted). Chunks are taken
    by priority on their own texts (``fit_budget``); while the sources' texts are over, the kept chunk of lowest
    priority at the end of a run goes (the far end of a walk first, never one between two kept), down to the first
    entry chunk, which stays whatever its size."""
    kept = fit_budget(picked, thread_of, count, budget)
    sources = as_sources(kept, order, thread_of, count, frame)
    while len(kept) > 1 and sum(count(s.text) for s in sources) > budget:
        first = max(kept, key=lambda x: picked[x])
        ends = [x for x in kept if x != first and ((x[0], x[1] - 1) not in kept or (x[0], x[1] + 1) not in kept)]
        kept.discard(min(ends, key=lambda x: picked[x]))
        sources = as_sources(kept, order, thread_of, count, frame)
    return sources


def as_sources(kept: set, order: list, thread_of: Callable, count: Callable[[str], int], frame=None) -> list[Source]:
    """Consecutive kept chunks as one source each, ordered by their first entry chunk's rank."""
    runs: list[list[tuple[int, int]]] = []
    for key in sorted(kept):
        if runs and runs[-1][-1][0] == key[0] and runs[-1][-1][1] + 1 == key[1]:
            runs[-1].append(key)
        else:
            runs.append([key])
    rank = {key: i for i, key in reversed(list(enumerate(order)))}
    runs.sort(key=lambda r: min(rank.get(x, len(order)) for x in r))
    out = []
    for r in runs:
        thread = thread_of(r[0][0])
        role = "entry" if any(x in rank for x in r) else "walk"
        out.append(source_of([thread.chunks[p] for _, p in r], thread.record.name, role, count, frame))
    return out


def nested_sources(hits: list, thread_of: Callable, count: Callable[[str], int], budget: int,
                   best: Callable[[list], str | None] | None = None) -> list[Source]:
    """``nested_retrieve`` passages as sources, best first, while their texts fit the budget; a passage too long for
    what is left is cut to the run of its chunks around its best one (``best(chunk_ids)``, the chunk nearest the question)
    that fits; the first passage keeps at least that chunk."""
    out, used = [], 0
    for h in hits:
        ids = [ChunkId.parse(c) for c in h.chunk_ids]
        thread = thread_of(ids[0].serial)
        chunks = [thread.chunks[c.position] for c in ids]
        src = source_of(chunks, thread.record.name, "entry", count)
        size = count(src.text)
        if used + size > budget:
            src = _cut(chunks, thread.record.name, count, budget - used, best, keep=not out)
            size = count(src.text) if src is not None else 0
        if src is not None:
            out.append(src)
            used += size
    return number(out)


def _cut(chunks: list, name: str, count: Callable[[str], int], room: int, best, keep: bool) -> Source | None:
    """The longest run of ``chunks`` around the best one whose text fits ``room`` (grown one chunk at a time, the
    next one first); the best chunk alone when nothing fits and ``keep``, else None."""
    ids = [c.chunk_id for c in chunks]
    found = best(ids) if best else None
    lo = hi = ids.index(found) if found in ids else 0
    src = source_of(chunks[lo:hi + 1], name, "entry", count)
    if count(src.text) > room:
        return src if keep else None
    while True:
        for a, b in ((lo, hi + 1), (lo - 1, hi)):
            if a >= 0 and b < len(chunks):
                grown = source_of(chunks[a:b + 1], name, "entry", count)
                if count(grown.text) <= room:
                    lo, hi, src = a, b, grown
                    break
        else:
            return src
