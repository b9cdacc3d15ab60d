"""How often the budgeted walk read a hole before the fix (a neighbour kept beyond a dropped one): the old and the new
walk on the same questions, same searches, same budget. python bench_results/probes/walk_holes.py DATASET"""
import json
import subprocess
import sys

import thread_rag.agent.reading as reading
from thread_rag.agent.loop import Agent
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.settings import load_settings

BEFORE = "d0541fa"  # the last commit with the walk's old budget rule (866db89 changed _fit)


def old_fit():
    """``_fit`` as commit BEFORE had it, from git (its module run beside today's)."""
    src = subprocess.run(["git", "show", f"{BEFORE}:thread_rag/agent/reading.py"], capture_output=True, text=True,
                         check=True).stdout
    ns = {"__name__": "reading_old"}
    exec(compile(src.replace("from ..", "from thread_rag.").replace("from .answer", "from thread_rag.agent.answer"),
                 "reading_old", "exec"), ns)
    return ns["_fit"]


name = sys.argv[1]
settings = load_settings()
ds = load_dataset(name, settings.shared_data, limit=60, seed=13, split="test")
engine, keymap, _ = open_corpus_engine(settings, ds)
agent = Agent(engine)
s = agent.settings
new_fit, old, rows = reading.fit_budget, old_fit(), []
for q in ds.queries:
    hits = engine.retriever.search(q.text, k=max(s.READ_K, 1)).hits
    qvec = engine.query_embedder.embed_queries([q.text])[0]
    got = {}
    for label, fit in (("old", old), ("new", new_fit)):
        reading.fit_budget = fit
        src = agent.read("walk", q.text, hits, qvec)
        got[label] = sorted(c for x in src for c in x.chunk_ids)
    reading.fit_budget = new_fit
    rows.append({"qid": q.qid, "same": got["old"] == got["new"], "old": got["old"], "new": got["new"]})
changed = [r for r in rows if not r["same"]]
print(json.dumps({"dataset": ds.name, "questions": len(rows), "readings_changed": len(changed),
                  "changed": changed, "command": "python bench_results/probes/walk_holes.py " + name}, indent=1))
