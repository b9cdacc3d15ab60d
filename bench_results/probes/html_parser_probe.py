"""Issue 44: which HTML parser. The loader builds its tree with the standard library's html.parser; would lxml
(installed; selectolax, trafilatura and markdownify are not dependencies) make loading a docs site faster? Over the
84 pages of the Debian guide's HTML edition, in one process, each step timed over 3 rounds (median): the whole loader
(decode, tree, blocks), its tree building alone, and lxml.html building its tree from the same text. Speed goals are
ratios within this run; the machine is named.

    PYTHONPATH=. python bench_results/probes/html_parser_probe.py > bench_results/html-parser.json
"""
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, "tests")
from conftest import debian_html_pages  # noqa: E402
from thread_rag.bench.retrieval import machine  # noqa: E402
from thread_rag.ingest.html import _decode, _TreeBuilder  # noqa: E402
from thread_rag.ingest.loaders import load_document  # noqa: E402


def timed(fn, rounds=3) -> float:
    runs = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def main() -> None:
    import lxml
    import lxml.html

    pages = debian_html_pages()
    texts = [_decode(p, p.read_bytes())[0] for p in pages]
    size = sum(len(t) for t in texts)

    def ours_tree():
        for t in texts:
            b = _TreeBuilder()
            b.feed(t)
            b.close()

    def lxml_tree():
        for t in texts:
            lxml.html.document_fromstring(t.encode("utf-8"))

    whole = timed(lambda: [load_document(p) for p in pages])
    tree = timed(ours_tree)
    other = timed(lxml_tree)
    print(json.dumps({
        "command": "PYTHONPATH=. python bench_results/probes/html_parser_probe.py", "machine": machine(),
        "python": platform.python_version(), "lxml": lxml.__version__, "pages": len(pages), "characters": size,
        "loader_s": round(whole, 3), "pages_per_s": round(len(pages) / whole, 1),
        "stdlib_tree_s": round(tree, 3), "lxml_tree_s": round(other, 3),
        "tree_share_of_loader": round(tree / whole, 3),
        "loader_s_if_lxml_tree": round(whole - tree + other, 3),
        "speedup_if_lxml": round(whole / (whole - tree + other), 2)}, indent=1))


if __name__ == "__main__":
    main()
