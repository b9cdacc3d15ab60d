"""``thread-rag bench refusal``: calibrating ``RELEVANCE_MIN``, the agent's first refusal test (and measuring a
cross-encoder floor on the best probability of the entry chunks) and, with ``--configs band``, what the model
does in the weak-match band (``MATCH_MIN``).

The agent refuses without asking the model when none of the ``k=3`` entry chunks of its search has
cosine >= ``RELEVANCE_MIN`` with the question (``agent.reading.best_similarity``, the fast path's floor).
This benchmark measures that score for three kinds of question over one quick corpus, all drawn from the
data sets' ``dev`` split (the answers benchmark reports on the ``test`` split and checks that no question
listed here under ``qids`` is among its own):

- ``answerable``: the sampled questions, whose gold documents are in the corpus;
- ``in_domain_unanswerable``: other questions of the same data set whose gold document is NOT in the
  corpus (same vocabulary, no answer: the hard case);
- ``off_domain``: questions from a different data set (musique for aws-docs-qa, aws-docs-qa otherwise).

For each threshold on a grid it reports the share of answerable questions wrongly refused and the share
of unanswerable ones correctly refused. The LLM answerability check that follows the threshold is not
part of this benchmark (it costs seconds per question; see ``bench answers`` refusal rates), except in the
band: with ``--configs band`` every question that passes the cosine floor with a best cross-encoder probability
under ``MATCH_MIN`` is answered by the agent twice, with the answer prompt's leave to refuse (``WEAK_MATCH =
"refuse"``) and without it (``"note"``, the default: the prompt is the usual one), and the refusals are counted.
"""
from __future__ import annotations

import numpy as np

from thread_rag.agent.loop import best_match
from thread_rag.agent.reading import best_similarity
from .datasets import shared_data

GRID = [round(x, 2) for x in np.arange(0.0, 0.71, 0.05)]
QUOTE_GRID = [-12.0, -11.0, -10.0, -9.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.5, -3.0, -2.5, -2.0, -1.5, -1.0, -0.5, 0.0, 1.0, 2.0]  # QUOTE_MIN
RERANK_GRID = [0.0, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2]  # cross-encoder probabilities


def _scores(engine, questions: list[str], k: int = 3) -> tuple[list[float], list[float | None]]:
    """Per question: the best entry-chunk cosine (the floor's score), and the best cross-encoder probability of
    the k entry chunks (None when stage 3 did not score them)."""
    cos, rerank = [], []
    for q in questions:
        hits = engine.retriever.search(q, k=k).hits
        qvec = engine.embedder.embed([q])[0]
        cos.append(best_similarity(engine.retriever.index, qvec, [h.chunk_id for h in hits[:k]]))
        rerank.append(best_match(hits[:k]))
    return cos, rerank


def quote_scores(engine, questions: list[str]) -> list[float | None]:
    """Per question: the best line's cross-encoder logit of the quote the answer path makes from what it read (None
    when the cosine floor refuses first), with the evidence floor itself off."""
    agent = quote_agent(engine)
    out = []
    for q in questions:
        agent.clear()
        out.append(agent.ask(q, reader="walk").quote_best)
    return out


def quote_agent(engine):
    """The answer path in quote mode with the evidence floor off (``QUOTE_MIN`` -100): every question gets its quote
    and the quote's best score, for a floor to be chosen on."""
    from thread_rag.agent.loop import Agent

    agent = Agent(engine)
    agent.settings = engine.settings.replace(ANSWER_MODE="quote", QUOTE_MIN=-100.0, INTENTS=False,
                                             CONDENSE_FOLLOWUPS=False)
    return agent


def quote_floor_grid(scores: dict, grid: list[float] = QUOTE_GRID) -> list[dict]:
    """Per evidence floor (``QUOTE_MIN``): the share of each group's questions refused, by the cosine floor (a score of
    None) or by a best line under it."""
    return [{"quote_min": t, **{f"{g}_refused": round(float(np.mean([b is None or b < t for b in v])), 4) if v else None
                                for g, v in scores.items()}} for t in grid]


def rerank_floor_grid(both: dict, floor: float, grid: list[float] = RERANK_GRID) -> list[dict]:
    """Per cross-encoder floor: the share of each group's questions refused by the cosine ``floor`` or by a best
    cross-encoder probability under it (``both``: group -> (cosines, probabilities or None))."""
    return [{"rerank_min": t, **{f"{g}_refused": round(float(np.mean([c < floor or (r is not None and r < t)
                                                                    for c, r in zip(cos, probs)])), 4)
                                 if cos else None for g, (cos, probs) in both.items()}} for t in grid]


