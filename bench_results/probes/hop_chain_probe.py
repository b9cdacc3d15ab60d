"""One-off probe (issue 14, musique all-supporting@10 on 3- and 4-hop questions): a chained hop, dev halves only.

    PYTHONPATH=. python bench_results/probes/hop_chain_probe.py DATASET [SPLIT=dev]

Runs the product's search with the hop on (HOP_K=20, other hop settings at their defaults), k=50. Then, offline, a
second link of the chain: the first hop pick p1 seeds candidates (RRF of p1's dense neighbours and BM25 on p1's words
that neither the question nor the top hit has, top 20, plus stage 3's next 4 not yet placed), scored by the same
cross-encoder against "question + top hit + p1" (384 word pieces); up to H scoring >= tau follow p1's picks.
Prints, per hop count, all-supporting@10 and where the missing paragraphs were; then nDCG@10 / all@10 per (H, tau).
"""
import collections, json, sys, time
import numpy as np
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.bench.metrics import ndcg_at_k, all_found_at_k
from thread_rag.ids import format_doc_id
from thread_rag.retrieve.fusion import rrf
from thread_rag.retrieve.search_index import bm25_tokenize
from thread_rag.settings import load_settings


def main(name, split="dev"):
    s = load_settings(None).replace(HOP_K=20)
    ds = load_dataset(name, s.shared_data, split=split)
    engine, keymap, _ = open_corpus_engine(s, ds)
    r = engine.retriever
    hops = {}
    if name == "musique":
        raw = json.load(open(s.shared_data / "musique-hipporag100" / "musique_train.json"))
        hops = {q["question"]: q["id"].split("__")[0] for q in raw}
    recs, t0 = [], time.perf_counter()
    for q in ds.queries:
        res = r.search(q.text, k=50)
        index = r.index
        keys = [keymap.get(h.doc_id) for h in res.hits]
        picks = [i for i, h in enumerate(res.hits) if h.ranked_by == "hop"]
        rec = {"q": q.text, "hop": hops.get(q.text, "?"), "gold": sorted(q.gold_docs), "keys": keys,
               "picks": picks, "chain": []}
        if picks:
            rec["chain"] = chain(r, index, q.text, res.hits, picks, keymap)
        recs.append(rec)
    print(f"{name} {split}: {len(recs)} q, {1000 * (time.perf_counter() - t0) / len(recs):.0f} ms/q")
    report(recs)


def chain(r, index, query, hits, picks, keymap):
    """Scores of the second link's candidates: [(doc key, score)] for p1 = the first pick."""
    s = r.settings
    rowmap = {(int(index.meta.serial[x]), int(index.meta.position[x])): x for x in range(len(index.meta.serial))} \
        if not hasattr(r, "_rowmap") else r._rowmap
    r._rowmap = rowmap
    def row(h):
        ser, pos = h.chunk_id.rsplit("_", 1)
        return rowmap[(int(ser[3:]), int(pos))]
    top, p1 = row(hits[0]), row(hits[picks[0]])
    placed = {row(hits[i]) for i in [0] + picks}
    seen_words = set(bm25_tokenize([query + " " + hits[0].text])[0])
    novel = [w for w in bm25_tokenize([hits[picks[0]].text])[0] if w not in seen_words]
    lists = [index.dense(np.asarray(index.vectors[p1], np.float32), 21, None)[0].tolist()]
    if novel:
        lists.append(index.lexical(" ".join(novel), 21, None)[0].tolist())
    led = rrf(lists, [1.0] * len(lists), k=s.RRF_K)
    led = [x for x in sorted(led, key=lambda x: -led[x]) if x not in placed][:20]
    rest = [row(h) for h in hits if row(h) not in placed][:4]
    pool = list(dict.fromkeys(rest + led))
    r._fetch(index, pool)
    qq = query + " " + r._passage(index, top) + " " + r._passage(index, p1)
    sc = r.reranker.score(qq, [r._passage(index, x) for x in pool], max_tokens=384)
    return [(keymap.get(format_doc_id(int(index.meta.serial[x]))), float(v)) for x, v in zip(pool, sc)]


def rank_with(rec, H, tau):
    keys = rec["keys"]
    if not rec["chain"] or H == 0:
        return list(dict.fromkeys(keys))
    head = [keys[i] for i in [0] + rec["picks"]]
    ins = [k for k, v in sorted(rec["chain"], key=lambda kv: -kv[1]) if v >= tau and k not in head][:H]
    return list(dict.fromkeys(head + ins + keys))


def report(recs):
    by = collections.defaultdict(list)
    for x in recs:
        ranked = list(dict.fromkeys(x["keys"]))
        gold = set(x["gold"])
        by[x["hop"]].append(all_found_at_k(ranked, gold, 10))
        if not all_found_at_k(ranked, gold, 10):
            where = [ranked.index(g) + 1 if g in ranked else None for g in x["gold"]]
            top_gold = ranked[0] in gold
            pick_gold = [x["keys"][i] in gold for i in x["picks"]]
            inchain = [g for g in gold if g in {k for k, _ in x["chain"]}]
            print(f"  miss {x['hop']:6} gold ranks {where} top gold {top_gold} picks gold {pick_gold} "
                  f"missing in chain pool {len([g for g in inchain if g not in ranked[:10]])}")
    for h, v in sorted(by.items()):
        print(f"  {h}: {len(v)} q, all@10 {np.mean(v):.3f}")
    for H in (0, 1, 2):
        for tau in ((2,) if H == 0 else (0.5, 0.7, 0.9)):
            nd = [ndcg_at_k(rank_with(x, H, tau), set(x["gold"]), 10) for x in recs]
            al = [all_found_at_k(rank_with(x, H, tau), set(x["gold"]), 10) for x in recs]
            multi = [a for a, x in zip(al, recs) if x["hop"] not in ("2hop",)]
            print(f"  chain H={H} tau={tau}: ndcg {np.mean(nd):.4f} all@10 {np.mean(al):.3f} (3/4-hop {np.mean(multi) if multi else float('nan'):.3f})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "dev")
