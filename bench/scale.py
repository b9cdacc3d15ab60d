"""``thread-rag bench scale``: grow one library from real text to N chunks and measure it on the way.

At each checkpoint (10k, 30k, 100k chunks by default): ingest chunks/s since the last one, peak and current
RSS, open file descriptors, disk bytes per chunk, the time to bring the running search index up to date and
to open it in a fresh engine, query p50/p95 at k=5 for each stage configuration (with where the time goes),
and the time to add one held-out ~100-chunk document end to end (indexed, then found by a search), and to
delete it. The embedder's own encode rate is measured in the same run (before and after, outside indexing),
so the ingest goal can be read as a ratio.
"""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from thread_rag.engine import Engine
from thread_rag.ingest import make_chunker, text_for_embedding
from thread_rag.ingest.text import parse_text
from . import peak_rss_kib, proc_status_kib
from .metrics import percentile
from .retrieval import machine, search_settings
from .scale_corpus import held_out_document, scale_corpus
from .datasets import shared_data

CONFIGS = ["stage1_rrf", "stage1_2", "three_stage"]
STEP = 64  # chunks per embedding call, as indexing does


def resources(home: Path) -> dict:
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    disk = sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
    return {"rss_mib": round(proc_status_kib("VmRSS") / 1024, 1),
            "peak_rss_mib": round(peak_rss_kib() / 1024, 1),
            "open_fds": fds, "disk_bytes": disk}


def encode_rate(embedder, texts: list[str]) -> float:
    """Chunks/s of the embedder alone (sentence and token vectors, as indexing asks for them)."""
    t = time.perf_counter()
    for i in range(0, len(texts), STEP):
        embedder.embed_with_tokens(texts[i:i + STEP])
    return round(len(texts) / (time.perf_counter() - t), 1)


def sample_texts(settings, embedder, docs, n: int = 320) -> list[str]:
    chunker = make_chunker(settings, embedder.count_tokens)
    texts: list[str] = []
    for d in docs:
        loaded = parse_text(d.read(), d.key, markdown=d.markdown)
        if loaded.blocks:
            texts += [text_for_embedding(c.text) for c in chunker.chunk(loaded)]
        if len(texts) >= n:
            break
    return texts[:n]


def query_latency(engine: Engine, queries: list[str]) -> dict:
    out = {}
    for cfg in CONFIGS:
        engine.retriever.search(queries[0], k=5, pipeline=cfg)  # warm: models loaded, caches filled
        times, stages = [], {}
        for q in queries:
            t = time.perf_counter()
            r = engine.retriever.search(q, k=5, pipeline=cfg)
            times.append((time.perf_counter() - t) * 1000)
            for name, ms in r.timings_ms.items():
                stages.setdefault(name, []).append(ms)
        out[cfg] = {"p50_ms": round(percentile(times, 50), 1), "p95_ms": round(percentile(times, 95), 1),
                    "stage_p50_ms": {k: round(percentile(v, 50), 1) for k, v in stages.items()}}
    return out


def add_one(engine: Engine) -> dict:
    """Index the held-out document, search for it, delete it: each step timed."""
    title, text = held_out_document()
    loaded = parse_text(text, "bench-scale://held-out", markdown=True)
    t0 = time.perf_counter()
    r = engine.index_loaded(loaded, "bench-scale://held-out", title, hashlib.sha256(text.encode()).hexdigest())
    t1 = time.perf_counter()
    hit = engine.retriever.search("assignment statements evaluate the expression list", k=5, pipeline="stage1_2")
    t2 = time.perf_counter()
    engine.delete(r.doc_id)
    engine.retriever.search("assignment statements", k=5, pipeline="stage1_2")
    t3 = time.perf_counter()
    return {"chunks": r.chunks, "index_s": round(t1 - t0, 2), "first_search_s": round(t2 - t1, 2),
            "end_to_end_s": round(t2 - t0, 2), "found": any(h.doc_id == r.doc_id for h in hit.hits),
            "delete_and_search_s": round(t3 - t2, 2), "phases": r.timings}


def checkpoint(engine: Engine, queries: list[str], home: Path) -> dict:
    t = time.perf_counter()
    index = engine.retriever.index  # brings the running index up to date (new parts; merged when outgrown)
    update_s = time.perf_counter() - t
    with Engine(engine.settings, embedder=engine.embedder) as fresh:  # another process opening the library
        t = time.perf_counter()
        fresh.retriever.index
        fresh_open_s = time.perf_counter() - t
    return {"index_update_s": round(update_s, 3), "index_parts": len(index.parts),
            "fresh_open_s": round(fresh_open_s, 3), "queries": query_latency(engine, queries),
            "add_one_document": add_one(engine), **resources(home)}


def scale_queries(data: Path | None, n: int) -> list[str]:
    from .datasets import load_dataset

    qs: list[str] = []
    for name in ("aws-docs-qa", "musique"):
        try:
            qs += [q.text for q in load_dataset(name, data, limit=n, split="test").queries][: n // 2]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    fallback = ["how do I create a virtual environment", "configure the network interface", "what does git rebase do",
                "how to grant privileges on a table", "install the boot loader", "format a string with padding"]
    return (qs + fallback * n)[:n]


