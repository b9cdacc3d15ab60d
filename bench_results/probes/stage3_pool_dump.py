"""One-off probe: dump what stage 3 sees and decides, per question, for offline analysis of rules on top of it.

    python bench_results/probes/stage3_pool_dump.py DATASET SPLIT OUT.json [K TOKENS]

Runs the default pipeline (k=50) with the stage-3 pool K (default 20) cut to TOKENS (default 256) and no lexical
floor over the data set's question half on its bench corpus (``bench_out/``, built by
``thread-rag bench retrieval`` when missing) and records, for each question, the stage-3 pool in stage-2 order with
each candidate's document key, stage-2 score, BM25 score (None outside BM25's candidates; ``bm25_exact``: its own
score whatever its rank), dense score and cross-encoder score, the stage-2 order of the rest, the final ranking and the gold documents. Only for the dev
halves: rules are chosen on these dumps, then judged by ``thread-rag bench retrieval --split test``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.bench.retrieval import doc_ranking
from thread_rag.ids import format_doc_id
from thread_rag.retrieve import pipeline as P
from thread_rag.settings import load_settings


def main(name: str, split: str, out: str, k: int = 20, tokens: int = 256) -> None:
    if split != "dev":
        raise SystemExit("dev halves only")
    settings = load_settings(None).replace(STAGE3_K=k, RERANK_MAX_TOKENS=tokens, STAGE3_LEXICAL_FLOOR=0.0)
    ds = load_dataset(name, settings.shared_data, split=split)
    engine, keymap, _ = open_corpus_engine(settings, ds)
    r = engine.retriever
    seen = {}
    orig1, orig3 = P.Retriever._stage1, P.Retriever._stage3

    def stage1(self, index, query, rows, pipeline, timings):
        fused, dense, lex = orig1(self, index, query, rows, pipeline, timings)
        seen.update(dense=dict(dense), lex=dict(lex), index=index)
        return fused, dense, lex

    def stage3(self, index, query, cand, final, lex, timings, *rest):
        seen.update(cand=list(cand), pre=dict(final))
        out_cand, rmap = orig3(self, index, query, cand, final, lex, timings, *rest)
        seen["ce"] = dict(rmap)
        return out_cand, rmap

    P.Retriever._stage1, P.Retriever._stage3 = stage1, stage3
    rows_out = []
    for q in ds.queries:
        seen.clear()
        res = r.search(q.text, k=50)
        index = seen["index"]

        def key(row):
            return keymap.get(format_doc_id(int(index.meta.serial[row])))

        pool = seen["cand"][: settings.STAGE3_K]
        exact = index.lexical_scores(q.text, pool).tolist()
        rows_out.append({
            "qid": q.qid, "query": q.text, "gold": sorted(q.gold_docs),
            "pool": [{"doc": key(x), "stage2": seen["pre"][x], "bm25": seen["lex"].get(x), "bm25_exact": b,
                      "dense": seen["dense"].get(x), "ce": seen["ce"][x]} for x, b in zip(pool, exact)],
            "rest": [key(x) for x in seen["cand"][settings.STAGE3_K:]],
            "final": doc_ranking(res.hits, keymap),
        })
    Path(out).write_text(json.dumps({"dataset": ds.name, "queries": len(rows_out), "rows": rows_out}))
    print(f"{len(rows_out)} questions -> {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], *(int(x) for x in sys.argv[4:6]))
