"""Where the indexing process's memory goes: a fresh process indexes the scale corpus's first documents (the
same shuffled mix `thread-rag bench scale` grows its library from; the Debian packages already unpacked in
bench_out/scale-debs) into a throwaway data dir, with no searches, and prints its RSS every ~500 chunks, the
Python heap (tracemalloc) beside it, and the RSS right after glibc's malloc_trim(0) hands freed memory back to the
system, so the growth can be split into Python objects, memory in use by native code, and freed memory the C
allocator keeps; the top Python allocations at the end.

    python bench_results/probes/ingest_memory_probe.py [CHUNKS]     # default 4000
"""
import ctypes
import hashlib
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from _scale_library import REPO, rss_mib


def main(target: int) -> None:
    from thread_rag.bench.scale_corpus import scale_corpus
    from thread_rag.engine import Engine
    from thread_rag.ingest.text import parse_text
    from thread_rag.settings import load_settings

    docs, _ = scale_corpus(REPO.parent / "shared" / "data", REPO / "bench_out" / "scale-debs", download=False)
    home = Path(tempfile.mkdtemp(prefix="ingest-mem-"))
    try:
        engine = Engine(load_settings({"HOME": str(home)}, env={}, config_file=False))
        print(f"start: rss {rss_mib():.0f} MiB", flush=True)
        tracemalloc.start()
        total, next_mark, t0 = 0, 500, time.perf_counter()
        for d in docs:
            if total >= target:
                break
            text = d.read()
            loaded = parse_text(text, d.key, markdown=d.markdown)
            if not loaded.blocks:
                continue
            total += engine.index_loaded(loaded, f"probe://{d.key}", d.title,
                                         hashlib.sha256(text.encode()).hexdigest()).chunks
            if total >= next_mark:
                py, _ = tracemalloc.get_traced_memory()
                before = rss_mib()
                ctypes.CDLL("libc.so.6").malloc_trim(0)
                print(f"{total:6d} chunks  {time.perf_counter() - t0:6.0f} s  rss {before:6.0f} MiB  "
                      f"after malloc_trim {rss_mib():6.0f} MiB  python heap {py / 2**20:6.0f} MiB", flush=True)
                next_mark += 500
        snap = tracemalloc.take_snapshot()
        for stat in snap.statistics("lineno")[:12]:
            print(stat)
        engine.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4000)
