"""``thread-rag bench filings``: long PDFs with tables (financebench-dev: SEC filings and earnings releases).

Every filing the questions use is indexed into one data dir; each question is searched inside its own filing (the
paper's "store per filing"). Measured: page-hit@1/@5 over the first k *distinct* pages of the hits (a hit covers its
chunk's pages; ``evidence_page_num`` is 0-based, ours 1-based; any evidence page counts) against plain BM25 over each
page's pypdf text in the same run, and whether the quote alone (``ask --quote --doc DOCn``) holds the gold number
(within 1%, after units) for the questions whose gold number is printed on an evidence page. For computed answers:
the share of the figures a justification names ("6098/16388") that the quote holds. Indexing: pages per second and
the share of each phase. The search's stages alone (dense, BM25, their fusion, MaxSim; the stage-alone rankings read a
statement the question names first too), and the default search without that (``no_statements``), are measured beside
the default search in the same run, to show where a page is lost.
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from pathlib import Path

from thread_rag.errors import ThreadRagError
from thread_rag.ingest.loaders import LOADER_VERSION
from thread_rag.evaluate.score import mean_ci
from thread_rag.retrieve.pipeline import PIPELINES, Pipeline
from .retrieval import machine
from .datasets import shared_data

SET = "financebench-dev"
_NUMBER = re.compile(r"(?<![\w.])\(?-?\$?\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\)?")
_YEAR = re.compile(r"(?:19|20)\d\d")
SCALES = (1.0, 1e3, 1e6, 1e9)
# each alone, in the same run: where pages are lost; and the default search without a named statement read first
STAGES = {**{name: PIPELINES[name] for name in ("dense_only", "bm25_only", "stage1_rrf", "stage1_2")},
          "no_statements": Pipeline(statements=False)}


def numbers(text: str) -> list[float]:
    """The numbers printed in ``text`` ("$1,577", "(1,373)", "8.70", "36.8%"), signs and units aside; a bare year
    (1990-2030 without decimals) is not a figure."""
    out = []
    for m in _NUMBER.finditer(text or ""):
        whole, frac = m.group(1), m.group(2)
        if not frac and _YEAR.fullmatch(whole):
            continue
        out.append(float(whole.replace(",", "") + ("." + frac if frac else "")))
    return out


def same_figure(a: float, b: float) -> bool:
    """Whether ``a`` and ``b`` are one figure within 1%, in any of the units filings use (ones, thousands,
    millions, billions), and rounded as a filing prints it."""
    if a == 0 or b == 0:
        return a == b
    return any(abs(a * s - b) <= 0.01 * abs(b) or abs(a - b * s) <= 0.01 * abs(a * 1) for s in SCALES)


def holds(figures: list[float], text: str) -> list[float]:
    """The ``figures`` that ``text`` prints (``same_figure``)."""
    found = numbers(text)
    return [f for f in figures if any(same_figure(f, g) for g in found)]


def gold_figures(q: dict) -> tuple[list[float], list[float]]:
    """The answer's figures, and those of them printed on an evidence page. A figure of one digit or below 1 is too
    common on a page of tables to count as found."""
    figs = [f for f in numbers(q["answer"]) if f >= 10 or (f != int(f))]
    pages = " ".join(e.get("evidence_text_full_page") or "" for e in q["evidence"])
    return figs, holds(figs, pages)


def load_set(data: Path) -> list[dict]:
    path = data / "questions.jsonl"
    if not path.is_file():
        raise ThreadRagError(f"{path}: no such file (the {SET} set lives in ../shared/data)")
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def distinct_pages(hits, k: int) -> list[int]:
    """The first ``k`` distinct pages of ``hits`` in rank order, each hit's chunk pages in page order."""
    out: list[int] = []
    for h in hits:
        lo = h.page_start or h.page_end
        hi = h.page_end or lo
        if lo is None:
            continue
        for p in range(lo, hi + 1):
            if p not in out:
                out.append(p)
    return out[:k]


def bm25_pages(pdf: Path, cache: dict) -> tuple[object, list[str]]:
    """bm25s over each page's pypdf text: the baseline in ../shared/BASELINES.md, rebuilt in this run."""
    if pdf not in cache:
        import bm25s
        from pypdf import PdfReader

        texts = []
        for page in PdfReader(str(pdf)).pages:
            try:
                texts.append(page.extract_text() or "")
            except Exception:  # noqa: BLE001 - a page pypdf cannot read is an empty page for the baseline too
                texts.append("")
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        cache[pdf] = (retriever, texts)
    return cache[pdf]


def bm25_top_pages(retriever, n_pages: int, question: str, k: int) -> list[int]:
    import bm25s

    docs, _ = retriever.retrieve(bm25s.tokenize([question], stopwords="en", show_progress=False),
                                 k=min(k, n_pages), show_progress=False)
    return [int(d) + 1 for d in docs[0]]


