"""``thread-rag bench grounding``: the quote and the checked explanation against the model's answer from the sources.

Every configuration is the product's own answer path (``Agent.ask``) over the same search and the same reading (the
walk, ``READ_K`` 3 entry chunks, ``READ_BUDGET``): only what is shown and what the model reads differ.

- ``quote``: the quote alone (``ANSWER_MODE = "quote"``): the lines code chose from what was read; no LLM call;
- ``explain``: the quote, then the model's explanation reading only the quote (``EXPLAIN_FROM = "quote"``); the
  answer a user reads is the quote and the explanation (scored as ``shown``), the explanation alone as ``model``;
- ``sources``: the model reads every source the walk read (``EXPLAIN_FROM = "sources"``): the answer of the release
  before the quote, scored on its own (no quote shown).

A configuration may set quote settings: ``quote:QUOTE_WORDS=80:QUOTE_MARGIN=2`` (tuning, on the dev half only). The
evidence floor is off in every configuration (``QUOTE_MIN`` = -100: every question answered; ``bench refusal``
measures the floor), and so is ``UNSUPPORTED = "drop"`` (``mark``: nothing left out). Per model answer: its checkable
spans (commands, flags, paths, URLs, file names, settings, numbers with units, versions, quoted labels, key names)
looked up in the sources read (``agent/check.py``), the share not found, answers with at least one not found (and with
an unfound command, flag, path, URL, file name or setting), citation precision by spans (a sentence citing ``[n]`` whose
spans source n holds). Gold-token recall and token F1 against the gold answers, paired 95% bootstrap intervals against
``sources`` on the same questions. Prompt tokens, seconds to the quote and to the first model token (llama.cpp's
prompt cache reset before each answer, then the prompt's fixed head evaluated, as the chat does at model load).

``--file PDF`` (no ``--dataset``): the Debian guide (default) and ``bench latency``'s questions plus the issue's
USB question, no gold: spans and quotes only.
"""
from __future__ import annotations

import sys

import numpy as np

from thread_rag.errors import ThreadRagError
from .metrics import bootstrap_ci, paired_rows, token_coverage, token_f1
from .datasets import shared_data

CONFIGS = ("quote", "explain", "sources")
QUOTE_SETTINGS = ("QUOTE_WORDS", "QUOTE_MARGIN", "QUOTE_TOKENS", "EXPLAIN_WORDS")
DEBIAN_QUESTIONS = ["How do I write the installer image to a USB stick from Linux?"]


def parse_config(spec: str) -> tuple[str, dict]:
    """``name`` or ``name:SETTING=VALUE[:...]`` (quote settings only) -> (name, changes)."""
    from thread_rag.settings import Settings

    name, *pairs = spec.split(":")
    if name not in CONFIGS:
        raise ThreadRagError(f"unknown grounding configuration {spec!r} (known: {', '.join(CONFIGS)})")
    changes = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in QUOTE_SETTINGS or not value:
            raise ThreadRagError(f"{spec!r}: a configuration sets only {', '.join(QUOTE_SETTINGS)} as NAME=VALUE")
        changes[key] = type(getattr(Settings, key))(value)
    return name, changes


def config_settings(settings, name: str, changes: dict):
    mode = {"quote": dict(ANSWER_MODE="quote"), "explain": dict(ANSWER_MODE="explain", EXPLAIN_FROM="quote"),
            "sources": dict(ANSWER_MODE="explain", EXPLAIN_FROM="sources")}[name]
    return settings.replace(QUOTE_MIN=-100.0, UNSUPPORTED="mark", INTENTS=False, CONDENSE_FOLLOWUPS=False,
                            **mode, **changes)


def best_gold(text: str, answers: list[str]) -> dict:
    from thread_rag.agent.answer import strip_markers

    clean = strip_markers(text)
    if not answers:
        return {}
    return {"f1": max(token_f1(clean, g) for g in answers), "recall": max(token_coverage(clean, g) for g in answers)}


def _span_stats(a) -> dict:
    from thread_rag.agent.check import DANGEROUS

    bad = a.unsupported or []
    return {"checked": a.checked, "unsupported": len(bad),
            "unsupported_commands": sum(x["kind"] in DANGEROUS for x in bad),
            "unsupported_spans": [{"text": x["text"], "kind": x["kind"], "missing": x.get("missing")} for x in bad],
            "citations_held": a.citations_held}