def run_scale_bench(settings, home: Path, chunks: int, checkpoints: list[int], download: bool,
                    n_queries: int = 30, progress=None) -> dict:
    data = shared_data() if shared_data().is_dir() else None
    docs, report = scale_corpus(data, home.parent / "scale-debs", download)
    engine = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "doc_cache")))
    # the embedder's own rate before and after the growth, on 320 sample chunks, or on 1/20 of a smaller library
    # (at least 128; at 2,000 chunks, 320 twice plus the warm-up were a third of the run's embedding)
    sample = sample_texts(engine.settings, engine.embedder, docs[:200], n=min(320, max(2 * STEP, chunks // 20)))
    encode_rate(engine.embedder, sample[:STEP])  # warm up (the first calls allocate); not counted
    rates = {"before": encode_rate(engine.embedder, sample)}
    queries = scale_queries(data, n_queries)
    curve, points, used = [], [], {}
    phases = {"load_s": 0.0, "chunk_s": 0.0, "embed_s": 0.0, "store_s": 0.0}
    pending = sorted(c for c in checkpoints if c <= chunks) or [chunks]
    # the curve's slices: 1/40 of the run, at least 500 chunks (a quarter of a run under 2,000 chunks)
    total, paused, slice_chunks, slice_every = 0, 0.0, 0, max(chunks // 40, min(500, max(chunks // 4, 1)))
    t_start = t_slice = time.perf_counter()
    source_of = {}  # document key -> its source

    def loaded():
        for d in docs:
            if total >= chunks:  # committed so far; the engine's last group may add up to STORE_GROUP_CHUNKS more
                return
            t = time.perf_counter()
            text = d.read()
            doc = parse_text(text, d.key, markdown=d.markdown)
            phases["load_s"] += time.perf_counter() - t
            if doc.blocks:
                source_of[f"bench-scale://{d.key}"] = d.source
                yield doc, f"bench-scale://{d.key}", d.title, hashlib.sha256(text.encode()).hexdigest()

    for r in engine.index_loaded_many(loaded()):
        if r.status == "failed":
            raise RuntimeError(f"scale bench: {r.path}: {r.error}")
        for k in ("chunk_s", "embed_s", "store_s"):
            phases[k] += r.timings.get(k, 0.0)
        total += r.chunks
        slice_chunks += r.chunks
        used[source_of[r.path]] = used.get(source_of[r.path], 0) + r.chunks
        if slice_chunks >= slice_every:
            now = time.perf_counter()
            curve.append({"chunks": total, "elapsed_s": round(now - t_start - paused, 1),
                          "chunks_per_s": round(slice_chunks / (now - t_slice), 1), "rss_mib": resources(home)["rss_mib"]})
            t_slice, slice_chunks = now, 0
        if progress:
            progress("index", min(total, chunks), chunks)
        while pending and total >= pending[0]:
            c0 = time.perf_counter()
            ingest_s = c0 - t_start - paused
            stored = engine.catalog.documents()  # the whole group committed, though its results are still coming
            n = sum(d.chunk_count for d in stored)
            point = {"target": pending.pop(0), "chunks": n, "documents": len(stored),
                     "ingest_s": round(ingest_s, 1), "ingest_chunks_per_s": round(n / ingest_s, 1)}
            point.update(checkpoint(engine, queries, home))
            point["bytes_per_chunk"] = round(point["disk_bytes"] / n)
            points.append(point)
            dt = time.perf_counter() - c0
            paused += dt  # checkpoints are not ingest time
            t_slice += dt
    rates["after"] = encode_rate(engine.embedder, sample)
    ingest_s = sum(phases.values())
    return {"chunks": total, "documents": len(engine.catalog.documents()), "checkpoints": points, "curve": curve,
            "encode_rate_chunks_per_s": rates, "encode_rate_sample_chunks": len(sample),
            "phases_s": {k: round(v, 1) for k, v in phases.items()},
            "phases_total_s": round(ingest_s, 1), "sources_chunks": used, "sources": report,
            "corpus": "grown from real text: " + ", ".join(f"{k} {v}" for k, v in sorted(used.items(), key=lambda x: -x[1])),
            "queries": len(queries), "machine": machine(), "data_dir": str(home),
            "models": {"embedder": settings.EMBEDDER_MODEL, "reranker": settings.RERANKER},
            "settings": search_settings(settings, "NESTED", "HNSW_THRESHOLD", "CACHE_DOCUMENTS", "STORE_GROUP_CHUNKS")}


def remeasure(settings, home: Path, n_queries: int = 30) -> dict:
    """The checkpoint measurements again on a library an earlier run grew (no ingest): for a later code change
    to the query path, on the same library."""
    engine = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "doc_cache")))
    engine.embedder.embed_with_tokens(["warm up"])  # the added document's time is indexing, not loading the model
    docs = engine.catalog.documents()
    data = shared_data() if shared_data().is_dir() else None
    point = {"target": None, "chunks": sum(d.chunk_count for d in docs), "documents": len(docs),
             **checkpoint(engine, scale_queries(data, n_queries), home)}
    point["bytes_per_chunk"] = round(point["disk_bytes"] / max(point["chunks"], 1))
    return {"reused_library": str(home), "chunks": point["chunks"], "checkpoints": [point], "queries": n_queries,
            "machine": machine(), "models": {"embedder": settings.EMBEDDER_MODEL, "reranker": settings.RERANKER},
            "settings": search_settings(settings)}
