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

TESTS_DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
DOCS = [("DOC1", "widget-manual.md"), ("DOC2", "install-guide-2022.md"), ("DOC3", "install-guide-2024.md")]
ROLES = {"requests.json": "guided the cue words, the margin and the object rules",
         "requests-heldout.json": "held out for the first version (112/132 when new), then guided the second",
         "requests-heldout-2.json": "held out for the second version (110/128 when new), then guided the third",
         "requests-heldout-3.json": "held out: judged only, never tuned on"}


# The 30 requests the model-driven loop was measured on (bench_results/routing.json: the packaged model named the
# expected tool for 0.30 of them). A search is what the answer path does for a question; reading a chunk by its id is
# the chat's /fetch command, not a request it reads in words.
ROUTING_PROMPTS = [
    ("Which documents do I have?", "list_available_documents"),
    ("List the indexed documents.", "list_available_documents"),
    ("What files are in my library?", "list_available_documents"),
    ("Show me what has been indexed so far.", "list_available_documents"),
    ("Index the file ./notes/runbook.md", "index_new_document"),
    ("Please add manuals/router.pdf to the library.", "index_new_document"),
    ("Load docs/guide.docx so I can ask about it.", "index_new_document"),
    ("Ingest the text file ./install.txt", "index_new_document"),
    ("Search for how to partition a disk.", "rag_search"),
    ("Find where the guide explains booting from USB.", "rag_search"),
    ("Look up the minimum RAM requirement.", "rag_search"),
    ("Search DOC1 for preseeding.", "rag_search"),
    ("Where does it talk about network configuration?", "rag_search"),
    ("Find the section about setting a root password.", "rag_search"),
    ("Show me chunk DOC1_005.", "fetch_chunks_by_id"),
    ("Read DOC2_010 and DOC2_011.", "fetch_chunks_by_id"),
    ("Open chunk DOC1_120 with its context window.", "fetch_chunks_by_id"),
    ("What comes after DOC3_004? Fetch DOC3_005.", "fetch_chunks_by_id"),
    ("Fetch the chunks DOC1_000 and DOC1_001.", "fetch_chunks_by_id"),
    ("Display DOC4_002 in its window.", "fetch_chunks_by_id"),
    ("Pre-heat the summaries for DOC1.", "pre_heat_summaries"),
    ("Summarise every chunk of all documents ahead of time.", "pre_heat_summaries"),
    ("Warm up the summary cache for DOC2.", "pre_heat_summaries"),
    ("Pre-compute neighbour summaries now so later answers are fast.", "pre_heat_summaries"),
    ("Give me 3 non-overlapping passages about booting.", "nested_retrieve"),
    ("Use nested retrieval to find passages on disk encryption.", "nested_retrieve"),
    ("Find several separate passages of different sizes about installing packages.", "nested_retrieve"),
    ("Nested retrieve 5 passages about mirrors in DOC1.", "nested_retrieve"),
    ("Find non-overlapping sections of the document tree about the boot loader.", "nested_retrieve"),
    ("Get distinct passages from different parts of DOC2 about time zones.", "nested_retrieve"),
]


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
    from thread_rag.agent.intent import CHANGES, QUESTION

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
    from thread_rag.agent import intent as I
    from thread_rag.embedder import make_query_embedder
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
    out["routing_prompts"] = _routing_prompts(qe.embed_queries, examples)
    return out


def _routing_prompts(embed, examples) -> dict:
    """The routed loop's 30 requests read by the recogniser (no model): right when the request's tool is the action
    (a search: a question); the chunk-by-id requests are counted apart."""
    from thread_rag.agent import intent as I

    rec = I.Recogniser(embed, lambda: [("DOC1", "install.en.pdf"), ("DOC2", "maint-guide.en.pdf")], None,
                       examples=examples)
    rows = []
    for prompt, tool in ROUTING_PROMPTS:
        got = rec.recognise(prompt).action
        want = I.QUESTION if tool == "rag_search" else tool
        rows.append({"prompt": prompt, "expected": tool, "got": got, "correct": got == want})
    chat = [r for r in rows if r["expected"] != "fetch_chunks_by_id"]
    return {"n": len(rows), "chat_requests": len(chat), "right": sum(r["correct"] for r in chat),
            "fetch_by_id": len(rows) - len(chat), "rows": rows}


def _model_call(settings):
    """The packaged chat model's constrained JSON call (what the chat's Agent uses), timed per call."""
    from thread_rag.agent.answer import json_reply
    from thread_rag.llm.backends import describe, make_chat_model

    chat = make_chat_model(settings)
    seconds: list[float] = []

    def call(messages, schema, max_tokens):
        t = time.perf_counter()
        try:
            return json_reply(chat, messages, schema, max_tokens)[0]
        finally:
            seconds.append(time.perf_counter() - t)

    call.backend = describe(chat)
    return call, seconds
