"""``thread-rag`` command line: one subcommand per engine operation, ``--json`` and ``--data-dir`` on all.

Errors a user can cause print one line (``error: ...``) and exit 1; no traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

from .errors import ThreadRagError, shown
from .records import page_range


class _Parser(argparse.ArgumentParser):
    """A mistyped command line is one line that names the command's --help (argparse printed its usage block
    first), and exits 2 as usage errors do."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")

    def parse_args(self, args=None, namespace=None):
        """Words no parser takes are the command's error (argparse's top parser named `thread-rag --help`)."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            getattr(self, "commands", {}).get(getattr(ns, "cmd", None), self).error(f"unrecognized arguments: {' '.join(extras)}")
        return ns


def _common(p: argparse.ArgumentParser, top: bool) -> None:
    d = None if top else argparse.SUPPRESS
    p.add_argument("--data-dir", dest="data_dir", default=d, help="data directory (default: local_rag_db/ beside "
                   "runner.py in a checkout, else the per-user data dir; env THREAD_RAG_HOME)")
    p.add_argument("--json", dest="json", action="store_true", default=False if top else argparse.SUPPRESS,
                   help="print JSON")
    p.add_argument("--debug", dest="debug", action="store_true", default=False if top else argparse.SUPPRESS,
                   help="after an error's one line, print its traceback (also THREAD_RAG_DEBUG=1)")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="thread-rag", description="Terminal RAG agent for long procedural documents.")
    _common(ap, True)
    ap.commands = {}  # the subcommands' parsers, by name: their own errors name their own --help
    sub = ap.add_subparsers(dest="cmd")

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        p = ap.commands[name] = sub.add_parser(name, help=help, description=help)
        _common(p, False)
        return p

    p = cmd("index", "index files or directories (PDF, DOCX, TXT, Markdown, reStructuredText, HTML)")
    p.add_argument("paths", nargs="+")
    p.add_argument("--calibrate", action="store_true",
                   help="then calibrate answered / not answered on the library, if it has no calibration or changed "
                        "by more than a quarter since (thread-rag calibrate)")
    p = cmd("watch", "keep folders indexed: index new and edited files, remove deleted ones (Ctrl-C to stop)")
    p.add_argument("paths", nargs="+", metavar="DIR")
    p.add_argument("--debounce", type=float, default=1.0,
                   help="seconds a file must be quiet before it is (re)indexed (default 1.0)")
    p.add_argument("--prune", action="store_true",
                   help="at start, remove documents whose files are missing even when a folder looks unmounted (all "
                        "of its files, or more than half and more than 5, gone); while watching they are still kept")
    cmd("docs", "list indexed documents")
    p = cmd("delete", "delete a document")
    p.add_argument("doc_id")
    p = cmd("search", "three-stage search (rag_search)")
    p.add_argument("query")
    p.add_argument("--doc", dest="doc_id")
    p.add_argument("--k", type=int, default=None)
    p.add_argument("--pages", help="page range, e.g. 10-20")
    p.add_argument("--heading", help="only chunks whose heading path contains this text")
    p = cmd("fetch", "fetch context windows for chunk ids")
    p.add_argument("chunk_ids", nargs="+")
    p.add_argument("--budget", type=int, default=None, help="token budget for all windows")
    p = cmd("nested", "hierarchical retrieval with ancestor/descendant exclusion")
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--doc", dest="doc_id")
    p.add_argument("--offset", type=int, default=0)
    p = cmd("compare", "compare two versions of a document step by step (aligned chunk threads)")
    p.add_argument("doc_a", help="version A, e.g. DOC1")
    p.add_argument("doc_b", help="version B, e.g. DOC2")
    p.add_argument("--topic", default=None, help="only the aligned region around this topic's best search hits")
    p.add_argument("--explain", action="store_true", help="one LLM sentence per changed pair (cached; slow)")
    p.add_argument("--limit", type=int, default=None, help="show at most N changed/only rows (and explain at most N)")
    p.add_argument("--all", dest="show_same", action="store_true", help="show same rows one by one instead of folded")
    p.add_argument("--no-pager", dest="pager", action="store_false", help="never page (paged only on a terminal)")
    p = cmd("preheat", "summarise every chunk now so windows are instant later")
    p.add_argument("doc_id", nargs="?")
    p = cmd("chat", "interactive chat (same as python runner.py)")
    p = cmd("ask", "answer one question: the manual's own lines first, then the model's checked explanation")
    p.add_argument("question")
    p.add_argument("--quote", action="store_true", help="the quoted lines only, no LLM call (ANSWER_MODE = quote)")
    p.add_argument("--doc", dest="doc_id", help="only this document, e.g. DOC1")
    p.add_argument("--pages", help="enter the document only on these pages, e.g. 10-20 (the walk reads on)")
    p.add_argument("--heading", help="enter only at chunks whose heading path contains this text")
    p.add_argument("--anyway", action="store_true",
                   help="explain a question the documents do not answer all the same (it stays 'not answered')")
    p = cmd("calibrate", "calibrate answered / partly / not answered on this library's own questions (no model)")
    p.add_argument("--questions", type=int, default=None, help="questions made from the library, each asked twice "
                   "(default 40)")
    p.add_argument("--target", type=float, default=None,
                   help="share of the library's answerable questions the threshold may refuse (default 0.05)")
    p = cmd("eval", "how well search (and answers) work on your own documents: questions made from them, scored")
    p.add_argument("doc_ids", nargs="*", metavar="DOC", help="only these documents (default: all)")
    p.add_argument("--questions", type=int, default=100, help="questions made from headings, procedures, table "
                   "rows, defined terms and listing sentences (default 100)")
    p.add_argument("--model-questions", dest="model_questions", type=int, default=0,
                   help="also N questions written by the chat model for sampled chunks (slow: ~10 s each on 2 cores)")
    p.add_argument("--probes", type=int, default=None, help="unanswerable probes (default a fifth of --questions)")
    p.add_argument("--answers", nargs="?", const="quote", choices=["quote", "full"], default=None,
                   help="also answer every question: quote (no model, the default) or full (as ask does)")
    p.add_argument("--set", dest="set_path", default=None,
                   help="the question set (JSONL; default <data dir>/eval/questions.jsonl, reused and resumed)")
    p.add_argument("--out", default=None, help="the run file (default <data dir>/eval/run-<time>.json)")
    p.add_argument("--compare", default=None, metavar="RUN.json",
                   help="an earlier run's file: paired differences on the same questions")
    p.add_argument("--seed", type=int, default=13)
    p = cmd("script", "run a JSONL file of tool calls and questions")
    p.add_argument("file", help="the JSONL file, or - to read standard input")
    p = cmd("bench", "the benchmark lab on ../shared/data, from a clone of the repository (python -m bench)")
    p.add_argument("rest", nargs=argparse.REMAINDER, metavar="KIND ...", help="what `python -m bench --help` lists")
    p = cmd("mcp", "serve the tools to other agents over stdio (Model Context Protocol); read-only by default")
    p.add_argument("--allow-writes", dest="allow_writes", action="store_true",
                   help="also offer index_new_document (inside ALLOWED_ROOTS) and pre_heat_summaries")
    p = cmd("serve", "the HTTP API and a web page on this library (loopback; read-only by default)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (not loopback: needs THREAD_RAG_SERVE_TOKEN)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--allow-writes", dest="allow_writes", action="store_true",
                   help="also /upload, /clear and removing a document")
    p = cmd("doctor", "check the installation and print what to fix")
    p.add_argument("--repair", action="store_true",
                   help="first rebuild what is derived from the stored chunks (lost token caches, trees) and remove "
                        "orphans and unfinished writes; needs no source file")
    cmd("stats", "store statistics")
    cmd("settings", "every setting: its value, where it came from, and whether it acts")
    return ap


def _engine(args):
    from .engine import Engine
    from .settings import inert_settings, load_settings

    settings = load_settings({"HOME": args.data_dir} if args.data_dir else None)
    for line in inert_settings(settings):  # a setting the user moved that this path ignores: said, once
        print(f"note: {line}", file=sys.stderr)
    return Engine(settings)


def no_documents(engine, args) -> str:
    """The empty library's hint: where it looked (a mistyped --data-dir shows) and the index command for it."""
    import shlex

    option = f"--data-dir {shlex.quote(str(engine.home))} " if getattr(args, "data_dir", None) else ""
    return f"No documents indexed in {engine.home}. Index a file or folder: thread-rag {option}index PATH"


