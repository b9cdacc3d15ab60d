"""Pre-heat: summarise every chunk ahead of time (offline runs), resumable.

Summaries are flushed to the cache every few seconds and on interruption, so a killed or
Ctrl-C'd run keeps what it made; the next run skips what is cached.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .summary_cache import SummaryCache

FLUSH_SECONDS = 2.0


@dataclass
class PreheatReport:
    documents: list
    summarizer: str
    made: int = 0
    cached: int = 0
    failed: int = 0
    seconds: float = 0.0
    errors: list = field(default_factory=list)


def preheat(library, summarizer: Callable, cache_path: Path, serial_id: str | None = None, progress=None,
            flush_every: int = 64) -> PreheatReport:
    """Summarise the chunks of one document (``serial_id``) or of every document in ``library`` into the summary
    cache at ``cache_path``. ``summarizer`` provides the summarizer; it is called once the documents are known
    (an unknown id is reported before a summarizing model loads)."""
    from ..errors import ThreadRagError, one_line
    from ..faults import crash_point

    t0 = time.perf_counter()
    docs = [library.document(serial_id)] if serial_id is not None else library.documents()  # "" is refused
    summ = summarizer()
    cache = SummaryCache(cache_path)
    report = PreheatReport(documents=[d.doc_id for d in docs], summarizer=summ.id)
    total = sum(d.chunk_count for d in docs)
    done = 0
    for rec in docs:
        chunks = library.thread(rec.serial).chunks
        buffer: list = []
        last = time.monotonic()
        try:
            for c in chunks:
                done += 1
                if cache.get(rec.content_hash, summ.id, c.text) is not None:
                    report.cached += 1
                else:
                    try:
                        s = summ.summarize(c.text, c.heading_path[-1] if c.heading_path else "")
                        buffer.append((summ.id, c.text, c.chunk_id, s))
                        report.made += 1
                    except ThreadRagError as exc:  # the model failed on one chunk: the run goes on (a bug surfaces)
                        report.failed += 1
                        report.errors.append(f"{c.chunk_id}: {one_line(exc)}")
                if buffer and (time.monotonic() - last > FLUSH_SECONDS or len(buffer) >= flush_every):
                    cache.put_many(rec.content_hash, buffer)
                    buffer, last = [], time.monotonic()
                    crash_point("preheat_after_flush")
                if progress:
                    progress(f"preheat {rec.doc_id}", done, total)
        finally:
            cache.put_many(rec.content_hash, buffer)
    report.errors.extend(cache.warnings)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report
