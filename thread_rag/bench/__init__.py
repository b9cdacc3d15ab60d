"""Benchmarks on the shared data sets: one harness (``thread-rag bench KIND``), one loader per set."""

import os as _os
import shlex as _shlex
import sys as _sys


def command_line() -> str:
    """The command as run: its THREAD_RAG_* settings from the environment first (the data dir's excepted), so a
    recorded run says what it changed (``THREAD_RAG_QUESTION_STEPS=4 thread-rag bench answers ...``)."""
    env = [f"{k}={_shlex.quote(v)}" for k, v in sorted(_os.environ.items())
           if k.startswith("THREAD_RAG_") and k not in ("THREAD_RAG_HOME", "THREAD_RAG_MODEL_DIR")]
    return " ".join(env + ["thread-rag", *_sys.argv[1:]])


def proc_status_kib(field: str, pid: int | str = "self") -> int:
    """A memory figure of a process from /proc/PID/status in KiB (``VmHWM``: its peak, ``VmRSS``: now); 0 where
    /proc cannot tell (no /proc, the process gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next((int(x.split()[1]) for x in fh if x.startswith(field + ":")), 0)
    except OSError:
        return 0


def peak_rss_kib() -> int:
    """This process's own peak resident memory in KiB: VmHWM, its memory map's high-water mark. ru_maxrss is the
    fallback where there is no /proc (in bytes on macOS): Linux carries it over fork and exec, so a child started
    by a large parent reports the parent's size."""
    peak = proc_status_kib("VmHWM")
    if peak:
        return peak
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if _sys.platform == "darwin" else peak
