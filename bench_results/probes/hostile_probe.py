"""Issue 47: hostile files (tests/hostile_files.py), each loaded by load_document in a fresh process: what it says,
seconds, and the process's peak resident memory (VmHWM; the interpreter and the loaders' imports included).

    PYTHONPATH=. python bench_results/probes/hostile_probe.py > bench_results/hostile-files.json
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, "tests")
from hostile_files import HOSTILE, make_hostile  # noqa: E402
from bench.retrieval import machine  # noqa: E402

CODE = ("import json, sys, time\nfrom thread_rag.ingest.loaders import load_document\n"
        "t = time.perf_counter()\ntry:\n    d = load_document(sys.argv[1]); said = f'read: {len(d.blocks)} blocks'\n"
        "except Exception as exc:\n    said = f'{type(exc).__name__}: {exc}'\n"
        "peak = [int(ln.split()[1]) for ln in open('/proc/self/status') if ln.startswith('VmHWM')]\n"
        "print(json.dumps({'said': said, 'seconds': round(time.perf_counter() - t, 3), 'peak_mib': round(peak[0] / 1024)}))\n")


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        files = make_hostile(Path(d))
        rows = []
        for name in HOSTILE:
            r = subprocess.run([sys.executable, "-c", CODE, str(files[name])], capture_output=True, text=True,
                               timeout=300)
            out = json.loads(r.stdout.strip().splitlines()[-1])
            out["said"] = out["said"].replace(str(files[name]), name)
            rows.append({"file": name, "size_mib": round(files[name].stat().st_size / 2**20, 2), **out})
    print(json.dumps({"command": "PYTHONPATH=. python bench_results/probes/hostile_probe.py", "machine": machine(),
                      "files": rows}, indent=1))


if __name__ == "__main__":
    main()
