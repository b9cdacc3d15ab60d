"""``thread-rag bench intents``: the chat's request recogniser (``agent/intent.py``) on the hand-written request sets
in tests/data: right action and arguments, library changes taken on questions, close calls, time per message. Each
set is judged twice: with no model (a close call falls to the safe reading, as in the tests) and with the packaged
chat model answering the close calls (``--limit 0`` skips the model run).

The sets were written by other sessions that never saw the recogniser or its examples; ``ROLES`` says which of them
guided a revision (each was measured once, new, before it did) and which was only judged.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from statistics import median

TESTS_DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
DOCS = [("DOC1", "widget-manual.md"), ("DOC2", "install-guide-2022.md"), ("DOC3", "install-guide-2024.md")]
ROLES = {"requests.json": "guided the cue words, the margin and the object rules",
         "requests-heldout.json": "held out for the first version (112/132 when new), then guided the second",
         "requests-heldout-2.json": "held out for the second version (110/128 when new), then guided the third",
         "requests-heldout-3.json": "held out: judged only, never tuned on"}


def make_folder(root: Path) -> Path:
    """The files the sets' paths name ({DIR}): two that exist and are not indexed, a folder."""
    for rel, text in (("notes/runbook.md", "# Runbook\n\nRotate the logs weekly.\n"),
                      ("inbox/report.txt", "Quarterly report.\n")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def judge(requests: list[dict], recogniser, folder: Path) -> dict:
    """Right action and arguments per request (the question after a request too), library changes taken on questions,
    time per message, close calls put to the model (``recogniser`` counts them in ``asked``), the misses."""
    from ..agent.intent import CHANGES, QUESTION

    right, changes, ms, asked, wrong = 0, 0, [], 0, []
    for r in requests:
        message = r["message"].replace("{DIR}", str(folder))
        want = {k: v.replace("{DIR}", str(folder)) if isinstance(v, str) else v for k, v in r.get("args", {}).items()}
        got = recogniser.recognise(message)
        args = {k: v for k, v in got.args.items() if k != "query" and not (k == "limit" and "limit" not in want)}
        ok = (got.action == r["action"] and args == want
              and got.then.strip(" ?.") == r.get("then_question", "").strip(" ?."))
        right += ok
        changes += r["action"] == QUESTION and got.action in CHANGES
        asked += got.asked_model
        ms.append(got.ms)
        if not ok:
            wrong.append({"message": r["message"], "want": r["action"], "got": got.action, "args": got.args})
    ms.sort()
    return {"n": len(requests), "right": right, "rate": round(right / len(requests), 4),
            "changes_on_questions": changes, "model_calls": asked, "median_ms": round(median(ms), 1),
            "p95_ms": ms[int(0.95 * (len(ms) - 1))], "wrong": wrong}


def run_intents(settings, limit: int | None = None) -> dict:
    from ..agent import intent as I
    from ..embedder import make_query_embedder
    from .retrieval import machine

    qe = make_query_embedder(settings, lambda: None)
    if qe is None:
        raise RuntimeError("bench intents needs the packaged ONNX MiniLM query embedder")
    t0 = time.perf_counter()
    examples = I.Examples(qe.embed_queries)
    fit_s = time.perf_counter() - t0
    out = {"command": "thread-rag bench intents", "machine": machine(), "examples": len(examples.texts),
           "examples_fit_s": round(fit_s, 2), "margin": I.MARGIN, "sets": {}}
    model = _model_call(settings) if limit != 0 else None
    if model is not None:
        out["model"] = model[0].backend
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_folder(Path(tmp))
        for name, role in ROLES.items():
            requests = json.loads((TESTS_DATA / name).read_text())
            row = {"role": role}
            closes = []
            rec = I.Recogniser(qe.embed_queries, lambda: DOCS, None, examples=examples)
            rec._ask_model = lambda text, readings: closes.append(text) and None
            row["no_model"] = {**judge(requests, rec, folder), "model_calls": len(closes)}
            if model is not None:
                call, seconds = model
                before = len(seconds)
                rec = I.Recogniser(qe.embed_queries, lambda: DOCS, call, examples=examples)
                row["with_model"] = judge(requests, rec, folder)
                row["with_model"]["model_call_s"] = round(median(seconds[before:]), 2) if seconds[before:] else None
            out["sets"][name] = row
    return out


def _model_call(settings):
    """The packaged chat model's constrained JSON call (what the chat's Agent uses), timed per call."""
    from ..agent.answer import parse_json_lenient
    from ..llm.backends import describe, limit, make_chat_model

    chat = make_chat_model(settings)
    seconds: list[float] = []

    def call(messages, schema, max_tokens):
        t = time.perf_counter()
        r = chat.invoke(messages, format=schema, **limit(chat, max_tokens))
        seconds.append(time.perf_counter() - t)
        got = parse_json_lenient(r.content if isinstance(r.content, str) else str(r.content))
        if not isinstance(got, dict):
            raise ValueError("not a JSON object")
        return got

    call.backend = describe(chat)
    return call, seconds
