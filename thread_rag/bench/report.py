"""``thread-rag bench report [--file DIR]``: Markdown tables from the JSON results in ``bench_results/``.

Each JSON file is the unedited stdout of one ``thread-rag bench ...`` command (its name says which);
the tables in BENCHMARKS.md are this command's output.
"""
from __future__ import annotations

import json
from pathlib import Path


def _load(d: Path, name: str):
    p = d / f"{name}.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def retrieval_table(x: dict) -> str:
    lines = [f"*{x['dataset']}: {x['queries']} queries, {x['corpus_docs']} documents, {x['chunks']} chunks; "
             f"indexing took {x['index_seconds']:.0f} s; embedder {x['models']['embedder']} ({x['models']['dtype']}).*",
             "", "| configuration | nDCG@10 (95% CI) | R@1 | R@5 | R@10 | MRR@10 | all-gold@10 | p50 / p95 ms (k=50) | "
             "p50 / p95 ms (k=5) | early exit |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in x["configs"].items():
        ci = r["ndcg@10_ci95"]
        lines.append(f"| {name} | {r['ndcg@10']:.3f} ({ci[0]:.3f}-{ci[1]:.3f}) | {r['recall@1']:.3f} | {r['recall@5']:.3f} | "
                     f"{r['recall@10']:.3f} | {r['mrr@10']:.3f} | {r['all@10']:.2f} | {r['p50_ms']:.0f} / {r['p95_ms']:.0f} | "
                     f"{r.get('k5_p50_ms', float('nan')):.0f} / {r.get('k5_p95_ms', float('nan')):.0f} | "
                     f"{r['early_exit_rate']:.2f} |")
    return "\n".join(lines)


def context_table(x: dict) -> str:
    base = x["strategies"].get("parent_doc", {}).get("words") or 1
    lines = [f"*{x['dataset']}: {x['queries']} questions, k={x['k']} entry chunks, search scope: {x['search_scope']}; "
             f"tokens counted with the {x['token_counter']}.*", "",
             "| strategy | gold-token coverage (95% CI) | gold span verbatim | context words | context tokens | "
             "words / parent-doc words |", "|---|---|---|---|---|---|"]
    for name, r in x["strategies"].items():
        ci = r["coverage_ci95"]
        lines.append(f"| {name} | {r['coverage']:.3f} ({ci[0]:.3f}-{ci[1]:.3f}) | {r['span_found']:.3f} | {r['words']:.0f} | "
                     f"{r['tokens']:.0f} | {r['words'] / base:.2f} |")
    return "\n".join(lines)


def _answered_f1(rows: list | None) -> str:
    """Mean F1 over the questions a strategy did not refuse (from the per-question rows), with their count."""
    if not rows:
        return "-"
    f = [r["f1"] for r in rows if not r["refused"]]
    return f"{sum(f) / len(f):.3f} ({len(f)})" if f else "- (0)"


def _refusal_flips(rows: list | None, base: list | None) -> str:
    """From the per-question rows: questions top-k answered that this strategy refused, and the reverse."""
    if not rows or not base or rows is base:
        return "-"
    top = {r["qid"]: r["refused"] for r in base}
    lost = sum(1 for r in rows if r["refused"] and top.get(r["qid"]) is False)
    won = sum(1 for r in rows if not r["refused"] and top.get(r["qid"]) is True)
    return f"{lost} / {won}"


def answers_table(x: dict) -> str:
    m = x.get("machine")
    where = f"; {m['cpu']}, {m['cores']} cores" if m else ""
    lines = [f"*{x['dataset']}: {x['questions']} questions, k={x.get('k', 5)} entry chunks, search scope: "
             f"{x.get('search_scope', 'corpus')}; {x['backend']}{where}.*", "",
             "| context | n | token F1 (95% CI) | F1 minus top-k, same questions (95% CI) | EM | correct (F1>=0.7) | "
             "wrong (F1<0.6) | refused | refused where top-k answered / the reverse | F1 when answered (n) | "
             "tokens in | tokens out | s / question |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = x.get("rows", {})
    for name, r in x["strategies"].items():
        ci = r["f1_ci95"]
        d = r.get("f1_minus_topk")
        dci = r.get("f1_minus_topk_ci95") or [0, 0]
        diff = f"{d:+.3f} ({dci[0]:+.3f} to {dci[1]:+.3f})" if d is not None else "-"
        lines.append(f"| {name} | {r.get('questions', x['questions'])} | {r['f1']:.3f} ({ci[0]:.3f}-{ci[1]:.3f}) | {diff} | "
                     f"{r['em']:.3f} | {r['correct_rate_f1>=0.7']:.3f} | {r['wrong_rate_f1<0.6']:.3f} | "
                     f"{r['refusal_rate']:.3f} | {_refusal_flips(rows.get(name), rows.get('topk'))} | "
                     f"{_answered_f1(rows.get(name))} | {r['tokens_in']:.0f} | "
                     f"{r['tokens_out']:.0f} | "
                     f"{r['seconds_per_question']:.1f} |")
    return "\n".join(lines)


def suite_report(results: list[dict]) -> str:
    """Markdown for ``bench suite`` results: per data set, the context table then the answers table."""
    out = []
    for x in results:
        m = x["machine"]
        out += [f"### {x['dataset']} (suite)", "",
                f"`{x['command']}` · {m['cpu']}, {m['cores']} cores · {x['corpus_docs']} documents, {x['chunks']} chunks "
                f"(indexed in {x['index_seconds']:.0f} s) · embedder {x['models']['embedder']} ({x['models']['dtype']}) · "
                f"{x['seconds']:.0f} s for this data set", "",
                context_table(x["context"]), "", answers_table(x["answers"]), ""]
    if results:
        out.append(f"*Suite total: {results[-1]['suite_seconds_so_far']:.0f} s.*")
    return "\n".join(out)


def contextual_table(x: dict) -> str:
    lines = [f"*{x['dataset']}: {x['queries']} queries, {x['chunks']} chunks, dense only; summaries: {x['summarizer']}.*",
             "", "| embedded text | document Recall@5 (95% CI) | adjacent chunk pairs in top-5 |", "|---|---|---|"]
    for name, r in x["variants"].items():
        ci = r["recall@5_ci95"]
        lines.append(f"| {name} | {r['recall@5']:.3f} ({ci[0]:.3f}-{ci[1]:.3f}) | {r['adjacent_pairs_in_top5']:.2f} |")
    return "\n".join(lines)


def _num(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def refusal_table(x: dict) -> str:
    q = x["questions"]
    lines = [f"*{x['dataset']}: {q['answerable']} answerable, {q['in_domain_unanswerable']} in-domain unanswerable "
             f"(gold document not indexed), {q['off_domain']} off-domain ({x['off_domain_from']}) questions; score = best "
             f"cosine of a chunk read ({x['path']}) to the question. AUC answerable vs in-domain "
             f"{x['auc_vs_in_domain']}, vs off-domain {x['auc_vs_off_domain']}.*", "",
             "| RELEVANCE_MIN | answerable refused (wrong) | in-domain unanswerable refused | off-domain refused |",
             "|---|---|---|---|"]
    for r in x["grid"]:
        mark = " (current)" if abs(r["threshold"] - x["current_RELEVANCE_MIN"]) < 1e-9 else ""
        lines.append(f"| {r['threshold']:.2f}{mark} | {r['answerable_refused']:.3f} | "
                     f"{_num(r['in_domain_unanswerable_refused'])} | "
                     f"{r['off_domain_refused']:.3f} |")
    return "\n".join(lines)


def report(directory: str | None = None) -> str:
    d = Path(directory or "bench_results")
    out = []
    for name in ("retrieval-limit-small", "retrieval-aws-docs-qa", "retrieval-musique", "rerank-llm-musique",
                 "rerank-llm-aws"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", "", f"`{x.get('command', '')}`", "", retrieval_table(x), ""]
    for name in ("context-leval-legal", "context-aws-docs-qa"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", "", context_table(x), ""]
    for name in ("contextual-aws-docs-qa", "contextual-musique"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", "", contextual_table(x), ""]
    for name in ("answers-agent-aws-docs-qa", "answers-agent-leval-legal", "answers-other-aws-docs-qa"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", ""] + ([f"`{x['command']}`", ""] if x.get("command") else []) + [answers_table(x), ""]
    for name in ("refusal-aws-docs-qa", "refusal-musique"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", "", f"`{x.get('command', '')}`", "", refusal_table(x), ""]
    suite = [x for x in (_load(d, f"suite-{n}") for n in ("aws-docs-qa", "leval-legal", "musique")) if x]
    if suite:
        out.append(suite_report(suite))
    return "\n".join(out)
