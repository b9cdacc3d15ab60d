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
import time
from pathlib import Path

from thread_rag.atomic import atomic_write_json
from thread_rag.errors import ThreadRagError
from .retrieval import RECORDED_LATER as RETRIEVAL_RECORDED_LATER
from . import command_line
from .datasets import shared_data

SUITE = (("aws-docs-qa", 60), ("leval-legal", 60), ("musique", 60))
SUITE_STRATEGIES = ["topk", "walk"]
SUITE_K = 3
BASE_CHECK = 3
# shared settings older results did not record, at the value they had then: the retrieval files' ones, and WALK_BACK
RECORDED_LATER = {"WALK_BACK": 0, "EXPLAIN_FROM": "sources", "QUOTE_MIN": -100.0, **RETRIEVAL_RECORDED_LATER}


class BaseMismatch(ThreadRagError):
    """An earlier run cannot stand as the baseline (one line at the command line)."""


def earlier_suite(path: Path) -> dict:
    """The earlier suite result at ``path`` with its top-k rows; BaseMismatch if there is none."""
    try:
        prev = json.loads(path.read_text())
        rows = prev["answers"]["rows"]["topk"]
    except (OSError, ValueError, KeyError, TypeError):
        raise BaseMismatch(f"--base: {path} is not a suite result with top-k answers") from None
    if not rows:
        raise BaseMismatch(f"--base: {path} has no top-k answers")
    return prev


def earlier_topk(prev: dict, path: Path, answers_meta: dict) -> list[dict]:
    """The top-k rows of the earlier suite result ``prev`` (read from ``path``), if it was answered on equal terms
    with ``answers_meta`` (questions in the same order, k, backend, search scope, shared settings); else
    BaseMismatch. A setting an older file did not record had its default then (``RECORDED_LATER``)."""
    answers = prev["answers"]
    rows = answers["rows"]["topk"]
    recorded = {**RECORDED_LATER, **answers.get("shared_settings", {})}
    for key, was in (("k", answers.get("k")), ("backend", answers.get("backend")),
                     ("search_scope", answers.get("search_scope")), ("shared_settings", recorded)):
        if was != answers_meta.get(key):
            raise BaseMismatch(f"--base: {path} differs in {key}: {was!r} vs {answers_meta.get(key)!r}")
    if [r["qid"] for r in rows] != answers_meta["qids"]:
        raise BaseMismatch(f"--base: {path} answered other questions (or another order)")
    return rows


def with_base(ds, engine, keymap, strategies, k, path: Path, progress=None, model=None,
              prev: dict | None = None) -> dict:
    """Answers for ``strategies`` paired against the top-k rows stored at ``path`` (see the module doc).
    ``prev``: that file already read (``earlier_suite``); ``model``: a chat model instead of the configured one (tests)."""
    from thread_rag.llm.backends import make_chat_model
    from .answers import bench_settings, run_answers, summarise

    prev = prev or earlier_suite(path)
    model = model or make_chat_model(bench_settings(engine.settings, k))
    check = run_answers(dataclasses.replace(ds, queries=ds.queries[:BASE_CHECK]), engine, keymap,
                        ["topk"], k=k, model=model)
    base = earlier_topk(prev, path, {**check, "qids": [q.qid for q in ds.queries]})
    same = sum(a["answer"] == b["answer"] for a, b in zip(check["rows"]["topk"], base))
    if same < len(check["rows"]["topk"]):
        raise BaseMismatch(f"--base: top-k answered again differs from {path} on "
                           f"{len(check['rows']['topk']) - same} of {len(check['rows']['topk'])} questions "
                           f"(another model, prompt or search): answer top-k again instead")
    out = run_answers(ds, engine, keymap, strategies, k=k, progress=progress, model=model)
    out["rows"] = {"topk": base, **out["rows"]}
    out["strategies"] = {"topk": summarise(base),
                         **{s: summarise(out["rows"][s], base) for s in strategies}}
    out["topk_from"] = {"file": str(path), "checked": len(check["rows"]["topk"]), "identical": same}
    return out


def check_base_args(args, names: list[str], strategies: list[str], out_dir: Path) -> dict[str, tuple[Path, dict]]:
    """``--base``: per data set, the earlier result's path and content, read and checked before anything is indexed
    or answered; {} without ``--base``."""
    if not getattr(args, "base", None):
        return {}
    base = Path(args.base)
    if "topk" in strategies:
        raise BaseMismatch("--base pairs further readings with earlier top-k answers: leave topk out of --configs")
    if base.resolve() == out_dir.resolve():
        raise BaseMismatch("--base and --out are the same folder: the new results would overwrite the baseline")
    paths = {name: base / f"suite-{name}.json" for name in names}
    return {name: (path, earlier_suite(path)) for name, path in paths.items()}


def same_corpus(prev: dict, docs: list, embedder: str, path: Path) -> None:
    for key, here in (("corpus_docs", len(docs)), ("chunks", sum(d.chunk_count for d in docs))):
        if prev.get(key) != here:
            raise BaseMismatch(f"--base: {path} searched another corpus ({key} {prev.get(key)} vs {here})")
    if prev.get("models", {}).get("embedder") != embedder:
        raise BaseMismatch(f"--base: {path} used another embedder")


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
    earlier = check_base_args(args, names, strategies, out_dir)
    sizes = dict(SUITE)
    t_suite = time.perf_counter()
    written = []
    for name in names:
        t0 = time.perf_counter()
        ds = load_dataset(name, shared_data(), limit=args.limit or sizes.get(name, 30), seed=args.seed,
                          split="test")
        check_disjoint(ds, Path("bench_results"))
        check_disjoint(ds, out_dir)
        engine, keymap, index_s = open_corpus_engine(settings, ds, progress=progress)
        docs = engine.documents()
        if earlier:
            path, prev = earlier[name]
            same_corpus(prev, docs, settings.EMBEDDER_MODEL, path)
        context = run_context(settings, ds, engine, keymap, STRATEGIES, k=k)
        if earlier:
            answers = with_base(ds, engine, keymap, strategies, k, path, progress=progress, prev=prev)
        else:
            answers = run_answers(ds, engine, keymap, strategies, k=k, progress=progress)
        result = {"dataset": ds.name, "questions": len(ds.queries), "corpus_docs": len(docs),
                  "chunks": sum(d.chunk_count for d in docs), "index_seconds": round(index_s, 1),
                  "seconds": round(time.perf_counter() - t0, 1),
                  "suite_seconds_so_far": round(time.perf_counter() - t_suite, 1),
                  "command": command_line(), "machine": machine(),
                  "models": {"embedder": settings.EMBEDDER_MODEL, "dtype": engine.embedder.dtype,
                             "llm": answers["backend"]},
                  "context": context, "answers": answers}
        path = out_dir / f"suite-{name}.json"
        atomic_write_json(path, result)
        written.append(path)
    return written
