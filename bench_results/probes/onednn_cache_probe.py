"""What cutting torch's oneDNN kernel cache (ONEDNN_PRIMITIVE_CACHE_CAPACITY, 1,024 by default) does to indexing:
speed and memory, each setting in its own fresh process (the variable is read when torch starts), alternating.
Each process indexes the scale corpus's first CHUNKS chunks (the mix `thread-rag bench scale` grows its library
from; the Debian packages already unpacked in bench_out/scale-debs) into a throwaway data dir, no searches, and
reports chunks/s of the whole indexing, its peak RSS (VmHWM) and RSS at the end.

    python bench_results/probes/onednn_cache_probe.py [CHUNKS] [ROUNDS] [ARMS]   # 3000 chunks, 2 rounds, 1024,8

ARMS: cache capacities to compare, comma-separated; "unset" leaves the variable out of the environment (since
2026-12-01 the embedder then sets 8 itself; before, oneDNN's default 1,024 applied: the first run's "default" arm).
"""
import json
import os
import subprocess
import sys

from _scale_library import REPO

CHILD = r"""
import hashlib, json, shutil, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from bench.scale_corpus import scale_corpus
from thread_rag.engine import Engine
from thread_rag.ingest.text import parse_text
from thread_rag.settings import load_settings
repo = Path(sys.argv[2])
docs, _ = scale_corpus(repo.parent / "shared" / "data", repo / "bench_out" / "scale-debs", download=False)
home = Path(tempfile.mkdtemp(prefix="onednn-"))
engine = Engine(load_settings({"HOME": str(home)}, env={}, config_file=False))
engine.embedder.embed_with_tokens(["warm up"])
total, t0 = 0, time.perf_counter()
for d in docs:
    if total >= int(sys.argv[1]):
        break
    text = d.read()
    loaded = parse_text(text, d.key, markdown=d.markdown)
    if loaded.blocks:
        total += engine.index_loaded(loaded, "probe://" + d.key, d.title, hashlib.sha256(text.encode()).hexdigest()).chunks
rate = total / (time.perf_counter() - t0)
status = dict(l.split(":", 1) for l in Path("/proc/self/status").read_text().splitlines() if ":" in l)
print(json.dumps({"chunks": total, "chunks_per_s": round(rate, 1), "peak_rss_mib": int(status["VmHWM"].split()[0]) // 1024,
                  "rss_mib": int(status["VmRSS"].split()[0]) // 1024}))
engine.close()
shutil.rmtree(home, ignore_errors=True)
"""


def main(chunks: int, rounds: int, arms: list[str]) -> None:
    for r in range(rounds):
        for cap in arms if r % 2 == 0 else arms[::-1]:
            env = dict(os.environ)
            env.pop("ONEDNN_PRIMITIVE_CACHE_CAPACITY", None)
            if cap != "unset":
                env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = cap
            out = subprocess.run([sys.executable, "-c", CHILD, str(chunks), str(REPO)], env=env, capture_output=True,
                                 text=True, check=True).stdout.strip().splitlines()[-1]
            print(f"round {r + 1} cache {cap}: {json.loads(out)}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000, int(sys.argv[2]) if len(sys.argv) > 2 else 2,
         sys.argv[3].split(",") if len(sys.argv) > 3 else ["1024", "8"])