def auc(pos: list[float], neg: list[float]) -> float:
    """Probability that a random answerable question scores above a random unanswerable one (ties 1/2)."""
    if not pos or not neg:
        return float("nan")
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def in_band(cos: list[float], probs: list[float | None], settings) -> list[int]:
    """Indexes of the questions the cosine floor (``RELEVANCE_MIN``) lets through with a weak match (a best
    cross-encoder probability under ``MATCH_MIN``)."""
    return [i for i, (c, r) in enumerate(zip(cos, probs)) if c >= settings.RELEVANCE_MIN and settings.weak_match(r)]


def band_answers(engine, groups: dict, both: dict) -> dict:
    """Per group: each band question answered with leave to refuse (``WEAK_MATCH = "refuse"``) and without it
    (``"note"``)."""
    from thread_rag.agent.loop import Agent

    s = engine.settings
    leave = Agent(engine)
    leave.settings = s.replace(WEAK_MATCH="refuse")
    no_leave = Agent(engine, chat_model=leave.model)
    no_leave.settings = s.replace(WEAK_MATCH="note")
    out = {}
    for g, qs in groups.items():
        rows = []
        for i in in_band(*both[g], s):
            row = {"question": qs[i], "match": both[g][1][i]}
            for label, agent in (("leave", leave), ("no_leave", no_leave)):
                agent.clear()
                a = agent.ask(qs[i], reader=agent.settings.READER)  # a data set's question is a question
                row[label] = {"refused": a.refused, "answer": a.answer[:200], "agent_match": a.match}
            rows.append(row)
        out[g] = {"questions": len(qs), "in_band": len(rows), "refused_with_leave": sum(r["leave"]["refused"] for r in rows),
                  "refused_without_leave": sum(r["no_leave"]["refused"] for r in rows), "rows": rows}
    return out


def run_refusal_bench(settings, args) -> dict:
    from .corpus import open_corpus_engine
    from .datasets import load_dataset
    from .retrieval import machine

    name = args.dataset or "aws-docs-qa"
    limit = args.limit or 30
    split = args.split or "dev"  # dev calibrates; --split test re-measures the chosen floor on held-out questions
    ds = load_dataset(name, shared_data(), limit=limit, seed=args.seed, split=split)
    engine, _, _ = open_corpus_engine(settings, ds)
    in_corpus = {d.key for d in ds.corpus}
    full = load_dataset(name, shared_data(), split=split)
    rng = np.random.default_rng(args.seed)
    near_q = [q for q in full.queries if not (q.gold_docs & in_corpus)]
    near_q = [near_q[i] for i in sorted(rng.choice(len(near_q), size=min(limit, len(near_q)), replace=False))]
    near = [q.text for q in near_q]
    other = load_dataset("musique" if name != "musique" else "aws-docs-qa", shared_data(), limit=limit,
                         seed=args.seed, split=split)
    groups = {"answerable": [q.text for q in ds.queries], "in_domain_unanswerable": near,
              "off_domain": [q.text for q in other.queries]}
    both = {g: _scores(engine, qs) for g, qs in groups.items()}
    scores = {g: v[0] for g, v in both.items()}
    unans = scores["in_domain_unanswerable"] + scores["off_domain"]
    rows = []
    for t in GRID:
        rows.append({"threshold": t,
                     "answerable_refused": round(float(np.mean([s < t for s in scores["answerable"]])), 4),
                     "in_domain_unanswerable_refused": round(float(np.mean([s < t for s in
                                                                            scores["in_domain_unanswerable"]])), 4)
                     if near else None,
                     "off_domain_refused": round(float(np.mean([s < t for s in scores["off_domain"]])), 4)})
    rerank_rows = rerank_floor_grid(both, settings.RELEVANCE_MIN)
    quotes = {g: quote_scores(engine, qs) for g, qs in groups.items()}
    band = band_answers(engine, groups, both) if "band" in (args.configs or "").split(",") else None
    return {"dataset": ds.name, "off_domain_from": other.name, "questions": {g: len(v) for g, v in groups.items()},
            "rerank_grid": rerank_rows, "quote_scores": quotes, "quote_grid": quote_floor_grid(quotes),
            "current_QUOTE_MIN": settings.QUOTE_MIN, **({"band": band, "MATCH_MIN": settings.MATCH_MIN} if band else {}), "rerank_scores": {g: v[1] for g, v in both.items()},
            "cosine_scores": {g: [round(float(c), 6) for c in v[0]] for g, v in both.items()},
            "current_RELEVANCE_MIN": settings.RELEVANCE_MIN, "path": "search k=3, best entry-chunk cosine",
            "split": split, "qids": sorted({q.qid for q in ds.queries} | {q.qid for q in near_q} |
                                           {q.qid for q in other.queries}),
            "score_quantiles": {g: [round(float(np.quantile(v, q)), 3) for q in (0.1, 0.25, 0.5, 0.75, 0.9)]
                                for g, v in scores.items() if v},
            "auc_vs_in_domain": round(auc(scores["answerable"], scores["in_domain_unanswerable"]), 4) if near else None,
            "auc_vs_off_domain": round(auc(scores["answerable"], scores["off_domain"]), 4),
            "auc_vs_all_unanswerable": round(auc(scores["answerable"], unans), 4),
            "grid": rows, "machine": machine(), "command": "thread-rag bench refusal --dataset " + name +
            f" --limit {limit}" + (" --split test" if split == "test" else "") + (" --configs band" if band else "")}


