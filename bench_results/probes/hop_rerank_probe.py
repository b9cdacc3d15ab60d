"""One-off probe (issue 14, musique all-supporting@10): a hop-aware second pass of the cross-encoder, dev halves only.

    PYTHONPATH=. python bench_results/probes/hop_rerank_probe.py DATASET [MAX_TOKENS]

After the default search (three_stage, 15 x 192, floor 0.1, never exit), the top hit h0 seeds a second hop:
candidates = stage 3's order (ranks 2..15) + the RRF of h0's dense neighbours and BM25 on h0's terms the question
lacks (top M); each is scored by the same cross-encoder with the query "question + h0's passage" (MAX_TOKENS).
Rules evaluated offline on those scores: insert the H best hop candidates whose hop probability >= tau right after
h0, the rest in stage 3's order. Prints nDCG@10 / all@10 / R@10 per (H, tau).
"""
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/
import json, sys, time
import numpy as np
from bench.corpus import open_corpus_engine
from bench.datasets import load_dataset
from bench.retrieval import doc_ranking
from bench.metrics import ndcg_at_k, all_found_at_k, recall_at_k
from thread_rag.retrieve import pipeline as P
from thread_rag.retrieve.fusion import rrf
from thread_rag.retrieve.rerank import OnnxCrossEncoder
from thread_rag.retrieve.search_index import bm25_tokenize
from thread_rag.settings import load_settings
from bench.datasets import shared_data

CAP = {}
orig3 = P.Retriever._stage3
def stage3(self, *a, **kw):
    out = orig3(self, *a, **kw)
    CAP["cand"] = list(out[0])
    return out
P.Retriever._stage3 = stage3

def main(name, max_tokens=384, M=20, split="dev"):
    settings = load_settings(None).replace(STAGE3_K=15, RERANK_MAX_TOKENS=192, STAGE3_LEXICAL_FLOOR=0.1,
                                           EARLY_EXIT_MARGIN=1e9)
    ds = load_dataset(name, shared_data(), split=split)
    engine, keymap, _ = open_corpus_engine(settings, ds)
    r = engine.retriever
    ce = OnnxCrossEncoder(max_tokens=max_tokens, threads=settings.TORCH_THREADS)
    index = r.index
    docid = lambda row: f"DOC{int(index.meta.serial[row])}"
    from thread_rag.ids import format_doc_id
    key = lambda row: keymap.get(format_doc_id(int(index.meta.serial[row])))
    recs, t0 = [], time.perf_counter()
    for q in ds.queries:
        CAP.clear()
        r.search(q.text, k=50, pipeline="three_stage")
        cand = CAP["cand"][:50]
        h0 = cand[0]
        vec = np.asarray(index.vectors[h0], np.float32)
        dr, _ = index.dense(vec, 50, None)
        r._fetch(index, [h0])
        p0 = r._passage(index, h0)
        qterms = set(bm25_tokenize([q.text])[0])
        novel = " ".join(t for t in bm25_tokenize([r._chunk(index, h0).text])[0] if t not in qterms)
        br, _ = index.lexical(novel, 50, None) if novel else (np.zeros(0, np.int64), None)
        hop = rrf([dr.tolist(), br.tolist()], [1.0, 1.0], k=60)
        hop_top = [x for x in sorted(hop, key=lambda x: -hop[x]) if x != h0][:M]
        pool = list(dict.fromkeys(cand[1:15] + hop_top))
        r._fetch(index, pool)
        ps = [r._passage(index, x) for x in pool]
        hs = ce.score(q.text + " " + p0, ps)
        recs.append({"gold": sorted(q.gold_docs), "cand": [key(x) for x in cand],
                     "pool": [key(x) for x in pool], "hop": [float(v) for v in hs],
                     "in_stage3": [x in cand[:15] for x in pool],
                     "hop_rank": [hop_top.index(x) if x in hop_top else None for x in pool],
                     "s3_rank": [cand.index(x) if x in cand[:15] else None for x in pool]})
    print(f"{name} {split}: {len(recs)} q, {1000*(time.perf_counter()-t0)/len(recs):.0f} ms/q (incl. default search)")
    json.dump(recs, open(f"/tmp/w/hoprecs-{name}-{split}-{max_tokens}-{M}.json", "w"))
    def ev(H, tau):
        nd, al, rc = [], [], []
        for x in recs:
            order = sorted(range(len(x["pool"])), key=lambda i: -x["hop"][i])
            ins = [x["pool"][i] for i in order if x["hop"][i] >= tau][:H]
            ranked = list(dict.fromkeys([x["cand"][0]] + ins + x["cand"][1:]))
            nd.append(ndcg_at_k(ranked, set(x["gold"]), 10)); al.append(all_found_at_k(ranked, set(x["gold"]), 10))
            rc.append(recall_at_k(ranked, set(x["gold"]), 10))
        return np.mean(nd), np.mean(al), np.mean(rc)
    b = ev(0, 2)
    print(f"  default            ndcg {b[0]:.4f} all@10 {b[1]:.3f} r@10 {b[2]:.3f}")
    for H in (1, 2, 3):
        for tau in (0.0, 0.1, 0.3, 0.5, 0.7, 0.9):
            v = ev(H, tau)
            print(f"  H={H} tau={tau:<4}       ndcg {v[0]:.4f} all@10 {v[1]:.3f} r@10 {v[2]:.3f}")

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 384, int(sys.argv[3]) if len(sys.argv) > 3 else 20)
