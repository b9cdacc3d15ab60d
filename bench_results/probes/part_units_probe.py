"""Probe (issue 59): a part of a question scored over the ``PART_UNITS`` units the whole question scored best, against
scored over every unit read, in one run: every hand-written question of ``bench outcome --dataset docs`` and
``debian`` with more than one part, asked in quote mode at today's floors with each arm in turn (the order swapped
question by question), models loaded as in a running chat. Per arm: the decision's own cost (``outcome_s``), the
outcome, and the partly groups' missing half named; and how many questions got another outcome.

    THREAD_RAG_SHARED_DATA=../shared/data python bench_results/probes/part_units_probe.py > bench_results/part-units.json
"""
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the lab, bench/

import thread_rag.agent.loop as loop
from thread_rag.agent.loop import quote_answer
from thread_rag.agent.outcome import PART_UNITS, parts
from bench.outcome import _ask, _hand_written, _partly_right
from bench.retrieval import machine
from thread_rag.settings import load_settings

ARMS = {"all": None, f"top{PART_UNITS}": PART_UNITS}
settings = load_settings()
out = {"command": "THREAD_RAG_SHARED_DATA=../shared/data python bench_results/probes/part_units_probe.py",
       "machine": machine(), "part_units": PART_UNITS, "corpora": {}}
for corpus in ("docs", "debian"):
    engine, groups = _hand_written(settings, corpus)
    quote_answer(engine, "how do I start and how do I stop?")  # untimed: models loaded, as in a running chat
    rows = []
    for group, items in groups.items():
        for question, doc_id, hidden, *keywords in items:
            if len(parts(question)) < 2:
                continue
            row = {"group": group, "question": question}
            order = list(ARMS) if len(rows) % 2 == 0 else list(ARMS)[::-1]
            for arm in order:
                loop.PART_UNITS = ARMS[arm]
                r = _ask(engine, question, doc_id, hidden)
                row[arm] = {k: r[k] for k in ("kind", "missing", "outcome_s", "quote_s")}
                if keywords:
                    row[arm]["named"] = _partly_right(r, keywords[0])
            rows.append(row)
    loop.PART_UNITS = PART_UNITS
    summary = {}
    for arm in ARMS:
        s = [r[arm]["outcome_s"] for r in rows]
        summary[arm] = {"outcome_median_s": round(float(np.median(s)), 3), "outcome_max_s": round(max(s), 3),
                        "quote_median_s": round(float(np.median([r[arm]["quote_s"] for r in rows])), 3),
                        "named": {g: sum(r[arm].get("named", False) for r in rows if r["group"] == g)
                                  for g in sorted({r["group"] for r in rows if "named" in r[arm]})},
                        "kinds": {k: sum(r[arm]["kind"] == k for r in rows)
                                  for k in ("answered", "partly", "not_answered")}}
    a, b = list(ARMS)
    summary["questions"] = len(rows)
    summary["same_outcome"] = sum(r[a]["kind"] == r[b]["kind"] and r[a]["missing"] == r[b]["missing"] for r in rows)
    out["corpora"][corpus] = {"summary": summary, "rows": rows}
    engine.close()
print(json.dumps(out, indent=1))
