"""One-off probe (2026-12-01), kept with the figures BENCHMARKS.md quotes from it."""
import sys
from pathlib import Path
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
DATA = REPO.parent / "shared" / "data"
import sys, time, resource, os
from thread_rag.settings import load_settings
from thread_rag.engine import Engine
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024
s = load_settings({"HOME": str(REPO / "bench_out" / "scale-100000")}, env={}, config_file=True)
e = Engine(s)
print("engine", rss(), "MiB")
idx = e.retriever.index
print("index open", rss(), "MiB rows", len(idx), "parts", len(idx.parts))
t = time.perf_counter()
from thread_rag.atomic import file_lock
with file_lock(idx.root.parent / "index.lock"):
    new = idx.compact(time.perf_counter())
print("after compact", rss(), "MiB; peak", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "MiB;", round(time.perf_counter() - t, 1), "s")
