"""``thread-rag bench ingest --file F``: index one file into a fresh data dir, time each phase."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from thread_rag.errors import ThreadRagError
from .retrieval import machine
from .datasets import shared_data


def run_ingest_bench(settings, file: str | None) -> dict:
    if not file:
        file = str(shared_data() / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf")
    if not Path(file).is_file():
        raise ThreadRagError(f"{file}: no such file")
    from thread_rag.engine import Engine

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


def run_embedders_bench(settings, file: str | None, rounds: int = 3) -> dict:
    """``thread-rag bench embedders``: encode the same chunks with each packaged embedder, alternating A, B, A,
    B, ... so both see the same machine load; chunks/s as indexing encodes (sentence + token vectors), and
    query-encoding latency. The ratio is what decides a default; absolute rates move with the load."""
    from thread_rag.embedder import make_embedder
    from thread_rag.packaged import PACKAGED_BGE, PACKAGED_MINILM
    from thread_rag.ingest import load_document, make_chunker, text_for_embedding
    from .metrics import percentile

    file = file or str(shared_data() / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf")
    if not Path(file).is_file():
        raise ThreadRagError(f"{file}: no such file")
    names = [PACKAGED_MINILM, PACKAGED_BGE]
    embedders = {n: make_embedder(settings.replace(EMBEDDER_MODEL=n)) for n in names}
    counter = embedders[PACKAGED_MINILM]
    chunks = make_chunker(settings, counter.count_tokens).chunk(load_document(file))
    texts = [text_for_embedding(c.text) for c in chunks]
    queries = [t[:120] for t in texts[::max(1, len(texts) // 50)]][:50]
    out: dict = {n: {"chunks_per_s": [], "query_ms": []} for n in names}
    for e in embedders.values():  # load outside the timed rounds
        e.embed_with_tokens(texts[:4])
    for _ in range(rounds):
        for n, e in embedders.items():
            t = time.perf_counter()
            for i in range(0, len(texts), 32):
                e.embed_with_tokens(texts[i:i + 32])
            out[n]["chunks_per_s"].append(round(len(texts) / (time.perf_counter() - t), 1))
            lat = []
            for q in queries:
                t = time.perf_counter()
                e.embed_queries([q])
                lat.append((time.perf_counter() - t) * 1000)
            out[n]["query_ms"].append(round(percentile(lat, 50), 2))
    for n in names:
        out[n]["median_chunks_per_s"] = sorted(out[n]["chunks_per_s"])[len(out[n]["chunks_per_s"]) // 2]
        out[n]["median_query_ms"] = sorted(out[n]["query_ms"])[len(out[n]["query_ms"]) // 2]
        out[n]["dtype"] = getattr(embedders[n], "dtype", "")
    ratio = out[PACKAGED_BGE]["median_chunks_per_s"] / out[PACKAGED_MINILM]["median_chunks_per_s"]
    return {"file": file, "chunks": len(texts), "rounds": rounds, "embedders": out,
            "bge_ingest_speed_vs_minilm": round(ratio, 3), "machine": machine()}
