"""``thread-rag bench eval``: is ``thread-rag eval``'s made-up question set a good stand-in for real questions?

On a data set with real questions and gold documents, the set ``eval`` makes from the corpus alone (structure
questions, and the model's with ``--model-questions``) and the real questions are searched under the same retrieval
configurations over the same index. Reported: each configuration's MRR@10 and "hit@5" (document level, as ``bench
retrieval`` scores the real questions: the rank of the gold chunk's document; "hit@5" is the recall@5 of the gold
documents, the same as hit@5 but for a list question answered in several), Kendall's tau between the two
orderings of the configurations, the Spearman correlation of per-document hit@5 where documents have 2+ real
questions, and the answer path's refusals (quote mode, no model) on real answerable questions, real in-domain
unanswerable ones (questions whose gold document is not in the shrunk corpus, as ``bench refusal``), the synthetic
questions and the probes.
"""
from __future__ import annotations

import math
import time

import numpy as np
from .datasets import shared_data

CONFIGS = ("dense_only", "bm25_only", "stage1_rrf", "stage1_2")


def _doc_scores(ranked: list[str], gold: set) -> tuple[float, float]:
    from .metrics import mrr_at_k, recall_at_k

    return recall_at_k(ranked, gold, 5), mrr_at_k(ranked, gold, 10)


def _search_synthetic(retriever, keymap: dict, questions: list, name: str) -> dict:
    from thread_rag.evaluate.score import rank_of
    from thread_rag.ids import ChunkId
    from .metrics import ndcg_at_k
    from .retrieval import doc_ranking

    rows = []
    for q in questions:
        hits = retriever.search(q.text, k=50, pipeline=name).hits
        ranked = doc_ranking(hits, keymap)
        gold = {keymap[ChunkId.parse(g).doc_id] for g in q.gold}  # a list question's may be in several
        hit5, mrr = _doc_scores(ranked, gold)
        chunk_rank = rank_of(hits, set(q.gold))[0]  # as thread-rag eval ranks it: within the top 10
        rows.append({"qid": q.qid, "kind": q.kind, "doc": keymap[q.doc_id], "hit5": hit5, "mrr": mrr,
                     "ndcg": ndcg_at_k(ranked, gold, 10),
                     "chunk_hit5": float(bool(chunk_rank and chunk_rank <= 5)),
                     "chunk_mrr": 1.0 / chunk_rank if chunk_rank else 0.0})
    return {"hit@5": round(float(np.mean([r["hit5"] for r in rows])), 4),
            "mrr@10": round(float(np.mean([r["mrr"] for r in rows])), 4),
            "chunk_hit@5": round(float(np.mean([r["chunk_hit5"] for r in rows])), 4),
            "chunk_mrr@10": round(float(np.mean([r["chunk_mrr"] for r in rows])), 4), "rows": rows}


def _refused(engine, texts: list[str]) -> list[bool]:
    from thread_rag.agent.loop import quote_answer

    return [bool(quote_answer(engine, t)["refused"]) for t in texts]


def kendall(a: list[float], b: list[float]) -> float | None:
    """Kendall's tau-b of two scorings of the same items (ties counted as tau-b counts them); None when either
    scoring ties everything or there are fewer than two items."""
    if len(a) < 2:  # no order to agree on
        return None
    agree = disagree = only_a = only_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
            if da == 0 and db == 0:
                continue
            if da == 0:
                only_a += 1
            elif db == 0:
                only_b += 1
            elif da == db:
                agree += 1
            else:
                disagree += 1
    denom = math.sqrt((agree + disagree + only_a) * (agree + disagree + only_b))
    return None if denom == 0 else round((agree - disagree) / denom, 4)


def separated_pairs(configs: list, real: dict, made_up: dict) -> dict:
    """The pairs of configurations the real questions tell apart, and whether the made-up set agrees: for each pair
    whose real per-question differences (``real[config]``: scores in question order) have a paired bootstrap 95% CI
    that leaves out 0, whether the made-up questions' mean difference (``made_up[config]``) has the same sign, and
    whether its own CI leaves out 0 on that side. A tau over all pairs also counts pairs that differ by noise."""
    from itertools import combinations

    from .metrics import bootstrap_ci

    rows = []
    for a, b in combinations(configs, 2):
        d = [x - y for x, y in zip(real[a], real[b])]
        lo, hi = bootstrap_ci(d)
        if lo <= 0 <= hi:
            continue
        m = [x - y for x, y in zip(made_up[a], made_up[b])]
        mlo, mhi = bootstrap_ci(m)
        sign = 1 if lo > 0 else -1
        rows.append({"a": a, "b": b, "real_diff": round(float(np.mean(d)), 4), "real_ci": [round(lo, 4), round(hi, 4)],
                     "made_up_diff": round(float(np.mean(m)), 4), "made_up_ci": [round(mlo, 4), round(mhi, 4)],
                     "same_order": bool(np.mean(m) * sign > 0),
                     "made_up_separates_same_order": bool(mlo > 0 if sign > 0 else mhi < 0)})
    return {"pairs": len(configs) * (len(configs) - 1) // 2, "separated_by_real": len(rows),
            "same_order": sum(r["same_order"] for r in rows),
            "made_up_separates_same_order": sum(r["made_up_separates_same_order"] for r in rows), "rows": rows}


