"""What the probes share: the repo on sys.path, the library `thread-rag bench scale` grew (bench_out/scale-100000)
opened in an Engine, the scale benchmark's 30 queries, and this process's resident memory."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def open_scale_library():
    from bench.scale import scale_queries
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    engine = Engine(load_settings({"HOME": str(REPO / "bench_out" / "scale-100000")}, env={}, config_file=True))
    return engine, scale_queries(REPO.parent / "shared" / "data", 30)


def rss_mib() -> float:
    """This process's resident set size in MiB (VmRSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
