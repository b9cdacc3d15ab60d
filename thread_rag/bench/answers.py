"""``thread-rag bench answers``: the embedded LLM answers from each strategy's context, and the full agent.

Fixed pipelines: the same questions, the same retriever (default pipeline), ``k`` entry chunks; the
context comes from ``bench.context.build_context`` and one plain prompt asks for a short answer or
``NOT IN DOCUMENTS``. ``agent``: the product's tool-calling agent (``Agent.ask``) on the same question,
scoped to the gold document where the data set is single-document QA (as the fixed pipelines are).
Metrics: SQuAD token F1 / EM against the gold answers (citation brackets removed first), the F1 >= 0.7
"correct" and F1 < 0.6 "wrong" rates, refusals, tokens in/out (the LLM's own counts), seconds.
Paired bootstrap intervals are given for every strategy's F1 minus the ``topk`` F1 on the same questions.
Decoding is greedy, so when two strategies build byte-identical contexts for a question the first answer
(and its measured seconds) is reused for the second, marked ``same_context_as`` in the row.
"""
from __future__ import annotations

import re
import sys
import time

import numpy as np
from langchain_core.messages import HumanMessage

from .metrics import bootstrap_ci, exact_match, token_f1

ANSWER_PROMPT = ("Answer the question from the context only, in one or two sentences, quoting the document's words "
                 "where possible. If the context does not contain the answer, reply exactly: NOT IN DOCUMENTS\n\n"
                 "Context:\n{context}\n\nQuestion: {question}")
FIXED_TOKENS_OUT = 120   # answer length cap for the fixed pipelines
AGENT_TOKENS_OUT = 160   # the agent answers with citations and sometimes steps: a little more room
CITATION_RE = re.compile(r"\[[^\]]*\bDOC\d+_\d+[^\]]*\]")


def score(text: str, refused: bool, answers: list[str]) -> tuple[float, float]:
    """(token F1, exact match) of an answer against the best-matching gold answer; refusals score 0."""
    if refused:
        return 0.0, 0.0
    clean = CITATION_RE.sub(" ", text)
    return max(token_f1(clean, g) for g in answers), max(exact_match(clean, g) for g in answers)


def summarise(rows: list[dict], base: list[dict] | None = None) -> dict:
    f1 = [r["f1"] for r in rows]
    out = {"questions": len(rows),
           "f1": round(float(np.mean(f1)), 4), "f1_ci95": [round(x, 4) for x in bootstrap_ci(f1)],
           "em": round(float(np.mean([r["em"] for r in rows])), 4),
           "correct_rate_f1>=0.7": round(float(np.mean([x >= 0.7 for x in f1])), 4),
           "wrong_rate_f1<0.6": round(float(np.mean([x < 0.6 and not r["refused"] for x, r in zip(f1, rows)])), 4),
           "refusal_rate": round(float(np.mean([r["refused"] for r in rows])), 4),
           "tokens_in": round(float(np.mean([r["tokens_in"] for r in rows])), 1),
           "tokens_out": round(float(np.mean([r["tokens_out"] for r in rows])), 1),
           "seconds_per_question": round(float(np.mean([r["seconds"] for r in rows])), 2)}
    if base is not None:
        by_q = {r["qid"]: r["f1"] for r in base}
        diff = [r["f1"] - by_q[r["qid"]] for r in rows if r["qid"] in by_q]
        out["f1_minus_topk"] = round(float(np.mean(diff)), 4) if diff else None
        out["f1_minus_topk_ci95"] = [round(x, 4) for x in bootstrap_ci(diff)] if diff else None
        out["topk_f1_same_questions"] = round(float(np.mean([by_q[r["qid"]] for r in rows if r["qid"] in by_q])), 4)
    return out


