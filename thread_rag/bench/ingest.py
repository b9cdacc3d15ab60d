"""``thread-rag bench ingest --file F``: index one file into a fresh data dir, time each phase."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from ..errors import ThreadRagError
from .retrieval import machine


def run_ingest_bench(settings, file: str | None) -> dict:
    if not file:
        file = str(settings.shared_data / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf")
    if not Path(file).is_file():
        raise ThreadRagError(f"{file}: no such file")
    from ..engine import Engine

    home = Path(tempfile.mkdtemp(prefix="thread-rag-ingest-"))
    try:
        t0 = time.perf_counter()
        engine = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "cache")))
        _ = engine.embedder.model  # load the embedder outside the timed indexing
        load_model_s = time.perf_counter() - t0
        r = engine.index_file(file)
        again = engine.index_file(file)
        tree = engine.nested.stats(r.doc_id) if settings.NESTED else None
        return {"file": file, "pages": r.pages, "chunks": r.chunks, "seconds": round(r.seconds, 2),
                "chunks_per_s": round(r.chunks / r.seconds, 1), "phases": r.timings,
                "embedder_load_s": round(load_model_s, 2), "reindex_status": again.status,
                "reindex_ms": round(again.seconds * 1000, 1), "tree": tree, "machine": machine(),
                "embedder": settings.EMBEDDER_MODEL, "dtype": engine.embedder.dtype}
    finally:
        shutil.rmtree(home, ignore_errors=True)
