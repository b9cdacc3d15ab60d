"""``thread-rag bench report [--file DIR]``: Markdown tables from the JSON results in ``bench_results/``.

Each JSON file is the unedited stdout of one ``thread-rag bench ...`` command (its name says which);
the tables in bench_results/DETAILS.md are this command's output.
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
    split = f" ({x['split']} split)" if x.get("split") else ""
    rer = x["models"].get("reranker", "none")
    lines = [f"*{x['dataset']}: {x['queries']} queries{split}, {x['corpus_docs']} documents, {x['chunks']} chunks "
             f"({x.get('corpus', 'full')} corpus); "
             f"{'index reused' if x['index_seconds'] < 1 else 'indexing took %.0f s' % x['index_seconds']}; embedder "
             f"{x['models']['embedder']} ({x['models']['dtype']}); stage 3: {rer}.*",
             "", "| configuration | nDCG@10 (95% CI) | R@1 | R@5 | R@10 | MRR@10 | all-gold@10 | p50 / p95 ms (k=50) | "
             "p50 / p95 ms (k=5) | early exit |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in x["configs"].items():
        ci = r["ndcg@10_ci95"]
        lines.append(f"| {name} | {r['ndcg@10']:.3f} ({ci[0]:.3f}-{ci[1]:.3f}) | {r['recall@1']:.3f} | {r['recall@5']:.3f} | "
                     f"{r['recall@10']:.3f} | {r['mrr@10']:.3f} | {r['all@10']:.2f} | {_ms(r['p50_ms'])} / {_ms(r['p95_ms'])} | "
                     f"{_ms(r.get('k5_p50_ms'))} / {_ms(r.get('k5_p95_ms'))}{_k5_count(r)} | "
                     f"{r['early_exit_rate']:.2f} |")
    if x.get("chat_model"):
        lines.append(f"\n*Configurations with `qN` (question steps) called {x['chat_model']}; their latency includes it.*")
    return "\n".join(lines)


def _k5_count(r: dict) -> str:
    """How many questions the k=5 latency loop timed, where not the usual 50 (LLM question steps: 20)."""
    n = r.get("k5_questions")
    return f" ({n} q)" if n is not None and n != 50 else ""


def _ms(v) -> str:
    """A latency cell; "-" where none was measured (a configuration served from the stage-3 score memo)."""
    return "-" if v is None else f"{v:.0f}"


def no_regret_line(x: dict, default: str) -> str:
    """The default configuration against the best single retriever on the same questions (paired)."""
    from .retrieval import label_of, paired

    rows, pq = x["configs"], x.get("per_query") or {}
    singles = [c for c in ("dense_only", "bm25_only") if c in rows and c in pq]
    label = label_of(x, default)
    if label not in pq or not singles:
        return ""
    best = max(singles, key=lambda c: rows[c]["ndcg@10"])
    d, ci = paired(pq, label, best)
    verdict = "better" if ci[0] > 0 else "worse" if ci[1] < 0 else "no difference shown"
    return (f"Default `{default}` (row `{label}`) minus the best single retriever (`{best}`), nDCG@10 paired over the same "
            f"{x['queries']} questions: {d:+.3f} (95% CI {ci[0]:+.3f} to {ci[1]:+.3f}): {verdict}.")


EMBEDDER_TAGS = ("-minilm", "-bge")


def embedder_runs(d: Path) -> list[Path]:
    """The test-half files of the embedder comparison, one per set and embedder (``retrieval-*-test-minilm`` /
    ``-bge``); the other test-half files (``-hop``, ``-chain``) rerun MiniLM's default beside what they compare."""
    return [p for p in sorted(d.glob("retrieval-*-test-*.json")) if p.stem.endswith(EMBEDDER_TAGS)]


