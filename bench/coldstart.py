"""``thread-rag bench coldstart``: how long a fresh ``thread-rag search`` process takes, start to exit.

A small temporary library (``--file``, default the user manual ``docs/``) is indexed first, outside the
timings. Then ``--limit`` N (default 3) rounds, each starting fresh processes one after another:
``thread-rag search "<query>"`` with queries embedded by the INT8 ONNX MiniLM (``QUERY_EMBEDDER=onnx``, no
torch), the same with the torch model (``QUERY_EMBEDDER=torch``), and ``thread-rag docs`` (no model at all: the
floor of a cold command), and ``thread-rag ask "<query>"`` (the first answer from a cold process, model files
already joined: loading the LLM is inside the timing). The two searches take turns going first in each round (``docs`` and ``ask`` follow them), so a busy machine slows
the compared pair alike.
One untimed run of each comes first (page cache, the derived search index). Reported: wall seconds of every
run and their median, the torch/onnx ratio, each variant's peak RSS, the machine's load average before and
after (a loaded machine means contended numbers), and the stage timings of one extra ``--json`` search.
Processes are timed from spawn to exit with ``time.perf_counter``; peak RSS is the child's own
high-water mark (VmHWM), polled while it runs (``os.wait4``'s carries the bench's peak over fork and exec).
For ``ask``, also the seconds until its first line, the quote's title, was on stdout (``quote_s``; goal <= 6 s).
Last, ``repl_warm``: three questions answered one after another in a REPL that is already running (its
background model load joined first), each with its seconds to the quote, to the first model token and in total
(goals: the quote <= 3 s, the answer <= 10 s).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from thread_rag.errors import ThreadRagError
from . import command_line, proc_status_kib

QUERY = "how do I pre-heat summaries?"
GOAL_S = 3.0  # issue 15: a cold search in at most 3 s
REPO = Path(__file__).resolve().parents[1]
VARIANTS = {  # name -> (command after --data-dir, QUERY_EMBEDDER)
    "search_onnx": ("search", "onnx"),
    "search_torch": ("search", "torch"),
    "docs": ("docs", None),
    "ask": ("ask", None),   # the first answer from a cold process (model files already joined)
}
ASK_GOAL_S = 20.0  # issue 15: first answer on the demo manual <= 20 s cold
WARM_GOAL_S = 10.0  # issue 15: an answer in a REPL that is already running <= 10 s
QUOTE_MARKER = "from the manual (quoted):"  # the first line `ask` prints, once the quote is chosen
QUOTE_GOAL_S = 6.0  # issue 43: the quote on screen <= 6 s after a cold `thread-rag ask` starts
WARM_QUOTE_GOAL_S = 3.0  # ... and <= 3 s after a question in a running chat
WARM_QUESTIONS = (QUERY, "Which file formats can I index?", "What does the walk read after a search?")


def cli() -> list[str]:
    """This interpreter running this package's CLI (what the ``thread-rag`` command runs)."""
    return [sys.executable, "-m", "thread_rag.cli"]


