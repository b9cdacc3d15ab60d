"""``thread-rag bench retrieval``: dense / BM25 / RRF / +MaxSim / +rerank side by side.

Documents are ranked by their best chunk (chunk hits deduplicated by document, in order).
Metrics: nDCG@10, Recall@1/5/10, MRR@10 (+ all-supporting@10 for musique), p50/p95 latency.
"""
from __future__ import annotations

from dataclasses import asdict
import time

import numpy as np

from thread_rag.retrieve.label import (HOP_SETTINGS, SEARCH_SETTINGS, STEPS_SETTINGS, default_spec,  # noqa: F401 - the product's
                              rerank_truncation as _truncation, search_settings)
from thread_rag.retrieve.pipeline import NEVER_EXIT, PIPELINES
from thread_rag.run_record import machine  # noqa: F401 - the product's; the benches import it from here
from thread_rag.settings import RERANK_CONTEXTS
from .metrics import all_found_at_k, bootstrap_ci, mrr_at_k, ndcg_at_k, percentile, recall_at_k


def doc_ranking(hits, keymap: dict) -> list[str]:
    out, seen = [], set()
    for h in hits:
        key = keymap.get(h.doc_id)
        if key is not None and key not in seen:
            seen.add(key)
            out.append(key)
    return out


def parse_config(spec: str) -> tuple[str, dict]:
    """``pipeline[:kN][:mX][:wX][:pP][:tN][:fX][:cC][:hN][:sN][:nN][:gX][:xN][:dN]``: a named pipeline, optionally with
    STAGE3_K=N, EARLY_EXIT_MARGIN=X (``m-`` = never exit early), STAGE3_WEIGHT=X, STAGE3_PRIOR=P, RERANK_MAX_TOKENS=N,
    STAGE3_LEXICAL_FLOOR=X, RERANK_CONTEXT=C, HOP_K=N (``h0`` = no second hop), HOP_RESCORE=N, HOP_PICKS=N,
    HOP_MIN_SCORE=X, HOP_MAX_TOKENS=N, HOP_DEPTH=N (named only when not 1) and QUESTION_STEPS=N (``qN``, named only
    when on: the LLM's lookups), e.g. ``three_stage:k20:m0.15``, ``stage1_3:k10:w0.7:pbm25`` or
    ``three_stage:k15:m-:t192:f0.1:cheading:h20:s4:n2:g0.9:x384``."""
    from thread_rag.errors import ThreadRagError

    name, *opts = spec.split(":")
    if name not in PIPELINES:
        raise ThreadRagError(f"unknown configuration {spec!r} (pipelines: {', '.join(PIPELINES)})")
    over: dict = {}
    for o in opts:
        try:
            if o.startswith("k"):
                over["STAGE3_K"] = int(o[1:])
            elif o == "m-":
                over["EARLY_EXIT_MARGIN"] = 1e9
            elif o.startswith("m"):
                over["EARLY_EXIT_MARGIN"] = float(o[1:])
            elif o.startswith("w") and 0 <= float(o[1:]) <= 1:
                over["STAGE3_WEIGHT"] = float(o[1:])
            elif o in ("pbm25", "pstage2"):
                over["STAGE3_PRIOR"] = o[1:]
            elif o.startswith("t") and 16 <= int(o[1:]) <= 512:
                over["RERANK_MAX_TOKENS"] = int(o[1:])
            elif o.startswith("f") and 0 <= float(o[1:]) <= 1:
                over["STAGE3_LEXICAL_FLOOR"] = float(o[1:])
            elif o[:1] == "c" and o[1:] in RERANK_CONTEXTS:
                over["RERANK_CONTEXT"] = o[1:]
            elif o.startswith("h") and int(o[1:]) >= 0:
                over["HOP_K"] = int(o[1:])
            elif o.startswith("s") and int(o[1:]) >= 0:
                over["HOP_RESCORE"] = int(o[1:])
            elif o.startswith("n") and int(o[1:]) >= 1:
                over["HOP_PICKS"] = int(o[1:])
            elif o.startswith("g") and 0 <= float(o[1:]) <= 1:
                over["HOP_MIN_SCORE"] = float(o[1:])
            elif o.startswith("x") and 16 <= int(o[1:]) <= 512:
                over["HOP_MAX_TOKENS"] = int(o[1:])
            elif o.startswith("d") and 1 <= int(o[1:]) <= 3:
                over["HOP_DEPTH"] = int(o[1:])
            elif o.startswith("q") and (int(o[1:]) == 0 or 2 <= int(o[1:]) <= 6):
                over["QUESTION_STEPS"] = int(o[1:])
            else:
                raise ValueError
        except ValueError:
            raise ThreadRagError(f"configuration {spec!r}: options are kN (STAGE3_K), mX or m- "
                                 f"(EARLY_EXIT_MARGIN), wX (STAGE3_WEIGHT, 0..1), pbm25 or pstage2 "
                                 f"(STAGE3_PRIOR), tN (RERANK_MAX_TOKENS, 16..512), fX (STAGE3_LEXICAL_FLOOR, 0..1), "
                                 f"c{'/c'.join(RERANK_CONTEXTS)} (RERANK_CONTEXT), hN (HOP_K, 0 = off), sN "
                                 f"(HOP_RESCORE), nN (HOP_PICKS, >= 1), gX (HOP_MIN_SCORE, 0..1), xN "
                                 f"(HOP_MAX_TOKENS, 16..512), dN (HOP_DEPTH, 1..3) and qN (QUESTION_STEPS, 0 = off or 2..6)") from None
    return name, over


