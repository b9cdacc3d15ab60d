"""Agent benchmarks with the real chat model.

- ``latency``: time to first token and total answer time for 5 questions on the Debian guide, the answer path
  reading top-k vs the walk, off-topic refusals, the first-token curve.
"""
from __future__ import annotations


import numpy as np
from langchain_core.messages import HumanMessage
from .datasets import shared_data

LATENCY_CONFIGS = {  # name -> (reader, settings): what the model reads, everything else shared
    "topk": ("topk", {"EXPLAIN_FROM": "sources"}),        # the hits' own texts (plain RAG)
    "walk": ("walk", {"EXPLAIN_FROM": "sources"}),        # every source the walk read (the answer before the quote)
    "explain": ("walk", {"EXPLAIN_FROM": "quote"}),       # the quote's lines only
}
LATENCY_QUESTIONS = [
    "How much RAM and disk space does a desktop installation need at minimum?",
    "How do I write the installer image to a USB stick?",
    "How do I pass a preseed file to the installer at boot?",
    "What does the guide say about setting the root password?",
    "How can I install Debian from a hard disk without a CD?",
]
OFF_TOPIC = [
    "What is the capital of Mongolia according to this guide?",
    "What is the recipe for a chocolate cake?",
    "Who won the football world cup in 2018?",
]
CURVE_TOKENS = (0, 250, 500, 1000, 1500, 2000)


def _first_token_curve(model, text: str) -> list[dict]:
    """Seconds to the first token of one streamed call against the prompt's size in LLM tokens: the answer
    prompt around a slice of guide text of each size (a different slice each time: no shared prefix)."""
    from thread_rag.agent.answer import Source, answer_messages, stream_answer
    from thread_rag.llm.backends import reset_prompt_cache

    words, rows, at = text.split(), [], 0
    for n in CURVE_TOKENS:
        take = int(n / 1.35)
        src = [Source(["DOC1_000"], "DOC1", "install.en.pdf", "p.1", "", " ".join(words[at:at + take]), n=1)] if n else []
        at += take
        msgs = answer_messages("What does this section say?", src)
        reset_prompt_cache(model)
        first = stream_answer(model, msgs, max_tokens=1).first_s
        rows.append({"prompt_tokens": model.count_tokens(msgs[0].content), "first_token_s": round(first or 0, 3)})
    return rows


def run_latency_bench(settings, args) -> dict:
    """Debian guide, one run: each question answered by the fast path reading top-k and reading the walk
    (the default); off-topic refusals; the
    first-token curve. llama.cpp's prompt cache is reset before every question (no strategy inherits
    another's evaluated prompt) and then holds only the answer prompt's fixed head, as in the REPL, which
    evaluates it when the model loads (``warm_prefix``)."""
    import shutil
    import tempfile
    from pathlib import Path

    from thread_rag.agent.answer import warm_prefix
    from thread_rag.agent.loop import Agent
    from thread_rag.engine import Engine
    from thread_rag.llm.backends import limit, reset_prompt_cache
    from .baselines import BASELINES
    from .retrieval import STEPS_SETTINGS, machine, search_settings

    home = Path(tempfile.mkdtemp(prefix="thread-rag-lat-"))
    readers = args.configs.split(",") if args.configs else ["topk", "walk", "explain"]
    unknown = [r for r in readers if r not in LATENCY_CONFIGS]
    if unknown:
        from thread_rag.errors import ThreadRagError

        raise ThreadRagError(f"bench latency: unknown configuration {unknown[0]!r} ({', '.join(LATENCY_CONFIGS)})")
    try:
        e = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "cache"), MODEL_DIR=str(settings.model_dir)))
        e.index_file(args.file or str(shared_data() /
                                      "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf"))
        agent = Agent(e, readers=BASELINES)
        agents = {}
        for r in readers:
            agents[r] = Agent(e, chat_model=agent.model, readers=BASELINES)
            agents[r].settings = e.settings.replace(**LATENCY_CONFIGS[r][1])
        _ = agent.model.invoke([HumanMessage("hi")], **limit(agent.model, 1))  # load the model outside the timings
        rows = []
        for q in LATENCY_QUESTIONS[: args.limit or 5]:
            for r in readers:
                who = agents[r]
                who.clear()
                reset_prompt_cache(agent.model)
                warm_prefix(agent.model, who.settings.EXPLAIN_FROM)
                a = who.ask(q, reader=LATENCY_CONFIGS[r][0])
                rows.append({"question": q, "reader": r, "quote_s": a.timings.get("quote_s"),
                             "first_token_s": a.timings["first_token_s"],
                             "total_s": a.timings["total_s"], "refused": a.refused, "llm_calls": a.llm_calls,
                             "prompt_tokens": a.tokens.get("in"), "mode": a.mode,
                             "citations": [f"{c.chunk_id}:{c.how}" for c in a.citations], "answer": a.answer[:300]})
        off = []
        for q in OFF_TOPIC:
            agent.clear()
            a = agent.ask(q, reader=agent.settings.READER)  # a question, never read as a request
            off.append({"question": q, "seconds": a.timings["total_s"], "refused": a.refused,
                        "llm_calls": a.llm_calls, "relevance": a.relevance})
        first = e.thread(1).chunks
        curve = _first_token_curve(agent.model, " ".join(c.text for c in first[40:200]))
        med = {r: round(float(np.median([x["first_token_s"] for x in rows if x["reader"] == r and x["first_token_s"]]
                                        or [np.nan])), 2) for r in readers}
        tot = {r: round(float(np.median([x["total_s"] for x in rows if x["reader"] == r])), 2) for r in readers}
        quote = {r: round(float(np.median([x["quote_s"] for x in rows if x["reader"] == r and x["quote_s"]]
                                          or [np.nan])), 2) for r in readers}
        ratio = {r: round(med[r] / med["topk"], 2) for r in readers if "topk" in med and med["topk"]}
        return {"backend": agent.backend, "machine": machine(), "questions": len(LATENCY_QUESTIONS[: args.limit or 5]),
                "chunks": sum(d.chunk_count for d in e.documents()),
                "quote_s_median": quote, "first_token_s_median": med, "total_s_median": tot,
                "first_token_ratio_vs_topk": ratio,
                "configs": {r: {"reader": LATENCY_CONFIGS[r][0], **LATENCY_CONFIGS[r][1]} for r in readers},
                "off_topic": off, "first_token_curve": curve,
                "prompt_cache": "reset per question, then the answer prompt's fixed head evaluated (as the REPL does "
                                "at model load)",
                "settings": search_settings(e.settings, "READ_K", "READ_BUDGET", "MAX_ANSWER_TOKENS", "LLM_THREADS",
                                            "LLM_BATCH", "RELEVANCE_MIN", "RERANKER", "EMBEDDER_MODEL",
                                            *STEPS_SETTINGS),
                "command": "thread-rag bench latency" + (f" --configs {args.configs}" if args.configs else ""),
                "rows": rows}
    finally:
        shutil.rmtree(home, ignore_errors=True)
