"""The benchmark lab: benchmarks of the product on the shared data sets, one harness (``python -m bench KIND``, or
``thread-rag bench KIND`` from a clone), one loader per set. Not part of the installed package; it uses the product
through its public modules, and no product module imports it."""

import sys as _sys

from thread_rag import run_record as _run_record


DOOR = "python -m bench"  # how the lab was started: ``cli.main`` sets it ("thread-rag" for ``thread-rag bench``)


def command_line() -> str:
    """The command as run (its THREAD_RAG_* settings first), as ``thread-rag bench ...`` or ``python -m bench ...``
    says it: every result records it."""
    return _run_record.command_line(DOOR)


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
