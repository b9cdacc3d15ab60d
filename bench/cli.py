"""The lab's command line: ``python -m bench KIND`` (or ``thread-rag bench KIND`` from a clone)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from thread_rag.errors import ThreadRagError
from thread_rag.settings import load_settings
from . import command_line
from .datasets import shared_data


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, as the product's commands say it
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def build_parser(prog: str = "python -m bench") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description="Benchmarks of THREAD-RAG on ../shared/data "
                                "(THREAD_RAG_SHARED_DATA): the lab, apart from the product it measures.")
    p.add_argument("kind", choices=list(KINDS), help="the benchmark")
    p.add_argument("--dataset", default=None, help="data set (suite: comma-separated, default all three)")
    p.add_argument("--limit", type=int, default=None, help="questions (per data set for suite); shrinks the corpus")
    p.add_argument("--questions", type=int, default=None, help="retrieval: a seeded sample of N questions of the "
                   "split, over the full corpus; eval: synthetic structure questions (default 100)")
    p.add_argument("--model-questions", dest="model_questions", type=int, default=0,
                   help="eval: also N questions written by the chat model")
    p.add_argument("--k", type=int, default=None, help="entry chunks per question (context 5, answers/suite 3)")
    p.add_argument("--out", default=None, help="suite: folder for the JSON results (default bench_results)")
    p.add_argument("--base", default=None, help="suite: folder of an earlier suite run whose top-k answers stand as "
                   "the paired baseline (top-k is answered again on 3 questions to check they match)")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--write", default=None, help="report: replace the generated tables of this file "
                                                 "(bench_results/DETAILS.md)")
    p.add_argument("--configs", default=None, help="comma-separated configurations")
    p.add_argument("--file", default=None, help="document for ingest/windows benchmarks")
    p.add_argument("--clients", type=int, default=20, help="serve: concurrent clients")
    p.add_argument("--full", type=int, default=20, help="serve: full answers among the requests (0: quotes only)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--split", choices=["dev", "test"], default=None,
                   help="answers, retrieval: question half (answers default test; retrieval default all; dev is for tuning)")
    p.add_argument("--chunks", type=int, default=100000, help="scale: grow the library to this many chunks")
    p.add_argument("--checkpoints", default="10000,30000,100000", help="scale: measure at these chunk counts")
    p.add_argument("--queries", type=int, default=30, help="scale: queries per configuration and checkpoint")
    p.add_argument("--reuse", action="store_true",
                   help="scale: no ingest; measure queries, fresh open and one added document again on the library "
                        "an earlier run grew")
    p.add_argument("--no-download", dest="download", action="store_false",
                   help="scale: no Debian documentation packages (apt-get download); shared sets and Python's own text")
    p.add_argument("--data-dir", dest="data_dir", default=None, help="the library a kind opens or grows (scale)")
    p.add_argument("--json", action="store_true", help="accepted as every command takes it (results are JSON "
                   "unless --markdown)")
    p.add_argument("--debug", action="store_true", help="after an error's one line, print its traceback")
    return p


def main(argv: list[str] | None = None, prog: str = "python -m bench") -> int:
    """A benchmark run; an error a user can cause is one line (``error: ...``), as in the product's doors."""
    from thread_rag.errors import debugging, one_line, trace

    import bench

    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.data_dir is not None and not args.data_dir.strip():
        parser.error("--data-dir is empty: give a folder, or leave the option out")
    if args.debug:
        os.environ["THREAD_RAG_DEBUG"] = "1"
    bench.DOOR = "thread-rag" if prog == "thread-rag bench" else "python -m bench"
    try:
        return run_bench(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001
        print(f"error: {one_line(exc)}", file=sys.stderr)
        if debugging():
            print(trace(exc), file=sys.stderr)
        return 1


def run_bench(args) -> int:
    """``python -m bench KIND`` (or ``thread-rag bench KIND``): the kind's function from the table at the end of
    this module."""
    from thread_rag.render import make_console

    if args.kind not in KINDS:
        raise ThreadRagError(f"unknown benchmark {args.kind}")
    settings = load_settings({"HOME": args.data_dir} if args.data_dir else None)
    return KINDS[args.kind](settings, args, make_console(stderr=True))


def _show(out: dict, args, table=None) -> int:
    """The result as JSON, or as ``table`` renders it with ``--markdown`` (where the kind has a table)."""
    print(table(out) if args.markdown and table else json.dumps(out, indent=1, ensure_ascii=False))
    return 0


def _retrieval(settings, args, err) -> int:
    from thread_rag.render import progress_bar
    from thread_rag.retrieve.pipeline import PIPELINES
    from .corpus import open_corpus_engine
    from .datasets import check_disjoint, load_dataset
    from .report import retrieval_table
    from .retrieval import STEPS_SETTINGS, default_spec, machine, run_retrieval, same_config, search_settings

    if not args.dataset:
        raise ThreadRagError("bench retrieval needs --dataset (limit-small, aws-docs-qa, musique)")
    default = default_spec(settings)
    if settings.RERANKER == "none":  # stage-3 configurations use the packaged cross-encoder
        settings = settings.replace(RERANKER="packaged:ms-marco-MiniLM-L-12-v2")
    if args.questions is not None and (args.questions < 1 or args.limit):
        raise ThreadRagError("--questions N: N >= 1, and not with --limit (which shrinks the corpus)")
    ds = load_dataset(args.dataset, shared_data(), limit=args.limit, seed=args.seed, split=args.split,
                      sample=args.questions)
    if args.split == "test":
        check_disjoint(ds, Path(args.out or "bench_results"))
    with progress_bar(err, disable=False) as bar:
        engine, keymap, index_s = open_corpus_engine(settings, ds, progress=bar)
    configs = args.configs.split(",") if args.configs else list(PIPELINES)
    if not any(same_config(c, default, settings) for c in configs):
        configs.append(default)
    t0 = time.perf_counter()
    res = run_retrieval(engine, keymap, ds, configs)
    docs = engine.documents()
    out = {"dataset": ds.name, "split": ds.split, "queries": len(ds.queries), "corpus_docs": len(docs),
           "chunks": sum(d.chunk_count for d in docs), "corpus": "shrunk" if args.limit else "full",
           "default_config": default, "index_seconds": round(index_s, 1),
           "bench_seconds": round(time.perf_counter() - t0, 1), **res, "machine": machine(),
           "models": {"embedder": settings.EMBEDDER_MODEL, "dtype": engine.embedder.dtype,
                      "reranker": settings.RERANKER},
           "settings": search_settings(settings, *STEPS_SETTINGS), "command": command_line()}
    return _show(out, args, retrieval_table)


def _embedders(settings, args, err) -> int:
    from .ingest import run_embedders_bench

    return _show({**run_embedders_bench(settings, args.file), "command": command_line()}, args)


def _ingest(settings, args, err) -> int:
    from .ingest import run_ingest_bench

    return _show(run_ingest_bench(settings, args.file), args)


def _compare(settings, args, err) -> int:
    from thread_rag.atomic import atomic_write_json
    from thread_rag.render import progress_bar
    from .compare import compare_table, run_compare_bench

    with progress_bar(err, disable=False) as bar:
        out = run_compare_bench(settings, args, progress=bar)
    path = Path(args.out or "bench_results") / "compare-debian.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, out)
    _show(out, args, compare_table)
    err.print(f"written {path}")
    return 0


def _windows(settings, args, err) -> int:
    from .windows import run_windows_bench

    return _show(run_windows_bench(settings, args), args)


def _context(settings, args, err) -> int:
    from .context import run_context_bench
    from .report import context_table

    return _show(run_context_bench(settings, args), args, context_table)


def _reading(settings, args, err) -> int:
    from .reading import reading_table, run_reading_bench

    return _show(run_reading_bench(settings, args), args, reading_table)


def _report(settings, args, err) -> int:
    from .report import report, write_report

    if args.write:
        write_report(args.write, args.file)
    else:
        print(report(args.file))
    return 0


def _contextual(settings, args, err) -> int:
    from .contextual import run_contextual_bench

    return _show(run_contextual_bench(settings, args), args)


def _eval(settings, args, err) -> int:
    from .eval_validity import run_eval_validity

    return _show({**run_eval_validity(settings, args), "command": command_line()}, args)


def _grounding(settings, args, err) -> int:
    from .grounding import run_grounding_bench

    return _show(run_grounding_bench(settings, args), args)


def _answers(settings, args, err) -> int:
    from .answers import run_answers_bench
    from .report import answers_table

    return _show(run_answers_bench(settings, args), args, answers_table)


def _suite(settings, args, err) -> int:
    from thread_rag.render import progress_bar
    from .report import suite_report
    from .suite import run_suite

    t0 = time.perf_counter()
    with progress_bar(err, disable=False) as bar:
        paths = run_suite(settings, args, progress=bar)
    err.print(f"suite finished in {time.perf_counter() - t0:.0f} s; results: {', '.join(map(str, paths))}")
    print(suite_report([json.loads(p.read_text()) for p in paths]))
    return 0


def _refusal(settings, args, err) -> int:
    from .refusal import run_refusal_bench
    from .report import refusal_table

    return _show(run_refusal_bench(settings, args), args, refusal_table)


def _outcome(settings, args, err) -> int:
    from .outcome import run_outcome_bench

    return _show(run_outcome_bench(settings, args), args)


def _quotes(settings, args, err) -> int:
    from .outcome import run_quote_bench

    return _show(run_quote_bench(settings, args), args)


def _band(settings, args, err) -> int:
    from .refusal import run_band_bench
    from .report import band_table

    return _show(run_band_bench(settings, args), args, band_table)


def _throughput(settings, args, err) -> int:
    from .throughput import run_throughput_bench, throughput_table

    return _show(run_throughput_bench(settings, args), args, throughput_table)


def _coldstart(settings, args, err) -> int:
    from .coldstart import run_coldstart_bench

    return _show(run_coldstart_bench(settings, args), args)


def _latency(settings, args, err) -> int:
    from .agent_bench import run_latency_bench
    from .report import latency_table

    return _show(run_latency_bench(settings, args), args, latency_table)


def _serve(settings, args, err) -> int:
    from .serve_load import run_serve_load

    if args.clients < 1 or args.full < 0 or (args.limit is not None and args.limit < 1):
        raise ThreadRagError("bench serve: --clients >= 1, --full >= 0, --limit (quote-only requests) >= 1")
    return _show(run_serve_load(settings, args), args)


def _filings(settings, args, err) -> int:
    from .filings import run_filings

    out = {"command": "thread-rag bench filings", "commit": _commit(), **run_filings(settings, home=args.data_dir)}
    return _show(out, args)


def _intents(settings, args, err) -> int:
    from .intents import run_intents

    out = {**run_intents(settings, limit=args.limit), "commit": _commit()}
    return _show(out, args)


def _scale(settings, args, err) -> int:
    import shutil

    from thread_rag.atomic import atomic_write_json
    from thread_rag.render import progress_bar
    from .report import scale_svg, scale_table
    from .scale import remeasure, run_scale_bench

    try:
        marks = [int(c) for c in args.checkpoints.split(",") if c.strip()]
    except ValueError:
        raise ThreadRagError(f"--checkpoints {args.checkpoints!r}: comma-separated chunk counts") from None
    if args.chunks < 100 or any(c < 1 for c in marks) or args.queries < 1:
        raise ThreadRagError("--chunks must be >= 100, --checkpoints and --queries >= 1")
    home = Path(args.data_dir) if args.data_dir else Path("bench_out") / f"scale-{args.chunks}"
    if args.reuse:  # measure again on the library an earlier run grew
        if not (home / "catalog.json").is_file():
            raise ThreadRagError(f"--reuse: no library in {home} (run bench scale without --reuse first)")
        out = remeasure(settings, home, args.queries)
    else:
        shutil.rmtree(home, ignore_errors=True)  # ingest is measured from an empty library
        with progress_bar(err, disable=False) as bar:
            out = run_scale_bench(settings, home, args.chunks, marks, args.download, args.queries, progress=bar)
    out["command"] = command_line()
    out["commit"] = _commit()
    path = Path(args.out or "bench_results") / f"scale-{args.chunks}{'-again' if args.reuse else ''}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, out)
    svg = scale_svg(out)
    if svg:
        path.with_suffix(".svg").write_text(svg)
    print(scale_table(out) if args.markdown else json.dumps(out, indent=1))
    err.print(f"written {path}")
    return 0


def _commit() -> str | None:
    """The checkout's commit (a result names the code that made it), or None outside a git checkout."""
    import subprocess

    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                           cwd=Path(__file__).resolve().parents[1])
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


KINDS = {"retrieval": _retrieval, "embedders": _embedders, "ingest": _ingest, "compare": _compare, "scale": _scale,
         "windows": _windows, "context": _context, "reading": _reading, "report": _report, "contextual": _contextual,
         "eval": _eval, "grounding": _grounding, "answers": _answers, "suite": _suite, "refusal": _refusal,
         "band": _band, "outcome": _outcome, "quotes": _quotes, "throughput": _throughput, "coldstart": _coldstart,
         "latency": _latency, "serve": _serve, "filings": _filings, "intents": _intents}