def _print_json(obj: Any) -> None:
    from .records import to_dict

    print(json.dumps(to_dict(obj), ensure_ascii=False, indent=1))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    lab = _bench_args(argv)
    if lab is not None:  # the lab parses its own command line (its --help lists the kinds)
        return _one_line_errors(lambda: _run_lab(lab))
    ap = build_parser()
    args = ap.parse_args(argv)
    if getattr(args, "data_dir", None) is not None and not args.data_dir.strip():  # a script's unset variable
        ap.error("--data-dir is empty: give a folder, or leave the option out for the default data dir")
    if args.cmd is None:
        args.cmd = "chat"
    if args.debug:
        os.environ["THREAD_RAG_DEBUG"] = "1"  # the chat and the tool doors read it too
    return _one_line_errors(lambda: _dispatch(args))


def _bench_args(argv: list[str]) -> list[str] | None:
    """The lab's arguments when the command is ``bench`` (the global options before it go with them), else None."""
    i = 0
    while i < len(argv) and (argv[i] in ("--json", "--debug", "--data-dir") or argv[i].startswith("--data-dir=")):
        i += 2 if argv[i] == "--data-dir" else 1
    return [*argv[i + 1:], *argv[:i]] if argv[i:i + 1] == ["bench"] else None


def _one_line_errors(run: Callable[[], int]) -> int:
    """``run()``, with every error a user can cause said in one line (exit 1), never a traceback."""
    try:
        return run()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): nothing to say, and nothing more to flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - every error a user can cause is one line, never a traceback
        from .errors import debugging, one_line, trace

        print(f"error: {one_line(exc)}", file=sys.stderr)
        if debugging():
            print(trace(exc), file=sys.stderr)
        return 1