def embedder_table(runs: list, default: str) -> str:
    """Both embedders side by side on the test halves: dense alone, stage 1+2, and the default pipeline."""
    from .retrieval import label_of

    lines = ["| set (corpus) | embedder | dense nDCG@10 | BM25 nDCG@10 | stage 1+2 nDCG@10 | default nDCG@10 (95% CI) | "
             "default R@5 | default all-gold@10 | default p50 / p95 ms (k=5) |", "|---|---|---|---|---|---|---|---|---|"]
    for x in runs:
        c = x["configs"]
        d = c.get(label_of(x, default) or "")
        if d is None:
            lines.append(f"| {x['dataset']} ({x['chunks']} chunks, {x.get('corpus', 'full')}) | {x['models']['embedder']} | "
                         f"default `{default}` not run |||||||")
            continue
        ci = d["ndcg@10_ci95"]
        lines.append(f"| {x['dataset']} ({x['chunks']} chunks, {x.get('corpus', 'full')}) | {x['models']['embedder']} | "
                     f"{c.get('dense_only', {}).get('ndcg@10', float('nan')):.3f} | "
                     f"{c.get('bm25_only', {}).get('ndcg@10', float('nan')):.3f} | "
                     f"{c.get('stage1_2', {}).get('ndcg@10', float('nan')):.3f} | {d['ndcg@10']:.3f} "
                     f"({ci[0]:.3f}-{ci[1]:.3f}) | {d['recall@5']:.3f} | {d['all@10']:.2f} | "
                     f"{_ms(d['k5_p50_ms'])} / {_ms(d['k5_p95_ms'])} |")
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


def _ci(v, ci, signed: bool = False) -> str:
    if v is None:
        return "-"
    f = "{:+.3f}" if signed else "{:.3f}"
    return f"{f.format(v)} ({f.format(ci[0])} to {f.format(ci[1])})" if ci else f.format(v)


def _match_min(sh: dict) -> str:
    """The weak-match band, where a run recorded it (runs before it had none)."""
    if sh.get("MATCH_MIN") is None:
        return ""
    return f", weak match under MATCH_MIN={sh['MATCH_MIN']}: {sh['WEAK_MATCH']}"


