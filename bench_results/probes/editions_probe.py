"""Issue 44: the Debian installation guide in several editions, indexed separately: does each edition find the
passage the PDF finds (the HTML edition as often as the TXT edition does), and do its chunks carry heading paths?
Also counted: an edition's hit in the same section as the PDF's top hit (its deepest heading's words alike, numbers
left out: ``same_section``), at its top hit and in its top 3.

The 12 questions are txt_sections_probe.py's (written before any run, 2026-12-03); the PDF's top hit at k=3 is the
reference; an edition "finds it" when one of its top 3 hits shares at least half of that chunk's words. Editions
with pages (the PDF rendered to images and read by OCR) are also scored by page: their top hit on a page of the
PDF's top hit ("same_page_top1"), or one of their top 3 ("same_page_top3").

    thread-rag --data-dir P index .../installation-guide-amd64-en/install.en.pdf
    thread-rag --data-dir T index .../installation-guide-amd64-en/install.en.txt
    thread-rag --data-dir H index .../installation-guide-amd64-en/*.html       # the 84 pages of the HTML edition
    thread-rag --data-dir E index debian.epub      # the HTML pages packed by tests/conftest.py make_epub, in
                                                   # their rel="next" order (debian_html_pages)
    thread-rag --data-dir O index debian-scan.pdf  # every page rendered at 144 dpi into an image-only PDF
    PYTHONPATH=. python bench_results/probes/editions_probe.py P txt=T html=H epub=E ocr=O \
        > bench_results/editions-debian.json
"""
import difflib
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from txt_sections_probe import QUESTIONS, hits, words  # noqa: E402


def section_key(path: list) -> str:
    """A hit's own section, as its deepest heading's words without numbers or the chapter/appendix word and without
    spaces (an OCR'd title parts words: "GN U/Linux"): "2.5. Memory and Disk Space Requirements" and "Memory and
    Disk Space Requirements" are one section."""
    if not path:
        return ""
    ws = [w for w in re.findall(r"[a-z0-9]+", path[-1].lower())
          if not (w.isdigit() or len(w) == 1 or w in ("chapter", "appendix"))]
    return "".join(ws)


def same_section(a: list, b: list) -> bool:
    ka, kb = section_key(a), section_key(b)
    return bool(ka and kb) and difflib.SequenceMatcher(None, ka, kb).ratio() >= 0.85


def heading_share(home: str) -> dict:
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    with Engine(load_settings({"HOME": home})) as e:
        chunks = [c for d in e.documents() for c in e.thread(d.serial).chunks]
    return {"chunks": len(chunks), "with_heading_path": sum(bool(c.heading_path) for c in chunks),
            "share": round(sum(bool(c.heading_path) for c in chunks) / len(chunks), 4)}


def main(pdf: str, editions: dict) -> None:
    out = {"command": "PYTHONPATH=. python bench_results/probes/editions_probe.py P "
                      + " ".join(f"{k}={k[0].upper()}" for k in editions),
           "questions": [], "found": {k: 0 for k in editions}, "same_page_top1": {}, "same_page_top3": {},
           "same_section_top1": {}, "same_section_top3": {}}
    for q in QUESTIONS:
        ref = hits(pdf, q)[0]
        gold = words(ref["text"])
        pages = set(range(ref["page_start"], (ref.get("page_end") or ref["page_start"]) + 1))
        row = {"question": q, "pdf_top": f"{ref['chunk_id']} p.{ref['page_start']} {' > '.join(ref['heading_path'])}"}
        for name, home in editions.items():
            hs = hits(home, q)
            best = max(len(gold & words(h["text"])) / len(gold) for h in hs)
            out["found"][name] += best >= 0.5
            row[name] = {"found": best >= 0.5, "best_share": round(best, 2),
                         "top": f"{hs[0]['chunk_id']} {' > '.join(hs[0]['heading_path']) or '(no heading)'}"}
            sections = [same_section(h["heading_path"], ref["heading_path"]) for h in hs]
            row[name]["same_section"] = sections
            out["same_section_top1"][name] = out["same_section_top1"].get(name, 0) + sections[0]
            out["same_section_top3"][name] = out["same_section_top3"].get(name, 0) + any(sections)
            if hs[0].get("page_start") is not None:
                on = [bool(pages & set(range(h["page_start"], (h.get("page_end") or h["page_start"]) + 1)))
                      for h in hs]
                row[name]["top_page"] = hs[0]["page_start"]
                out["same_page_top1"][name] = out["same_page_top1"].get(name, 0) + on[0]
                out["same_page_top3"][name] = out["same_page_top3"].get(name, 0) + any(on)
        out["questions"].append(row)
    out["headings"] = {**{k: heading_share(v) for k, v in editions.items()}, "pdf": heading_share(pdf)}
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 3 and "=" not in "".join(args):  # the first form: P T H
        main(args[0], {"txt": args[1], "html": args[2]})
    else:
        main(args[0], dict(a.split("=", 1) for a in args[1:]))
