"""PDF tables and code lines, before and after LOADER_VERSION 5 (issue 43): per PDF of ../shared/data/docfixtures-docling
with tables in its expected Markdown, and the Debian guide's captioned tables, how many of the expected table cells
come out in the right row and column (each expected row matched to the extracted pipe row with the most cells equal at
the same position), and, for the Debian guide, whether its command lines stay lines.

    PYTHONPATH=. python bench_results/probes/pdf_tables_probe.py > bench_results/pdf-tables.json
"""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from thread_rag.ingest.loaders import load_document

DATA = Path("../shared/data")
FIXTURES = DATA / "docfixtures-docling/pdf"
DEBIAN = DATA / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf"
# the guide's two captioned tables as the HTML edition prints them (installation-guide-amd64-en/ch03s0{3,4}.html)
DEBIAN_TABLES = [["Install Type", "RAM (minimum)", "RAM (recommended)", "Hard Drive"],
                 ["No desktop", "256 megabytes", "512 megabytes", "4 gigabytes"],
                 ["With Desktop", "1 gigabytes", "2 gigabytes", "10 gigabytes"],
                 ["Hardware", "Information You Might Need"],
                 ["Network interfaces", "Type/model of available network interfaces."],
                 ["Printer", "Model and manufacturer."], ["Video Card", "Type/model and manufacturer."]]


def norm(cell: str) -> str:
    return " ".join(cell.replace("\\", "").replace("**", "").split()).lower()


def md_rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not re.fullmatch(r"[|\s:-]+", line):
            rows.append([norm(c) for c in line.strip().strip("|").split("|")])
    return rows


def extracted_rows(blocks) -> list[list[str]]:
    return [[norm(c) for c in ln.strip().strip("|").split("|")] for b in blocks for ln in b.text.split("\n")
            if ln.startswith("|") and ln.endswith("|")]


def score(expected: list[list[str]], got: list[list[str]]) -> dict:
    cells = sum(len(r) for r in expected)
    right = sum(max((sum(a == b for a, b in zip(row, g)) for g in got), default=0) for row in expected)
    whole = sum(any(row == g for g in got) for row in expected)
    return {"expected_rows": len(expected), "rows_whole": whole, "expected_cells": cells, "cells_in_place": right,
            "share": round(right / cells, 3) if cells else None}


BEFORE = "d0af498"  # the last commit with LOADER_VERSION 4


def old_load_document():
    """LOADER_VERSION 4's ``load_document``, from git, run beside today's."""
    src = subprocess.run(["git", "show", f"{BEFORE}:thread_rag/ingest/loaders.py"], capture_output=True, text=True,
                         check=True).stdout
    ns = {"__name__": "loaders_v4"}
    exec(compile(src.replace("from ..", "from thread_rag."), "loaders_v4", "exec"), ns)
    return ns["load_document"]


def main() -> None:
    sys.path.insert(0, ".")
    out = {"command": "PYTHONPATH=. python bench_results/probes/pdf_tables_probe.py", "before": BEFORE, "files": []}
    before = old_load_document()
    for pdf in sorted((FIXTURES / "sources").glob("*.pdf")):
        gt = (FIXTURES / "groundtruth" / (pdf.stem + ".md"))
        expected = md_rows(gt.read_text(encoding="utf-8")) if gt.is_file() else []
        if not expected:
            continue
        t = time.perf_counter()
        doc = load_document(pdf)
        out["files"].append({"file": pdf.name, "seconds": round(time.perf_counter() - t, 2),
                             **score(expected, extracted_rows(doc.blocks)),
                             "before": score(expected, extracted_rows(before(pdf).blocks))})
    t = time.perf_counter()
    doc = load_document(DEBIAN)
    text = "\n".join(b.text for b in doc.blocks)
    out["debian"] = {"seconds": round(time.perf_counter() - t, 2),
                     **score([[norm(c) for c in r] for r in DEBIAN_TABLES], extracted_rows(doc.blocks)),
                     "usb_commands_as_lines": "# cp debian.iso /dev/sdX\n# sync" in text,
                     "multi_line_blocks": sum("\n" in b.text for b in doc.blocks)}
    old = before(DEBIAN)
    old_text = "\n".join(b.text for b in old.blocks)
    out["debian"]["before"] = {**score([[norm(c) for c in r] for r in DEBIAN_TABLES], extracted_rows(old.blocks)),
                               "usb_commands_as_lines": "# cp debian.iso /dev/sdX\n# sync" in old_text,
                               "multi_line_blocks": sum("\n" in b.text for b in old.blocks)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
