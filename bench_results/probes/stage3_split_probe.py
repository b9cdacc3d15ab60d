"""One-off probe (2026-12-01), kept with the figures BENCHMARKS.md quotes from it."""
from _scale_library import open_scale_library
import time, statistics
from pathlib import Path
e, qs = open_scale_library()
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
