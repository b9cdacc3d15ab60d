"""Issue 44: indexing speed of the Debian guide's editions, each into a fresh data dir, one after the other in one
run, from a cold process (imports and model loads included): the PDF (113 pages), the HTML edition's 84 pages, the
same pages packed as one EPUB (tests/conftest.py make_epub) and the TXT edition. Pages per second is the edition's
own pages (the PDF's, the HTML files) over the whole command's wall time.

    PYTHONPATH=. python bench_results/probes/format_speed_probe.py > bench_results/format-speed.json
"""
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, "tests")
from conftest import debian_html_pages, make_epub  # noqa: E402
from thread_rag.bench.retrieval import machine  # noqa: E402

GUIDE = Path("../shared/data/docs-debian-procedural/installation-guide-amd64-en")


def run(home: Path, files: list) -> dict:
    t = time.perf_counter()
    r = subprocess.run(["thread-rag", "--data-dir", str(home), "--json", "index", *map(str, files)],
                       capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    results = json.loads(r.stdout)
    results = results.get("results", results) if isinstance(results, dict) else results
    return {"wall_s": round(wall, 1), "files": len(files), "chunks": sum(x.get("chunks", 0) for x in results)}


def main() -> None:
    pages = debian_html_pages()
    out = {"command": "PYTHONPATH=. python bench_results/probes/format_speed_probe.py", "machine": machine()}
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        epub = make_epub(d / "debian.epub", [(p.name, p.read_bytes()) for p in pages],
                         title="Debian GNU/Linux Installation Guide")
        for name, files, n_pages in (("pdf", [GUIDE / "install.en.pdf"], 113), ("html", pages, len(pages)),
                                     ("epub", [epub], len(pages)), ("txt", [GUIDE / "install.en.txt"], None)):
            row = run(d / name, files)
            row["pages"] = n_pages
            row["pages_per_s"] = round(n_pages / row["wall_s"], 2) if n_pages else None
            out[name] = row
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