def answer_row(qid: str, config: str, a, answers: list[str], name: str | None = None) -> dict:
    """One question's answer under one configuration (``name``: its kind, quote / explain / sources), scored."""
    name = name or config
    quote = "\n".join((line["header"] + line["text"]) if line.get("header") else line["text"] for line in a.quote)
    row = {"qid": qid, "config": config, "refused": a.refused, "quote_words": len(quote.split()),
           "quote_best": a.quote_best, "quote_s": a.timings.get("quote_s"), "total_s": a.timings.get("total_s"),
           "first_token_s": a.timings.get("first_token_s"), "prompt_tokens": a.tokens.get("in"),
           "llm_calls": a.llm_calls, "read": [s["chunk_ids"][0] + (".." + s["chunk_ids"][-1] if len(s["chunk_ids"]) > 1
                                                                   else "") for s in a.sources]}
    if name == "quote":
        read = "\n".join(s["text"] for s in a.sources)
        lines = "\n".join(line["text"] for line in a.read_lines)
        row.update(text=quote, **best_gold(quote, answers), read_words=len(read.split()),
                   **{f"read_{k}": v for k, v in best_gold(read, answers).items()},
                   lines_words=len(lines.split()), **{f"lines_{k}": v for k, v in best_gold(lines, answers).items()})
        return row
    model = "" if a.refused else a.answer
    row.update(text=model, words=len(model.split()), **_span_stats(a))
    row.update({f"model_{k}": v for k, v in best_gold(model, answers).items()})
    if name == "explain":
        row.update({f"shown_{k}": v for k, v in best_gold(quote + "\n" + model, answers).items()})
    return row


def _mean(rows: list[dict], key: str):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return round(float(np.mean(vals)), 4) if vals else None


def summarise(rows: list[dict], base: list[dict] | None) -> dict:
    """Means (and 95% CIs) of a configuration's rows; paired differences against ``base`` (the sources rows)."""
    out: dict = {"questions": len(rows)}
    for key in ("f1", "recall", "model_f1", "model_recall", "shown_f1", "shown_recall", "read_recall", "lines_recall"):
        vals = [r[key] for r in rows if r.get(key) is not None]
        if not vals:
            continue
        out[key] = round(float(np.mean(vals)), 4)
        out[f"{key}_ci95"] = [round(x, 4) for x in bootstrap_ci(vals)]
        if base is not None:
            mine = [{"qid": r["qid"], "x": r[key]} for r in rows if r.get(key) is not None]
            theirs = [{"qid": r["qid"], "x": r.get("model_f1" if key.endswith("f1") else "model_recall")} for r in base]
            theirs = [t for t in theirs if t["x"] is not None]
            if theirs:
                d, ci, n = paired_rows(mine, theirs, "x")
                out[f"{key}_minus_sources"], out[f"{key}_minus_sources_ci95"] = d, ci
    words = [r["quote_words"] for r in rows]
    out["quote_words_median"] = float(np.median(words)) if words else None
    out["quote_words_mean"] = _mean(rows, "quote_words")
    out["read_words_mean"] = _mean(rows, "read_words")
    out["lines_words_mean"] = _mean(rows, "lines_words")
    out["quote_s_median"] = round(float(np.median([r["quote_s"] for r in rows if r["quote_s"] is not None] or [np.nan])), 3)
    if any("checked" in r for r in rows):
        checked = sum(r.get("checked", 0) for r in rows)
        bad = sum(r.get("unsupported", 0) for r in rows)
        answered = [r for r in rows if not r["refused"]]
        held = [r["citations_held"] for r in rows if r.get("citations_held")]
        out.update(checked_spans=checked, unsupported_spans=bad,
                   unsupported_rate=round(bad / checked, 4) if checked else None,
                   answers_with_unsupported=sum(r.get("unsupported", 0) > 0 for r in answered),
                   answers_with_unsupported_command=sum(r.get("unsupported_commands", 0) > 0 for r in answered),
                   answered=len(answered),
                   citation_precision=round(sum(h["held"] for h in held) / max(1, sum(h["sentences"] for h in held)), 4)
                   if held and sum(h["sentences"] for h in held) else None,
                   cited_sentences_with_spans=sum(h["sentences"] for h in held),
                   prompt_tokens_mean=_mean(rows, "prompt_tokens"),
                   first_token_s_median=round(float(np.median([r["first_token_s"] for r in rows
                                                               if r.get("first_token_s")] or [np.nan])), 2),
                   words_mean=_mean(rows, "words"))
    return out