def same_config(a: str, b: str, settings) -> bool:
    """Whether two configuration specs run the same search under ``settings`` (``three_stage`` with the
    default STAGE3_K and margin is ``three_stage:k15:m-``). The truncation counts only for the packaged
    cross-encoder, the only reranker ``RERANK_MAX_TOKENS`` cuts."""
    def effective(spec):
        name, over = parse_config(spec)
        s = settings.replace(**over)
        return (name, s.STAGE3_K, min(s.EARLY_EXIT_MARGIN, NEVER_EXIT), s.STAGE3_WEIGHT,
                s.STAGE3_PRIOR if s.STAGE3_WEIGHT < 1 else None,
                *((s.RERANK_CONTEXT, s.STAGE3_LEXICAL_FLOOR, _truncation(s)) if PIPELINES[name].rerank
                  else (None, None, None)),
                *(tuple(getattr(s, n) for n in HOP_SETTINGS) if PIPELINES[name].rerank and s.hop_runs()
                  else (0,) + (None,) * (len(HOP_SETTINGS) - 1)),
                s.QUESTION_STEPS, s.STATEMENTS)

    return effective(a) == effective(b)


# settings older result files did not record, at the value they had then
# (the second hop did not exist: HOP_K 0, and its other settings, which do nothing then, at their first defaults;
# HOP_DEPTH came later still: one link; QUESTION_STEPS later again: off)
RECORDED_LATER = {"RERANK_CONTEXT": "text", "STAGE3_LEXICAL_FLOOR": 0.0, "RERANK_MAX_TOKENS": 256, "STAGE3_K": 20,
                  "HOP_K": 0, "HOP_RESCORE": 4, "HOP_PICKS": 2, "HOP_MIN_SCORE": 0.9, "HOP_MAX_TOKENS": 384,
                  "HOP_DEPTH": 1, "QUESTION_STEPS": 0, "STATEMENTS": False}


def recorded_settings(x: dict):
    """The settings a ``bench retrieval`` result file was run with (defaults for what it did not record)."""
    import dataclasses

    from thread_rag.settings import Settings

    known = {f.name for f in dataclasses.fields(Settings)}
    rec = {**RECORDED_LATER, **(x.get("settings") or {})}
    return Settings().replace(**{k: v for k, v in rec.items() if k in known})


def label_of(x: dict, spec: str) -> str | None:
    """The row of result file ``x`` that ran configuration ``spec`` (its labels mean what they meant under the
    settings the file was run with), or None."""
    s = recorded_settings(x)
    return next((c for c in x.get("configs", {}) if same_config(c, spec, s)), None)


def run_retrieval(engine, keymap: dict, ds, configs: list[str], chunk_k: int = 50, chat_model=None) -> dict:
    """One row per configuration; ``per_query`` keeps each question's scores for paired comparisons. A configuration
    with question steps (``qN``) calls ``chat_model`` (made from the settings when None) and keeps its steps."""
    retriever = engine.retriever
    base = retriever.settings
    retriever.index  # build/load outside the timed loop
    for d in engine.documents():  # load every thread once: timings then measure retrieval, not first reads
        engine.thread(d.serial)
    retriever.search("warm up", k=5, pipeline="stage1_2")
    reranker, memos = retriever.reranker, {}
    results, per_query, steps_of = {}, {}, {}
    try:
        for spec in configs:
            name, over = parse_config(spec)
            retriever.settings = s = base.replace(**over)
            memo = None
            if reranker is not None:
                memo = retriever._reranker = _memo_for(memos, reranker, base, s)
                if PIPELINES[name].rerank:
                    memo.inner.score("warm up", ["warm up"])  # load the model outside the timed loop
            steps = None
            if s.QUESTION_STEPS:
                from thread_rag.agent.steps import QuestionSteps
                from thread_rag.llm.backends import limit, make_chat_model

                if chat_model is None:
                    chat_model = make_chat_model(base)
                    chat_model.invoke("warm up", **limit(chat_model, 1))  # load the model outside the timed loop
                steps = QuestionSteps(chat_model, lambda text, k, _n=name: retriever.search(text, k=k, pipeline=_n).hits,
                                      s.QUESTION_STEPS)
                steps_of[spec] = []
            results[spec], per_query[spec] = _run_config(retriever, keymap, ds, name, chunk_k, memo, steps,
                                                         steps_of.get(spec))
    finally:
        retriever.settings = base
        if reranker is not None:
            retriever._reranker = reranker
    out = {"configs": results, "per_query": per_query, "qids": [q.qid for q in ds.queries]}
    if steps_of:
        from thread_rag.llm.backends import describe

        out["steps"] = steps_of  # per configuration, each question's lookups, answers and added search
        out["chat_model"] = describe(chat_model)
    return out


