"""One-off probe (2026-12-03): how often the "never mention" note (agent.loop.unmentioned_terms) would fire on
questions the documents DO answer: each shared set's test-half questions against its full corpus (no index built: the
corpus texts are tokenized as the BM25 index tokenizes them; a rare word = more than one word piece to MiniLM's
tokenizer, as the agent counts it). Every question here is answerable, so every firing is a note on an answerable
question (the note's statement, that no chunk holds the word, stays true).

    PYTHONPATH=. python bench_results/probes/unmentioned_probe.py > bench_results/probes/unmentioned_probe.txt
"""
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/
import collections

from bench.datasets import load_dataset
from thread_rag.embedder import TokenCounter, packaged_minilm_path
from thread_rag.retrieve.search_index import bm25_tokenize
from thread_rag.settings import load_settings
from bench.datasets import shared_data

settings = load_settings(None)
pieces = TokenCounter(packaged_minilm_path())
for name in ("aws-docs-qa", "musique", "limit-small", "leval-legal"):
    ds = load_dataset(name, shared_data(), split="test")
    held = set()
    for doc in ds.corpus:
        held.update(bm25_tokenize([doc.text])[0])
    fired, words = 0, collections.Counter()
    for q in ds.queries:
        terms = [t for t in dict.fromkeys(bm25_tokenize([q.text])[0]) if len(t) >= 3 and t not in held]
        rare = [t for t in terms if pieces.count([t])[0] > 1]
        fired += bool(rare)
        words.update(rare)
    print(f"{name}: corpus {len(ds.corpus)} documents, {len(ds.queries)} test questions, note on {fired}: "
          f"{dict(words.most_common(10))}", flush=True)
