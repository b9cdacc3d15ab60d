"""One-off probe (issue 14): the entity-graph walk of entity_graph_probe.py at chunk level, after the default search,
on any shared set: the grid on the dev halves, the point chosen there once on the test halves.

    PYTHONPATH=. python bench_results/probes/entity_walk_probe.py DATASET dev|test

The graph links chunks that share capitalised entities (held by 2..20 chunks; idf weights); after the default search
(k=50) its top SEEDS chunks seed a personalized PageRank (restart 0.5; seed weights 1, 1/2, ...), the search's top
KEEP chunks stay, then the walk's ranking and the search's rest alternate; documents ranked by their best chunk.
Chosen on the dev halves (musique all-supporting@10 best, aws-docs-qa nDCG@10 least hurt): SEEDS 2, KEEP 5; the test
split runs only that point.
"""
import importlib.util, itertools, sys, time
from pathlib import Path
import numpy as np
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.bench.metrics import all_found_at_k, ndcg_at_k
from thread_rag.ids import ChunkId, format_doc_id
from thread_rag.settings import load_settings

CHOSEN = (2, 5)
spec = importlib.util.spec_from_file_location("egp", Path(__file__).with_name("entity_graph_probe.py"))
egp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(egp)


def main(name: str, split: str) -> None:
    base = load_settings(None)
    ds = load_dataset(name, base.shared_data, split=split)
    engine, keymap, _ = open_corpus_engine(base, ds)
    r = engine.retriever
    index, lib = r.index, r.library
    t = time.perf_counter()
    texts = egp.row_texts(index, lib)
    t1 = time.perf_counter()
    g = egp.Graph(texts)
    print(f"{name} {split}, {len(ds.queries)} questions: {len(texts)} chunks (texts read {t1 - t:.0f} s), graph built in "
          f"{time.perf_counter() - t1:.1f} s: {len(g.vocab)} entities, {g.edges} links", flush=True)

    def doc_rank(rows):
        return list(dict.fromkeys(k for k in (keymap.get(format_doc_id(int(index.meta.serial[x]))) for x in rows) if k))

    runs = []
    for q in ds.queries:
        ids = [ChunkId.parse(h.chunk_id) for h in r.search(q.text, k=50).hits]
        runs.append([index.row_of[(c.serial, c.position)] for c in ids])
    golds = [q.gold_docs for q in ds.queries]

    def score(rankings):
        nd = [ndcg_at_k(x, gd, 10) for x, gd in zip(rankings, golds)]
        return np.mean(nd), np.mean([all_found_at_k(x, gd, 10) for x, gd in zip(rankings, golds)]), nd

    n0, a0, nd0 = score([doc_rank(x) for x in runs])
    print(f"  search alone            nDCG@10 {n0:.4f}  all-gold@10 {a0:.3f}")
    grid = [CHOSEN] if split == "test" else [(s, k) for s in (1, 2, 3) for k in (3, 5)]
    for seeds, keep in grid:
        outs, ts = [], []
        for rows in runs:
            t0 = time.perf_counter()
            v = np.zeros(len(texts))
            v[rows[:seeds]] = [0.5 ** i for i in range(len(rows[:seeds]))]
            x = g.walk(v)
            x[rows[:keep]] = -1
            walk = [int(i) for i in np.argsort(-x)[:50] if x[i] > 0]
            alt = [k for pair in itertools.zip_longest(walk, rows[keep:]) for k in pair if k is not None]
            outs.append(doc_rank(list(dict.fromkeys(rows[:keep] + alt))))
            ts.append(time.perf_counter() - t0)
        n1, a1, nd1 = score(outs)
        d = np.asarray(nd1) - np.asarray(nd0)
        boot = np.random.default_rng(0).choice(len(d), (2000, len(d)))
        lo, hi = np.percentile(d[boot].mean(1), [2.5, 97.5])
        print(f"  walk seeds {seeds} keep {keep}   nDCG@10 {n1:.4f} ({n1 - n0:+.4f}, 95% CI {lo:+.4f}..{hi:+.4f}; "
              f"{(d > 0).sum()} up, {(d < 0).sum()} down)  all-gold@10 {a1:.3f}  walk p50 {1000 * np.median(ts):.1f} ms",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
