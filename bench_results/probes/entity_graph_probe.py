"""One-off probe (issue 14): an entity graph over the passages, walked by personalized PageRank (HippoRAG-like, with
no LLM: capitalised spans as entities), musique dev half only.

    PYTHONPATH=. python bench_results/probes/entity_graph_probe.py > bench_results/probes/entity_graph_probe.txt

Entities: capitalised spans (and 3-4 digit numbers) of a passage, leading function words dropped, the single words of
multi-word spans too, lower-cased; kept when 2..20 passages hold them. Passages are linked with weight sum of idf over
shared entities; PPR (restart 0.5, 30 steps) from seeds. Two uses, rankings by document (musique: one passage each):
  A. after the search (the default, h0, and the hop, h20): the top S hits seed the walk (weights 1, 1/2, 1/4 ...),
     optionally with the question's own entities (HippoRAG's seeds); the search's top KEEP stay, then the walk's
     ranking and the search's rest alternate.
  B. inside the hop: the walk from the seed as a third candidate list beside the seed's dense neighbours and BM25 on
     its novel words (or instead of them); the hop's cross-encoder scores and picks as in the product (HOP_K 20).
"""
import collections, itertools, re, sys, time
import numpy as np
import scipy.sparse as sp
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.bench.metrics import all_found_at_k, ndcg_at_k
from thread_rag.bench.retrieval import doc_ranking
from thread_rag.retrieve import pipeline as P
from thread_rag.retrieve.fusion import rrf
from thread_rag.retrieve.search_index import bm25_tokenize
from thread_rag.settings import load_settings

SPAN = re.compile(r"\b(?:[A-Z][\w'\-\.]*|\d{3,4})(?:\s+(?:(?:of|the|de|and|von|van|la|le|du|for)\s+)*"
                  r"(?:[A-Z][\w'\-\.]*|\d{3,4}))*")
STOP = set("The A An In On At For Of And But He She It They His Her Its This That These Those There Then When While "
           "As By From To With After Before During Since Also However".split())
MAXDF = 20


def entities(text: str) -> set:
    out = set()
    for m in SPAN.finditer(text):
        parts = m.group(0).strip(" .").split()
        while parts and parts[0] in STOP:
            parts = parts[1:]
        if parts and len(" ".join(parts)) >= 3:
            out.add(" ".join(parts).lower())
            if len(parts) > 1:
                out.update(p.lower() for p in parts if p[0].isupper() and p not in STOP and len(p) > 3)
    return out


class Graph:
    def __init__(self, texts: list):
        ents = [entities(t) for t in texts]
        df = collections.Counter(e for s in ents for e in s)
        self.vocab = {e: i for i, e in enumerate(e for e, c in df.items() if 2 <= c <= MAXDF)}
        pairs = [(i, self.vocab[e]) for i, s in enumerate(ents) for e in s if e in self.vocab]
        n = len(texts)
        self.B = sp.csr_matrix((np.ones(len(pairs)), tuple(zip(*pairs))), shape=(n, len(self.vocab)))
        self.idf = np.log(n / np.maximum(np.asarray(self.B.sum(0)).ravel(), 1))
        A = (self.B.multiply(self.idf[None, :]).tocsr() @ self.B.T).tocsr()
        A.setdiag(0)
        A.eliminate_zeros()
        deg = np.maximum(np.asarray(A.sum(1)).ravel(), 1e-12)
        self.PT = (sp.diags(1 / deg) @ A).T.tocsr()
        self.Bc, self.edges = self.B.tocsc(), A.nnz

    def walk(self, seed: np.ndarray, restart=0.5, steps=30) -> np.ndarray:
        seed = seed / seed.sum()
        x = seed.copy()
        for _ in range(steps):
            x = restart * seed + (1 - restart) * (self.PT @ x)
        return x

    def question_seed(self, q: str) -> np.ndarray:
        ql = " " + re.sub(r"[^\w ]", " ", q.lower()) + " "
        ids = {self.vocab[e] for e in entities(q) if e in self.vocab}
        ids |= {i for e, i in self.vocab.items() if len(e) > 4 and f" {e} " in ql}
        v = np.zeros(self.B.shape[0])
        for i in ids:
            col = self.Bc[:, i].toarray().ravel()
            v += self.idf[i] * col / col.sum()
        return v


def row_texts(index, library) -> list:
    """Each search-index row's chunk text (rows in the index's order)."""
    texts = [""] * len(index.meta.serial)
    for ser, gen in library.committed():
        for c in library.chunks_at(ser, gen) or []:
            row = index.row_of.get((ser, c.position))
            if row is not None:
                texts[row] = c.text
    return texts


def score(rankings, golds):
    return (np.mean([ndcg_at_k(r, g, 10) for r, g in zip(rankings, golds)]),
            np.mean([all_found_at_k(r, g, 10) for r, g in zip(rankings, golds)]))


