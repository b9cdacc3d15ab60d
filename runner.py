#!/usr/bin/env python3
"""THREAD-RAG chat: ``python runner.py`` (same as ``thread-rag chat``).

Reads settings from the config.py beside this file (unless THREAD_RAG_CONFIG points elsewhere).
"""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if (HERE / "config.py").is_file():
    os.environ.setdefault("THREAD_RAG_CONFIG", str(HERE / "config.py"))

from thread_rag.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))  # no command: the chat (options such as --data-dir may come first)
