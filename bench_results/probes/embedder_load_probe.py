"""What a process pays to load the indexing embedder, and how fast it then embeds: the packaged MiniLM through
sentence-transformers (the loader before 2026-12-07) against thread_rag.minilm (plain torch on the same weights),
each arm in its own fresh process, alternating, ROUNDS rounds. Each process loads the model, embeds one text
(the first call), then embeds the docs/ chunks (1,200 characters each) and reports both times and its vectors'
checksum; the two arms' vectors are compared in the parent (max abs difference).

    python bench_results/probes/embedder_load_probe.py [ROUNDS] [OUT]   # 3 rounds, bench_results/embedder-load.json

Run on AVX2: python bench_results/probes/embedder_load_probe.py 3 bench_results/embedder-load-avx2.json
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import numpy as np
texts = []
for f in sorted((Path(sys.argv[1]) / "docs").glob("*.md")):
    t = f.read_text()
    texts += [t[i:i + 1200] for i in range(0, len(t), 900)]
if sys.argv[2] == "sentence-transformers":
    import torch
    torch.set_num_threads(2)
    from sentence_transformers import SentenceTransformer
    from thread_rag.embedder import packaged_minilm_path
    m = SentenceTransformer(str(packaged_minilm_path()), device="cpu", local_files_only=True)
    m.eval()
    def embed(x):
        with torch.inference_mode():
            return m.encode(x, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
else:
    from thread_rag.embedder import MiniLMEmbedder
    e = MiniLMEmbedder(dtype="float32", threads=2)
    embed = e.embed
embed(["one line"])
loaded = time.perf_counter() - t0
t1 = time.perf_counter()
v = np.asarray(embed(texts), np.float32)
np.save(sys.argv[3], v)
print(loaded, time.perf_counter() - t1, len(texts))
"""

ARMS = ["sentence-transformers", "thread_rag.minilm"]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    out_path = Path(sys.argv[2]) if len(sys.argv) > 2 else REPO / "bench_results" / "embedder-load.json"
    runs = {a: [] for a in ARMS}
    vecs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for arm in ARMS:
                npy = os.path.join(tmp, f"{arm}-{r}.npy")
                env = {k: v for k, v in os.environ.items() if not k.startswith("THREAD_RAG_")}
                p = subprocess.run([sys.executable, "-c", CHILD, str(REPO), arm, npy], capture_output=True, text=True,
                                   env=env, timeout=900)
                if p.returncode:
                    raise SystemExit(p.stderr[-3000:])
                loaded, embed_s, n = p.stdout.split()[-3:]
                runs[arm].append({"load_and_first_text_s": round(float(loaded), 3), "embed_s": round(float(embed_s), 3),
                                  "texts": int(n)})
                vecs[arm] = np.load(npy)
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    out = {
        "command": "python bench_results/probes/embedder_load_probe.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d"),
        "cpu": {"avx512_bf16": "avx512_bf16" in flags, "avx2": "avx2" in flags, "cores": os.cpu_count(),
                "machine": platform.machine()},
        "dtype": "float32", "rounds": rounds, "runs": runs,
        "median": {a: {k: round(statistics.median(x[k] for x in runs[a]), 3)
                       for k in ("load_and_first_text_s", "embed_s")} for a in ARMS},
        "max_abs_difference": float(np.abs(vecs[ARMS[0]] - vecs[ARMS[1]]).max()),
    }
    out_path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["median"]), out["max_abs_difference"])


if __name__ == "__main__":
    main()
