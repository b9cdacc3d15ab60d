"""Context windows: [previous chunk's summary] + active text + [next chunk's summary].

Consecutive ids merge into one window with no text repeated (the chunk overlap is removed).
Bad ids get a per-id error with the document's valid range; valid ids are still returned.
Each window carries walk signals: cosine similarity of the active (last) chunk's embedding to
the next chunk's (and first to previous), ``continues_next`` when it reaches ``WALK_THRESHOLD``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import ThreadRagError
from ..ids import ChunkId
from ..records import pages_label
from .passages import join_thread
from .summary_cache import SummaryCache

MAX_IDS = 50


@dataclass
class WalkSignal:
    prev_similarity: float | None
    next_similarity: float | None
    came_from_prev: bool
    continues_next: bool
    next_query_similarity: float | None = None


@dataclass
class Window:
    doc_id: str
    doc_name: str
    chunk_ids: list
    prev_id: str | None
    prev_summary: str
    text: str
    next_id: str | None
    next_summary: str
    page_start: int | None
    page_end: int | None
    heading_path: list
    walk: WalkSignal
    tokens: int
    rendered: str = ""


@dataclass
class FetchResult:
    windows: list
    errors: list
    tokens: int
    truncated: bool = False
    omitted: list = field(default_factory=list)
    timings_ms: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)  # what the windows lack: the summarizer failed, cut or left out by
                                                # the token budget (one line each)


@dataclass
class _Summaries:
    """One fetch's summaries: the new ones to cache, and why the summarizer failed (the rest are extractive)."""
    pending: dict = field(default_factory=dict)  # content hash -> items
    failed: str | None = None


SUMMARIZER_RETRY_S = 60.0  # after a summarizer failure (its server down), extractive summaries this long


START = "[start of document]"
END = "[end of document]"


