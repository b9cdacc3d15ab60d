"""One-off probe (2026-12-01), kept with the figures BENCHMARKS.md quotes from it."""
from _scale_library import open_scale_library
import time, statistics, json
from pathlib import Path
from thread_rag.store.token_cache import TokenCache

e, qs = open_scale_library()
new_exists = TokenCache.exists
def old_exists(self, serial, generation, key=None):
    return (self.dir_for(serial, generation) / "offsets.npy").is_file()
def run(label):
    ts, s2 = [], []
    e.retriever.search(qs[0], k=5, pipeline="stage1_2")
    for q in qs:
        t = time.perf_counter(); r = e.retriever.search(q, k=5, pipeline="stage1_2"); ts.append((time.perf_counter() - t) * 1000)
        s2.append(r.timings_ms.get("stage2_ms", 0))
    return label, round(statistics.median(ts), 1), round(statistics.median(s2), 1)
for _ in range(2):
    TokenCache.exists = new_exists; print(run("keyed"))
    TokenCache.exists = old_exists; print(run("unkeyed"))