def answers_table(x: dict) -> str:
    m = x.get("machine")
    where = f"; {m['cpu']}, {m['cores']} cores" if m else ""
    sh = x.get("shared_settings", {})
    lines = [f"*{x['dataset']}: {x['questions']} questions ({x.get('split') or 'all'} split), k={x.get('k')} entry chunks, "
             f"search scope: {x.get('search_scope', 'corpus')}; shared by every strategy: the answer prompt, the refusal "
             f"floor RELEVANCE_MIN={sh.get('RELEVANCE_MIN')}{_match_min(sh)}, {sh.get('MAX_ANSWER_TOKENS')} answer tokens, "
             f"source budget {sh.get('READ_BUDGET')} LLM tokens; {x['backend']}{where}.*", "",
             "| strategy | n | token F1 (95% CI) | F1 minus top-k, paired (95% CI) | gold recall | recall minus top-k "
             "(95% CI) | refused | F1 when answered | first token s (median) | s / question | prompt tokens | LLM calls | "
             "citations written / follow-up / matched | citation precision |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in x["strategies"].items():
        cb = r.get("cited_by", {})
        lines.append(f"| {name} | {r['questions']} | {_ci(r['f1'], r['f1_ci95'])} | "
                     f"{_ci(r.get('f1_minus_topk'), r.get('f1_minus_topk_ci95'), True)} | {_num(r['recall'])} | "
                     f"{_ci(r.get('recall_minus_topk'), r.get('recall_minus_topk_ci95'), True)} | "
                     f"{r['refusal_rate']:.3f} | {_num(r['f1_answered'])} | {r['first_token_s_median']:.1f} | "
                     f"{r['seconds_per_question']:.1f} | {r['tokens_in']:.0f} | {r['llm_calls']:.2f} | "
                     f"{cb.get('written', 0)} / {cb.get('sources_call', 0)} / {cb.get('matched', 0)} | "
                     f"{_num(r.get('citation_precision'))} |")
    return "\n".join(lines)


def latency_table(x: dict) -> str:
    m = x["machine"]
    chunks = f" ({x['chunks']} chunks)" if x.get("chunks") else ""
    lines = [f"*Debian installation guide{chunks}, {x['questions']} questions; {x['backend']}; {m['cpu']}, "
             f"{m['cores']} cores; llama.cpp prompt cache: {x.get('prompt_cache', 'reset before every question')}.*", "",
             "| reading | quote s (median) | first token s (median) | ratio to top-k | total s (median) |",
             "|---|---|---|---|---|"]
    for r, v in x["first_token_s_median"].items():
        q = (x.get("quote_s_median") or {}).get(r)
        lines.append(f"| {r} | {'-' if q is None else f'{q:.1f}'} | {v:.1f} | "
                     f"{x['first_token_ratio_vs_topk'].get(r, float('nan')):.2f} | {x['total_s_median'][r]:.1f} |")
    lines += ["", "| off-topic question | refused | seconds | LLM calls | best cosine |", "|---|---|---|---|---|"]
    for r in x["off_topic"]:
        lines.append(f"| {r['question']} | {r['refused']} | {r['seconds']:.2f} | {r['llm_calls']} | {r['relevance']:.2f} |")
    lines += ["", "| prompt tokens | " + " | ".join(str(c["prompt_tokens"]) for c in x["first_token_curve"]) + " |",
              "|---|" + "---|" * len(x["first_token_curve"]),
              "| first token s | " + " | ".join(f"{c['first_token_s']:.1f}" for c in x["first_token_curve"]) + " |"]
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


def readers_report(suite: dict, readers: dict) -> str:
    """One data set's every reading: the suite's top-k and walk answers with the further readings of a
    ``bench suite --base`` run (paired with the same top-k rows), then the walk against each further reading."""
    from .metrics import paired_rows

    a, b = suite["answers"], readers["answers"]
    if a["rows"]["topk"] != b["rows"]["topk"]:
        return f"*{suite['dataset']}: the readers run is not paired with this suite's top-k answers; not shown.*"
    merged = {**b, "strategies": {**a["strategies"], **{k: v for k, v in b["strategies"].items() if k != "topk"}}}
    frm = b.get("topk_from", {})
    lines = [f"`{readers['command']}` · {readers['seconds']:.0f} s · top-k rows from `{frm.get('file')}`, answered "
             f"again on {frm.get('checked')} questions: {frm.get('identical')} word for word the same. Answers are paired on "
             f"the same questions; the seconds columns of the top-k and walk rows come from the suite's run, the "
             f"others from this one (different load: compare quality here, time in the latency table)", "",
             answers_table(merged), ""]
    walk = a["rows"].get("walk")
    for name, rows in b["rows"].items():
        if name == "topk" or not walk:
            continue
        mean, (lo, hi), n = paired_rows(walk, rows, "f1")
        lines.append(f"- walk minus {name}, token F1 paired over {n} questions: {mean:+.3f} ({lo:+.3f} to {hi:+.3f})")
    return "\n".join(lines)


GROUNDING_ROWS = (("quote", "", "(a) the quote alone"), ("explain", "shown_", "(b) the quote + the explanation"),
                  ("explain", "model_", "(b') the explanation alone"), ("sources", "model_", "(c) the model reading every "
                                                                                          "source (the answer before)"))


def grounding_table(x: dict) -> str:
    """``bench grounding``: what a user is shown, scored against the gold answers, and what it cost."""
    m = x.get("machine") or {}
    cs, st = x["configs"], x.get("settings", {})
    lines = [f"*{x['dataset']} ({x.get('corpus', '')}{'; ' + str(x['chunks']) + ' chunks' if x.get('chunks') else ''}), "
             f"{cs[next(iter(cs))]['questions']} questions; READ_K={st.get('READ_K')}, READ_BUDGET={st.get('READ_BUDGET')}, "
             f"QUOTE_WORDS={st.get('QUOTE_WORDS')}, EXPLAIN_WORDS={st.get('EXPLAIN_WORDS')}, "
             f"{st.get('MAX_ANSWER_TOKENS')} answer tokens; {x.get('backend') or 'no model'}; {m.get('cpu', '?')}"
             f"{', ' + m['vector'] if m.get('vector') else ''}.*", "",
             "| what is shown | gold recall (95% CI) | minus (c), paired (95% CI) | token F1 (95% CI) | minus (c) (95% CI) "
             "| words | prompt tokens | quote s (median) | first model token s (median) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for config, pre, label in GROUNDING_ROWS:
        r = cs.get(config)
        if r is None or r.get(f"{pre}recall") is None:
            continue
        words = r.get("quote_words_mean") if config == "quote" else r.get("words_mean")
        if pre == "shown_":
            words = (r.get("quote_words_mean") or 0) + (r.get("words_mean") or 0)
        base = config == "sources"
        lines.append(f"| {label} | {_ci(r[pre + 'recall'], r[pre + 'recall_ci95'])} | "
                     f"{'-' if base else _ci(r.get(pre + 'recall_minus_sources'), r.get(pre + 'recall_minus_sources_ci95'), True)} | "
                     f"{_ci(r[pre + 'f1'], r[pre + 'f1_ci95'])} | "
                     f"{'-' if base else _ci(r.get(pre + 'f1_minus_sources'), r.get(pre + 'f1_minus_sources_ci95'), True)} | "
                     f"{_num(words)} | {'-' if config == 'quote' else _num(r.get('prompt_tokens_mean'))} | "
                     f"{r['quote_s_median']:.1f} | {'-' if config == 'quote' else _num(r.get('first_token_s_median'))} |")
    return "\n".join(lines)


def spans_table(x: dict) -> str:
    """``grounding_spans.py recheck``: the span check over every model answer, per set and configuration."""
    lines = ["| set | model reads | answers | checkable spans | not in the sources | answers with one | with an unsupported "
             "command, flag, path, file or setting | cited sentences with spans | citation precision |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, per in x["sets"].items():
        for config, r in per.items():
            lines.append(f"| {name} | {'the quote + next lines' if config == 'explain' else 'every source'} | "
                         f"{r['answers']} | {r['checked_spans']} | {r['unsupported_spans']} "
                         f"({_num(r['unsupported_rate'])}) | {r['answers_with_unsupported']} | "
                         f"{r['answers_with_unsupported_command']} | {r['cited_sentences_with_spans']} | "
                         f"{_num(r['citation_precision'])} |")
    return "\n".join(lines)


def quote_floor_table(x: dict, floor: float) -> str:
    """``bench refusal``: the evidence floor (QUOTE_MIN) beside the cosine floor alone, per group of questions."""
    scores = x["quote_scores"]  # None: refused by the cosine floor before any line was scored
    groups = [g for g in ("answerable", "in_domain_unanswerable", "off_domain") if x["questions"].get(g)]
    lines = [f"*{x['dataset']} ({x['split']} split): " + ", ".join(f"{g.replace('_', ' ')} {x['questions'][g]}"
                                                                   for g in groups) + ".*", "",
             "| refused by | " + " | ".join(g.replace("_", " ") for g in groups) + " |", "|---|" + "---|" * len(groups)]
    for label, t in (("the cosine floor alone (RELEVANCE_MIN)", None),
                     (f"that, or no line scoring {floor:g} (QUOTE_MIN)", floor)):
        share = [sum(b is None or (t is not None and b < t) for b in scores[g]) / len(scores[g]) for g in groups]
        lines.append(f"| {label} | " + " | ".join(f"{v:.3f}" for v in share) + " |")
    return "\n".join(lines)


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
    if x.get("rerank_grid"):  # a second floor, measured, not used: the cross-encoder's best probability
        lines += ["", f"*A second floor on the best cross-encoder probability of the k entry chunks (measured, not used as "
                  f"a floor; MATCH_MIN marks a weak match instead), after the cosine floor {x['current_RELEVANCE_MIN']}:*", "",
                  "| cross-encoder floor | answerable refused (wrong) | in-domain unanswerable refused | off-domain refused |",
                  "|---|---|---|---|"]
        lines += [f"| {r['rerank_min']:g} | {r['answerable_refused']:.3f} | {_num(r['in_domain_unanswerable_refused'])} "
                  f"| {r['off_domain_refused']:.3f} |" for r in x["rerank_grid"]]
    if x.get("band"):  # what the model did in the weak-match band, with and without leave to refuse
        lines += ["", f"*The weak-match band (cosine >= {x['current_RELEVANCE_MIN']}, best cross-encoder probability "
                  f"< MATCH_MIN = {x['MATCH_MIN']}): each question in it answered by the agent with the answer prompt's "
                  f"leave to refuse (WEAK_MATCH = refuse) and without it (note, the default):*", "",
                  "| group | questions | in the band | refused with leave | refused without leave |", "|---|---|---|---|---|"]
        lines += [f"| {g} | {b['questions']} | {b['in_band']} | {b['refused_with_leave']} | {b['refused_without_leave']} |"
                  for g, b in x["band"].items()]
    return "\n".join(lines)


def band_table(x: dict) -> str:
    """``bench band``: per strategy, the band's questions refused and answered with and without leave to refuse."""
    n = len(x["in_band"])
    lines = [f"*{x['dataset']}: {n} of {x['questions']} questions ({x['split']} split) in the weak-match band (best "
             f"cross-encoder probability of the k={x['k']} entry chunks < MATCH_MIN = {x['MATCH_MIN']}).*", ""]
    if n:
        lines += ["| strategy | WEAK_MATCH | refused | token F1 (mean over the band) | gold recall (mean) |",
                  "|---|---|---|---|---|"]
        for mode in ("refuse", "note"):
            for s, rows in x[mode].items():
                lines.append(f"| {s} | {mode} | {sum(r['refused'] for r in rows)} of {len(rows)} | "
                             f"{sum(r['f1'] for r in rows) / len(rows):.3f} | {sum(r['recall'] for r in rows) / len(rows):.3f} |")
    p = x.get("published")
    if p:
        lines += ["", f"*Published walk answers ({p['file']}): in the band F1 {_num(p['band_f1'])}, gold recall "
                  f"{_num(p['band_recall'])} ({p['band_n']} questions); out of it F1 {_num(p['rest_f1'])}, recall "
                  f"{_num(p['rest_recall'])} ({p['rest_n']}).*"]
    return "\n".join(lines)


def report(directory: str | None = None) -> str:
    d = Path(directory or "bench_results")
    out = []
    for name in ("retrieval-limit-small", "retrieval-aws-docs-qa", "retrieval-musique", "rerank-llm-musique",
                 "rerank-llm-aws"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", "", f"`{x.get('command', '')}`", "", retrieval_table(x), ""]
    from thread_rag.settings import Settings
    from .retrieval import default_spec

    default = default_spec(Settings())  # today's default pipeline, whatever the default was when a file was run
    runs = [json.loads(p.read_text()) for p in embedder_runs(d)]
    if runs:
        out += [f"### Embedders on the test halves (default pipeline `{default}`)", "", embedder_table(runs, default), ""]
    for p in sorted(d.glob("retrieval-*-test-*.json")):  # issue 14: test halves, one file per set and embedder
        x = json.loads(p.read_text())
        out += [f"### {p.stem}", "", f"`{x.get('command', '')}`", "", retrieval_table(x), ""]
        line = no_regret_line(x, default)
        if line:
            out += [line, ""]
    for p in sorted(d.glob("tuning-retrieval-*.json")):
        x = json.loads(p.read_text())
        out += [f"### {p.stem} (dev split: used to choose the defaults)", "", f"`{x.get('command', '')}`", "",
                retrieval_table(x), ""]
    for name in ("context-leval-legal", "context-aws-docs-qa"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", "", context_table(x), ""]
    for name in ("contextual-aws-docs-qa", "contextual-musique"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", "", contextual_table(x), ""]
    for name, what in (("tuning-dev-aws-docs-qa", "window rendering"), ("tuning-decide-musique", "post-reading decision"),
                      ("tuning-reading-aws-docs-qa", "the default reading"),
                      ("tuning-answers-musique-steps0", "question steps off"),
                      ("tuning-answers-musique-steps4", "question steps on, QUESTION_STEPS=4")):
        x = _load(d, name)
        if x:
            out += [f"### {name} ({what}, dev split)", "", f"`{x.get('command', '')}`", "", answers_table(x), ""]
    for p in sorted(d.glob("reading-*.json")):
        from .reading import reading_table

        x = _load(d, p.stem)
        out += [f"### {p.stem} (what each strategy reads, no LLM)", "", f"`{x.get('command', '')}`", "",
                reading_table(x), ""]
    x = _load(d, "throughput")
    if x:
        from .throughput import throughput_table

        out += ["### throughput", "", f"`{x.get('command', '')}`", "", throughput_table(x), ""]
    x = _load(d, "latency")
    if x:
        out += ["### latency", "", f"`{x.get('command', '')}`", "", latency_table(x), ""]
    for name in ("refusal-aws-docs-qa", "refusal-musique", "refusal-test-aws-docs-qa", "refusal-test-musique"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", "", f"`{x.get('command', '')}`", "", refusal_table(x), ""]
    from thread_rag.settings import Settings as _S

    for p in sorted(d.glob("refusal-quote-*.json")):
        x = json.loads(p.read_text())
        out += [f"### {p.stem}", "", f"`{x.get('command', '')}`", "", quote_floor_table(x, _S.QUOTE_MIN), ""]
    for name in ("grounding-aws-docs-qa", "grounding-leval-legal", "grounding-musique", "grounding-quote-leval-legal",
                 "grounding-quote-musique"):
        x = _load(d, name)
        if x:
            out += [f"### {name}", "", f"`{x.get('command', '')}`", "", grounding_table(x), ""]
    x = _load(d, "grounding-spans")
    if x:
        out += ["### grounding-spans", "", f"`{x.get('command', '')}`", "", spans_table(x), ""]
    for p in sorted(d.glob("band-*.json")):
        x = json.loads(p.read_text())
        out += [f"### {p.stem}", "", f"`{x.get('command', '')}`", "", band_table(x), ""]
    for p in sorted(d.glob("scale-*.json")):
        x = json.loads(p.read_text())
        at = f" (commit {x['commit']})" if x.get("commit") else ""
        out += [f"### {p.stem}", "", f"`{x.get('command', '')}`{at}", "", scale_table(x), ""]
    for p in sorted(d.glob("eval-validity-*.json")):
        x = json.loads(p.read_text())
        out += [f"### {p.stem}", "", f"`{x.get('command', '')}`", "", eval_validity_table(x), ""]
    suite = [x for x in (_load(d, f"suite-{n}") for n in ("aws-docs-qa", "leval-legal", "musique")) if x]
    if suite:
        out.append(suite_report(suite))
    for sub in sorted(p for p in d.iterdir() if p.is_dir()) if suite else []:  # `bench suite --base` runs
        for x in suite:
            y = _load(sub, f"suite-{x['dataset'].split('-test')[0]}")
            if y and y["answers"].get("topk_from"):
                out += ["", f"### {x['dataset']}: further readings ({sub.name}/, `bench suite --base`)", "",
                        readers_report(x, y)]
    return "\n".join(out)


def eval_validity_table(x: dict) -> str:
    """``bench eval``: each configuration's scores on the real and the made-up questions, the agreement of the two
    orderings, and refusals."""
    kinds = ", ".join(f"{k} {v}" for k, v in x["synthetic_questions"].items())
    lines = [f"{x['real_questions']} real questions, {sum(x['synthetic_questions'].values())} made up ({kinds}); "
             f"{x['corpus']} corpus of {x['corpus_docs']} documents, {x['chunks']} chunks; document-level scores",
             "", "| configuration | real MRR@10 | made-up MRR@10 | real recall@5 | made-up recall@5 | made-up chunk hit@5 |",
             "|---|---|---|---|---|---|"]
    for c in x["configs"]:
        r, s = x["real"][c], x["synthetic"][c]
        lines.append(f"| `{c}` | {r['mrr@10']:.3f} | {s['mrr@10']:.3f} | {r['hit@5']:.3f} | {s['hit@5']:.3f} | "
                     f"{s['chunk_hit@5']:.3f} |")
    v = x["validity"]
    per_kind = ", ".join(f"{k.rsplit('_', 1)[1]} {_num(t)}" for k, t in v.items()
                         if k.startswith("kendall_tau_mrr@10_"))
    self_tau = v.get("real_self_tau_ndcg@10") or v.get("real_self_tau_mrr@10") or {}  # (older files: nDCG all the same)
    pd = v["per_document"]
    chunk_tau = v.get("kendall_tau_chunk_mrr@10")
    if chunk_tau is None:  # files from before it was recorded: from their own per-configuration scores
        from .eval_validity import kendall

        chunk_tau = kendall([x["real"][c]["mrr@10"] for c in x["configs"]],
                            [x["synthetic"][c]["chunk_mrr@10"] for c in x["configs"]])
    lines += ["", f"Kendall tau, made-up vs real ordering (document level): MRR@10 {_num(v['kendall_tau_mrr@10'])} "
              f"(by kind: {per_kind}), made-up chunk-level MRR@10 vs real {_num(chunk_tau)}; the real questions' own ordering on bootstrap resamples "
              f"(nDCG@10): median tau {self_tau.get('median')}, 5th percentile {self_tau.get('p05')}. Per document: "
              f"{pd['documents']} documents with 2+ real questions, Spearman hit@5 {_num(pd.get('spearman_hit@5'))}, "
              f"nDCG@10 {_num(pd.get('spearman_ndcg@10'))}."]
    sp = v.get("separated_pairs_mrr@10")
    if sp:
        lines += ["", f"Configuration pairs the real questions tell apart (paired bootstrap 95% CI of the MRR@10 "
                      f"difference leaves out 0): {sp['separated_by_real']} of {sp['pairs']}; the made-up questions order "
                      f"{sp['same_order']} of them the same way, and tell {sp['made_up_separates_same_order']} apart "
                      f"the same way themselves."]
    ref = x["refusal"]
    lines += ["", "Refused by the answer path (quote mode): " + ", ".join(
        f"{g.replace('_', ' ')} {v['refused']}/{v['questions']}" for g, v in ref.items() if isinstance(v, dict) and v["questions"])
              + "."]
    m = x.get("model_questions") or {}
    if m:
        lines += ["", f"Model-written: {m['written']} kept of {m['tries']} tried in {m['seconds']} s "
                      f"(dropped: {', '.join(f'{k} {n}' for k, n in m['rejected'].items()) or 'none'})."]
    return "\n".join(lines)


def scale_table(x: dict) -> str:
    """One row per checkpoint of ``bench scale``, then the ingest rate against the embedder's own."""
    head = ("| chunks | docs | ingest chunks/s | peak RSS MiB | fds | bytes/chunk | index update s | fresh open s "
            "| add 1 doc (index + search) s | " + " | ".join(f"{c} p50/p95 ms" for c in ("stage 1", "stage 1+2", "default (stage 3)"))
            + " |")
    rows = [head, "|" + "---|" * (9 + 3)]
    for p in x.get("checkpoints", []):
        q = p["queries"]
        a = p["add_one_document"]
        lat = " | ".join(f"{q[c]['p50_ms']:.0f} / {q[c]['p95_ms']:.0f}" for c in ("stage1_rrf", "stage1_2", "three_stage") if c in q)
        rows.append(f"| {p['chunks']:,} | {p['documents']:,} | {p.get('ingest_chunks_per_s', '-')} | {p['peak_rss_mib']:.0f} | "
                    f"{p['open_fds']} | {p['bytes_per_chunk']:,} | {p['index_update_s']} | {p['fresh_open_s']} | "
                    f"{a['index_s']} + {a['first_search_s']} = {a['end_to_end_s']} ({a['chunks']} chunks) | {lat} |")
    if x.get("reused_library"):
        return "\n".join(rows + ["", f"No ingest: the library {x['reused_library']} grown by an earlier run, measured again."])
    r = x.get("encode_rate_chunks_per_s", {})
    sample = f" on {x['encode_rate_sample_chunks']} chunks" if x.get("encode_rate_sample_chunks") else ""
    rows += ["", f"Embedder alone (same run{sample}, sentence + token vectors, 64 chunks per call as indexing): {r.get('before')} chunks/s before, "
             f"{r.get('after')} after. Ingest phases (s): {x.get('phases_s')}. Corpus: {x.get('corpus')}."]
    return "\n".join(rows)


def scale_svg(x: dict, width: int = 560, height: int = 220) -> str:
    """The ingest rate along the run, checkpoints marked, as a small dependency-free SVG."""
    curve = x.get("curve") or []
    if not curve:
        return ""
    top = max(c["chunks"] for c in curve)
    peak = max(max(c["chunks_per_s"] for c in curve), 1.0)
    sx = lambda n: 40 + (width - 60) * n / top  # noqa: E731
    sy = lambda v: height - 30 - (height - 50) * v / peak  # noqa: E731
    line = " ".join(f"{sx(c['chunks']):.1f},{sy(c['chunks_per_s']):.1f}" for c in curve)
    marks = "".join(f'<line x1="{sx(p["chunks"]):.1f}" y1="20" x2="{sx(p["chunks"]):.1f}" y2="{height - 30}" '
                    f'stroke="#bbb" stroke-dasharray="3"/><text x="{sx(p["chunks"]) - 30:.1f}" y="30" font-size="10">'
                    f'{p["chunks"] // 1000}k</text>' for p in x.get("checkpoints", []))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">'
            f'<rect width="100%" height="100%" fill="white"/>{marks}'
            f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{line}"/>'
            f'<text x="40" y="{height - 8}" font-size="11">chunks indexed (0 to {top:,})</text>'
            f'<text x="4" y="14" font-size="11">ingest chunks/s per slice (top of the box: {peak:.0f}); dashed: '
            f'checkpoints</text></svg>')


GENERATED = "# Generated tables (`thread-rag bench report`)"


def write_report(target: str, directory: str | None = None) -> None:
    """Replace everything below the generated-tables heading of ``target`` (bench_results/DETAILS.md) with the report,
    so the tables there are only ever this command's output."""
    from thread_rag.atomic import atomic_write_bytes

    p = Path(target)
    text = p.read_text(encoding="utf-8")
    head = text.split(GENERATED)[0].rstrip() + "\n\n" if GENERATED in text else text.rstrip() + "\n\n"
    atomic_write_bytes(p, (head + GENERATED + "\n\n" + report(directory).rstrip() + "\n").encode("utf-8"))

