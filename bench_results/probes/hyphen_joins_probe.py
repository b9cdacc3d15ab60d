"""Probe (loader 12): in each PDF behind a recorded figure, the words broken at a line's end that loader 12 joins
otherwise than loader 11 did (loader 11: joined when a letter came before the hyphen and a lower-case letter after
it, else a space). Says which figures a re-run could move.

    THREAD_RAG_SHARED_DATA=../shared/data python bench_results/probes/hyphen_joins_probe.py > bench_results/hyphen-joins.json
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the lab, bench/

import thread_rag.ingest.pdf as pdf  # noqa: E402
from bench.retrieval import machine  # noqa: E402
from thread_rag.errors import ThreadRagError  # noqa: E402
from thread_rag.ingest.loaders import load_document  # noqa: E402

DATA = Path(os.environ.get("THREAD_RAG_SHARED_DATA", "../shared/data"))
SETS = {"debian": "docs-debian-procedural", "docling": "docfixtures-docling", "pypdf": "docfixtures-pypdf-samples",
        "financebench": "financebench-dev"}


def joins(path: Path) -> list:
    found = []
    real = pdf.reflow

    def spy(lines, words=frozenset()):
        for a, b in zip(lines, lines[1:]):
            if a.endswith("-") and len(a) > 1:
                old = "" if a[-2].isalpha() and b[:1].islower() else " "
                new = pdf._broken(a.rsplit(None, 1)[-1], b, words)
                new = " " if new is None else new
                if old != new:
                    found.append({"line_end": a.rsplit(None, 1)[-1][-40:], "next": (b.split() or [""])[0][:40],
                                  "loader_11": old, "loader_12": new})
        return real(lines, words)
    pdf.reflow = spy
    try:
        load_document(path)
    finally:
        pdf.reflow = real
    return found


out = {"command": "THREAD_RAG_SHARED_DATA=../shared/data python bench_results/probes/hyphen_joins_probe.py",
       "machine": machine(), "sets": {}}
for name, folder in SETS.items():
    files = {}
    for p in sorted((DATA / folder).rglob("*.pdf")):
        try:
            found = joins(p)
        except ThreadRagError as exc:
            files[str(p.relative_to(DATA))] = {"error": str(exc)}
            continue
        files[str(p.relative_to(DATA))] = {"differ": len(found), "joins": found}
        print(p.name, len(found), file=sys.stderr, flush=True)
    out["sets"][name] = {"files": files, "differ": sum(f.get("differ", 0) for f in files.values())}
print(json.dumps(out, indent=1, ensure_ascii=False))