def run_process(argv: list[str], env: dict, cwd: Path, timeout: float = 600.0, marker: str | None = None) -> dict:
    """Run one process to its end: wall seconds, exit code, peak RSS in MB (its VmHWM, polled while it runs, the
    last reading before it exits; ``os.wait4``'s where there is no /proc), stdout and stderr; with ``marker``, the
    seconds until its stdout first held it (``marker_s``: when ``ask`` showed the quote)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline = t0 + timeout
        own_peak = 0  # the child's own high-water mark (VmHWM), read while it runs: wait4's ru_maxrss carries
        #               this process's peak over fork and exec, so a small child of a large bench looked large
        marker_s = None
        while True:
            own_peak = max(own_peak, proc_status_kib("VmHWM", proc.pid))
            if marker is not None and marker_s is None:
                out.seek(0)
                if marker.encode("utf-8") in out.read():
                    marker_s = time.perf_counter() - t0
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.002)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
        out.seek(0)
        err.seek(0)
        return {"wall_s": wall, "rc": proc.returncode, "rss_mb": round((own_peak or usage.ru_maxrss) / 1024, 1),
                "marker_s": marker_s,
                "stdout": out.read().decode("utf-8", "replace"), "stderr": err.read().decode("utf-8", "replace")}


def _env(query_embedder: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "THREAD_RAG_QUERY_EMBEDDER"}
    if query_embedder:
        env["THREAD_RAG_QUERY_EMBEDDER"] = query_embedder
    return env


def _argv(home: Path, command: str, query: str, as_json: bool = False) -> list[str]:
    argv = cli() + ["--data-dir", str(home)] + (["--json"] if as_json else []) + [command]
    return argv + ([query] if command in ("search", "ask") else [])


def _check(name: str, r: dict) -> None:
    if r["rc"] != 0:
        raise ThreadRagError(f"bench coldstart: {name} exited {r['rc']}: "
                             f"{(r['stderr'].strip().splitlines() or ['?'])[-1][:300]}")


def _warm_repl_answers(home: Path) -> list[dict]:
    """Answers in a REPL that is already running: the REPL's own background load (model + the answer prompt's
    fixed head) is joined first, then each question is answered in turn, as typed one after another."""
    import io

    from rich.console import Console

    from thread_rag.engine import Engine
    from thread_rag.repl import Repl
    from thread_rag.settings import load_settings

    with Engine(load_settings({"HOME": str(home)})) as engine:  # what the timed processes' --data-dir gives
        repl = Repl(engine, console=Console(file=io.StringIO()), input_fn=lambda prompt: None)
        repl.start_model_load()
        repl.wait_for_model()
        rows = []
        for q in WARM_QUESTIONS:
            a = repl.agent.ask(q)
            rows.append({"question": q, "quote_s": a.timings.get("quote_s"), "first_token_s": a.timings.get("first_token_s"),
                         "total_s": round(a.timings["total_s"], 2), "refused": a.refused, "llm_calls": a.llm_calls})
        return rows


def run_coldstart_bench(settings, args) -> dict:
    from .retrieval import machine, search_settings

    n = args.limit or 3
    if n < 1:
        raise ThreadRagError(f"--limit {n}: must be 1 or more")
    corpus = Path(args.file).expanduser() if args.file else REPO / "docs"
    if not corpus.exists():
        raise ThreadRagError(f"bench coldstart: {corpus} does not exist (--file: a folder or file to index)")
    query = QUERY
    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="thread-rag-coldstart-"))
    try:
        home = tmp / "home"
        t0 = time.perf_counter()
        r = run_process(cli() + ["--data-dir", str(home), "--json", "index", str(corpus)], _env(None), REPO)
        _check("index", r)
        index_s = time.perf_counter() - t0
        indexed = json.loads(r["stdout"])["results"]
        for name, (command, qe) in VARIANTS.items():  # untimed: page cache, the derived search index
            _check(name, run_process(_argv(home, command, query), _env(qe), REPO))
        runs: dict[str, list[dict]] = {name: [] for name in VARIANTS}
        for i in range(n):
            # the two searches take turns going first
            names = list(VARIANTS) if i % 2 == 0 else ["search_torch", "search_onnx", "docs", "ask"]
            for name in names:
                command, qe = VARIANTS[name]
                r = run_process(_argv(home, command, query), _env(qe), REPO,
                                marker=QUOTE_MARKER if name == "ask" else None)
                _check(name, r)
                runs[name].append({"wall_s": round(r["wall_s"], 3), "rss_mb": r["rss_mb"],
                                   **({"quote_s": round(r["marker_s"], 3) if r["marker_s"] else None}
                                      if name == "ask" else {})})
        detail = run_process(_argv(home, "search", query, as_json=True), _env("onnx"), REPO)
        _check("search --json", detail)
        res = json.loads(detail["stdout"])
        warm = _warm_repl_answers(home)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out: dict = {"bench": "coldstart", "query": query, "n": n,
                 "corpus": {"path": str(corpus), "documents": len(indexed),
                            "chunks": sum(x.get("chunks") or 0 for x in indexed), "index_seconds": round(index_s, 1)}}
    for name, rs in runs.items():
        walls = [x["wall_s"] for x in rs]
        out[name] = {"median_s": round(statistics.median(walls), 3), "wall_s": walls,
                     "peak_rss_mb": max(x["rss_mb"] for x in rs)}
    quotes = [x["quote_s"] for x in runs["ask"] if x.get("quote_s") is not None]
    out["ask"]["quote_s"] = [x.get("quote_s") for x in runs["ask"]]
    out["ask"]["quote_median_s"] = round(statistics.median(quotes), 3) if quotes else None
    out["ask"]["quote_goal_s"] = QUOTE_GOAL_S
    onnx, torch = out["search_onnx"]["median_s"], out["search_torch"]["median_s"]
    out["torch_over_onnx"] = round(torch / onnx, 2) if onnx else None
    out["goal_s"] = GOAL_S
    out["search_onnx_meets_goal"] = onnx <= GOAL_S
    out["ask_goal_s"] = ASK_GOAL_S
    out["ask_meets_goal"] = out["ask"]["median_s"] <= ASK_GOAL_S
    firsts = [x["first_token_s"] for x in warm if x["first_token_s"] is not None]  # a refusal streams no token
    out["repl_warm"] = {"questions": warm, "goal_s": WARM_GOAL_S,
                        "median_total_s": round(statistics.median(x["total_s"] for x in warm), 2),
                        "median_first_token_s": round(statistics.median(firsts), 2) if firsts else None}
    out["repl_warm"]["meets_goal"] = out["repl_warm"]["median_total_s"] <= WARM_GOAL_S
    quoted = [x["quote_s"] for x in warm if x.get("quote_s") is not None]
    out["repl_warm"]["median_quote_s"] = round(statistics.median(quoted), 2) if quoted else None
    out["repl_warm"]["quote_goal_s"] = WARM_QUOTE_GOAL_S
    out["onnx_search_stages_ms"] = {"stages_run": res.get("stages_run"), **(res.get("timings_ms") or {})}
    out["settings"] = search_settings(settings, "EMBEDDER_MODEL", "RERANKER", "STAGE2", "TORCH_THREADS")
    out["load_avg_before_after"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
    out["machine"] = machine()
    out["command"] = command_line()
    return out
