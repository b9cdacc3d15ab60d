"""Issue 44 (HTML, in part): the Debian installation guide in three editions, indexed separately: does the HTML
edition find the passage the PDF finds, as often as the TXT edition does, and do its chunks carry heading paths?

The 12 questions are txt_sections_probe.py's (written before any run, 2026-12-03); the PDF's top hit at k=3 is the
reference; an edition "finds it" when one of its top 3 hits shares at least half of that chunk's words.

    thread-rag --data-dir P index .../installation-guide-amd64-en/install.en.pdf
    thread-rag --data-dir T index .../installation-guide-amd64-en/install.en.txt
    thread-rag --data-dir H index .../installation-guide-amd64-en/*.html       # the 84 pages of the HTML edition
    PYTHONPATH=. python bench_results/probes/editions_probe.py P T H > bench_results/editions-debian.json
"""
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from txt_sections_probe import QUESTIONS, hits, words  # noqa: E402


def heading_share(home: str) -> dict:
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    with Engine(load_settings({"HOME": home})) as e:
        chunks = [c for d in e.documents() for c in e.thread(d.serial).chunks]
    return {"chunks": len(chunks), "with_heading_path": sum(bool(c.heading_path) for c in chunks),
            "share": round(sum(bool(c.heading_path) for c in chunks) / len(chunks), 4)}


def main(pdf: str, txt: str, html: str) -> None:
    out = {"command": "PYTHONPATH=. python bench_results/probes/editions_probe.py P T H", "questions": [],
           "found": {"txt": 0, "html": 0}}
    for q in QUESTIONS:
        ref = hits(pdf, q)[0]
        gold = words(ref["text"])
        row = {"question": q, "pdf_top": f"{ref['chunk_id']} p.{ref['page_start']} {' > '.join(ref['heading_path'])}"}
        for name, home in (("txt", txt), ("html", html)):
            hs = hits(home, q)
            best = max(len(gold & words(h["text"])) / len(gold) for h in hs)
            out["found"][name] += best >= 0.5
            row[name] = {"found": best >= 0.5, "best_share": round(best, 2),
                         "top": f"{hs[0]['chunk_id']} {' > '.join(hs[0]['heading_path']) or '(no heading)'}"}
        out["questions"].append(row)
    out["headings"] = {"txt": heading_share(txt), "html": heading_share(html), "pdf": heading_share(pdf)}
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main(*sys.argv[1:4])
