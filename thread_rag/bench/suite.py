"""``thread-rag bench suite``: the whole comparison (context strategies + LLM answers on equal terms) on
aws-docs-qa, leval legal_contract_qa and musique, in one command.

Per data set: a seeded sample of the ``test`` split's questions (``--limit`` each; default 60 per set),
the corpus shrunk to their gold documents plus seeded distractors and indexed (cached under
``bench_out/``), the context table over all six strategies, then answers from each answering strategy
(``bench answers``: default ``topk`` and ``walk``, the product's default path) on every question. Each
data set's result is written as it finishes
(``<out>/suite-<dataset>.json``), so an interrupted run keeps what it measured; the Markdown tables
are printed at the end (``thread-rag bench report`` prints them again from the files).

``--base DIR``: the top-k answers of an earlier suite run (``DIR/suite-<dataset>.json``) stand as the paired
baseline, so further readings can be compared without answering top-k again. The earlier run must share the
questions, k, the backend and every shared setting (else one clear error), and top-k is answered again on the first
``BASE_CHECK`` questions: the result records how many came out word for word the same (answers are greedy, so all
should).
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

from ..atomic import atomic_write_json

SUITE = (("aws-docs-qa", 60), ("leval-legal", 60), ("musique", 60))
SUITE_STRATEGIES = ["topk", "walk"]
SUITE_K = 3
BASE_CHECK = 3


class BaseMismatch(ValueError):
    pass


def earlier_topk(path: Path, answers_meta: dict) -> list[dict]:
    """The top-k rows of the earlier suite result at ``path``, if it was answered on equal terms with
    ``answers_meta`` (questions in the same order, k, backend, shared settings); else BaseMismatch."""
    if not path.exists():
        raise BaseMismatch(f"--base: no earlier result {path}")
    prev = json.loads(path.read_text())["answers"]
    rows = prev.get("rows", {}).get("topk")
    if not rows:
        raise BaseMismatch(f"--base: {path} has no top-k answers")
    for key in ("k", "backend", "shared_settings", "search_scope"):
        if prev.get(key) != answers_meta.get(key):
            raise BaseMismatch(f"--base: {path} differs in {key}: {prev.get(key)!r} vs {answers_meta.get(key)!r}")
    if [r["qid"] for r in rows] != answers_meta["qids"]:
        raise BaseMismatch(f"--base: {path} answered other questions (or another order)")
    return rows


def with_base(settings, ds, engine, keymap, strategies, k, path: Path, progress=None, model=None) -> dict:
    """Answers for ``strategies`` paired against the top-k rows stored at ``path`` (see the module doc).
    ``model``: a chat model instead of the configured one (tests)."""
    from ..llm.backends import make_chat_model
    from .answers import bench_settings, run_answers, summarise

    model = model or make_chat_model(bench_settings(engine.settings, k))
    check = run_answers(settings, dataclasses.replace(ds, queries=ds.queries[:BASE_CHECK]), engine, keymap,
                        ["topk"], k=k, model=model)
    meta = {**check, "qids": [q.qid for q in ds.queries]}
    base = earlier_topk(path, meta)
    same = sum(a["answer"] == b["answer"] for a, b in zip(check["rows"]["topk"], base))
    out = run_answers(settings, ds, engine, keymap, strategies, k=k, progress=progress, model=model)
    out["rows"] = {"topk": base, **out["rows"]}
    out["strategies"] = {"topk": summarise(base),
                         **{s: summarise(out["rows"][s], base) for s in strategies}}
    out["topk_from"] = {"file": str(path), "checked": len(check["rows"]["topk"]), "identical": same}
    return out


def run_suite(settings, args, progress=None) -> list[Path]:
    from .answers import run_answers
    from .context import STRATEGIES, run_context
    from .corpus import open_corpus_engine
    from .datasets import check_disjoint, load_dataset
    from .retrieval import machine

    out_dir = Path(args.out or "bench_results")
    out_dir.mkdir(parents=True, exist_ok=True)
    strategies = args.configs.split(",") if args.configs else SUITE_STRATEGIES
    k = args.k or SUITE_K
    names = args.dataset.split(",") if args.dataset else [n for n, _ in SUITE]
    sizes = dict(SUITE)
    t_suite = time.perf_counter()
    written = []
    for name in names:
        t0 = time.perf_counter()
        ds = load_dataset(name, settings.shared_data, limit=args.limit or sizes.get(name, 30), seed=args.seed,
                          split="test")
        check_disjoint(ds, Path("bench_results"))
        check_disjoint(ds, out_dir)
        engine, keymap, index_s = open_corpus_engine(settings, ds, progress=progress)
        docs = engine.documents()
        context = run_context(settings, ds, engine, keymap, STRATEGIES, k=k)
        if getattr(args, "base", None) and "topk" not in strategies:
            answers = with_base(settings, ds, engine, keymap, strategies, k, Path(args.base) / f"suite-{name}.json",
                                progress=progress)
        else:
            answers = run_answers(settings, ds, engine, keymap, strategies, k=k, progress=progress)
        result = {"dataset": ds.name, "questions": len(ds.queries), "corpus_docs": len(docs),
                  "chunks": sum(d.chunk_count for d in docs), "index_seconds": round(index_s, 1),
                  "seconds": round(time.perf_counter() - t0, 1),
                  "suite_seconds_so_far": round(time.perf_counter() - t_suite, 1),
                  "command": "thread-rag " + " ".join(sys.argv[1:]), "machine": machine(),
                  "models": {"embedder": settings.EMBEDDER_MODEL, "dtype": engine.embedder.dtype,
                             "llm": answers["backend"]},
                  "context": context, "answers": answers}
        path = out_dir / f"suite-{name}.json"
        atomic_write_json(path, result)
        written.append(path)
    return written
