"""The second held-out set of two-part questions (``partly-heldout-2.json``, written without the code and committed
before this ran) judged by today's answer path (floors, quote mode) twice in one run: with the question's parts cut
as shipped, and with the joints before "also"/"plus" (``agent.outcome.JOINT`` of commit 01fc2f9) put back.

    python bench_results/probes/partly_joints.py > bench_results/partly-heldout-2.json
"""
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/
import json
import re
import sys

import thread_rag.agent.outcome as outcome
from bench.outcome import _hand_written, _partly_right, judge
from bench.retrieval import machine
from thread_rag.settings import load_settings

BEFORE = re.compile(rf"(?:,?\s+and\s+(?:then\s+|also\s+)?|;\s*|,\s+then\s+|\?\s+(?:and\s+)?)"
                    rf"(?=(?:{outcome.ASKING}|{outcome.ACTING})\b)", re.I)
settings = load_settings()
out = {"command": "python bench_results/probes/partly_joints.py", "machine": machine(), "rates": {}, "rows": {}}
shipped = outcome.JOINT
for corpus in ("docs", "debian"):
    engine, groups = _hand_written(settings, corpus)
    for name, joint in (("shipped", shipped), ("before", BEFORE)):
        outcome.JOINT = joint
        rows = judge(engine, {"partly_heldout_2": groups["partly_heldout_2"]}, None)["floors"]["rows"]["partly_heldout_2"]
        named = sum(_partly_right(r, r.get("keywords", [])) for r in rows)
        out["rates"].setdefault(corpus, {})[name] = {"named": named, "n": len(rows),
                                                     "parts": sum(len(outcome.parts(r["question"])) > 1 for r in rows)}
        out["rows"].setdefault(corpus, {})[name] = rows
    outcome.JOINT = shipped
    engine.close()
json.dump(out, sys.stdout, indent=1)
