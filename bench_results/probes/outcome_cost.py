"""What the answered / partly / not answered decision costs on top of the quote, in a running process (models
loaded, as in a chat): every hand-written question of ``bench outcome --dataset docs`` and ``debian`` asked in quote
mode at today's floors, its ``timings`` read: ``quote_s`` (question to quote: search, walk, quote) and ``outcome_s``
(the decision's own cost, measured on the same question in the same run: one more cross-encoder pass per part for a
question of several parts). Issue 59's goal: the outcome costs at most 1 s more than the quote, on 2 cores (AVX2).

    THREAD_RAG_SHARED_DATA=../shared/data python bench_results/probes/outcome_cost.py > bench_results/outcome-cost.json
"""
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/
import json
import sys

import numpy as np

from thread_rag.agent.loop import quote_answer
from thread_rag.agent.outcome import parts
from bench.outcome import _ask, _hand_written
from bench.retrieval import machine
from thread_rag.settings import load_settings


def summary(xs: list) -> dict:
    return {"n": len(xs), "median_s": round(float(np.median(xs)), 3), "p90_s": round(float(np.percentile(xs, 90)), 3),
            "max_s": round(max(xs), 3)} if xs else {"n": 0}


settings = load_settings()
out = {"command": "THREAD_RAG_SHARED_DATA=../shared/data python bench_results/probes/outcome_cost.py",
       "machine": machine(), "corpora": {}}
for corpus in ("docs", "debian"):
    engine, groups = _hand_written(settings, corpus)
    quote_answer(engine, "how do I start?")  # untimed: models loaded, as in a running chat
    rows = []
    for group, items in groups.items():
        for question, doc_id, hidden, *_ in items:
            r = _ask(engine, question, doc_id, hidden)
            rows.append({"group": group, "question": question, "parts": len(parts(question)),
                         "quote_s": r["quote_s"], "outcome_s": r["outcome_s"], "kind": r["kind"]})
    engine.close()
    one = [r for r in rows if r["parts"] == 1]
    several = [r for r in rows if r["parts"] > 1]
    out["corpora"][corpus] = {
        "questions": len(rows),
        "quote": summary([r["quote_s"] for r in rows]),
        "outcome_one_part": summary([r["outcome_s"] for r in one]),
        "outcome_several_parts": summary([r["outcome_s"] for r in several]),
        "outcome_over_1s": sum(1 for r in rows if r["outcome_s"] > 1.0),
        "rows": rows}
everything = [r["outcome_s"] for c in out["corpora"].values() for r in c["rows"]]
out["outcome_all"] = summary(everything)
out["outcome_over_1s"] = sum(1 for x in everything if x > 1.0)
json.dump(out, sys.stdout, indent=1)
