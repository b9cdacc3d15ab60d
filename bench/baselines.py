"""The readings the walk is measured against, kept with the benchmarks that compare them (``bench answers``,
``bench suite``, ``bench reading``, ``bench context``): an agent made with ``Agent(engine, readers=BASELINES)``
reads them on its one answer path (``ask(reader="topk")``).

``topk``: the hits' own texts, one source each (the plain-RAG baseline).
``sentence_window``: each hit with its raw neighbours (+-1 chunk), merged (the sentence-window baseline).
``parent_doc``: each hit inside its ~``PARENT_WORDS``-word parent block (the parent-document baseline).
The two last spend the same budget the walk does: entry chunks first (by rank), then the nearest chunks of their
window or block; what does not fit is left out. Each takes ``(hits, k, thread_of, count, budget)`` and returns
:class:`~thread_rag.agent.answer.Source` lists in entry-rank order, as ``agent/reading.walk_sources`` does.
"""
from __future__ import annotations

from typing import Callable

from thread_rag.agent.answer import Source, number
from thread_rag.agent.reading import entry_chunks, fit_sources, source_of
from thread_rag.ids import ChunkId


def topk(hits: list, k: int, thread_of: Callable, count: Callable[[str], int], budget: int = 0) -> list[Source]:
    """The first ``k`` hits' own texts (no budget: top-k reads what it is given)."""
    out = []
    for h in hits[:k]:
        c = ChunkId.parse(h.chunk_id)
        thread = thread_of(c.serial)
        out.append(source_of([thread.chunks[c.position]], thread.record.name, "entry", count))
    return number(out)


def sentence_window(hits: list, k: int, thread_of: Callable, count: Callable[[str], int], budget: int,
                    reach: int = 1) -> list[Source]:
    picked, order = entry_chunks(hits, k)
    for rank, (serial, pos) in enumerate(order):
        n = len(thread_of(serial))
        for step in range(1, reach + 1):
            for p in (pos - step, pos + step):
                if 0 <= p < n:
                    picked[(serial, p)] = max(picked.get((serial, p), -99.0), -step - rank / 100)
    return number(fit_sources(picked, order, thread_of, count, budget))


PARENT_WORDS = 1000


def parent_blocks(chunks: list, words: int = PARENT_WORDS) -> list[tuple[int, int]]:
    """A thread cut into consecutive blocks of about ``words`` words: (first, last) positions."""
    out, start, seen = [], 0, 0
    for i, c in enumerate(chunks):
        seen += len(c.text.split())
        if seen >= words:
            out.append((start, i))
            start, seen = i + 1, 0
    if start < len(chunks):
        out.append((start, len(chunks) - 1))
    return out


def parent_doc(hits: list, k: int, thread_of: Callable, count: Callable[[str], int], budget: int,
               words: int = PARENT_WORDS) -> list[Source]:
    picked, order = entry_chunks(hits, k)
    for rank, (serial, pos) in enumerate(order):
        a, b = next(blk for blk in parent_blocks(thread_of(serial).chunks, words) if blk[0] <= pos <= blk[1])
        for p in range(a, b + 1):
            picked[(serial, p)] = max(picked.get((serial, p), -99.0), -abs(p - pos) - rank / 100)
    return number(fit_sources(picked, order, thread_of, count, budget))


BASELINES = {"topk": topk, "sentence_window": sentence_window, "parent_doc": parent_doc}