def _settings(args, out) -> int:
    """``thread-rag settings``: one row per setting (``--json``: the rows)."""
    from .render import styled
    from .settings import describe_settings, load_settings

    rows = describe_settings(load_settings({"HOME": args.data_dir} if args.data_dir else None))
    if args.json:
        _print_json(rows)
        return 0
    for r in rows:
        mark = "" if r["acts"] else f"  (inert: {r['note'].split(': ', 1)[-1]})"
        out.print(styled(f"{r['name']:<24} {r['value']!r:<28} {r['source']}{mark}"))
    return 0


def _dispatch(args) -> int:
    """The command's function from the table at the end of this module: a few need no library open."""
    from .render import make_console

    out = make_console()
    if args.cmd in WITHOUT_ENGINE:
        return WITHOUT_ENGINE[args.cmd](args, out)
    if args.cmd not in COMMANDS:
        raise ThreadRagError(f"unknown command {args.cmd}")
    return COMMANDS[args.cmd](_engine(args), args, out)


def _cmd_doctor(args, out) -> int:
    from .doctor import run_doctor

    return run_doctor(args)


def _cmd_bench(args, out) -> int:  # reached by a parse only in tests of the table: main hands ``bench`` on first
    return _run_lab([*args.rest, *(["--data-dir", args.data_dir] if getattr(args, "data_dir", None) else [])])


def _run_lab(argv: list[str]) -> int:
    """The benchmark lab, which is not part of the package: it runs from a clone (``bench/`` beside
    ``thread_rag/`` and the project's pyproject.toml; never another distribution's ``bench``)."""
    import importlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if not ((root / "bench" / "baselines.py").is_file() and (root / "pyproject.toml").is_file()):
        raise ThreadRagError("the benchmark lab is not installed with the package: run it from a clone of the "
                             "repository (python -m bench KIND)")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module("bench.cli").main(argv, prog="thread-rag bench")


def _cmd_chat(engine, args, out) -> int:
    from .repl import run_repl

    return run_repl(engine)


def _cmd_mcp(engine, args, out) -> int:
    from .mcp_server import serve

    return serve(engine, allow_writes=args.allow_writes)


def _cmd_serve(engine, args, out) -> int:
    from .serve import serve

    return serve(engine, host=args.host, port=args.port, allow_writes=args.allow_writes)