def run_band_bench(settings, args) -> dict:
    """``thread-rag bench band``: the questions of an answers sample (default the suite's: test split, 60) whose entry
    chunks fall in the weak-match band, answered by each strategy (default top-k and walk) with ``WEAK_MATCH =
    "refuse"`` and ``"note"``; beside them, where ``bench_results/suite-<set>.json`` holds the same questions, the
    published walk answers' F1 and gold recall in and out of the band (does a weak match predict a worse answer?)."""
    import dataclasses
    import json
    from pathlib import Path

    from thread_rag.llm.backends import make_chat_model
    from .answers import K, open_sample
    from .retrieval import machine
    from . import command_line

    ds, engine, keymap = open_sample(settings, args, "test", 60)
    k = args.k or K
    matches = {}
    for q, doc_id in zip(ds.queries, ds.scope_doc_ids(keymap)):
        matches[q.qid] = best_match(engine.retriever.search(q.text, doc_id=doc_id, k=k).hits[:k])
    band = [q for q in ds.queries if settings.weak_match(matches[q.qid])]
    out = {"dataset": ds.name, "questions": len(ds.queries), "split": ds.split, "k": k, "MATCH_MIN": settings.MATCH_MIN,
           "in_band": [q.qid for q in band], "matches": matches, "machine": machine(), "command": command_line()}
    strategies = args.configs.split(",") if args.configs else ["topk", "walk"]
    if band:
        out.update(band_runs(dataclasses.replace(ds, queries=band), engine, keymap, strategies, k,
                             make_chat_model(settings)))
    suite = Path(args.out or "bench_results") / f"suite-{args.dataset or 'aws-docs-qa'}.json"
    if suite.is_file():
        rows = json.loads(suite.read_text())["answers"]["rows"].get("walk", [])
        if {r["qid"] for r in rows} == set(matches):
            out["published"] = {"file": str(suite), **published_split(rows, {q.qid for q in band})}
    return out


def band_runs(ds, engine, keymap, strategies: list[str], k: int, model) -> dict:
    """``ds``'s questions answered by each strategy with ``WEAK_MATCH = "refuse"`` and ``"note"``: mode -> strategy ->
    rows (``bench answers``' equal terms; the engine's settings are put back after)."""
    from .answers import run_answers

    home, out = engine.settings, {}
    try:
        for mode in ("refuse", "note"):
            engine.settings = home.replace(WEAK_MATCH=mode)
            r = run_answers(ds, engine, keymap, strategies, k=k, model=model)
            out[mode] = {s: [{f: row[f] for f in ("qid", "f1", "recall", "refused", "match", "answer")} for row in rows]
                         for s, rows in r["rows"].items()}
    finally:
        engine.settings = home
    return out


def published_split(rows: list[dict], band: set) -> dict:
    """Mean F1 and gold recall of published answers in the band and out of it."""
    def mean(rs, f):
        return round(float(np.mean([r[f] for r in rs])), 4) if rs else None

    inside, outside = [r for r in rows if r["qid"] in band], [r for r in rows if r["qid"] not in band]
    return {"band_n": len(inside), "band_f1": mean(inside, "f1"), "band_recall": mean(inside, "recall"),
            "rest_n": len(outside), "rest_f1": mean(outside, "f1"), "rest_recall": mean(outside, "recall")}
