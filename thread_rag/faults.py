"""Fault injection for the crash-safety tests (one home: the engine and pre-heat both call it)."""
from __future__ import annotations

import os


def crash_point(name: str) -> None:
    """Fault injection for crash-safety tests: SIGKILL this process at the named step when
    ``THREAD_RAG_CRASH_AT`` names it. Costs one dict lookup otherwise."""
    if os.environ.get("THREAD_RAG_CRASH_AT") == name:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
