"""The docling fixtures (../shared/data/docfixtures-docling: 8 PDFs, 32 DOCX, each with the Markdown its authors
expect), read by the loader at a commit given and by today's (issue 44). Per file:

- text: the expected Markdown's words (its syntax left out: #, |, table rules, emphasis, image comments) against the
  loaded text's, as a bag (F1) and in order (difflib's ratio over the word sequences);
- headings: the expected '#' lines found among the loaded headings (a heading block, or an entry of a block's
  heading path), compared lower-cased with whitespace collapsed; and the loaded headings no '#' line names;
- table cells (compared by their words: markup inside a cell is left out): each expected table row matched to the loaded row with the most cells equal at the same position (as
  pdf_tables_probe.py does); a loaded row is a line with a '|' in it, its outer pipes stripped.

    PYTHONPATH=. python bench_results/probes/docling_fixtures_probe.py BEFORE_COMMIT > bench_results/docling-fixtures.json
"""
import collections
import difflib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from thread_rag.errors import IngestError
from thread_rag.ingest.loaders import load_document

DATA = Path("../shared/data/docfixtures-docling")
_RULE = re.compile(r"^\|?[\s:|-]+\|?$")


def norm(cell: str) -> str:
    """A cell or heading by its words alone: markup inside a cell (emphasis, list markers, checkboxes, image
    comments) is the Markdown writer's, not the cell's place."""
    return " ".join(words(re.sub(r"\[[ xX]\]", " ", cell)))


def md_rows(text: str) -> list[list[str]]:
    return [[norm(c) for c in ln.strip().strip("|").split("|")] for ln in text.splitlines()
            if ln.startswith("|") and not _RULE.match(ln)]


def md_headings(text: str) -> list[str]:
    return [norm(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M)]


def words(text: str) -> list[str]:
    text = re.sub(r"<!--.*?-->", " ", text)
    return re.findall(r"[^\W_]+", text.lower())  # letters of any script (the Korean fixture), digits


def loaded_rows(blocks) -> list[list[str]]:
    return [[norm(c) for c in re.split(r"(?<!\\)\|", ln.strip().strip("|"))] for b in blocks
            for ln in b.text.split("\n") if "|" in ln]


def score_cells(expected: list[list[str]], got: list[list[str]]) -> dict:
    cells = sum(len(r) for r in expected)
    right = sum(max((sum(a == b for a, b in zip(row, g)) for g in got), default=0) for row in expected)
    whole = sum(any(row == g for g in got) for row in expected)
    return {"expected_rows": len(expected), "rows_whole": whole, "expected_cells": cells, "cells_in_place": right}


def measure(load, path: Path, truth: str) -> dict:
    t = time.perf_counter()
    try:
        doc = load(path)
    except IngestError as exc:
        return {"error": exc.reason if hasattr(exc, "reason") else str(exc)}
    seconds = round(time.perf_counter() - t, 3)
    exp_w, got_w = words(truth), words("\n".join(b.text for b in doc.blocks))
    common = sum((collections.Counter(exp_w) & collections.Counter(got_w)).values())
    f1 = 2 * common / (len(exp_w) + len(got_w)) if exp_w or got_w else 1.0
    order = difflib.SequenceMatcher(None, exp_w, got_w, autojunk=False).ratio() if exp_w or got_w else 1.0
    found = {norm(b.text) for b in doc.blocks if b.is_heading} | {norm(h) for b in doc.blocks for h in b.heading_path}
    heads = md_headings(truth)
    return {"seconds": seconds, "words_f1": round(f1, 3), "words_in_order": round(order, 3),
            "headings_expected": len(heads), "headings_found": sum(h in found for h in heads),
            "headings_loaded": len(found), "headings_not_expected": len(found - set(heads)),
            **score_cells(md_rows(truth), loaded_rows(doc.blocks))}


def loader_at(commit: str):
    """``load_document`` as the commit had it (loaders.py and html.py from git, run beside today's)."""
    ns_html = {"__name__": "html_old"}
    mods = {}
    for name in ("loaders", "html"):
        src = subprocess.run(["git", "show", f"{commit}:thread_rag/ingest/{name}.py"], capture_output=True,
                             text=True).stdout
        mods[name] = src
    ns = {"__name__": "loaders_old"}
    exec(compile(mods["loaders"].replace("from ..", "from thread_rag."), "loaders_old", "exec"), ns)
    return ns["load_document"]


def main() -> None:
    before_commit = sys.argv[1]
    before = loader_at(before_commit)
    out = {"command": f"PYTHONPATH=. python bench_results/probes/docling_fixtures_probe.py {before_commit}",
           "before": before_commit, "files": []}
    for kind, truth_name in (("pdf", "{}.md"), ("docx", "{}.docx.md")):
        for src in sorted((DATA / kind / "sources").iterdir()):
            gt = DATA / kind / "groundtruth" / truth_name.format(src.stem)
            if not gt.is_file():
                continue
            truth = gt.read_text(encoding="utf-8")
            out["files"].append({"file": f"{kind}/{src.name}", "now": measure(load_document, src, truth),
                                 "before": measure(before, src, truth)})
    totals = {}
    for when in ("before", "now"):
        rows = [f[when] for f in out["files"] if "error" not in f[when]]
        for kind in ("pdf", "docx"):
            mine = [f[when] for f in out["files"] if f["file"].startswith(kind) and "error" not in f[when]]
            totals[f"{kind}_{when}"] = {
                "files": len(mine),
                "headings": f"{sum(r['headings_found'] for r in mine)}/{sum(r['headings_expected'] for r in mine)}",
                "headings_not_expected": f"{sum(r.get('headings_not_expected', 0) for r in mine)}/"
                                         f"{sum(r.get('headings_loaded', 0) for r in mine)}",
                "cells": f"{sum(r['cells_in_place'] for r in mine)}/{sum(r['expected_cells'] for r in mine)}",
                "rows_whole": f"{sum(r['rows_whole'] for r in mine)}/{sum(r['expected_rows'] for r in mine)}",
                "words_f1_mean": round(sum(r["words_f1"] for r in mine) / len(mine), 3) if mine else None,
                "words_in_order_mean": round(sum(r["words_in_order"] for r in mine) / len(mine), 3) if mine else None,
                "tables_all_cells_in_place": sum(r["expected_cells"] > 0 and r["cells_in_place"] == r["expected_cells"]
                                                 for r in mine),
                "files_with_tables": sum(r["expected_cells"] > 0 for r in mine)}
        del rows
    out["totals"] = totals
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