def ranks(x: list[float]) -> np.ndarray:
    """1-based ranks, ties given their average rank."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    out = np.empty(len(x))
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
            j += 1
        out[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rho (Pearson's r of the average ranks); None when either side is constant."""
    ra, rb = ranks(a), ranks(b)
    if len(ra) < 2 or ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def run_eval_validity(settings, args, progress=None) -> dict:
    from thread_rag.evaluate.questions import probe_questions, sample_mix, structure_questions
    from .corpus import open_corpus_engine
    from .datasets import check_disjoint, load_dataset
    from .retrieval import default_spec, machine, parse_config, run_retrieval, search_settings

    import random
    from pathlib import Path

    name, limit, split = args.dataset or "aws-docs-qa", args.limit or 60, args.split or "test"
    ds = load_dataset(name, shared_data(), limit=limit, seed=args.seed, split=split)
    if split == "test":
        check_disjoint(ds, Path(args.out or "bench_results"))
    engine, keymap, _ = open_corpus_engine(settings, ds, progress=progress)
    threads = [engine.thread(d.serial) for d in engine.documents()]
    t0 = time.perf_counter()
    pools = structure_questions(threads, args.seed)
    synth = sample_mix(pools, args.questions or 100, args.seed)
    structure_s = time.perf_counter() - t0
    model_info = {}
    if getattr(args, "model_questions", 0):
        from thread_rag.evaluate.model_questions import model_questions
        from thread_rag.evaluate.run import _model

        tries: list = []
        t1 = time.perf_counter()
        written = list(model_questions(threads, *_model(engine), args.model_questions, args.seed, tried=tries.append))
        model_info = {"written": len(written), "tries": len(tries), "seconds": round(time.perf_counter() - t1, 1),
                      "rejected": {w: sum(t["why"] == w for t in tries) for w in {t["why"] for t in tries if t["why"]}}}
        synth += written
    default = default_spec(settings)
    configs = list(CONFIGS) + [default]
    real = run_retrieval(engine, keymap, ds, configs)
    retriever, base = engine.retriever, engine.retriever.settings
    synthetic = {}
    try:
        for spec in configs:
            pipe, over = parse_config(spec)
            retriever.settings = base.replace(**over)
            synthetic[spec] = _search_synthetic(retriever, keymap, synth, pipe)
            for kind in sorted({q.kind for q in synth}):
                rows = [r for r in synthetic[spec]["rows"] if r["kind"] == kind]
                synthetic[spec].setdefault("by_kind", {})[kind] = {
                    "questions": len(rows), "mrr@10": round(float(np.mean([r["mrr"] for r in rows])), 4),
                    "hit@5": round(float(np.mean([r["hit5"] for r in rows])), 4)}
    finally:
        retriever.settings = base
    real_mrr = [real["configs"][c]["mrr@10"] for c in configs]
    real_hit5 = [real["configs"][c]["recall@5"] for c in configs]
    validity = {"kendall_tau_mrr@10": kendall(real_mrr, [synthetic[c]["mrr@10"] for c in configs]),
                "kendall_tau_hit@5": kendall(real_hit5, [synthetic[c]["hit@5"] for c in configs])}
    for kind in sorted({q.kind for q in synth}):
        validity[f"kendall_tau_mrr@10_{kind}"] = kendall(real_mrr, [synthetic[c]["by_kind"][kind]["mrr@10"]
                                                                    for c in configs])
    validity["per_document"] = _per_document(ds, real, synthetic[default], default)
    validity["real_self_tau_ndcg@10"] = _self_tau(ds, configs, real)
    validity["kendall_tau_chunk_mrr@10"] = kendall(real_mrr, [synthetic[c]["chunk_mrr@10"] for c in configs])
    validity["separated_pairs_mrr@10"] = separated_pairs(
        configs, {c: real["per_query"][c]["mrr@10"] for c in configs},
        {c: [r["mrr"] for r in synthetic[c]["rows"]] for c in configs})
    probes = probe_questions(synth, "\n".join(c.text for t in threads for c in t.chunks), max(5, len(synth) // 5),
                             random.Random(args.seed), {t.record.doc_id: t.record for t in threads})
    refusal = _refusals(engine, ds, name, split, limit, args.seed, synth, probes)
    for spec in synthetic:
        synthetic[spec]["rows"] = [{k: r[k] for k in ("qid", "hit5", "mrr")} for r in synthetic[spec]["rows"]]
    return {"dataset": ds.name, "split": split, "corpus": "shrunk", "corpus_docs": len(threads),
            "chunks": sum(len(t.chunks) for t in threads), "real_questions": len(ds.queries),
            "synthetic_questions": {k: sum(q.kind == k for q in synth) for k in sorted({q.kind for q in synth})},
            "structure_s": round(structure_s, 2), "model_questions": model_info, "configs": configs,
            "default_config": default, "validity": validity,
            "real": {c: {"mrr@10": real["configs"][c]["mrr@10"], "hit@5": real["configs"][c]["recall@5"]}
                     for c in configs},
            "synthetic": synthetic, "refusal": refusal, "qids": [q.qid for q in ds.queries],
            "synthetic_set": [{"qid": q.qid, "kind": q.kind, "text": q.text, "gold": q.gold} for q in synth],
            "machine": machine(), "models": {"embedder": settings.EMBEDDER_MODEL, "reranker": settings.RERANKER},
            "settings": search_settings(settings)}


def _self_tau(ds, configs: list, real: dict, n: int = 200, seed: int = 13) -> dict:
    """How stable the real questions' own ordering of the configurations is: Kendall's tau between the ordering on
    all real questions and on bootstrap resamples of them (median and 5th percentile). A synthetic set cannot agree
    with the real ordering more reliably than the real ordering agrees with itself."""
    per = {c: np.asarray(real["per_query"][c]["ndcg@10"]) for c in configs}  # per-question, paired
    base = [float(per[c].mean()) for c in configs]
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(n):
        idx = rng.integers(0, len(ds.queries), len(ds.queries))
        t = kendall(base, [float(per[c][idx].mean()) for c in configs])
        taus.append(0.0 if t is None else t)
    return {"metric": "ndcg@10 (per question, as bench retrieval keeps it)", "median": round(float(np.median(taus)), 3),
            "p05": round(float(np.percentile(taus, 5)), 3), "resamples": n}


def _per_document(ds, real: dict, synth_default: dict, default: str) -> dict:
    """Per-document scores of real and synthetic questions under the default configuration, over documents with 2+
    real questions and 1+ synthetic ones: Spearman's rho of mean hit@5 and of mean nDCG@10 (the finer one) when there
    are 5+ such documents."""
    real_by: dict = {}
    for i, q in enumerate(ds.queries):
        if len(q.gold_docs) == 1:
            real_by.setdefault(next(iter(q.gold_docs)), []).append(
                (real["per_query"][default]["recall@5"][i], real["per_query"][default]["ndcg@10"][i]))
    syn_by: dict = {}
    for r in synth_default["rows"]:
        syn_by.setdefault(r["doc"], []).append((r["hit5"], r["ndcg"]))
    docs = sorted(d for d in real_by if len(real_by[d]) >= 2 and d in syn_by)
    out: dict = {"documents": len(docs)}
    if len(docs) < 5:
        out["note"] = "fewer than 5 documents with 2+ real questions: no correlation reported"
        return out
    for j, name in ((0, "hit@5"), (1, "ndcg@10")):
        a = [np.mean([v[j] for v in real_by[d]]) for d in docs]
        b = [np.mean([v[j] for v in syn_by[d]]) for d in docs]
        rho = spearman(a, b)
        out[f"spearman_{name}"] = None if rho is None else round(rho, 4)
        if rho is None:
            out[f"note_{name}"] = "one side is the same for every document: no correlation defined"
    return out


def _refusals(engine, ds, name: str, split: str, limit: int, seed: int, synth: list, probes: list) -> dict:
    from .datasets import load_dataset

    in_corpus = {d.key for d in ds.corpus}
    full = load_dataset(name, shared_data(), split=split)
    rng = np.random.default_rng(seed)
    near = [q for q in full.queries if not (q.gold_docs & in_corpus)]
    near = [near[i] for i in sorted(rng.choice(len(near), size=min(30, len(near)), replace=False))] if near else []
    t = time.perf_counter()
    groups = {"real_answerable": [q.text for q in ds.queries], "real_in_domain_unanswerable": [q.text for q in near],
              "synthetic_answerable": [q.text for q in synth], "probes": [q.text for q in probes]}
    out = {}
    for g, texts in groups.items():
        r = _refused(engine, texts)
        out[g] = {"questions": len(r), "refused": sum(r)}
    out["seconds"] = round(time.perf_counter() - t, 1)
    if not near:
        out["note"] = "every question's gold document is in the shrunk corpus: no in-domain unanswerable questions"
    out["path"] = "agent.loop.quote_answer (the answer path in quote mode: relevance floor, then QUOTE_MIN)"
    return out
