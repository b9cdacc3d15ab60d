"""One-off probe: what stage 3 costs and gives with fewer candidates (STAGE3_K) and shorter pairs (RERANK_MAX_TOKENS).

    python bench_results/probes/stage3_budget_probe.py DATASET OUT.json [TOKENS ...]      # dev halves only
    python bench_results/probes/stage3_budget_probe.py --table OUT.json FLOOR             # the table again, any floor

For each dev question of DATASET (its bench corpus in ``bench_out/``, built by ``thread-rag bench retrieval``), takes
the stage-3 pool of the default pipeline (stage-2 order, ``STAGE3_K`` = 20 candidates, the passages
``RERANK_CONTEXT`` gives) and scores every pair alone with the packaged cross-encoder truncated to each TOKENS
(default 96 128 192 256), timing each pair. Then, for each candidate count K and truncation, the nDCG@10 of the
default ranking with stage 3 on the first K only (the lexical floor applied) and the median per-question stage-3
time (the sum of its K pairs' times). Prints a table; OUT keeps the per-pair data. As run on 2026-12-01 (the figures in
BENCHMARKS.md), the floor here read stage 1's BM25 list (0 outside its 200 rows), as the floor was first built; the
pipeline's floor now reads each candidate's own score. The choice it informed (15 candidates x 192 tokens) is the same
with no floor at all (OUT holds what is needed to check: ``bm25`` and ``ce<T>`` per candidate).
"""
from __future__ import annotations
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench.corpus import open_corpus_engine
from bench.datasets import load_dataset
from bench.metrics import ndcg_at_k
from thread_rag.ids import format_doc_id
from thread_rag.retrieve import pipeline as P
from thread_rag.retrieve.rerank import OnnxCrossEncoder
from thread_rag.settings import load_settings

from stage3_rules_offline import dedupe  # noqa: E402 - the sibling probe (run from this folder's script path)
from bench.datasets import shared_data


def collect(name: str) -> tuple[list, object]:
    settings = load_settings(None).replace(STAGE3_K=20)  # the pool; K below it are evaluated offline
    ds = load_dataset(name, shared_data(), split="dev")
    engine, keymap, _ = open_corpus_engine(settings, ds)
    seen = {}

    def stage3(self, index, query, cand, final, lex, timings, *rest):  # record the pool, rerank nothing
        pool = cand[: self.settings.STAGE3_K]
        self._fetch(index, pool)
        key = lambda r: keymap.get(format_doc_id(int(index.meta.serial[r])))  # noqa: E731
        seen.update(pool=[{"doc": key(r), "bm25": lex.get(r, 0.0), "passage": self._passage(index, r)} for r in pool],
                    rest=[key(r) for r in cand[len(pool):]])
        return cand, {}

    P.Retriever._stage3 = stage3
    rows = []
    for q in ds.queries:
        seen.clear()
        engine.retriever.search(q.text, k=50)
        rows.append({"qid": q.qid, "query": q.text, "gold": sorted(q.gold_docs), **seen})
    return rows, settings


def main(name: str, out: str, tokens: list[int]) -> None:
    rows, settings = collect(name)
    for t in tokens:
        ce = OnnxCrossEncoder(max_tokens=t, threads=settings.TORCH_THREADS)
        ce.logits("warm up", ["warm up"])
        for r in rows:
            for c in r["pool"]:
                t0 = time.perf_counter()
                c[f"ce{t}"] = float(ce.logits(r["query"], [c["passage"]])[0])
                c[f"ms{t}"] = (time.perf_counter() - t0) * 1000
    for r in rows:
        for c in r["pool"]:
            del c["passage"]
    Path(out).write_text(json.dumps({"dataset": name, "split": "dev", "tokens": tokens, "rows": rows}))
    table(name, rows, tokens, 0.1)


def table(name: str, rows: list, tokens: list[int], floor: float) -> None:
    print(f"{name} dev, {len(rows)} questions; nDCG@10 / median stage-3 ms per question (lexical floor {floor})")
    print("K".ljust(4) + "".join(f"T={t}".ljust(18) for t in tokens))
    for k in (0, 5, 8, 10, 15, 20):
        cells = []
        for t in tokens:
            nd, ms = [], []
            for r in rows:
                pool, head = r["pool"], r["pool"][:k]
                s = P._lexical_floor([c[f"ce{t}"] for c in head], [c["bm25"] for c in head], floor) if k and floor \
                    else np.asarray([c[f"ce{t}"] for c in head])
                order = [head[i]["doc"] for i in sorted(range(len(head)), key=lambda i: -s[i])]
                ranked = dedupe(order + [c["doc"] for c in pool[k:]] + r["rest"])
                nd.append(ndcg_at_k(ranked, set(r["gold"]), 10))
                ms.append(sum(c[f"ms{t}"] for c in head))
            cells.append(f"{np.mean(nd):.4f} {statistics.median(ms):6.0f}".ljust(18))
        print(str(k).ljust(4) + "".join(cells))


if __name__ == "__main__":
    if sys.argv[1] == "--table":  # python ... --table OUT.json FLOOR: the table again from a saved run
        import gzip

        saved = json.loads((gzip.open if sys.argv[2].endswith(".gz") else open)(sys.argv[2], "rt").read())
        table(saved["dataset"], saved["rows"], saved["tokens"], float(sys.argv[3]))
    else:
        main(sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]] or [96, 128, 192, 256])