def after_search(g, keys, kix, runs, queries, seeds, keep, wq=0.0):
    out = []
    for r, q in zip(runs, queries):
        seed = np.zeros(len(keys))
        for i, key in enumerate(r[:seeds]):
            seed[kix[key]] = 0.5 ** i
        if seed.sum():
            seed /= seed.sum()
        qs = g.question_seed(q) if wq else np.zeros(len(keys))
        if qs.sum():
            seed = seed + wq * qs / qs.sum()
        x = g.walk(seed)
        for key in r[:keep]:
            x[kix[key]] = -1
        walk = [keys[i] for i in np.argsort(-x) if x[i] > 0]
        alt = [k for pair in itertools.zip_longest(walk, r[keep:]) for k in pair if k]
        out.append(list(dict.fromkeys(r[:keep] + alt)))
    return out


MODE, GRAPH_ROWS = ["nb"], {}


def link(self, index, query, seeds, placed, rest, rows, pipeline):  # the product's _link with a third list
    s, seed = self.settings, seeds[-1]
    lists, deep = [], s.HOP_K + len(placed)
    if MODE[0] in ("nb", "both"):
        lists.append(index.dense(np.asarray(index.vectors[seed], np.float32), deep, rows)[0].tolist())
        asked = set(bm25_tokenize([" ".join([query] + [self._chunk(index, r).text for r in seeds[:-1]])])[0])
        novel = [w for w in bm25_tokenize([self._chunk(index, seed).text])[0] if w not in asked]
        if novel:
            lists.append(index.lexical(" ".join(novel), deep, rows)[0].tolist())
    if MODE[0] in ("graph", "both"):
        g = GRAPH_ROWS["g"]
        v = np.zeros(g.B.shape[0])
        v[list(seeds)] = [0.5 ** i for i in range(len(seeds))]
        x = g.walk(v)
        x[list(seeds)] = 0
        lists.append([int(r) for r in np.argsort(-x)[:deep] if x[r] > 0])
    led = rrf(lists, [1.0] * len(lists), k=s.RRF_K)
    led = [r for r in sorted(led, key=lambda r: (-led[r], index.tiebreak[r])) if r not in placed][: s.HOP_K]
    pool = list(dict.fromkeys(rest[: s.HOP_RESCORE] + led))
    self._fetch(index, pool)
    asked_text = " ".join([query] + [self._passage(index, r) for r in reversed(seeds)])
    scores = self.reranker.score(asked_text, [self._passage(index, r) for r in pool], max_tokens=s.HOP_MAX_TOKENS)
    hop_map = dict(zip(pool, (float(v) for v in scores)))
    best = sorted(pool, key=lambda r: (-hop_map[r], index.tiebreak[r]))
    return hop_map, [r for r in best if hop_map[r] >= s.HOP_MIN_SCORE][: s.HOP_PICKS]


def main():
    t0 = time.perf_counter()
    base = load_settings(None)
    ds = load_dataset("musique", base.shared_data, split="dev")
    golds, queries = [q.gold_docs for q in ds.queries], [q.text for q in ds.queries]
    keys = [d.key for d in ds.corpus]
    kix = {k: i for i, k in enumerate(keys)}
    g = Graph([d.text for d in ds.corpus])
    print(f"musique dev, {len(queries)} questions; document graph: {len(keys)} passages, {len(g.vocab)} entities "
          f"(in 2..{MAXDF} passages), {g.edges} links")
    print("A. the walk after the search: nDCG@10 / all-supporting@10")
    for hop_k in (0, 20):
        engine, keymap, _ = open_corpus_engine(base.replace(HOP_K=hop_k), ds)
        runs = [doc_ranking(engine.retriever.search(q, k=50).hits, keymap) for q in queries]
        print(f"  search h{hop_k} alone                          %.4f / %.3f" % score(runs, golds))
        for seeds in (1, 2, 3, 5):
            for keep in (3, 5):
                print(f"  h{hop_k} + walk, seeds {seeds}, keep {keep}            %.4f / %.3f"
                      % score(after_search(g, keys, kix, runs, queries, seeds, keep), golds))
        for seeds in (0, 2):
            for keep in (3, 5):
                print(f"  h{hop_k} + walk, seeds {seeds} + question's entities, keep {keep}  %.4f / %.3f"
                      % score(after_search(g, keys, kix, runs, queries, seeds, keep, wq=1.0), golds))
        if hop_k == 0:
            found = missing = 0
            for r, gold in zip(runs, golds):
                seed = np.zeros(len(keys))
                seed[[kix[k] for k in r[:2]]] = [1, 0.5]
                x = g.walk(seed)
                x[[kix[k] for k in r[:2]]] = -1
                top = {keys[i] for i in np.argsort(-x)[:10]}
                miss = set(gold) - set(r[:10])
                missing += len(miss)
                found += len(miss & top)
            print(f"  supporting passages outside the default's top 10 in the walk's top 10 (seeds 2): {found}/{missing}")
    print("B. the walk as a candidate list inside the hop (HOP_K 20; the cross-encoder scores and picks)")
    engine, keymap, _ = open_corpus_engine(base.replace(HOP_K=20), ds)
    r = engine.retriever
    index, lib = r.index, r.library
    GRAPH_ROWS["g"] = Graph(row_texts(index, lib))
    P.Retriever._link = link
    for mode in ("nb", "graph", "both"):
        MODE[0] = mode
        runs = [doc_ranking(r.search(q, k=50).hits, keymap) for q in queries]
        print(f"  hop lists {mode:5}                             %.4f / %.3f" % score(runs, golds))
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        raise SystemExit("musique dev half only; no arguments")
    main()