def _cmd_watch(engine, args, out) -> int:
    from .watch import run_watch

    return run_watch(engine, args.paths, as_json=args.json, quiet=args.debounce, prune=args.prune)


def _cmd_docs(engine, args, out) -> int:
    from rich.table import Table
    from rich.text import Text

    from . import tools
    from .render import styled

    res = tools.list_available_documents(engine)
    if args.json:  # the user's own terminal is told each file (the tool keeps home folders from models)
        paths = {d.doc_id: d.path for d in engine.documents()}
        _print_json({"documents": [{**d, "path": paths.get(d["doc_id"])} for d in res["documents"]]})
        return 0
    if not res["documents"]:
        out.print(styled(no_documents(engine, args)))
        return 0
    t = Table("id", "name", "chunks", "pages", "indexed")
    for d in res["documents"]:
        t.add_row(*(Text(str(x)) for x in (d["doc_id"], shown(d["label"]), d["chunks"], d["pages"] or "-",
                                           d["indexed_at"])))
    out.print(t)
    return 0


def _cmd_delete(engine, args, out) -> int:
    from . import tools
    from .render import styled

    r = tools.remove_document(engine, args.doc_id)
    if args.json:
        _print_json({"deleted": r["removed"], "name": r["name"]})
    else:
        out.print(styled(f"deleted {r['removed']} ({shown(r['name'])})"))
    return 0


def _cmd_search(engine, args, out) -> int:
    from . import tools
    from .render import render_search, styled

    filters = {}
    if args.pages is not None:
        filters["pages"] = page_range(args.pages)
    if args.heading is not None:
        if not args.heading.strip():
            raise ThreadRagError("--heading is empty: leave it out to search every section")
        filters["heading"] = args.heading
    res = tools.rag_search(engine, args.query, doc_id=args.doc_id, k=args.k, **filters)
    if args.json:
        _print_json(res)
        return 0
    if not res["hits"] and not engine.documents():
        out.print(styled(no_documents(engine, args)))
    render_search(out, res)
    return 0


def _cmd_fetch(engine, args, out) -> int:
    from . import tools
    from .render import make_console, render_windows

    res = tools.fetch_chunks_by_id(engine, args.chunk_ids, token_budget=tools.budget_option(args.budget))
    if args.json:
        _print_json(res)
    else:
        render_windows(out, res, err=make_console(stderr=True))
    return 1 if res.get("errors") else 0  # the good windows are printed all the same


def _cmd_nested(engine, args, out) -> int:
    from . import tools
    from .render import render_nested, styled

    res = tools.nested_retrieve(engine, args.query, limit=args.limit, doc_id=args.doc_id, offset=args.offset)
    if args.json:
        _print_json(res)
        return 0
    if not res["hits"] and not engine.documents():
        out.print(styled(no_documents(engine, args)))
    render_nested(out, res)
    return 0


def _cmd_preheat(engine, args, out) -> int:
    from . import tools
    from .render import preheat_notes, progress_bar, styled

    if args.doc_id is None and not args.json and not engine.documents():
        out.print(styled(no_documents(engine, args)))
        return 0
    with progress_bar(out, disable=args.json) as bar:
        res = tools.pre_heat_summaries(engine, args.doc_id, progress=bar)
    if args.json:
        _print_json(res)
    else:
        out.print(styled(f"summaries made {res['made']}, already cached {res['cached']}, failed {res['failed']}, "
                         f"{res['seconds']:.1f} s ({res['summarizer']})"))
        for line in preheat_notes(res):
            print(line, file=sys.stderr)
    return 1 if res["failed"] else 0


def _cmd_script(engine, args, out) -> int:
    from .agent.script import run_script

    return run_script(engine, args.file)


def _cmd_stats(engine, args, out) -> int:
    from . import tools
    from .render import stats_line, styled

    stats = tools.library_stats(engine)
    if args.json:
        _print_json(stats)
        return 0
    out.print(styled(stats_line(stats) + (" (nothing indexed there)" if engine.fresh else "")))
    return 0


