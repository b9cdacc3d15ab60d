"""One-off probe (issue 14, musique all-supporting@10): a second hop from the top chunk, on the dev halves only.

    PYTHONPATH=. python bench_results/probes/hop_probe.py DATASET PIPELINE '{"w":0.3,"lists":"db","novel":1}' ...

Variants (JSON): in stage 1, add RRF lists of weight ``w`` from the ``n`` best fused rows: ``d`` = dense neighbours
of that chunk's own vector (``mix``: averaged with the query vector), ``b`` = BM25 on its text (``novel``: only the
terms the question lacks); or ``reserve`` = m: the m best of those neighbours (not already there) take the last m
places of the stage-3 pool. Stage 3 as the default (15 x 192, floor 0.1, never exit). Output: hop_probe.txt.
Result: no variant moved dev all-supporting@10 above the default's 0.575; none was taken to the test half.
"""
import json, sys, time
import numpy as np
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.bench.retrieval import doc_ranking
from thread_rag.bench.metrics import ndcg_at_k, all_found_at_k, recall_at_k
from thread_rag.retrieve import pipeline as P
from thread_rag.retrieve.fusion import rrf
from thread_rag.retrieve.search_index import bm25_tokenize
from thread_rag.settings import load_settings

VARIANT = {}
orig1 = P.Retriever._stage1

def stage1(self, index, query, rows, pipeline, timings):
    fused, dense, lex = orig1(self, index, query, rows, pipeline, timings)
    v = VARIANT
    if not v.get("w") or not fused:
        return fused, dense, lex
    s = self.settings
    top = sorted(fused, key=lambda r: (-fused[r], index.tiebreak[r]))[: v.get("n", 1)]
    lists, weights = [list(dense), list(lex)], [s.DENSE_WEIGHT, s.BM25_WEIGHT]
    qterms = set(bm25_tokenize([query])[0])
    for r0 in top:
        if "d" in v["lists"]:
            vec = np.asarray(index.vectors[r0], np.float32)
            if v.get("mix"):
                qv = self._query_embedder().embed_queries([query])[0]
                vec = vec + qv; vec = vec / np.linalg.norm(vec)
            rr, _ = index.dense(vec, s.STAGE1_K, rows)
            lists.append(rr.tolist()); weights.append(v["w"])
        if "b" in v["lists"]:
            self._fetch(index, [r0])
            text = self._chunk(index, r0).text
            if v.get("novel"):
                toks = [t for t in bm25_tokenize([text])[0] if t not in qterms]
                text = " ".join(toks)
            q2 = (query + " " + text) if v.get("qb") else text
            rr, _ = index.lexical(q2, s.STAGE1_K, rows)
            lists.append(rr.tolist()); weights.append(v["w"])
    fused = rrf(lists, weights, k=s.RRF_K)
    return fused, dense, lex

P.Retriever._stage1 = stage1

def run(name, variants, pipe="three_stage"):
    settings = load_settings(None).replace(STAGE3_K=15, RERANK_MAX_TOKENS=192, STAGE3_LEXICAL_FLOOR=0.1,
                                           EARLY_EXIT_MARGIN=1e9)
    ds = load_dataset(name, settings.shared_data, split="dev")
    engine, keymap, _ = open_corpus_engine(settings, ds)
    r = engine.retriever
    for label, v in variants:
        VARIANT.clear(); VARIANT.update(v)
        nd, al, r10, t0 = [], [], [], time.perf_counter()
        for q in ds.queries:
            res = r.search(q.text, k=50, pipeline=pipe)
            ranked = doc_ranking(res.hits, keymap)
            nd.append(ndcg_at_k(ranked, q.gold_docs, 10)); al.append(all_found_at_k(ranked, q.gold_docs, 10))
            r10.append(recall_at_k(ranked, q.gold_docs, 10))
        print(f"{name:12s} {pipe:12s} {label:28s} ndcg {np.mean(nd):.4f} all@10 {np.mean(al):.3f} r@10 {np.mean(r10):.3f}"
              f"  {1000*(time.perf_counter()-t0)/len(ds.queries):.0f} ms/q", flush=True)

orig3 = P.Retriever._stage3
def stage3(self, index, query, cand, final, lex, timings, *rest):
    v = VARIANT
    m = v.get("reserve", 0)
    if m and cand:
        s = self.settings
        r0 = cand[0]
        rows = None
        vec = np.asarray(index.vectors[r0], np.float32)
        dr, _ = index.dense(vec, 50, rows)
        self._fetch(index, [r0])
        qterms = set(bm25_tokenize([query])[0])
        text = " ".join(t for t in bm25_tokenize([self._chunk(index, r0).text])[0] if t not in qterms)
        br, _ = index.lexical(text, 50, rows) if text else (np.zeros(0, np.int64), None)
        hop = rrf([dr.tolist(), br.tolist()], [1.0, 1.0], k=s.RRF_K)
        keep = cand[: s.STAGE3_K - m]
        extra = [x for x in sorted(hop, key=lambda x: -hop[x]) if x not in keep][:m]
        for x in extra:
            final.setdefault(x, 0.0)
        cand = keep + extra + [x for x in cand[s.STAGE3_K - m:] if x not in extra]
    return orig3(self, index, query, cand, final, lex, timings, *rest)
P.Retriever._stage3 = stage3

if __name__ == "__main__":
    name, pipe = sys.argv[1], sys.argv[2]
    variants = [("off", {})]
    for spec in sys.argv[3:]:
        v = json.loads(spec); variants.append((spec, v))
    run(name, variants, pipe)
