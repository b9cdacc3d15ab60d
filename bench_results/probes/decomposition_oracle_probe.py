"""One-off probe (issue 14): how far question decomposition could take musique all-supporting@10, dev half only.

    PYTHONPATH=. python bench_results/probes/decomposition_oracle_probe.py

An upper bound, not a method: MuSiQue ships each question's gold decomposition (sub-questions with "#1" standing for
an earlier step's answer). Each sub-question, with the gold answers filled in, is searched with the default pipeline
(k=10); the rankings are interleaved (alone, and after the question's own). Output: decomposition_oracle_probe.txt.
"""
import json, re, sys, numpy as np
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.bench.metrics import all_found_at_k, ndcg_at_k
from thread_rag.bench.retrieval import doc_ranking
from thread_rag.settings import load_settings
s = load_settings(None)
ds = load_dataset("musique", s.shared_data, split="dev")
engine, keymap, _ = open_corpus_engine(s, ds)
raw = {q["question"]: q for q in json.load(open(s.shared_data / "musique-hipporag100/musique_train.json"))}
def interleave(lists):  # round robin, then what the longer rankings have left
    out = [x for tup in zip(*lists) for x in tup] + [x for l in lists for x in l]
    return list(dict.fromkeys(out))


al0, al1, al2 = [], [], []
for q in ds.queries:
    d = raw[q.text]["question_decomposition"]
    subs = []
    for sq in d:
        t = re.sub(r"#(\d)", lambda m: d[int(m.group(1)) - 1]["answer"], sq["question"])
        subs.append(t)
    base = doc_ranking(engine.retriever.search(q.text, k=10).hits, keymap)
    lists = [doc_ranking(engine.retriever.search(t, k=10).hits, keymap) for t in subs]
    # interleave: original first, then each sub's top
    inter = interleave(lists)
    mix = interleave([base] + lists)
    al0.append(all_found_at_k(base, q.gold_docs, 10)); al1.append(all_found_at_k(inter, q.gold_docs, 10)); al2.append(all_found_at_k(mix, q.gold_docs, 10))
print("musique dev, 40 q, all-supporting@10: default", np.mean(al0), "oracle subs interleaved", np.mean(al1), "question+subs", np.mean(al2))
