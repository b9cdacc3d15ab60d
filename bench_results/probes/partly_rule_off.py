"""The held-out two-part questions judged by today's answer path with the part rule (``agent.outcome.outscored``,
PART_GAP) switched off: the baseline beside ``bench outcome``'s ``partly_heldout_named`` (floors).

    python bench_results/probes/partly_rule_off.py > bench_results/partly-heldout-rule-off.json
"""
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/
import json
import sys

import thread_rag.agent.outcome as outcome
from bench.outcome import _hand_written, judge
from bench.retrieval import machine
from thread_rag.settings import load_settings

outcome.outscored = lambda by_part: []  # the rule off; everything else as shipped
settings = load_settings()
out = {"command": "python bench_results/probes/partly_rule_off.py", "machine": machine(), "rates": {}}
for corpus in ("docs", "debian"):
    engine, groups = _hand_written(settings, corpus)
    got = judge(engine, {"partly_heldout": groups["partly_heldout"]}, None)["floors"]
    out["rates"][corpus] = got["rates"]
    out.setdefault("rows", {})[corpus] = got["rows"]["partly_heldout"]
    engine.close()
json.dump(out, sys.stdout, indent=1)
