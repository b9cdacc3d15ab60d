"""One-off probe (2026-12-01), kept with the figures BENCHMARKS.md quotes from it."""
import sys
from pathlib import Path
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
DATA = REPO.parent / "shared" / "data"
import sys, time, statistics
from pathlib import Path
from thread_rag.settings import load_settings
from thread_rag.engine import Engine
from thread_rag.bench.scale import scale_queries
s = load_settings({"HOME": str(REPO / "bench_out" / "scale-100000")}, env={}, config_file=True)
e = Engine(s)
qs = scale_queries(DATA, 30)
r = e.retriever
e.retriever.search(qs[0], k=5)
rr = r.reranker
score_t, fetch_t, toks = [], [], []
real_score, real_fetch = rr.score, r._fetch
def score(q, ps):
    t = time.perf_counter(); out = real_score(q, ps); score_t.append((time.perf_counter() - t) * 1000)
    toks.append(statistics.mean(len(e) for e in [x.ids for x in rr.encoder.encodings([(q, p) for p in ps])]))
    return out
def fetch(index, rows):
    t = time.perf_counter(); real_fetch(index, rows); fetch_t.append((time.perf_counter() - t) * 1000)
rr.score, r._fetch = score, fetch
tot = []
for q in qs:
    t = time.perf_counter(); res = e.retriever.search(q, k=5); tot.append(res.timings_ms.get("stage3_ms"))
print("stage3 p50", statistics.median(tot), "score p50", round(statistics.median(score_t)), "fetch p50", round(statistics.median(fetch_t), 1), "mean pair tokens", round(statistics.mean(toks)), "threads", rr.encoder._threads)
