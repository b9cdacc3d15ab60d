"""Paired bootstrap CI of the quote's gold-token recall: today's quote (new JSON) against the published one."""
import json
import sys

import numpy as np
old = {r["qid"]: r for r in json.load(open(sys.argv[1]))["rows"]["quote"]}
newd = json.load(open(sys.argv[2]))
new = {r["qid"]: r for r in newd["rows"]["quote"]}
q = sorted(set(old) & set(new))
d = np.array([new[k]["recall"] - old[k]["recall"] for k in q])
rng = np.random.default_rng(0)
b = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(10000)]
out = {"questions": len(q), "old_recall": round(float(np.mean([old[k]["recall"] for k in q])), 4),
       "new_recall": round(float(np.mean([new[k]["recall"] for k in q])), 4),
       "difference": round(float(d.mean()), 4), "ci95": [round(float(np.quantile(b, .025)), 4), round(float(np.quantile(b, .975)), 4)],
       "old_words_median": float(np.median([old[k]["quote_words"] for k in q])),
       "new_words_median": float(np.median([new[k]["quote_words"] for k in q])),
       "old_file": sys.argv[1], "new_file": sys.argv[2],
       "command": "python bench_results/probes/quote_pair.py " + " ".join(sys.argv[1:3])}
print(json.dumps(out, indent=1))