def run_configs(engine, questions: list, configs: list[str], model=None, progress=None) -> dict:
    """``questions``: (qid, text, doc_id or None, gold answers). Each answered under each configuration."""
    from thread_rag.agent.answer import warm_prefix
    from thread_rag.agent.loop import Agent
    from thread_rag.llm.backends import make_chat_model, reset_prompt_cache

    specs = {c: parse_config(c) for c in configs}
    home = engine.settings
    agents = {}
    needs_model = any(name != "quote" for name, _ in specs.values())
    model = model or (make_chat_model(home) if needs_model else None)
    for c, (name, changes) in specs.items():
        agents[c] = Agent(engine, chat_model=model)
        agents[c].settings = config_settings(home, name, changes)
    rows: dict[str, list] = {c: [] for c in configs}
    total, done = len(questions) * len(configs), 0
    for qid, text, doc_id, answers in questions:
        for c, (name, _) in specs.items():
            agent = agents[c]
            agent.clear()
            if name != "quote":
                reset_prompt_cache(model)
                warm_prefix(model, agent.settings.EXPLAIN_FROM)
            a = agent.ask(text, doc_id=doc_id, reader="walk")
            rows[c].append(answer_row(qid, c, a, answers, name))
            done += 1
            if progress:
                progress("grounding", done, total)
    base = next((rows[c] for c, (name, _) in specs.items() if name == "sources"), None)
    from thread_rag.llm.backends import describe

    return {"configs": {c: summarise(r, base if specs[c][0] != "sources" else None) for c, r in rows.items()},
            "backend": describe(model) if model is not None else None, "rows": rows}


def run_grounding_bench(settings, args) -> dict:
    from . import command_line
    from .answers import open_sample
    from .retrieval import machine

    configs = args.configs.split(",") if args.configs else list(CONFIGS)
    for c in configs:
        parse_config(c)

    def progress(label: str, done: int, total: int) -> None:
        print(f"{label}: {done}/{total}", file=sys.stderr, flush=True)

    shared = settings.replace(READ_K=args.k or 3, MAX_ANSWER_TOKENS=160)
    if args.dataset:
        ds, engine, keymap = open_sample(shared, args, "test", 60)
        questions = [(q.qid, q.text, doc_id, q.answers) for q, doc_id in zip(ds.queries, ds.scope_doc_ids(keymap))]
        meta = {"dataset": ds.name, "split": ds.split, "corpus": "shrunk: the sample's gold documents and seeded distractors",
                "corpus_docs": len(engine.documents()), "chunks": sum(d.chunk_count for d in engine.documents()),
                "qids": [q.qid for q in ds.queries]}
        out = run_configs(engine, questions, configs, progress=progress)
    else:
        out, meta = _debian(shared, args, configs, progress)
    out.update(meta)
    out.update(machine=machine(), command=command_line(),
               settings={k: getattr(shared, k) for k in ("READ_K", "READ_BUDGET", "MAX_ANSWER_TOKENS", "QUOTE_WORDS",
                                                          "QUOTE_MARGIN", "QUOTE_TOKENS", "EXPLAIN_WORDS",
                                                          "RELEVANCE_MIN", "READER")})
    return out


def _debian(settings, args, configs, progress) -> tuple[dict, dict]:
    import shutil
    import tempfile
    from pathlib import Path

    from thread_rag.engine import Engine
    from .agent_bench import LATENCY_QUESTIONS

    home = Path(tempfile.mkdtemp(prefix="thread-rag-grounding-"))
    path = args.file or str(shared_data() / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf")
    try:
        e = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "cache"), MODEL_DIR=str(settings.model_dir)))
        e.index_file(path)
        qs = DEBIAN_QUESTIONS + LATENCY_QUESTIONS
        out = run_configs(e, [(f"debian-{i}", q, None, []) for i, q in enumerate(qs)], configs, progress=progress)
        for rows in out["rows"].values():
            for r, q in zip(rows, qs):
                r["question"] = q
        return out, {"dataset": "debian-amd64-pdf", "file": path, "questions": len(qs)}
    finally:
        shutil.rmtree(home, ignore_errors=True)
