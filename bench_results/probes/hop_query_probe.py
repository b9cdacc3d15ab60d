"""One-off probe (issue 14): what the second hop searches with, dev halves only.

    PYTHONPATH=. python bench_results/probes/hop_query_probe.py DATASET [SPLIT=dev]

The product's hop (HOP_K=20, rescored 4, picks 2, min score 0.9, 384 word pieces) with its candidate lists swapped:
  nb   (the product's): the top hit's dense neighbours + BM25 on the top hit's words the question lacks
  qp   (as in multi-hop dense retrieval): the query embedding of "question + top hit" + BM25 on "question + top hit"
  both: the four lists fused
Scoring and placement are the product's. Prints nDCG@10, all-supporting@10, and how often a gold paragraph not in
stage 3's top 10 was in the hop pool.
"""
import sys, time
import numpy as np
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.bench.metrics import ndcg_at_k, all_found_at_k
from thread_rag.bench.retrieval import doc_ranking
from thread_rag.ids import format_doc_id
from thread_rag.retrieve import pipeline as P
from thread_rag.retrieve.fusion import rrf
from thread_rag.retrieve.search_index import bm25_tokenize

MODE, POOLS = ["nb"], []


def hop(self, index, query, cand, final, rows, pipeline, timings, k=None):
    s, top = self.settings, cand[0]
    lists = []
    if MODE[0] in ("nb", "both"):
        lists.append(index.dense(np.asarray(index.vectors[top], np.float32), s.HOP_K + 1, rows)[0].tolist())
        asked = set(bm25_tokenize([query])[0])
        novel = [w for w in bm25_tokenize([self._chunk(index, top).text])[0] if w not in asked]
        if novel:
            lists.append(index.lexical(" ".join(novel), s.HOP_K + 1, rows)[0].tolist())
    if MODE[0] in ("qp", "both"):
        text = query + " " + self._chunk(index, top).text
        qvec = self._query_embedder().embed_queries([text])[0]
        lists.append(index.dense(qvec, s.HOP_K + 1, rows)[0].tolist())
        lists.append(index.lexical(text, s.HOP_K + 1, rows)[0].tolist())
    led = rrf(lists, [1.0] * len(lists), k=s.RRF_K)
    led = [r for r in sorted(led, key=lambda r: (-led[r], index.tiebreak[r])) if r != top][: s.HOP_K]
    pool = list(dict.fromkeys(cand[1: 1 + s.HOP_RESCORE] + led))
    POOLS.append((cand[:10], pool))
    self._fetch(index, pool)
    scores = self.reranker.score(query + " " + self._passage(index, top), [self._passage(index, r) for r in pool],
                                 max_tokens=s.HOP_MAX_TOKENS)
    hop_map = dict(zip(pool, (float(v) for v in scores)))
    best = sorted(pool, key=lambda r: (-hop_map[r], index.tiebreak[r]))
    picks = [r for r in best if hop_map[r] >= s.HOP_MIN_SCORE][: s.HOP_PICKS]
    final.update({r: hop_map[r] for r in picks})
    return [top] + picks + [r for r in cand[1:] if r not in picks], hop_map, picks


P.Retriever._hop = hop


def main(name, split="dev"):
    from thread_rag.settings import load_settings
    s = load_settings(None).replace(HOP_K=20)
    ds = load_dataset(name, s.shared_data, split=split)
    engine, keymap, _ = open_corpus_engine(s, ds)
    r = engine.retriever
    for mode in ("nb", "qp", "both"):
        MODE[0] = mode
        nd, al, found, missing, t0 = [], [], 0, 0, time.perf_counter()
        for q in ds.queries:
            POOLS.clear()
            ranked = doc_ranking(r.search(q.text, k=50).hits, keymap)
            nd.append(ndcg_at_k(ranked, q.gold_docs, 10))
            al.append(all_found_at_k(ranked, q.gold_docs, 10))
            if POOLS:
                index = r.index
                key = lambda x: keymap.get(format_doc_id(int(index.meta.serial[x])))
                top10 = {key(x) for x in POOLS[0][0]}
                pool = {key(x) for x in POOLS[0][1]}
                for g in q.gold_docs - top10:
                    missing += 1
                    found += g in pool
        ms = 1000 * (time.perf_counter() - t0) / len(ds.queries)
        print(f"{name} {split} {mode:5}: ndcg@10 {np.mean(nd):.4f} all@10 {np.mean(al):.3f}  gold outside stage 3's "
              f"top 10 found in the hop pool {found}/{missing}  ({ms:.0f} ms/q)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "dev")
