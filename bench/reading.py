"""``thread-rag bench reading``: what each answering strategy would put in front of the model, without the model.

The cheap probe behind choosing a reading: per question, the product's own search and reading
(``Agent.read`` with the answers benchmark's shared settings: k entry chunks, the source budget counted in the
embedded model's tokens), then the gold evidence's token coverage of the sources (the set's evidence span,
else its first answer), whether the span is found verbatim, and the source tokens. No LLM call is made (the
model is loaded only for its tokenizer), so a dev half can be probed in minutes; the answers benchmark then
judges the chosen reading on the test half. Strategies as in ``bench answers`` (``walk``, ``sentence_window``,
``walk:WALK_BACK=1`` ...; not ``decide``, which needs the model). Every question is read, also those
the answer path's relevance floor would refuse before reading.
"""
from __future__ import annotations

import numpy as np

from .answers import StrategyError, bench_settings, parse_strategy, shared_settings
from .baselines import BASELINES
from .metrics import bootstrap_ci, paired_rows, span_found, token_coverage
from . import command_line

K = 3


def run_reading(settings, ds, engine, keymap, strategies: list[str], k: int = K, model=None) -> dict:
    from thread_rag.agent.loop import Agent
    from thread_rag.llm.backends import make_chat_model

    specs = {s: parse_strategy(s) for s in strategies}
    needs_model = [s for s, (reader, _) in specs.items() if reader == "decide"]
    if needs_model:
        raise StrategyError(f"{', '.join(needs_model)}: these strategies need the model; use bench answers")
    shared = bench_settings(engine.settings, k)
    engine.settings = shared
    model = model or make_chat_model(shared)  # its tokenizer counts the budget, as in the answers benchmark
    agents = {}
    for s, (_, changes) in specs.items():
        agents[s] = Agent(engine, chat_model=model, readers=BASELINES)
        agents[s].settings = shared.replace(**changes)
    rows = {s: [] for s in strategies}
    for q, doc_id in zip(ds.queries, ds.scope_doc_ids(keymap)):
        hits = engine.retriever.search(q.text, doc_id=doc_id, k=k).hits
        qvec = engine.query_embedder.embed_queries([q.text])[0]
        gold = q.spans[0] if q.spans else (q.answers or [""])[0]
        for s, (reader, _) in specs.items():
            sources = agents[s].read(reader, q.text, hits, qvec, doc_id)
            text = "\n\n".join(x.text for x in sources)
            rows[s].append({"qid": q.qid, "coverage": token_coverage(text, gold), "span": span_found(text, gold),
                            "tokens": sum(x.tokens for x in sources), "sources": len(sources)})
    out = {"dataset": ds.name, "questions": len(ds.queries), "split": ds.split, "k": k,
           "budget": shared.READ_BUDGET, "shared_settings": shared_settings(shared), "strategies": {}}
    base = rows.get("walk")
    for s, rs in rows.items():
        cov = [r["coverage"] for r in rs]
        row = {"coverage": round(float(np.mean(cov)), 4), "coverage_ci95": [round(x, 4) for x in bootstrap_ci(cov)],
               "span_found": round(float(np.mean([r["span"] for r in rs])), 4),
               "tokens": round(float(np.mean([r["tokens"] for r in rs])), 1),
               "sources": round(float(np.mean([r["sources"] for r in rs])), 2)}
        if base and s != "walk":
            row["coverage_minus_walk"], row["coverage_minus_walk_ci95"], _ = paired_rows(rs, rows["walk"], "coverage")
        out["strategies"][s] = row
    out["rows"] = rows
    return out


def run_reading_bench(settings, args) -> dict:
    from .answers import open_sample
    from .retrieval import machine

    ds, engine, keymap = open_sample(settings, args, "dev", 40)
    strategies = args.configs.split(",") if args.configs else ["topk", "walk", "sentence_window", "parent_doc"]
    out = run_reading(settings, ds, engine, keymap, strategies, k=args.k or K)
    out["machine"] = machine()
    out["command"] = command_line()
    return out


def reading_table(x: dict) -> str:
    lines = [f"*{x['dataset']}: {x['questions']} questions ({x['split']} split), k={x['k']}, source budget "
             f"{x['budget']} LLM tokens; no LLM call.*", "",
             "| strategy | gold coverage of the sources (95% CI) | minus walk, paired (95% CI) | span found | "
             "source tokens | sources |", "|---|---|---|---|---|---|"]
    for name, r in x["strategies"].items():
        lo, hi = r["coverage_ci95"]
        d = r.get("coverage_minus_walk")
        dl = (f"{d:+.3f} ({r['coverage_minus_walk_ci95'][0]:+.3f} to {r['coverage_minus_walk_ci95'][1]:+.3f})"
              if d is not None else "-")
        lines.append(f"| {name} | {r['coverage']:.3f} ({lo:.3f} to {hi:.3f}) | {dl} | {r['span_found']:.3f} | "
                     f"{r['tokens']:.0f} | {r['sources']:.2f} |")
    return "\n".join(lines)
