"""One-off probe (2026-12-01), kept with the figures BENCHMARKS.md quotes from it."""
from _scale_library import open_scale_library
import time, resource, os
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024
e, qs = open_scale_library()
print("engine", rss(), "MiB")
idx = e.retriever.index
print("index open", rss(), "MiB rows", len(idx), "parts", len(idx.parts))
t = time.perf_counter()
from thread_rag.atomic import file_lock
with file_lock(idx.root.parent / "index.lock"):
    new = idx.compact(time.perf_counter())
print("after compact", rss(), "MiB; peak", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "MiB;", round(time.perf_counter() - t, 1), "s")
