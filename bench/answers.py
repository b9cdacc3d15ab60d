"""``thread-rag bench answers``: the embedded LLM answers the same questions from each strategy's reading.

Equal terms: every strategy is the product's own answer path (an ``Agent(engine, readers=BASELINES)`` asked
with ``reader=<strategy>``), so
all share the search (same ``k`` entry chunks), the answer prompt (``agent.answer.ANSWER_PROMPT``), the
refusal policy (the relevance floor on the entry hits, ``RELEVANCE_MIN``, before any LLM call, and the
weak-match band, ``MATCH_MIN`` with ``WEAK_MATCH``, where the answer prompt may let the model reply that the
sources do not answer), the answer token cap, the source budget and the citation follow-up; only what the model reads differs:

- ``topk``: the k hits' own texts (plain RAG);
- ``walk``: THREAD-RAG's jump-and-walk under the source budget (the product default);
- ``windows``: the walk with each source framed by its neighbours' summaries (the THREAD window);
- ``sentence_window``: each hit with its raw neighbours (+-1 chunk) under the same budget;
- ``parent_doc``: each hit inside its ~1000-word parent block under the same budget;
- ``nested``: ``nested_retrieve`` passages under the same budget;
- ``decide``: the walk followed by the post-reading decision (``DECIDE``: answer, or search once more and
  read again under the same budget); one more LLM call per question.
- ``<reader>:NAME=VALUE[:NAME=VALUE]``: a reader with its own reading settings (``READING_SETTINGS``, e.g.
  ``walk:WALK_BACK=1``); everything else stays shared.

Questions come from the data set's ``test`` split; ``RELEVANCE_MIN`` is calibrated on the ``dev`` split
(``bench refusal``), and the run stops if a calibration file shares a question with the test sample.
Metrics per question: SQuAD token F1 / EM against the gold answers (citation markers removed first), gold-token
recall of the answer, refusals, first-token and total seconds, prompt tokens, LLM calls, how citations were
made (written by the model / named in the follow-up / matched afterwards) and their precision (a cited source
holds >= half of the gold evidence's tokens, where the set has evidence text). Paired bootstrap intervals
are given for every strategy's F1 and recall minus ``topk``'s on the same questions.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from thread_rag.errors import ThreadRagError
from thread_rag.settings import READERS as _READERS
from .baselines import BASELINES
from .metrics import bootstrap_ci, exact_match, paired_rows, token_coverage, token_f1
from .retrieval import HOP_SETTINGS, STEPS_SETTINGS
from . import command_line
from .datasets import shared_data

READERS = _READERS + tuple(BASELINES) + ("decide",)
ANSWER_TOKENS = 160      # one cap for every strategy
SHARED_SETTINGS = ("READ_K", "READ_BUDGET", "MAX_ANSWER_TOKENS", "RELEVANCE_MIN", "MATCH_MIN", "WEAK_MATCH", "EXPLAIN_FROM",
                   "QUOTE_MIN",
                   "WALK_MAX", "WALK_THRESHOLD", "WALK_QUERY_MIN", "CITE_FOLLOWUP", "DECIDE", "WALK_BACK", "RERANK_CONTEXT",
                   "STAGE3_LEXICAL_FLOOR", "STAGE3_K", "RERANK_MAX_TOKENS", "STATEMENTS") + HOP_SETTINGS + STEPS_SETTINGS  # recorded with every run
READING_SETTINGS = ("WALK_MAX", "WALK_BACK", "WALK_THRESHOLD", "WALK_QUERY_MIN")  # what a strategy may set itself


class StrategyError(ThreadRagError, ValueError):
    """A strategy the answering benchmarks cannot run (one line at the command line)."""


def parse_strategy(spec: str) -> tuple[str, dict]:
    """``reader`` or ``reader:NAME=VALUE[:NAME=VALUE]`` -> (reader, reading-setting changes); StrategyError else."""
    from thread_rag.settings import Settings

    reader, *pairs = spec.split(":")
    if reader not in READERS:
        raise StrategyError(f"unknown strategy {spec!r} (known: {', '.join(READERS)})")
    if pairs and reader == "decide":
        raise StrategyError(f"{spec!r}: {reader} takes no reading settings (it is a whole answer path)")
    changes = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in READING_SETTINGS or not value:
            raise StrategyError(f"{spec!r}: a strategy sets only reading settings as NAME=VALUE "
                                f"({', '.join(READING_SETTINGS)})")
        changes[name] = type(getattr(Settings, name))(value)  # the class holds each field's default: its type
    return reader, changes


K = 3                    # entry chunks for every strategy


def score(text: str, refused: bool, answers: list[str]) -> dict:
    """F1, EM and gold-token recall of an answer against the best-matching gold answer; refusals score 0."""
    from thread_rag.agent.answer import strip_markers

    if refused:
        return {"f1": 0.0, "em": 0.0, "recall": 0.0}
    clean = strip_markers(text)
    return {"f1": max(token_f1(clean, g) for g in answers), "em": max(exact_match(clean, g) for g in answers),
            "recall": max(token_coverage(clean, g) for g in answers)}


def _mean(rows: list[dict], key: str, where=lambda r: True):
    vals = [r[key] for r in rows if where(r) and r.get(key) is not None]
    return round(float(np.mean(vals)), 4) if vals else None


def summarise(rows: list[dict], base: list[dict] | None = None) -> dict:
    f1 = [r["f1"] for r in rows]
    cites = [c for r in rows for c in r["citations"]]
    judged = [c for c in cites if c["precise"] is not None]
    out = {"questions": len(rows),
           "f1": round(float(np.mean(f1)), 4), "f1_ci95": [round(x, 4) for x in bootstrap_ci(f1)],
           "em": _mean(rows, "em"), "recall": _mean(rows, "recall"),
           "correct_rate_f1>=0.7": round(float(np.mean([x >= 0.7 for x in f1])), 4),
           "wrong_rate_f1<0.6": round(float(np.mean([x < 0.6 and not r["refused"] for x, r in zip(f1, rows)])), 4),
           "refusal_rate": _mean([{"x": float(r["refused"])} for r in rows], "x"),
           "f1_answered": _mean(rows, "f1", lambda r: not r["refused"]),
           "first_token_s_median": round(float(np.median([r["first_token_s"] for r in rows
                                                          if r["first_token_s"] is not None] or [np.nan])), 2),
           "seconds_per_question": _mean(rows, "seconds"),
           "tokens_in": _mean(rows, "tokens_in"), "tokens_out": _mean(rows, "tokens_out"),
           "llm_calls": _mean(rows, "llm_calls"),
           "citations_per_answer": _mean([{"x": len(r["citations"])} for r in rows if not r["refused"]], "x"),
           "cited_by": {how: sum(c["how"] == how for c in cites) for how in ("written", "sources_call", "matched")},
           "written_rate": round(sum(c["how"] == "written" for c in cites) / len(cites), 4) if cites else None,
           "citation_precision": round(sum(c["precise"] for c in judged) / len(judged), 4) if judged else None}
    if base is not None:
        by_q = {r["qid"]: r for r in base}
        same = [r for r in rows if r["qid"] in by_q]
        for key in ("f1", "recall"):
            out[f"{key}_minus_topk"], out[f"{key}_minus_topk_ci95"], _ = paired_rows(rows, base, key)
        out["topk_f1_same_questions"] = round(float(np.mean([by_q[r["qid"]]["f1"] for r in same])), 4) if same else None
    return out


def _row(q, strategy: str, a, engine) -> dict:
    gold = q.spans[0] if q.spans else None
    cites = []
    for c in a.citations:
        text = next((s["text"] for s in a.sources if c.chunk_id in s["chunk_ids"]), None) if a.sources else None
        text = text if text is not None else engine.chunk(c.chunk_id).text
        cites.append({"chunk_id": c.chunk_id, "how": c.how,
                      "precise": None if gold is None else token_coverage(text, gold) >= 0.5})
    return {"qid": q.qid, "strategy": strategy, **score(a.answer, a.refused, q.answers), "refused": a.refused,
            "seconds": a.timings["total_s"], "first_token_s": a.timings.get("first_token_s"),
            "tokens_in": a.tokens.get("in", 0), "tokens_out": a.tokens.get("out", 0), "llm_calls": a.llm_calls,
            "relevance": a.relevance, "match": a.match, "citations": cites, "answer": a.answer[:300],
            "read": [s["chunk_ids"][0] + (".." + s["chunk_ids"][-1] if len(s["chunk_ids"]) > 1 else "")
                     for s in a.sources]}


def shared_settings(settings) -> dict:
    """``SHARED_SETTINGS`` of ``settings``, by name, for a result file."""
    return {n: getattr(settings, n) for n in SHARED_SETTINGS}


def bench_settings(settings, k: int = K):
    """The settings every strategy shares in a run (the equal terms). The model reads each strategy's own sources
    (``EXPLAIN_FROM = "sources"``: a reading is what is compared here; ``bench grounding`` compares the quote), and no
    question is refused for want of a quoted line (the evidence floor off)."""
    return settings.replace(READ_K=k, MAX_ANSWER_TOKENS=ANSWER_TOKENS, INTENTS=False, CONDENSE_FOLLOWUPS=False,
                            EXPLAIN_FROM="sources", QUOTE_MIN=-100.0)


def run_answers(ds, engine, keymap, strategies: list[str], k: int = K, progress=None, model=None) -> dict:
    """Answer every question of ``ds`` with each strategy, on ``engine.settings`` made equal for all
    (``bench_settings``). ``model``: a chat model to use instead of the configured one (tests pass a scripted fake)."""
    from thread_rag.agent.loop import Agent
    from thread_rag.llm.backends import describe, make_chat_model, reset_prompt_cache

    specs = {s: parse_strategy(s) for s in strategies}
    shared = bench_settings(engine.settings, k)
    engine.settings = shared
    model = model or make_chat_model(shared)
    agent = Agent(engine, chat_model=model, readers=BASELINES)
    decider = Agent(engine, chat_model=model, readers=BASELINES)
    decider.settings = shared.replace(DECIDE=True)
    varied = {}  # strategies with their own reading settings
    for s, (_, changes) in specs.items():
        if changes:
            varied[s] = Agent(engine, chat_model=model, readers=BASELINES)
            varied[s].settings = shared.replace(**changes)
    res: dict[str, list] = {s: [] for s in strategies}
    total, done = len(ds.queries) * len(strategies), 0
    for q, doc_id in zip(ds.queries, ds.scope_doc_ids(keymap)):
        for s in strategies:
            base_reader = specs[s][0]
            who = varied.get(s) or (decider if base_reader == "decide" else agent)
            who.clear()
            reset_prompt_cache(model)  # no strategy reads another's evaluated prompt (first-token times)
            reader = "walk" if base_reader == "decide" else base_reader
            a = who.ask(q.text, doc_id=doc_id, reader=reader)
            res[s].append(_row(q, s, a, engine))
            done += 1
            if progress:
                progress(f"answers {ds.name}", done, total)
    base = res.get("topk")
    return {"dataset": ds.name, "questions": len(ds.queries), "split": ds.split, "k": k, "backend": describe(model),
            "search_scope": ds.search_scope,
            "shared_settings": shared_settings(shared),
            "strategies": {s: summarise(rows, base if s != "topk" and base else None) for s, rows in res.items() if rows},
            "rows": res}


def open_sample(settings, args, split: str, limit: int):
    """The command's question sample (``--dataset``, default aws-docs-qa; ``--split``, ``--limit``, ``--seed``) and
    its indexed corpus: (dataset, engine, keymap). A test sample must not share a question with calibration files."""
    from .corpus import open_corpus_engine
    from .datasets import check_disjoint, load_dataset

    split = args.split or split
    ds = load_dataset(args.dataset or "aws-docs-qa", shared_data(), limit=args.limit or limit, seed=args.seed,
                      split=split)
    if split == "test":
        check_disjoint(ds, Path(args.out or "bench_results"))
    engine, keymap, _ = open_corpus_engine(settings, ds)
    return ds, engine, keymap


def run_answers_bench(settings, args) -> dict:
    from .retrieval import machine

    ds, engine, keymap = open_sample(settings, args, "test", 20)
    strategies = args.configs.split(",") if args.configs else ["topk", "walk"]

    def progress(label: str, done: int, total: int) -> None:
        print(f"{label}: {done}/{total}", file=sys.stderr, flush=True)

    out = run_answers(ds, engine, keymap, strategies, k=args.k or K, progress=progress)
    out["machine"] = machine()
    out["command"] = command_line()
    return out
