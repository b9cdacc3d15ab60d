"""One-off probe: stage-3 pairs sequential (intra-op threads 2) vs two worker threads (intra-op 1 each)."""
import sys
from pathlib import Path
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
DATA = REPO.parent / "shared" / "data"
import json, statistics, sys, time
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from thread_rag.onnx_models import OnnxEncoder, packaged_onnx_dir

texts = [json.loads(l) for l in open(sys.argv[1])][:400] if len(sys.argv) > 1 else None
d = packaged_onnx_dir("ms-marco-MiniLM-L-12-v2")
seq = OnnxEncoder(d, max_tokens=256, threads=2)
par = OnnxEncoder(d, max_tokens=256, threads=1)
words = open(REPO / "docs" / "02-indexing.md").read().split() * 20
passages = [" ".join(words[i * 37:(i * 37) + 170]) for i in range(20)]
query = "how do I index a folder of files"
enc = seq.encodings([(query, p) for p in passages])
print("tokens per pair", [len(e.ids) for e in enc][:5])
pool = ThreadPoolExecutor(2)

def run_par(encs):
    halves = [encs[0::2], encs[1::2]]
    res = list(pool.map(par.run, halves))
    out = [None] * len(encs)
    out[0::2], out[1::2] = res[0], res[1]
    return out

a = seq.run(enc); b = run_par(enc)
print("max logit diff", max(abs(float(x[0][0]) - float(y[0][0])) for x, y in zip(a, b)))
for name, f in (("seq intra2", seq.run), ("2 workers intra1", run_par)) * 3:
    ts = []
    for _ in range(5):
        t = time.perf_counter(); f(enc); ts.append(time.perf_counter() - t)
    print(name, "median ms", round(statistics.median(ts) * 1000))
