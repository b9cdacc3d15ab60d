"""``thread-rag bench retrieval``: dense / BM25 / RRF / +MaxSim / +rerank side by side.

Documents are ranked by their best chunk (chunk hits deduplicated by document, in order).
Metrics: nDCG@10, Recall@1/5/10, MRR@10 (+ all-supporting@10 for musique), p50/p95 latency.
"""
from __future__ import annotations

import platform
import time

from ..retrieve.pipeline import PIPELINES
from .metrics import all_found_at_k, bootstrap_ci, mrr_at_k, ndcg_at_k, percentile, recall_at_k


def doc_ranking(hits, keymap: dict) -> list[str]:
    out, seen = [], set()
    for h in hits:
        key = keymap.get(h.doc_id)
        if key is not None and key not in seen:
            seen.add(key)
            out.append(key)
    return out


def run_retrieval(engine, keymap: dict, ds, configs: list[str], chunk_k: int = 50) -> dict:
    engine.retriever.index  # build/load outside the timed loop
    for d in engine.documents():  # load every thread once: timings then measure retrieval, not first reads
        engine.thread(d.serial)
    engine.retriever.search("warm up", k=5, pipeline="stage1_2")
    results = {}
    for name in configs:
        per = {"ndcg@10": [], "recall@1": [], "recall@5": [], "recall@10": [], "mrr@10": [], "all@10": []}
        lat = []
        exits = 0
        for q in ds.queries:
            t = time.perf_counter()
            res = engine.retriever.search(q.text, k=chunk_k, pipeline=name)
            lat.append((time.perf_counter() - t) * 1000)
            exits += res.early_exit
            ranked = doc_ranking(res.hits, keymap)
            per["ndcg@10"].append(ndcg_at_k(ranked, q.gold_docs, 10))
            for kk in (1, 5, 10):
                per[f"recall@{kk}"].append(recall_at_k(ranked, q.gold_docs, kk))
            per["mrr@10"].append(mrr_at_k(ranked, q.gold_docs, 10))
            per["all@10"].append(all_found_at_k(ranked, q.gold_docs, 10))
        row = {m: round(sum(v) / len(v), 4) for m, v in per.items()}
        row["ndcg@10_ci95"] = [round(x, 4) for x in bootstrap_ci(per["ndcg@10"])]
        row["p50_ms"] = round(percentile(lat, 50), 2)
        row["p95_ms"] = round(percentile(lat, 95), 2)
        row["early_exit_rate"] = round(exits / len(ds.queries), 3)
        lat5 = []
        for q in ds.queries[:50]:  # latency at the agent's k=5
            t = time.perf_counter()
            engine.retriever.search(q.text, k=5, pipeline=name)
            lat5.append((time.perf_counter() - t) * 1000)
        row["k5_p50_ms"] = round(percentile(lat5, 50), 2)
        row["k5_p95_ms"] = round(percentile(lat5, 95), 2)
        results[name] = row
    return results


def machine() -> dict:
    import os

    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}
