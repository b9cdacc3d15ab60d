"""``thread-rag bench contextual``: embedding raw chunk text (the THREAD-RAG rule) versus chunk text
prefixed with its neighbour summaries (contextual retrieval), dense-only, same corpus and queries.

Reports document Recall@5 and, among the top-5 chunks, how many are adjacent chunks of one document
(pairs (i, i+1) of the same document): the "top-k poisoning" that neighbour context can cause.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from thread_rag.ids import ChunkId
from thread_rag.ingest import text_for_embedding
from .metrics import bootstrap_ci, recall_at_k
from .datasets import shared_data


def adjacent_pairs(chunk_ids: list[str]) -> int:
    ids = {ChunkId.parse(c) for c in chunk_ids}
    return sum(1 for c in ids if ChunkId(c.serial, c.position + 1) in ids)


def run_contextual_bench(settings, args) -> dict:
    from thread_rag.threads.summarizers import ExtractiveSummarizer
    from .corpus import open_corpus_engine
    from .datasets import load_dataset
    from .retrieval import doc_ranking, machine

    ds = load_dataset(args.dataset or "aws-docs-qa", shared_data(), limit=args.limit, seed=args.seed)
    engine, keymap, _ = open_corpus_engine(settings, ds)
    idx = engine.retriever.index
    summ = ExtractiveSummarizer(settings.SUMMARY_MAX_WORDS)
    texts, ids = [], []
    for r in range(len(idx)):
        ser, pos = int(idx.meta.serial[r]), int(idx.meta.position[r])
        chunks = engine.thread(ser).chunks
        c = chunks[pos]
        prev = summ.summarize(chunks[pos - 1].text, (chunks[pos - 1].heading_path or [""])[-1]) if pos > 0 else ""
        nxt = summ.summarize(chunks[pos + 1].text, (chunks[pos + 1].heading_path or [""])[-1]) \
            if pos + 1 < len(chunks) else ""
        texts.append(text_for_embedding(" ".join(x for x in (prev, c.text, nxt) if x)))
        ids.append(str(ChunkId(ser, pos)))
    ctx_vecs = np.concatenate([engine.embedder.embed(texts[i:i + 256]) for i in range(0, len(texts), 256)])
    raw_vecs = np.asarray(idx.vectors)
    out = {"dataset": ds.name, "queries": len(ds.queries), "chunks": len(ids), "machine": machine(),
           "summarizer": summ.id, "variants": {}}
    for name, mat in (("raw", raw_vecs), ("contextual", ctx_vecs)):
        rec5, adj = [], []
        for q in ds.queries:
            qv = engine.embedder.embed([q.text])[0]
            scores = mat @ qv
            top = np.argsort(-scores)[:50]
            top_ids = [ids[i] for i in top]
            ranked = doc_ranking([SimpleNamespace(doc_id=ChunkId.parse(c).doc_id) for c in top_ids], keymap)
            rec5.append(recall_at_k(ranked, q.gold_docs, 5))
            adj.append(adjacent_pairs(top_ids[:5]))
        out["variants"][name] = {"recall@5": round(float(np.mean(rec5)), 4),
                                 "recall@5_ci95": [round(x, 4) for x in bootstrap_ci(rec5)],
                                 "adjacent_pairs_in_top5": round(float(np.mean(adj)), 3)}
    return out
