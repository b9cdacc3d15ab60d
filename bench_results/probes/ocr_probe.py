"""Issue 44: OCR against the text layer. Pages of real PDFs with text (the Debian guide: every 11th page from page 6;
five English docling fixtures' first pages) are rendered at 144 dpi (ocr.render_pdf_page) and read by the packaged models
(ocr.read_image); the reference is pypdf's text of the same page. Character error rate = Levenshtein distance /
reference length, whitespace collapsed to single spaces (also without any spaces, which separates words run
together from wrong letters), and, blind to reading order, the share of the reference's words the OCR'd text
holds (as bags, lower-cased: what a search matches on); seconds per page are the OCR's own (rendering apart), one page at a time.

    PYTHONPATH=. python bench_results/probes/ocr_probe.py > bench_results/ocr-debian.json
"""
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/
import json
import re
import time
from collections import Counter
from pathlib import Path

import numpy as np
from pypdf import PdfReader

from bench.retrieval import machine
from thread_rag.ingest import ocr

DATA = Path("../shared/data")
DEBIAN = DATA / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf"
FIXTURES = [DATA / "docfixtures-docling/pdf/sources" / f"{n}.pdf"
            for n in ("amt_handbook_sample", "redp5110_sampled", "multi_page", "code_and_formula", "2305.03393v1-pg9")]
# normal_4pages is Korean: the packaged models read Chinese and English, not Hangul (its page 1: 8% of the words)


def levenshtein(a: str, b: str) -> int:
    if not a:
        return len(b)
    bb = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    idx = np.arange(len(b) + 1)
    prev = idx.copy()
    for ch in a:
        d = np.empty_like(prev)
        d[0] = prev[0] + 1
        d[1:] = np.minimum(prev[1:] + 1, prev[:-1] + (bb != ord(ch)))
        prev = np.minimum.accumulate(d - idx) + idx
    return int(prev[-1])


def norm(s: str) -> str:
    return " ".join(s.split())


def page(path: Path, index: int) -> dict:
    ref = norm(PdfReader(str(path)).pages[index].extract_text())
    image = ocr.render_pdf_page(path, index)
    t = time.perf_counter()
    hyp = norm(" ".join(ocr.read_image(image)))
    seconds = time.perf_counter() - t
    ref_words, hyp_words = Counter(re.findall(r"\w+", ref.lower())), Counter(re.findall(r"\w+", hyp.lower()))
    return {"file": path.name, "page": index + 1, "ref_chars": len(ref), "seconds": round(seconds, 2),
            "ref_words": sum(ref_words.values()), "words_found": sum((ref_words & hyp_words).values()),
            "errors": levenshtein(hyp, ref), "errors_no_spaces": levenshtein(hyp.replace(" ", ""), ref.replace(" ", "")),
            "ref_chars_no_spaces": len(ref.replace(" ", ""))}


def summary(rows: list[dict]) -> dict:
    return {"pages": len(rows), "cer_median_page": round(float(np.median([r["errors"] / r["ref_chars"] for r in rows])), 4),
            "cer": round(sum(r["errors"] for r in rows) / sum(r["ref_chars"] for r in rows), 4),
            "cer_no_spaces": round(sum(r["errors_no_spaces"] for r in rows)
                                   / sum(r["ref_chars_no_spaces"] for r in rows), 4),
            "words_found": round(sum(r["words_found"] for r in rows) / sum(r["ref_words"] for r in rows), 4),
            "seconds_per_page_median": round(float(np.median([r["seconds"] for r in rows])), 2)}


def main() -> None:
    ocr.read_image(ocr.render_pdf_page(DEBIAN, 0))  # load the models outside the timed pages
    debian = [page(DEBIAN, i) for i in range(5, 113, 11)]
    fixtures = [page(f, 0) for f in FIXTURES]
    print(json.dumps({"command": "PYTHONPATH=. python bench_results/probes/ocr_probe.py", "machine": machine(),
                      "render_scale": ocr.RENDER_SCALE, "debian": summary(debian), "fixtures": summary(fixtures),
                      "pages": debian + fixtures}, indent=1))


if __name__ == "__main__":
    main()