def _cmd_ask(engine, args, out) -> int:
    """The quote as soon as it is chosen (before the model loads), then the explanation as it streams, checked."""
    from .agent.loop import Agent
    from .render import answer_notes, marked_text, quote_block, sources_line, styled

    if not engine.documents():  # the agent says so too, but with the chat's /index, not this door's command
        raise ThreadRagError(no_documents(engine, args))
    if args.quote:
        engine.settings = engine.settings.replace(ANSWER_MODE="quote")

    def event(kind: str, data: dict) -> None:
        if kind in ("quote", "related") and not args.json:
            for line in quote_block(data["lines"], related=kind == "related"):
                out.print(line)
            if data.get("note"):
                out.print(styled((f"({data['note']})", "dim")))
            if data.get("cut"):
                out.print(styled((f"({data['cut']})", "dim")))
            out.file.flush()  # into a pipe too, the quote is there before the model loads
        elif kind == "outcome" and not args.json and data.get("line"):
            out.print(styled((data["line"], "bold yellow")))
        elif kind == "answer_start" and not args.json:
            out.print(styled(("explanation:" if not data.get("anyway") else
                              "explanation (asked anyway: the documents do not answer this):", "bold")))

    streamed = []

    def token(text: str) -> None:
        streamed.append(text)
        out.print(marked_text(text), end="", soft_wrap=True)
        out.file.flush()

    ans = Agent(engine, on_event=event).ask(args.question, on_token=None if args.json else token,
                                            doc_id=args.doc_id, anyway=args.anyway,
                                            pages=page_range(args.pages) if args.pages is not None else None,
                                            heading=args.heading)
    if args.json:
        d = _answer_json(ans)
        print(json.dumps(d, ensure_ascii=False, indent=1))
        return 0
    if streamed and not "".join(streamed).endswith("\n"):
        out.print()
    for note in answer_notes(ans, engine.settings):
        out.print(styled((note, "dim")))
    if ans.citations and not ans.refused:
        out.print(styled(f"sources: {sources_line(ans)}"))
    return 0


def _cmd_eval(engine, args, out) -> int:
    from .evaluate.run import EvalOptions, run_eval
    from .render import make_console, progress_bar

    opts = EvalOptions(args.doc_ids, questions=args.questions, model_questions=args.model_questions,
                       probes=args.probes, answers=args.answers, set_path=args.set_path, out=args.out,
                       compare=args.compare, seed=args.seed)
    if not engine.documents():
        raise ThreadRagError(no_documents(engine, args))
    with progress_bar(make_console(stderr=True), disable=args.json) as bar:
        run = run_eval(engine, opts, progress=bar)
    if args.json:
        _print_json({k: v for k, v in run.items() if k != "rows"} | {"rows": run["rows"]})
        return 0
    from .evaluate.view import render_run

    render_run(out, run)
    return 0


def _answer_json(ans) -> dict:
    """An answer for ``--json``: the quote first (its own field and time), then the rest."""
    from .records import to_dict

    d = to_dict(ans)
    first = {k: d.pop(k) for k in ("question", "outcome", "quote", "quote_best", "related") if k in d}
    return {**first, **d}


def _cmd_compare(engine, args, out) -> int:
    from . import tools

    if args.limit is not None and args.limit < 1:
        raise ThreadRagError(f"--limit {args.limit}: must be 1 or more")
    res = tools.compare_documents(engine, args.doc_a, args.doc_b, topic=args.topic, explain=args.explain,
                                  explain_limit=args.limit or 10, explain_within=args.limit)  # the rows shown
    if args.json:
        _print_json(res)
        return 0
    from .compare.view import render_comparison

    if args.pager and sys.stdout.isatty():  # page long output on a terminal only (never into a pipe or file)
        import os

        os.environ.setdefault("LESS", "-R")  # keep the colours in less
        with out.pager(styles=True):
            render_comparison(out, res, limit=args.limit, show_same=args.show_same)
    else:
        render_comparison(out, res, limit=args.limit, show_same=args.show_same)
    return 0