def run_answers(settings, ds, engine, keymap, strategies: list[str], k: int = 3, agent_limit: int | None = None,
                progress=None, model=None) -> dict:
    """Answer every question of ``ds`` with each strategy; ``agent`` only on the first ``agent_limit``.
    ``model``: a chat model to use instead of the configured one (tests pass a scripted fake)."""
    from ..agent.loop import NOT_IN_DOCS, Agent
    from ..llm.backends import describe, make_chat_model
    from .context import build_context

    fixed = [s for s in strategies if s != "agent"]
    model = model or make_chat_model(settings.replace(MAX_ANSWER_TOKENS=FIXED_TOKENS_OUT))
    agent, n_agent = None, 0
    if "agent" in strategies:
        agent = Agent(engine, chat_model=model)
        agent.settings = engine.settings.replace(MAX_ANSWER_TOKENS=AGENT_TOKENS_OUT)
        n_agent = len(ds.queries) if agent_limit is None else min(agent_limit, len(ds.queries))
    res: dict[str, list] = {s: [] for s in strategies}
    total, done = len(ds.queries) * len(fixed) + n_agent, 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(f"answers {ds.name}", done, total)

    for i, (q, doc_id) in enumerate(zip(ds.queries, ds.scope_doc_ids(keymap))):
        hits = engine.retriever.search(q.text, doc_id=doc_id, k=k).hits
        answered: dict[str, dict] = {}  # context -> row: greedy decoding, so the same prompt gives the same answer
        for s in fixed:
            ctx = build_context(engine, s, q.text, k, doc_id, hits)
            if ctx in answered:  # e.g. the walk found nothing to walk to: its context equals thread_windows'
                res[s].append({**answered[ctx], "same_context_as": answered[ctx]["strategy"]})
                tick()
                continue
            t = time.perf_counter()
            out = model.invoke([HumanMessage(ANSWER_PROMPT.format(context=ctx, question=q.text))],
                               max_tokens=FIXED_TOKENS_OUT)
            sec = time.perf_counter() - t
            text = out.content.strip()
            refused = NOT_IN_DOCS in text.upper()
            f1, em = score(text, refused, q.answers)
            usage = out.usage_metadata or {}
            row = {"qid": q.qid, "strategy": s, "f1": f1, "em": em, "refused": refused, "seconds": round(sec, 2),
                   "tokens_in": usage.get("input_tokens", 0), "tokens_out": usage.get("output_tokens", 0),
                   "answer": text[:300]}
            res[s].append(row)
            answered[ctx] = row
            tick()
        if i < n_agent:
            agent.clear()
            t = time.perf_counter()
            a = agent.ask(q.text, doc_id=doc_id)
            sec = time.perf_counter() - t
            f1, em = score(a.answer, a.refused, q.answers)
            res["agent"].append({"qid": q.qid, "f1": f1, "em": em, "refused": a.refused, "seconds": round(sec, 2),
                                 "tokens_in": a.tokens["in"], "tokens_out": a.tokens["out"],
                                 "steps": [t_["tool"] for t_ in a.tool_trace], "fallback": a.fallback_used,
                                 "answer": a.answer[:300]})
            tick()
    base = res.get("topk")
    return {"dataset": ds.name, "questions": len(ds.queries), "k": k, "backend": describe(model),
            "search_scope": ds.search_scope,
            "answer_tokens_max": FIXED_TOKENS_OUT,
            "agent_settings": ({n: getattr(agent.settings, n) for n in ("MAX_STEPS", "RELEVANCE_MIN", "SEARCH_K",
                                                                       "MAX_ANSWER_TOKENS")} if agent else None),
            "strategies": {s: summarise(rows, base if s != "topk" and base else None) for s, rows in res.items() if rows},
            "rows": res}


def run_answers_bench(settings, args) -> dict:
    from .corpus import open_corpus_engine
    from .datasets import load_dataset
    from .retrieval import machine

    ds = load_dataset(args.dataset or "aws-docs-qa", settings.shared_data, limit=args.limit or 20, seed=args.seed)
    engine, keymap, _ = open_corpus_engine(settings, ds)
    strategies = args.configs.split(",") if args.configs else ["topk", "thread_windows"]
    out = run_answers(settings, ds, engine, keymap, strategies, k=args.k or 3, agent_limit=args.agent_limit)
    out["machine"] = machine()
    out["command"] = "thread-rag " + " ".join(sys.argv[1:])
    return out
