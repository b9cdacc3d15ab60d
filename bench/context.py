"""``thread-rag bench context``: what each context strategy puts in front of the LLM, and at what cost.

Same questions, same retriever (the default pipeline), k entry chunks. Strategies:
- ``topk``: the k hits' raw text;
- ``sentence_window``: each hit with its raw neighbours (+-1 chunk), merged;
- ``parent_doc``: each hit expanded to its ~1000-word parent block;
- ``thread_windows``: each hit as a THREAD-RAG window (previous summary | text | next summary);
- ``walk``: the walk the answer path reads (``Agent.read("walk")`` from the same k entry chunks, under
  ``READ_BUDGET``), the sources as the model gets them;
- ``nested``: ``nested_retrieve(limit=k)`` passages.
Metrics: gold-answer token coverage (SQuAD-normalised), verbatim gold span found, context words,
context tokens (Qwen tokenizer when available), build time.
"""
from __future__ import annotations

import time

import numpy as np

from thread_rag.ids import ChunkId
from thread_rag.threads.passages import join_thread
from .baselines import PARENT_WORDS, parent_blocks
from .metrics import bootstrap_ci, span_found, token_coverage
from .datasets import shared_data

STRATEGIES = ["topk", "sentence_window", "parent_doc", "thread_windows", "walk", "nested"]


def _runs_text(engine, ids: list[ChunkId]) -> str:
    ids = sorted(set(ids))
    runs: list[list[ChunkId]] = []
    for c in ids:
        if runs and runs[-1][-1].serial == c.serial and runs[-1][-1].position + 1 == c.position:
            runs[-1].append(c)
        else:
            runs.append([c])
    return "\n\n".join(join_thread([engine.chunk(c) for c in r]) for r in runs)


def build_context(engine, strategy: str, query: str, k: int, doc_id: str | None, hits) -> str:
    if strategy == "topk":
        return "\n\n".join(h.text for h in hits[:k])
    if strategy == "sentence_window":
        ids = []
        for h in hits[:k]:
            c = ChunkId.parse(h.chunk_id)
            n = engine.document(c.serial).chunk_count
            ids.extend(x for x in (c.neighbour(-1, n), c, c.neighbour(1, n)) if x is not None)
        return _runs_text(engine, ids)
    if strategy == "parent_doc":
        ids = []
        for h in hits[:k]:
            c = ChunkId.parse(h.chunk_id)
            for a, b in parent_blocks(engine.thread(h.doc_id).chunks, PARENT_WORDS):
                if a <= c.position <= b:
                    ids.extend(ChunkId(c.serial, p) for p in range(a, b + 1))
        return _runs_text(engine, ids)
    if strategy == "thread_windows":
        res = engine.windows.fetch([h.chunk_id for h in hits[:k]], token_budget=10**6, query=query)
        return "\n\n".join(w.rendered for w in res.windows)
    if strategy == "walk":
        from thread_rag.agent.answer import render_sources
        from thread_rag.agent.loop import Agent

        qvec = engine.query_embedder.embed_queries([query])[0]
        return render_sources(Agent(engine).read("walk", query, hits, qvec, doc_id, k=k))
    if strategy == "nested":
        res = engine.nested.retrieve(query, limit=k, doc_id=doc_id)
        return "\n\n".join(h.text for h in res.hits)
    raise ValueError(strategy)


def run_context(settings, ds, engine, keymap, strategies: list[str], k: int = 5) -> dict:
    """Build each strategy's context for every question of ``ds`` and measure it."""
    count = _token_counter(settings)
    rows = {s: {"coverage": [], "span": [], "words": [], "tokens": [], "ms": []} for s in strategies}
    for q, doc_id in zip(ds.queries, ds.scope_doc_ids(keymap)):
        hits = engine.retriever.search(q.text, doc_id=doc_id, k=k).hits
        gold = q.spans[0] if q.spans else q.answers[0]
        for s in strategies:
            t = time.perf_counter()
            ctx = build_context(engine, s, q.text, k, doc_id, hits)
            rows[s]["ms"].append((time.perf_counter() - t) * 1000)
            rows[s]["coverage"].append(token_coverage(ctx, gold))
            rows[s]["span"].append(span_found(ctx, gold))
            rows[s]["words"].append(len(ctx.split()))
            rows[s]["tokens"].append(count(ctx))
    out = {"dataset": ds.name, "queries": len(ds.queries), "k": k, "search_scope": ds.search_scope,
           "strategies": {}, "token_counter": count.__doc__}
    for s, r in rows.items():
        out["strategies"][s] = {"coverage": round(float(np.mean(r["coverage"])), 4),
                                "coverage_ci95": [round(x, 4) for x in bootstrap_ci(r["coverage"])],
                                "span_found": round(float(np.mean(r["span"])), 4),
                                "words": round(float(np.mean(r["words"])), 1),
                                "tokens": round(float(np.mean(r["tokens"])), 1),
                                "build_ms_p50": round(float(np.median(r["ms"])), 2)}
    return out


def run_context_bench(settings, args) -> dict:
    from .corpus import open_corpus_engine
    from .datasets import load_dataset
    from .retrieval import machine

    ds = load_dataset(args.dataset or "leval-legal", shared_data(), limit=args.limit, seed=args.seed)
    engine, keymap, _ = open_corpus_engine(settings, ds)
    strategies = args.configs.split(",") if args.configs else STRATEGIES
    out = run_context(settings, ds, engine, keymap, strategies, k=args.k or 5)
    out["machine"] = machine()
    return out


def _token_counter(settings):
    try:
        from llama_cpp import Llama

        from thread_rag.llm.model_files import model_path, quiet_llama_cpp

        quiet_llama_cpp()  # as every load: no descriptor redirected
        vocab = Llama(model_path=str(model_path(settings, settings.MAIN_MODEL)), vocab_only=True, verbose=False)

        def count(text: str) -> int:
            """Qwen2.5 tokenizer (llama.cpp vocab)"""
            return len(vocab.tokenize(text.encode("utf-8"), add_bos=False))
    except Exception:  # noqa: BLE001 - fall back to the embedder's tokenizer, say so

        from thread_rag.embedder import TokenCounter, packaged_minilm_path

        tc = TokenCounter(packaged_minilm_path())

        def count(text: str) -> int:
            """MiniLM word-piece tokenizer (Qwen tokenizer unavailable)"""
            return tc.count([text])[0]
    return count