def _cmd_index(engine, args, out) -> int:
    from .render import file_named, progress_bar, styled

    t0 = time.perf_counter()
    if not engine.expand_paths(args.paths):
        raise ThreadRagError(f"no supported files in {', '.join(args.paths)}")
    results: list = []
    try:
        with progress_bar(out, disable=args.json) as bar:
            for r in engine.index_each(args.paths, progress=bar):  # each line as its file is committed
                results.append(r)
                if args.json:
                    continue
                if r.status == "failed":
                    print(f"error: {r.error}", file=sys.stderr)
                    continue
                out.print(styled(f"{r.status:9} {r.doc_id:7} {r.chunks:5d} {'chunk ' if r.chunks == 1 else 'chunks'}  {r.seconds:6.1f} s  "
                                 f"{file_named(r.path, r.same_as, r.moved_from)}"))
                for w in r.warnings:
                    print(f"warning: {shown(r.path)}: {w}", file=sys.stderr)
    except KeyboardInterrupt:
        if args.json:
            _print_json({"results": results, "interrupted": True, "seconds": round(time.perf_counter() - t0, 3)})
        try:  # what the interrupted group wrote and did not commit goes now, not at the next start
            engine.recover(sweep=False)
        except Exception:  # noqa: BLE001 - the next start recovers; the interrupt is what to report
            pass
        raise
    calibrated = _calibrate_if_due(engine, args, out) if args.calibrate else None
    if args.json:
        _print_json({"results": results, "seconds": round(time.perf_counter() - t0, 3),
                     **({"calibration": calibrated} if calibrated is not None else {})})
    return 1 if any(r.status == "failed" for r in results) else 0


def _calibrate_if_due(engine, args, out) -> dict:
    from .evaluate.calibrate import due

    if not due(engine):
        if not args.json:
            out.print("calibration: up to date")
        return {"made": False}
    try:
        return _cmd_calibrate(engine, argparse.Namespace(questions=None, target=None, json=args.json), out, quiet=True)
    except ThreadRagError as exc:  # the documents are indexed; only the calibration could not be made
        print(f"calibration: {exc}", file=sys.stderr)
        return {"made": False, "error": str(exc)}


def _cmd_calibrate(engine, args, out, quiet: bool = False):
    """Calibrate answered / not answered on the library's own questions; prints the operating point and its rates."""
    from dataclasses import asdict

    from .evaluate.calibrate import MIN_QUESTIONS, QUESTIONS, TARGET, calibrate
    from .render import make_console, progress_bar

    if not engine.documents():
        raise ThreadRagError(no_documents(engine, args))
    if args.questions is not None and args.questions < MIN_QUESTIONS:
        raise ThreadRagError(f"--questions {args.questions}: at least {MIN_QUESTIONS}")
    with progress_bar(make_console(stderr=True), disable=args.json) as bar:
        cal = calibrate(engine, questions=args.questions or QUESTIONS,
                        target=TARGET if args.target is None else args.target, progress=bar)
    if args.json:
        if quiet:
            return {"made": True, **asdict(cal)}
        _print_json(asdict(cal))
        return 0
    out.print(calibration_line(cal))
    return {"made": True} if quiet else 0


def calibration_line(cal) -> str:
    """The calibration in one line (``calibrate``, ``doctor``, ``eval``)."""
    r = cal.rates
    return (f"calibration: threshold {cal.threshold:.2f} for {cal.target:.0%} of answerable questions refused; on "
            f"{cal.questions} of this library's own questions (cross-validated) answerable wrongly refused "
            f"{r.get('answerable_refused', 0):.0%}, with the answer hidden refused {r.get('hidden_refused', 0):.0%} "
            f"({cal.seconds:.0f} s, {cal.made_at})")


# each command's function: (args, out) for those that open no library, else (engine, args, out)
WITHOUT_ENGINE = {"doctor": _cmd_doctor, "settings": _settings, "bench": _cmd_bench}
COMMANDS = {"chat": _cmd_chat, "mcp": _cmd_mcp, "serve": _cmd_serve, "index": _cmd_index, "watch": _cmd_watch, "docs": _cmd_docs,
            "delete": _cmd_delete, "search": _cmd_search, "fetch": _cmd_fetch, "nested": _cmd_nested,
            "compare": _cmd_compare, "preheat": _cmd_preheat, "ask": _cmd_ask, "eval": _cmd_eval,
            "script": _cmd_script, "stats": _cmd_stats, "calibrate": _cmd_calibrate}

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
