"""What a run records about itself: the command as typed and the machine it ran on (``thread-rag eval``'s runs and
the benchmarks')."""
from __future__ import annotations

import os
import platform
import shlex
import sys


def command_line(prog: str = "thread-rag") -> str:
    """The command as run: its THREAD_RAG_* settings from the environment first (the data dir's excepted), so a
    recorded run says what it changed (``THREAD_RAG_QUESTION_STEPS=4 thread-rag bench answers ...``)."""
    env = [f"{k}={shlex.quote(v)}" for k, v in sorted(os.environ.items())
           if k.startswith("THREAD_RAG_") and k not in ("THREAD_RAG_HOME", "THREAD_RAG_MODEL_DIR")]
    return " ".join(env + [prog, *sys.argv[1:]])


def machine() -> dict:
    """The CPU, its widest vector unit (prompt reading runs ~2.5x faster with AVX-512 BF16 than AVX2 only), cores and
    Python: where a figure came from."""
    cpu, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name") and cpu == "unknown":
                    cpu = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    vector = ("AVX-512 with BF16" if "avx512_bf16" in flags else "AVX-512" if "avx512f" in flags else
              "AVX2" if "avx2" in flags else "unknown")  # prompt reading runs ~2.5x faster with AVX-512 BF16
    return {"cpu": cpu, "vector": vector, "cores": os.cpu_count(), "python": platform.python_version()}
