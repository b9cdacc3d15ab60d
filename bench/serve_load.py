"""``thread-rag bench serve``: many clients on one ``thread-rag serve`` over loopback.

One run, one server, one library: quote-only throughput with one client, then with ``clients`` at once (the goal: at
least 80% of the one-client rate, i.e. the server adds no serialisation of its own), then the same clients each
sending full answers too (past the queue bound a full answer gets 503 + Retry-After, counted apart), then a client
that leaves mid-answer (how long until the model is free). Questions are made from the library's own section
headings. Every request goes through ``/query-stream``; times are to the ``quote`` event and the first ``token``.
"""
from __future__ import annotations

import contextlib
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from .datasets import shared_data

GOAL_RATIO = 0.8


@contextlib.contextmanager
def serving(app):
    """``app`` on 127.0.0.1 at a free port (uvicorn in a thread), stopped at the end; yields its base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not (server.started and server.servers) and time.time() < deadline:
        time.sleep(0.02)
    if not server.started:
        raise RuntimeError("the server did not start in 20 s")
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        app.state.door.shutdown()


def heading_questions(engine, n: int, seed: int = 13) -> list[str]:
    """``n`` questions from the library's distinct section headings ("What does it say about <heading>?")."""
    seen = []
    for d in engine.documents():
        for chunk in engine.thread(d.doc_id).chunks:
            head = (chunk.heading_path or [""])[-1].strip()
            if 3 <= len(head) <= 80 and head not in seen:
                seen.append(head)
    random.Random(seed).shuffle(seen)
    if not seen:
        raise ValueError("the library has no section headings to make questions from")
    return [f"What does it say about {h}?" for h in (seen * (n // len(seen) + 1))[:n]]


def one_request(client, question: str, mode: str, leave_after_token: bool = False) -> dict:
    """One ``/query-stream`` request: its status and seconds to the quote, the first token and the end."""
    t0, row = time.perf_counter(), {"mode": mode, "status": None, "quote_s": None, "first_token_s": None}
    try:
        with client.stream("POST", "/query-stream", json={"question": question, "mode": mode}) as r:
            row["status"] = r.status_code
            if r.status_code != 200:
                row["retry_after"] = r.headers.get("retry-after")
                r.read()
                return {**row, "total_s": time.perf_counter() - t0}
            lines = r.iter_lines()
            for line in lines:
                kind = line[6:].strip() if line.startswith("event:") else None
                if kind in ("quote", "related") and row["quote_s"] is None:
                    row["quote_s"] = time.perf_counter() - t0
                elif kind == "token" and row["first_token_s"] is None:
                    row["first_token_s"] = time.perf_counter() - t0
                    if leave_after_token:
                        break
                elif kind == "error":
                    row["status"] = "error"
    except Exception as e:  # noqa: BLE001 - a failed request is counted, never a stopped benchmark
        row["status"], row["error"] = "failed", str(e)[:200]
    return {**row, "total_s": time.perf_counter() - t0}


def load(base: str, questions: list[str], clients: int, quotes: int, full: int = 0) -> dict:
    """``quotes`` quote-only and ``full`` full-answer requests spread over ``clients`` threads, each with its own
    connection; full answers go first in each client's list, so they meet the queue bound."""
    import httpx

    jobs = [[] for _ in range(clients)]
    for i in range(full):
        jobs[i % clients].append((questions[i % len(questions)], "full"))
    for i in range(quotes):
        jobs[i % clients].append((questions[(full + i) % len(questions)], "quote"))

    def run(mine):
        with httpx.Client(base_url=base, timeout=600) as c:
            return [one_request(c, q, mode) for q, mode in mine]

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        rows = [row for got in pool.map(run, jobs) for row in got]
    wall = time.perf_counter() - t0
    q = [r for r in rows if r["mode"] == "quote"]
    f = [r for r in rows if r["mode"] == "full"]
    ok_q = [r for r in q if r["status"] == 200]
    return {"clients": clients, "quote_requests": len(q), "quote_failed": len(q) - len(ok_q),
            "wall_s": round(wall, 2),
            "quote_s": percentiles([r["quote_s"] for r in ok_q]),
            "full_requests": len(f), "full_busy_503": sum(r["status"] == 503 for r in f),
            "full_answered": sum(r["status"] == 200 for r in f),
            "full_failed": sum(r["status"] not in (200, 503) for r in f),
            "full_quote_s": percentiles([r["quote_s"] for r in f if r["status"] == 200]),
            "full_first_token_s": percentiles([r["first_token_s"] for r in f if r["status"] == 200]),
            "retry_after": sorted({r.get("retry_after") for r in f if r["status"] == 503} - {None})}


def throughput(base: str, questions: list[str], clients: int, quotes: int) -> dict:
    """Quote-only load; ``quotes_per_s`` over the wall time of the whole batch."""
    out = load(base, questions, clients, quotes)
    out["quotes_per_s"] = round((quotes - out["quote_failed"]) / out["wall_s"], 3) if out["wall_s"] else None
    return out


def answered(base: str, questions: list[str]) -> str:
    """The first of ``questions`` the library answers (its quote-only outcome), so a full answer will stream."""
    import httpx

    with httpx.Client(base_url=base, timeout=600) as c:
        for q in questions:
            if c.post("/query", json={"question": q, "mode": "quote"}).json()["outcome"]["kind"] == "answered":
                return q
    raise ValueError("no question of the set is answered by the library")


def disconnect(base: str, app, question: str) -> dict:
    """A full answer left after its first token: seconds until the server has no answer waiting or running."""
    import httpx

    with httpx.Client(base_url=base, timeout=600) as c:
        row = one_request(c, question, "full", leave_after_token=True)
    if row["first_token_s"] is None:
        raise ValueError(f"the answer to {question!r} streamed no token: nothing was left mid-answer")
    left = time.perf_counter()
    while app.state.door.waiting and time.perf_counter() - left < 60:
        time.sleep(0.01)
    return {"first_token_s": row["first_token_s"], "status": row["status"],
            "model_free_after_s": round(time.perf_counter() - left, 3)}


def percentiles(values: list) -> dict | None:
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    pick = lambda p: xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]  # noqa: E731
    return {"n": len(xs), "p50": round(pick(0.5), 3), "p95": round(pick(0.95), 3), "max": round(xs[-1], 3)}


def run_serve_load(settings, args) -> dict:
    """The benchmark: the Debian guide (or ``--file``) indexed into a fresh library, the packaged model."""
    import shutil
    import tempfile
    from pathlib import Path

    from thread_rag.agent.loop import Agent
    from thread_rag.engine import Engine
    from thread_rag.serve import build_app
    from . import command_line
    from .retrieval import machine

    clients, quotes, full = args.clients, args.limit or 200, args.full
    home = Path(tempfile.mkdtemp(prefix="thread-rag-serve-"))
    try:
        engine = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "cache"),
                                         MODEL_DIR=str(settings.model_dir)))
        source = args.file or str(shared_data() /
                                  "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf")
        t0 = time.perf_counter()
        engine.index_file(source)
        index_s = time.perf_counter() - t0
        questions = heading_questions(engine, max(quotes, full) + full)
        model = Agent(engine).model if full else None
        app = build_app(engine, chat_model=model)
        with serving(app) as base:
            import httpx

            with httpx.Client(base_url=base, timeout=600) as c:  # models loaded outside the timings
                one_request(c, questions[0], "quote")
                if full:
                    one_request(c, questions[0], "full")
            one = throughput(base, questions, 1, max(20, quotes // clients * 2))
            many = throughput(base, questions, clients, quotes)
            mixed = load(base, questions, clients, quotes, full) if full else None
            gone = disconnect(base, app, answered(base, questions)) if full else None
        ratio = round(many["quotes_per_s"] / one["quotes_per_s"], 3) if one["quotes_per_s"] else None
        return {"bench": "serve", "document": Path(source).name, "chunks": engine.documents()[0].chunk_count,
                "index_s": round(index_s, 1), "questions": "made from the document's section headings",
                "one_client": one, "many_clients": many, "throughput_ratio": ratio, "goal_ratio": GOAL_RATIO,
                "mixed": mixed, "disconnect": gone, "max_waiting": app.state.door.max_waiting,
                "machine": machine(), "command": command_line()}
    finally:
        with contextlib.suppress(Exception):
            engine.close()
        shutil.rmtree(home, ignore_errors=True)