def _memo_for(memos: dict, reranker, base, s) -> "ScoreMemo":
    """The score memo of the reranker ``s`` runs: the retriever's own, or the packaged cross-encoder again
    truncated to another ``RERANK_MAX_TOKENS`` (its scores are other scores, so it has its own memo)."""
    from thread_rag.retrieve.rerank import make_reranker

    key = _truncation(s) or base.RERANK_MAX_TOKENS
    if key not in memos:
        memos[key] = ScoreMemo(reranker if key == base.RERANK_MAX_TOKENS else
                               make_reranker(s.RERANKER, threads=s.TORCH_THREADS, max_tokens=key))
    return memos[key]


class ScoreMemo:
    """Stage-3 scores remembered per (query, passage, truncation) within one benchmark run, so configurations that differ
    only in what happens with those scores (``STAGE3_WEIGHT``, ``STAGE3_LEXICAL_FLOOR``, ``STAGE3_K`` within the
    pool) run the reranker once per pair; one memo per truncation (``_memo_for``). The packaged
    cross-encoder scores each pair alone, so a remembered score is the score. A configuration that was served
    from the memo reports no latency for its quality loop (None); its k=5 latency loop runs without the memo."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.scores: dict = {}
        self.served = 0
        self.enabled = True

    def score(self, query: str, passages: list[str], max_tokens: int | None = None) -> np.ndarray:
        if not self.enabled:
            return self.inner.score(query, passages, max_tokens=max_tokens)
        unique = list(dict.fromkeys(passages))  # a pool can hold the same text twice (duplicate chunks)
        new = [p for p in unique if (query, p, max_tokens) not in self.scores]
        if new:
            got = self.inner.score(query, new, max_tokens=max_tokens)
            self.scores.update({(query, p, max_tokens): float(v) for p, v in zip(new, got)})
        self.served += len(unique) - len(new)
        return np.asarray([self.scores[(query, p, max_tokens)] for p in passages], np.float32)


def _run_config(retriever, keymap: dict, ds, name: str, chunk_k: int, memo: ScoreMemo | None = None, steps=None,
                kept: list | None = None) -> tuple[dict, dict]:
    per = {"ndcg@10": [], "recall@1": [], "recall@5": [], "recall@10": [], "mrr@10": [], "all@10": []}
    lat = []
    exits = 0
    served = memo.served if memo else 0
    for q in ds.queries:
        t = time.perf_counter()
        res = retriever.search(q.text, k=chunk_k, pipeline=name)
        hits = res.hits
        if steps is not None:
            hits, trace = steps.search(q.text, chunk_k, hits)
            kept.append({"qid": q.qid, **asdict(trace)})
        lat.append((time.perf_counter() - t) * 1000)
        exits += res.early_exit
        ranked = doc_ranking(hits, keymap)
        per["ndcg@10"].append(ndcg_at_k(ranked, q.gold_docs, 10))
        for kk in (1, 5, 10):
            per[f"recall@{kk}"].append(recall_at_k(ranked, q.gold_docs, kk))
        per["mrr@10"].append(mrr_at_k(ranked, q.gold_docs, 10))
        per["all@10"].append(all_found_at_k(ranked, q.gold_docs, 10))
    row = {m: round(sum(v) / len(v), 4) for m, v in per.items()}
    row["ndcg@10_ci95"] = [round(x, 4) for x in bootstrap_ci(per["ndcg@10"])]
    row["early_exit_rate"] = round(exits / len(ds.queries), 3)
    if memo is not None and memo.served > served:  # some stage-3 scores came from an earlier configuration
        row.update({"p50_ms": None, "p95_ms": None, "latency": "k=50 loop partly served from the stage-3 memo"})
    else:
        row["p50_ms"] = round(percentile(lat, 50), 2)
        row["p95_ms"] = round(percentile(lat, 95), 2)
    lat5 = []
    if memo is not None:
        memo.enabled = False
    try:
        for q in ds.queries[:50 if steps is None else 20]:  # latency at the agent's k=5 (LLM steps: 20 questions)
            t = time.perf_counter()
            res = retriever.search(q.text, k=5, pipeline=name)
            if steps is not None:
                steps.search(q.text, 5, res.hits)
            lat5.append((time.perf_counter() - t) * 1000)
    finally:
        if memo is not None:
            memo.enabled = True
    row["k5_questions"] = len(lat5)
    row["k5_p50_ms"] = round(percentile(lat5, 50), 2)
    row["k5_p95_ms"] = round(percentile(lat5, 95), 2)
    return row, {m: [round(v, 4) for v in per[m]] for m in ("ndcg@10", "recall@5", "mrr@10", "all@10")}


def paired(per_query: dict, a: str, b: str, metric: str = "ndcg@10") -> tuple[float, list]:
    """Mean of ``a`` minus ``b`` over the same questions, with a bootstrap 95% CI of the paired differences."""
    d = [x - y for x, y in zip(per_query[a][metric], per_query[b][metric])]
    return round(sum(d) / len(d), 4), [round(x, 4) for x in bootstrap_ci(d)]