class WindowBuilder:
    """Context windows (previous summary | text | next summary) with their walk signals.

    Receives what it reads: the ``library`` (documents and chunks), and providers called on first need: the
    ``summarizer``, the ``query_embedder``, ``count_tokens`` (the budget's tokens) and ``index`` (the search
    index, whose chunk vectors give the walk signals)."""

    def __init__(self, library, settings, summarizer: Callable, query_embedder: Callable,
                 count_tokens: Callable[[list[str]], list[int]], index: Callable):
        self.library, self.settings = library, settings
        self._summarizer, self._query_embedder, self._count_tokens, self._index = (
            summarizer, query_embedder, count_tokens, index)
        self.cache = SummaryCache(self.settings.cache_path, self.settings.CACHE_DOCUMENTS)
        self._failed: tuple[float, str] | None = None  # (when, why) the summarizer last failed

    # -- summaries ----------------------------------------------------------------------------
    def summary(self, record, chunk, made: _Summaries | None = None) -> str:
        """The chunk's cached summary, else a new one, queued in ``made`` to be cached (without ``made`` it is not
        stored: a reader never writes). Within ``SUMMARIZER_RETRY_S`` of a summarizer failure (its server down) a
        summary the cache lacks is an extractive one, not cached, and ``made.failed`` says why: the window is
        still worth reading, and a hanging server costs its timeout once, not once per window."""
        import time

        heading = chunk.heading_path[-1] if chunk.heading_path else ""
        try:
            summ = self._summarizer()
            got = self.cache.get(record.content_hash, summ.id, chunk.text)
            if got is not None:
                return got
            if self._failed is None or time.monotonic() - self._failed[0] > SUMMARIZER_RETRY_S:
                got = summ.summarize(chunk.text, heading)
                if made is not None:
                    made.pending.setdefault(record.content_hash, []).append((summ.id, chunk.text, chunk.chunk_id, got))
                return got
        except ThreadRagError as exc:
            self._failed = (time.monotonic(), f"summaries: {exc}; extractive summaries shown instead")
        if made is not None:
            made.failed = self._failed[1]
        from .summarizers import ExtractiveSummarizer

        return ExtractiveSummarizer(self.settings.SUMMARY_MAX_WORDS).summarize(chunk.text, heading)

    @staticmethod
    def _vec(idx, serial: int, position: int) -> np.ndarray | None:
        row = idx.row_of.get((serial, position))
        return None if row is None else np.asarray(idx.vectors[row])

    # -- fetch --------------------------------------------------------------------------------
    def fetch(self, chunk_ids, token_budget: int | None = None, query: str | None = None) -> FetchResult:
        import time

        t0 = time.perf_counter()
        if isinstance(chunk_ids, str):
            chunk_ids = [c for c in chunk_ids.replace(",", " ").split() if c]
        if not isinstance(chunk_ids, (list, tuple)) or not chunk_ids:
            raise ThreadRagError("fetch_chunks_by_id needs a non-empty list of chunk ids, e.g. [\"DOC1_006\"]")
        if len(chunk_ids) > MAX_IDS:
            raise ThreadRagError(f"too many chunk ids ({len(chunk_ids)}; at most {MAX_IDS} per call)")
        budget = token_budget if token_budget is not None else self.settings.WINDOW_TOKEN_BUDGET
        if not isinstance(budget, int) or budget <= 0:
            raise ThreadRagError(f"token_budget={token_budget!r}: must be a positive integer")
        errors, parsed = [], []
        for raw in chunk_ids:
            try:
                cid = ChunkId.parse(str(raw))
                self.library.chunk(cid)  # validates the document and the range
                parsed.append(cid)
            except ThreadRagError as exc:
                errors.append({"chunk_id": str(raw), "error": str(exc)})
        runs: list[list[ChunkId]] = []
        for cid in sorted(set(parsed)):
            if runs and runs[-1][-1].serial == cid.serial and runs[-1][-1].position + 1 == cid.position:
                runs[-1].append(cid)
            else:
                runs.append([cid])
        # keep the caller's order of first appearance for the runs
        first_seen = {c: i for i, c in reversed(list(enumerate(parsed)))}
        runs.sort(key=lambda r: min(first_seen[c] for c in r))
        qvec = self._query_embedder().embed_queries([query])[0] if query else None
        index = self._index() if runs else None
        windows, made, used, omitted, notes, left = [], _Summaries(), 0, [], [], []
        for run in runs:
            span = str(run[0]) + (f"..{run[-1]}" if len(run) > 1 else "")
            w = self._window(run, made, qvec, index)
            if used + w.tokens > budget and windows:
                omitted.extend(str(c) for c in run)
                left.append(span)
                continue
            if used + w.tokens > budget:  # a single window over budget: cut its text, and say so
                keep = max(50, int(len(w.text) * budget / max(w.tokens, 1)))
                w.text = w.text[:keep].rstrip() + " [...]"
                w.tokens = budget
                w.rendered = self.render(w)
                notes.append(f"{span} cut to the token budget ({budget}): a larger budget reads all of it")
            used += w.tokens
            windows.append(w)
        if omitted:
            notes.append(f"left out {', '.join(left)}: over the token budget ({budget}); a larger budget or fewer "
                         f"ids reads them")
        for rec_hash, items in made.pending.items():  # a read-only library keeps them for this process only
            (self.cache.remember if self.library.read_only else self.cache.put_many)(rec_hash, items)
        return FetchResult(windows=windows, errors=errors, tokens=used, truncated=bool(omitted or notes), omitted=omitted,
                           timings_ms={"total_ms": round((time.perf_counter() - t0) * 1000, 3)},
                           notes=([made.failed] if made.failed else []) + notes)

    def _window(self, run: list[ChunkId], made: _Summaries, qvec, index) -> "Window":
        thread = self.library.thread(run[0].serial)
        rec, n = thread.record, len(thread)
        chunks = [thread.chunks[c.position] for c in run]
        text = join_thread(chunks)
        prev_id = run[0].neighbour(-1, n)
        next_id = run[-1].neighbour(+1, n)
        prev_summary = self.summary(rec, thread.chunks[prev_id.position], made) if prev_id else START
        next_summary = self.summary(rec, thread.chunks[next_id.position], made) if next_id else END
        first_v, last_v = self._vec(index, run[0].serial, run[0].position), self._vec(index, run[-1].serial, run[-1].position)
        ps = pv = nq = None
        if prev_id is not None and first_v is not None:
            v = self._vec(index, prev_id.serial, prev_id.position)
            ps = None if v is None else round(float(first_v @ v), 4)
        if next_id is not None and last_v is not None:
            v = self._vec(index, next_id.serial, next_id.position)
            pv = None if v is None else round(float(last_v @ v), 4)
            if qvec is not None and v is not None:
                nq = round(float(qvec @ v), 4)
        t = self.settings.WALK_THRESHOLD
        walk = WalkSignal(prev_similarity=ps, next_similarity=pv, came_from_prev=ps is not None and ps >= t,
                          continues_next=pv is not None and pv >= t, next_query_similarity=nq)
        pages = [p for c in chunks for p in (c.page_start, c.page_end) if p is not None]
        w = Window(doc_id=rec.doc_id, doc_name=rec.name, chunk_ids=[str(c) for c in run],
                   prev_id=str(prev_id) if prev_id else None, prev_summary=prev_summary, text=text,
                   next_id=str(next_id) if next_id else None, next_summary=next_summary,
                   page_start=min(pages) if pages else None, page_end=max(pages) if pages else None,
                   heading_path=chunks[0].heading_path, walk=walk, tokens=0)
        w.rendered = self.render(w)
        w.tokens = self._count_tokens([w.rendered])[0]
        return w

    @staticmethod
    def render(w: "Window") -> str:
        ids = w.chunk_ids[0] if len(w.chunk_ids) == 1 else f"{w.chunk_ids[0]}..{w.chunk_ids[-1]}"
        head = " > ".join(w.heading_path)
        loc = ", ".join(x for x in (w.doc_name, pages_label(w.page_start, w.page_end)) if x)
        prev = f"[previous {w.prev_id}] {w.prev_summary}" if w.prev_id else START
        cont = ""
        if w.next_id and w.walk.next_similarity is not None:
            cont = f"  (topic {'continues' if w.walk.continues_next else 'changes'}: {w.walk.next_similarity:.2f})"
        nxt = f"[next {w.next_id}] {w.next_summary}{cont}" if w.next_id else END
        return f"<<< {ids} ({loc}){' - ' + head if head else ''}\n{prev}\n[active]\n{w.text}\n{nxt}\n>>>"