def run_filings(settings, home: str | None = None, search_k: int = 20) -> dict:
    """Index the set's filings (into ``home``, kept, or a temporary data dir), then search and quote each
    question inside its own filing."""
    from thread_rag.agent.loop import quote_answer
    from thread_rag.engine import Engine

    data = shared_data() / SET
    questions = load_set(data)
    names = sorted({q["doc_name"] for q in questions})
    keep = home is not None
    root = Path(home) if keep else Path(tempfile.mkdtemp(prefix="thread-rag-filings-"))
    try:
        engine = Engine(settings.replace(HOME=str(root), CACHE_PATH=str(root / "cache")))
        _ = engine.embedder.model  # loaded outside the timed indexing
        indexed, docs = [], {}
        for name in names:
            r = engine.index_file(data / "pdfs" / f"{name}.pdf")
            if r.status == "failed":
                raise ThreadRagError(f"{name}: {r.error}")
            docs[name] = r.doc_id
            indexed.append({"file": name, "status": r.status, "pages": r.pages, "chunks": r.chunks,
                            "seconds": round(r.seconds, 2), "phases": r.timings})
        fresh = [d for d in indexed if d["status"] != "unchanged"]
        rows, cache = [], {}
        for i, q in enumerate(questions):
            gold = sorted({e["evidence_page_num"] + 1 for e in q["evidence"]})
            res = engine.retriever.search(q["question"], doc_id=docs[q["doc_name"]], k=search_k)
            ours = distinct_pages(res.hits, 5)
            stages = {name: distinct_pages(engine.retriever.search(q["question"], doc_id=docs[q["doc_name"]],
                                                                   k=search_k, pipeline=pipe).hits, 5)
                      for name, pipe in STAGES.items()}
            retr, texts = bm25_pages(data / "pdfs" / f"{q['doc_name']}.pdf", cache)
            base = bm25_top_pages(retr, len(texts), q["question"], 5)
            t = time.perf_counter()
            quoted = quote_answer(engine, q["question"], doc_id=docs[q["doc_name"]])
            quote_s = time.perf_counter() - t
            quote_text = "\n".join(f"{ln.get('header', '')}\n{ln.get('text', '')}" for ln in quoted.get("quote") or [])
            figs, printed = gold_figures(q)
            needed = [f for f in numbers(q.get("justification") or "") if f >= 10] if not printed else []
            rows.append({"qid": q["financebench_id"], "doc": q["doc_name"], "type": q["question_type"],
                         "gold_pages": gold, "pages": ours, "bm25_pages": base,
                         "hit1": float(bool(ours[:1]) and ours[0] in gold),
                         "hit5": float(any(p in gold for p in ours[:5])),
                         "bm25_hit1": float(bool(base[:1]) and base[0] in gold),
                         "bm25_hit5": float(any(p in gold for p in base[:5])),
                         "by_pipeline": {name: [float(bool(ps) and ps[0] in gold), float(any(p in gold for p in ps))]
                                         for name, ps in stages.items()},
                         "outcome": quoted.get("outcome"), "quote_s": round(quote_s, 2),
                         "gold_figures": figs, "printed": printed,
                         "quote_holds_gold": (bool(holds(printed, quote_text)) if printed else None),
                         "needed": needed, "quote_holds_needed": len(holds(needed, quote_text)),
                         "quote_pages": sorted({int(n) for ln in quoted.get("quote") or []
                                                for n in re.findall(r"\d+", ln.get("pages") or "")}),
                         "quote_words": len(quote_text.split())})  # the text stays out: the set's pages are CC-BY-NC
        return _summary(rows, indexed, fresh, search_k, engine, settings)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _mean_ci(values: list[float]) -> dict:
    return mean_ci(values, places=3)


def _summary(rows: list[dict], indexed: list[dict], fresh: list[dict], search_k: int, engine, settings) -> dict:
    printed = [r for r in rows if r["printed"]]
    computed = [r for r in rows if not r["printed"] and r["needed"]]
    pages = sum(d["pages"] or 0 for d in fresh)
    secs = sum(d["seconds"] for d in fresh)
    phases: dict = {}
    for d in fresh:
        for key, v in (d["phases"] or {}).items():
            if isinstance(v, (int, float)):
                phases[key] = phases.get(key, 0.0) + v
    diff = [r["hit5"] - r["bm25_hit5"] for r in rows]
    return {
        "set": SET, "questions": len(rows), "filings": len(indexed),
        "corpus": "the 14 filings of ../shared/data/financebench-dev, each indexed whole; every question searched "
                  "inside its own filing",
        "page_hit_at_1": _mean_ci([r["hit1"] for r in rows]), "page_hit_at_5": _mean_ci([r["hit5"] for r in rows]),
        "bm25_pages_hit_at_1": _mean_ci([r["bm25_hit1"] for r in rows]),
        "bm25_pages_hit_at_5": _mean_ci([r["bm25_hit5"] for r in rows]),
        "hit5_minus_bm25": _mean_ci(diff),
        "by_pipeline": {name: {"page_hit_at_1": _mean_ci([r["by_pipeline"][name][0] for r in rows]),
                               "page_hit_at_5": _mean_ci([r["by_pipeline"][name][1] for r in rows])}
                        for name in STAGES},
        "printed_gold_in_quote": _mean_ci([float(r["quote_holds_gold"]) for r in printed]),
        "computed_figures_in_quote": {"questions": len(computed),
                                      "figures": sum(len(r["needed"]) for r in computed),
                                      "in_quote": sum(r["quote_holds_needed"] for r in computed)},
        "indexing": {"pages": pages, "seconds": round(secs, 1),
                     "pages_per_s": round(pages / secs, 2) if secs else None,
                     "phase_seconds": {k: round(v, 1) for k, v in phases.items()},
                     "reindexed_files": len(fresh)},
        "search_k": search_k, "loader_version": LOADER_VERSION, "machine": machine(),
        "models": {"embedder": settings.EMBEDDER_MODEL, "dtype": engine.embedder.dtype,
                   "reranker": settings.RERANKER},
        "files": indexed, "rows": rows,
    }
