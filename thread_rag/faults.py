"""Fault injection for the crash-safety and full-disk tests (one home: the engine, the search index and pre-heat
call it at their write points)."""
from __future__ import annotations

import os


def crash_point(name: str) -> None:
    """At the named write step: SIGKILL this process when ``THREAD_RAG_CRASH_AT`` names it (a killed process), or
    raise the OSError a full disk raises when ``THREAD_RAG_FULL_AT`` names it (the process goes on). Costs two dict
    lookups otherwise."""
    if os.environ.get("THREAD_RAG_CRASH_AT") == name:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get("THREAD_RAG_FULL_AT") == name:
        import errno

        raise OSError(errno.ENOSPC, "No space left on device")
