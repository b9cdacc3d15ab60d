"""``thread-rag bench windows``: window assembly with a warm cache, pre-heat time per summarizer."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from .retrieval import machine
from .datasets import shared_data


def run_windows_bench(settings, args) -> dict:
    from thread_rag.engine import Engine
    from thread_rag.threads.preheat import preheat
    from thread_rag.threads.summarizers import ExtractiveSummarizer, LlamaSummarizer

    file = args.file or str(shared_data() / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf")
    home = Path(tempfile.mkdtemp(prefix="thread-rag-win-"))
    out: dict = {"file": file, "machine": machine()}
    try:
        engine = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "cache")),
                        summarizer=ExtractiveSummarizer(settings.SUMMARY_MAX_WORDS))
        rec = engine.index_file(file)
        n = rec.chunks
        t = time.perf_counter()
        rep = preheat(engine.library, lambda: engine.summarizer, engine.settings.cache_path, rec.doc_id)
        ext_s = time.perf_counter() - t
        out["extractive"] = {"chunks": n, "seconds": round(ext_s, 3), "per_200_chunks_s": round(ext_s / n * 200, 3),
                             "made": rep.made}
        ids = [f"{rec.doc_id}_{i:03d}" for i in range(n)]
        engine.windows.fetch(ids[:2])  # warm the index
        times = []
        for cid in ids:
            t = time.perf_counter()
            engine.windows.fetch([cid])
            times.append((time.perf_counter() - t) * 1000)
        out["window_warm_ms"] = {"mean": round(float(np.mean(times)), 3), "p50": round(float(np.median(times)), 3),
                                 "p95": round(float(np.percentile(times, 95)), 3), "windows": len(times)}
        sample = args.limit or 10
        for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
            summ = LlamaSummarizer(settings, model=name)
            rng = np.random.default_rng(args.seed)
            picks = sorted(rng.choice(n, size=min(sample, n), replace=False).tolist())
            chunks = engine.thread(rec.doc_id).chunks
            t = time.perf_counter()
            made = [(chunks[i].chunk_id, summ.summarize(chunks[i].text, (chunks[i].heading_path or [""])[-1]))
                    for i in picks]
            s = time.perf_counter() - t
            out[f"llm:{name}"] = {"sampled_chunks": len(picks), "seconds": round(s, 2),
                                  "per_chunk_s": round(s / len(picks), 2),
                                  "per_200_chunks_s_extrapolated": round(s / len(picks) * 200, 1),
                                  "examples": made[:3]}
        ext = ExtractiveSummarizer(settings.SUMMARY_MAX_WORDS)
        out["extractive_examples"] = [(chunks[i].chunk_id, ext.summarize(chunks[i].text,
                                       (chunks[i].heading_path or [""])[-1])) for i in picks[:3]]
        return out
    finally:
        shutil.rmtree(home, ignore_errors=True)
