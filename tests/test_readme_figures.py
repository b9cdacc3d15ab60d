"""Every figure README.md and BENCHMARKS.md state is read from the bench_results JSON it comes from: a figure that
drifts from its file, or a figure with no file behind it, fails here. (Transcripts in code blocks are program output,
not figures; plain integers such as question counts are not looked for, though many are checked below.)"""
from __future__ import annotations

import json
import re
import sys

import pytest

from conftest import REPO

RESULTS = REPO / "bench_results"
RETRIEVAL = "retrieval-{}-test-minilm.json"
GROUNDING = "grounding-aws-docs-qa.json"
COLDSTART = "coldstart-avx2.json"
DEFAULT = ["configs", "$default_config", "ndcg@10"]

# page -> [(file, key paths, how the page writes them)]: each rendered text must be on the page. A key path step is a
# key, a list index, "$name" (the key the file's own field ``name`` holds), "key=value" (the list item whose ``key``
# is ``value``) or "max:key" (the largest ``key`` of a list's items); a list at the end of a path counts its items.
def OUT(mode: str, group: str) -> list:
    """bench outcome's count and total for one group in one mode."""
    return [[mode, group, "refused"], [mode, group, "n"]]


PAGES = {
    "README.md": [
        ("eval-run-debian.json", [["summary", "retrieval", m, *k] for m in ("hit@1", "hit@5", "mrr@10")
                                  for k in (["mean"], ["ci95", 0], ["ci95", 1])],
         "hit@1 {:.3f} ({:.3f}-{:.3f})   hit@5 {:.3f} ({:.3f}-{:.3f})   MRR@10 {:.3f} ({:.3f}-{:.3f})"),
        ("eval-run-debian.json", [["summary", "answers", k] for k in ("probes_refused", "probes", "wrongly_refused",
                                                                      "answerable", "quote_from_gold")],
         "probes refused {}/{}, answerable wrongly refused {}/{}, quote from a gold chunk {:.0%}"),
        (RETRIEVAL.format("aws-docs-qa"), [["queries"], ["chunks"]],
         "on {} held-out aws-docs-qa questions over the full corpus ({:,} chunks)"),
        (RETRIEVAL.format("aws-docs-qa"), [DEFAULT, ["configs", "bm25_only", "ndcg@10"]],
         "nDCG@10 {:.3f} against\n  {:.3f} for BM25 alone"),
        (GROUNDING, [["qids"], ["chunks"]], "on {} held-out aws-docs-qa questions (shrunk corpus, {:,} chunks)"),
        (GROUNDING, [["configs", "quote", "recall"], ["configs", "sources", "model_recall"]],
         "(gold-token recall {:.3f} against {:.3f})"),
        (GROUNDING, [["configs", "quote", "quote_words_median"]], "median\n  {} words"),
        (COLDSTART, [["repl_warm", "median_quote_s"], ["ask", "quote_median_s"]],
         "median {} s in a running chat and\n  {:.1f} s from a cold"),
        ("suite-run.json", [["tests"], ["minutes"], ["failed"], ["machine", "cpu"], ["machine", "vector"], ["commit"]],
         "A full run of {} tests took {} minutes on 2 cores, {} failed ({}, {}, nothing else running, at commit {};"),
        ("suite-quick.json", [["tests"], ["minutes"], ["failed"], ["machine", "vector"], ["commit"]],
         "keeps a test of every door: {} tests took {} minutes, {} failed (on an {}-only CPU, the slower kind, at "
         "commit {};"),
    ],
    "BENCHMARKS.md": [
        *[(RETRIEVAL.format(ds), [["chunks"], DEFAULT, ["configs", "bm25_only", "ndcg@10"],
                                  ["configs", "dense_only", "ndcg@10"]],
           f"| {ds} | {{:,}} | {{:.3f}} | {{:.3f}} | {{:.3f}} |") for ds in ("aws-docs-qa", "musique", "limit-small")],
        (RETRIEVAL.format("aws-docs-qa"), [["chunks"], ["configs", "$default_config", "k5_p50_ms"],
                                           ["configs", "stage1_2", "k5_p50_ms"]],
         "over the {:,} aws-docs-qa chunks takes p50 {} ms at k=5 with the cross-encoder and {} ms"),
        ("scale-100000-grouped.json", [["checkpoints", -1, "chunks"], ["checkpoints", -1, "ingest_chunks_per_s"],
                                       *[["checkpoints", -1, "queries", q, "p50_ms"]
                                         for q in ("stage1_rrf", "stage1_2", "three_stage")]],
         "At {:,} chunks (`thread-rag bench scale`,\n`scale-100000-grouped.json`): indexed at {} chunks/s; search p50 {} "
         "ms (stage 1), {} ms (stages 1-2),\n{} ms with the cross-encoder"),
        *[(f"suite-{ds}.json", [["answers", "strategies", "walk", "f1"], ["answers", "strategies", "topk", "f1"],
                                ["answers", "strategies", "walk", "f1_minus_topk_ci95", 0],
                                ["answers", "strategies", "walk", "f1_minus_topk_ci95", 1]],
           f"{ds} {{}} against {{}}{sep}{{}}{mid}{{}})")
          for ds, sep, mid in (("aws-docs-qa", " (paired 95% CI ", "\n  to "), ("leval-legal", " (CI ", " to "),
                               ("musique", " (CI ", "\n  to "))],
        (GROUNDING, [["configs", "quote", "recall"], ["configs", "sources", "model_recall"],
                     ["configs", "quote", "quote_words_median"]],
         "quote alone holds gold-token recall {:.3f} against {:.3f} for the old answer from every source, in a median {}"),
        (GROUNDING, [["configs", "explain", "prompt_tokens_mean"], ["configs", "sources", "prompt_tokens_mean"],
                     ["configs", "explain", "first_token_s_median"], ["configs", "sources", "first_token_s_median"]],
         "reads {:.1f} prompt tokens instead of {:.1f} and starts after a median {} s instead of\n  {} s"),
        ("grounding-musique.json", [["configs", "explain", "shown_recall"], ["configs", "sources", "model_recall"],
                                    ["configs", "explain", "shown_recall_minus_sources_ci95", 0],
                                    ["configs", "explain", "shown_recall_minus_sources_ci95", 1],
                                    ["configs", "explain", "model_recall"],
                                    ["configs", "explain", "model_recall_minus_sources_ci95", 0],
                                    ["configs", "explain", "model_recall_minus_sources_ci95", 1]],
         "holds gold-token recall {} against {} for the old answer (paired 95% CI of the difference {} to\n  {}); "
         "the explanation alone {} (CI {} to {}:"),
        ("grounding-musique.json", [["configs", "explain", "prompt_tokens_mean"], ["configs", "sources", "prompt_tokens_mean"],
                                    ["configs", "explain", "first_token_s_median"],
                                    ["configs", "sources", "first_token_s_median"],
                                    ["configs", "explain", "unsupported_spans"], ["configs", "explain", "checked_spans"],
                                    ["configs", "sources", "unsupported_spans"], ["configs", "sources", "checked_spans"]],
         "reads {:.1f} prompt tokens instead of {:.1f} and starts after a median {} s instead of {} s (both in one run,\n"
         "  interleaved, part of it beside other work on the CPU); {} of its {} checkable spans and {} of the old answers' {}"),
        ("grounding-leval-legal.json", [["configs", "quote", "recall"], ["configs", "sources", "model_recall"],
                                        ["configs", "quote", "recall_minus_sources_ci95", 0],
                                        ["configs", "quote", "recall_minus_sources_ci95", 1],
                                        ["configs", "quote", "quote_words_median"]],
         "the quote alone holds gold-token recall {} against {}\n  for the old answer (paired 95% CI of the difference "
         "{} to {}), in a median {} words"),
        ("grounding-leval-legal.json", [["configs", "explain", "shown_recall"],
                                        ["configs", "explain", "shown_recall_minus_sources_ci95", 0],
                                        ["configs", "explain", "shown_recall_minus_sources_ci95", 1],
                                        ["configs", "explain", "model_recall"],
                                        ["configs", "explain", "model_recall_minus_sources_ci95", 0],
                                        ["configs", "explain", "model_recall_minus_sources_ci95", 1],
                                        ["configs", "explain", "words_mean"], ["configs", "sources", "words_mean"]],
         "with the explanation\n  under it {} (CI {} to {}); the explanation alone {} (CI {} to {}: {:.1f} words on "
         "average\n  against the old answer's {:.1f}"),
        ("grounding-leval-legal.json", [["configs", "explain", "prompt_tokens_mean"],
                                        ["configs", "sources", "prompt_tokens_mean"],
                                        ["configs", "explain", "first_token_s_median"],
                                        ["configs", "sources", "first_token_s_median"],
                                        ["configs", "explain", "unsupported_spans"], ["configs", "explain", "checked_spans"],
                                        ["configs", "sources", "unsupported_spans"], ["configs", "sources", "checked_spans"]],
         "It reads {:.1f} prompt tokens instead of\n  {:.1f} and starts after a median {} s instead of {} s (one run, "
         "interleaved, its first half beside other work on\n  the CPU); {} of its {} checkable spans and {} of the old "
         "answers' {}"),
        ("grounding-spans.json", [["sets", "aws-docs-qa", c, k] for c in ("sources", "explain")
                                  for k in ("unsupported_spans", "checked_spans")],
         "{} of the old answers' {} checkable spans were not in their sources, {} of the explanation's {}."),
        ("checker-labels/score-2.json", [["of_those_flagged"], ["unsupported_by_readers"], ["recall"], ["flagged"],
                                         ["flagged_that_readers_call_unsupported"], ["precision"]],
         "it flagged {} of {}\n  (recall {}); of its {} flags {} was right (precision {})"),
        ("refusal-signals-dev.json", [["sets", "aws-docs-qa", "rules", "best", "gold_deleted"],
                                      ["sets", "musique", "rules", "best", "gold_deleted"],
                                      *[["sets", d, "rules", "best_floor"] for d in ("aws-docs-qa", "musique", "leval-legal")],
                                      ["sets", "leval-legal", "rules", "coverage", "answerable"],
                                      ["sets", "leval-legal", "rules", "named", "answerable"]],
         "question refuses {} on aws-docs-qa and {} on musique, but the floors differ by set ({}, {}, and\n  {} for "
         "leval-legal), and question-word or name coverage refuses {} and {} answerable contracts"),
        *[(f"outcome-{ds}.json", [*OUT(mode, "unanswerable_refused"), *OUT(mode, "answerable_refused")], text)
          for ds, mode, text in (
              ("aws-docs-qa", "floors", "aws-docs-qa refuses {} of {} of them and {} of {} answerable questions"),
              ("musique", "floors", "musique {} of\n  {} and {} of {}"),
              ("leval-legal", "floors", "leval-legal {} of {} and {} of {}"),
              ("debian", "floors", "the Debian guide {} of {} and {} of {}"),
              ("aws-docs-qa", "calibrated", "aws-docs-qa {} of {} and {} of {}"),
              ("debian", "calibrated", "the Debian guide {} of {} and {} of {}"),
              ("musique", "calibrated", "musique {} of {} and {} of {}"),
              ("leval-legal", "calibrated", "leval-legal {} of {} and {} of {}"))],
        ("outcome-debian.json", [["groups", "unanswerable"]], "; {} sections found)"),
        ("outcome-docs.json", [*OUT("floors", "partly_named"), ["calibrated", "partly_named", "refused"]],
         "the missing half for {} of {} on this project's manual (calibrated: {})"),
        ("outcome-debian.json", [*OUT("floors", "partly_named"), ["calibrated", "partly_named", "refused"]],
         "and {} of {} on the Debian guide (calibrated: {})"),
        ("outcome-docs.json", [*OUT("floors", "partly_heldout_named"), ["calibrated", "partly_heldout_named", "refused"]],
         "(`partly-heldout.json`), {} of {} (calibrated: {})"),
        ("outcome-debian.json", [*OUT("floors", "partly_heldout_named"), ["calibrated", "partly_heldout_named", "refused"]],
         "and {} of {} (calibrated: {}), where the same path"),
        ("outcome-docs.json", [*OUT("calibrated", "partly_heldout_2_named")],
         "(calibrated, in `outcome-D.json`: {} of {} on this project's manual"),
        ("outcome-debian.json", [*OUT("calibrated", "partly_heldout_2_named")], "and {} of {} on the Debian guide)"),
        ("partly-heldout-2.json", [["rates", "docs", "shipped", "named"], ["rates", "docs", "shipped", "n"],
                                   ["rates", "debian", "shipped", "named"], ["rates", "debian", "shipped", "n"]],
         "the outcome named the missing half for {}\n  of {} on this project's manual and {} of {} on the Debian guide"),
        ("partly-heldout-2.json", [["rates", "docs", "before", "named"], ["rates", "docs", "before", "n"],
                                   ["rates", "debian", "before", "named"], ["rates", "debian", "before", "n"]],
         "names {} of {} and {} of {}. Goal 70%"),
        ("partly-heldout-rule-off.json", [["rates", "docs", "partly_heldout_named", "refused"],
                                          ["rates", "docs", "partly_heldout_named", "n"],
                                          ["rates", "debian", "partly_heldout_named", "refused"],
                                          ["rates", "debian", "partly_heldout_named", "n"]],
         "with the rule off names {} of {} and {} of {}"),
        ("outcome-cost.json", [["corpora", "debian", "outcome_one_part", "median_s"],
                               ["corpora", "docs", "outcome_several_parts", "median_s"],
                               ["corpora", "debian", "outcome_several_parts", "median_s"], ["outcome_all", "max_s"],
                               ["corpora", "docs", "quote", "median_s"], ["corpora", "debian", "quote", "median_s"]],
         "one-part question's decision takes a median {} s on the Debian guide; a question of several parts is "
         "scored once more per part, over the 16 lines the whole question scored best (`PART_UNITS`; over every line "
         "with a calibration, whose features read them all), a median {} s "
         "on this project's manual and {} s on the Debian guide (at most {} s), where the quote itself took a median "
         "{} s and {} s."),
        ("outcome-cost.json", [["outcome_over_1s"], ["outcome_all", "n"], ["corpora", "docs", "outcome_over_1s"]],
         "({} of {} questions over 1 s, {}\n of them on this project's manual"),
        ("part-units.json", [["corpora", "debian", "summary", "all", "outcome_median_s"],
                             ["corpora", "debian", "summary", "top16", "outcome_median_s"],
                             ["corpora", "docs", "summary", "same_outcome"],
                             ["corpora", "debian", "summary", "same_outcome"]],
         "took a median\n{} s on the Debian guide against {} s, with the same outcome at the floors for all {} and {} "
         "two-part "
         "questions"),
        ("yesno-debian-prompt2.json", [["fit", "auc", "p_yes"], ["fit", "auc", "match"]],
         "an area under the ROC curve of {} against {} for the\n  best passage's"),
        ("yesno-debian-prompt1.json", [["fit", "auc", "p_yes"]], "({} with a plainer prompt"),
        ("yesno-debian-prompt2.json", [["fit", "cheap+p_yes", "unanswerable_refused_at_one_answerable_refused"],
                                       ["fit", "unanswerable"],
                                       ["fit", "cheap", "unanswerable_refused_at_one_answerable_refused"],
                                       ["fit", "unanswerable"], ["fit", "median_yesno_s"], ["fit", "median_tokens"]],
         "it refuses {} of {} unanswerable questions where one answerable question is\n  refused, against {} of {} "
         "without it, for a median {} s per question ({:.0f} prompt tokens)"),
        ("outcome-aws-docs-qa.json", [["calibration", "seconds"], ["calibration", "chunks"]],
         "Calibrating took {} s on aws-docs-qa's\n  {} chunks"),
        ("outcome-debian.json", [["calibration", "seconds"], ["calibration", "chunks"]],
         "{} s on the Debian guide's {} (AVX2)."),
        ("quotes-completeness.json", [["warning", "whole"], ["warning", "n"], ["procedure", "whole"], ["procedure", "n"],
                                      ["median_words"]],
         "the warning came with its command for {} of {}, every step of the\n  procedure for {} of {}, in a median {} words"),
        ("quotes-completeness-heldout.json", [["warning", "whole"], ["warning", "n"], ["procedure", "whole"],
                                              ["procedure", "n"], ["median_words"]],
         "the warning for {} of {}, the whole procedure for {} of {},\n  in a median {} words"),
        ("quotes-completeness-heldout-before.json", [["warning", "whole"], ["warning", "n"], ["procedure", "whole"],
                                                     ["procedure", "n"], ["median_words"]],
         "held {} of {} and {} of {} in a median {} words"),
        ("quote-pair-aws-docs-qa.json", [["new_recall"], ["old_recall"], ["ci95", 0], ["ci95", 1], ["new_words_median"]],
         "is {} against the\n  published {} (paired 95% CI of the difference {} to {}, `quote-pair-aws-docs-qa.json`), "
         "a median {}\n  words"),
        (COLDSTART, [["repl_warm", "median_quote_s"], ["ask", "quote_median_s"], ["search_onnx", "median_s"]],
         "after a median {} s\nin a running chat and {} s from a cold `thread-rag ask`; a cold `thread-rag search` takes {} s"),
        ("small-index.json", [["speed", "A wall s", "median"], ["speed", "B wall s", "median"]],
         "a median {} s with the ONNX embedder against {} s loading torch"),
        ("embedder-load-avx2.json", [["median", "thread_rag.minilm", "load_and_first_text_s"],
                                     ["median", "sentence-transformers", "load_and_first_text_s"]],
         "embedding a first text takes a median {} s in a fresh process against\n{} s through sentence-transformers"),
        ("editions-debian.json", [["found", e] for e in ("txt", "html", "epub", "ocr")]
         + [["same_page_top3", "ocr"], ["same_section_top3", "ocr"], ["same_section_top3", "txt"]],
         "edition for {}, HTML {}, EPUB {}, an OCR'd\n  image-only copy {} (its top 3 on the PDF's page for {}: goal 10 "
         "met on this page measure; in the PDF hit's\n  section for {}, TXT {})"),
        ("ocr-debian.json", [["debian", "cer_median_page"], ["debian", "seconds_per_page_median"]],
         "character error rate {}, {} s a page"),
        ("docling-fixtures.json", [["totals", "docx_before", "words_f1_mean"], ["totals", "docx_now", "words_f1_mean"],
                                   *[["totals", f"{k}_{w}", "headings"] for k in ("docx", "pdf") for w in ("before", "now")]],
         "DOCX words F1 {} before, {} now, headings found\n  {} before, {} now; PDF headings found {} before, {} now"),
        ("compare-debian.json", [["pairs", "pdf-amd64/pdf-arm64", "default", "same", "f1"],
                                 ["pairs", "pdf-amd64/pdf-arm64", "default", "changed_or_only", "f1"],
                                 ["pairs", "pdf-amd64/pdf-arm64", "default", "counterpart_accuracy"]],
         "\"same\" F1 {},\n  \"changed or only in one\" F1 {}, counterparts aligned {}"),
        ("eval-validity-aws-docs-qa.json", [["validity", "kendall_tau_mrr@10"]], "Kendall tau {} on aws-docs-qa"),
        ("eval-validity-musique.json", [["validity", "kendall_tau_mrr@10"]], "{} on\nmusique"),
        ("eval-validity-limit-small.json", [["validity", "kendall_tau_mrr@10"]], "and {} on limit-small"),
        ("eval-validity-musique.json", [["validity", "separated_pairs_mrr@10", k]
                                        for k in ("same_order", "separated_by_real")], "orders {} of {} the same way on musique"),
        ("eval-validity-limit-small.json", [["validity", "separated_pairs_mrr@10", k]
                                            for k in ("same_order", "separated_by_real")], "and {} of {} on\nlimit-small"),
        ("eval-validity-musique.json", [["validity", "separated_pairs_mrr@10", "made_up_separates_same_order"]],
         "its own CIs tell {} of 5"),
        ("eval-validity-limit-small.json", [["validity", "separated_pairs_mrr@10", "made_up_separates_same_order"]],
         "and {} of 7 apart"),
        ("eval-validity-aws-docs-qa.json", [["validity", "separated_pairs_mrr@10", k]
                                            for k in ("separated_by_real", "pairs")],
         "aws-docs-qa's real questions tell {} of {} pairs apart"),
        ("hyphen-joins.json", [["sets", "debian", "files", "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf",
                                "differ"], ["sets", "debian", "differ"], ["sets", "docling", "differ"]],
         'it joins {} such words of the Debian amd64 guide otherwise ("netboot/debian-installer/amd64/linux", '
         '"non-free", "keep-alive"; {} in the three Debian PDFs, {} in the docling PDFs)'),
        ("hyphen-joins.json", [["sets", "financebench", "differ"]], "loader 12 joins {} words the filings broke"),
        ("eval-run-debian.json", [["summary", "retrieval", k, "mean"] for k in ("hit@1", "hit@5", "mrr@10")],
         "hit@1 {}, hit@5 {}, MRR@10 {}"),
        ("filings-dev.json", [["page_hit_at_1", "mean"], ["page_hit_at_1", "ci95", 0], ["page_hit_at_1", "ci95", 1]],
         "Page-hit@1 {} (95% CI {}-{})"),
        ("filings-dev-before.json", [["page_hit_at_1", "mean"]], "against {} before"),
        ("filings-dev.json", [["page_hit_at_5", "mean"], ["page_hit_at_5", "ci95", 0], ["page_hit_at_5", "ci95", 1]],
         "page-hit@5 {} ({}-{})"),
        ("filings-dev-before.json", [["page_hit_at_5", "mean"]], "{} before (the first 5"),
        ("filings-dev-no-labels.json", [["page_hit_at_1", "mean"], ["page_hit_at_5", "mean"]],
         "Without the printed labels, same machine and library: {} and {}"),
        ("filings-dev.json", [["bm25_pages_hit_at_1", "mean"], ["bm25_pages_hit_at_5", "mean"]],
         "pypdf text, in the same run: {} and {}."),
        ("filings-dev.json", [["by_pipeline", "dense_only", "page_hit_at_1", "mean"],
                              ["by_pipeline", "dense_only", "page_hit_at_5", "mean"],
                              ["by_pipeline", "stage1_rrf", "page_hit_at_1", "mean"],
                              ["by_pipeline", "stage1_rrf", "page_hit_at_5", "mean"], ["page_hit_at_5", "mean"]],
         "dense search finds the evidence page first for {} and in the top 5 for {}; fused with BM25, {} and {}; "
         "MaxSim and the cross-encoder then bring @5 down to {}."),
        ("filings-dev.json", [["by_pipeline", "no_statements", "page_hit_at_1", "mean"],
                              ["by_pipeline", "no_statements", "page_hit_at_5", "mean"]],
         "(`no_statements`): {} and {}."),
        ("filings-dev.json", [["page_hit_at_5", "mean"]], "Goal page-hit@5 0.75: not met ({})."),
        ("filings-dev.json", [["printed_gold_in_quote", "mean"], ["printed_gold_in_quote", "n"]],
         "holds the gold figure (within 1%, after units) for {} of the {} questions"),
        ("filings-dev-no-labels.json", [["printed_gold_in_quote", "mean"]], "against {} without the printed labels"),
        ("filings-dev-before.json", [["printed_gold_in_quote", "mean"]], "and {} before (goal 80%"),
        ("filings-dev.json", [["computed_figures_in_quote", "questions"], ["computed_figures_in_quote", "in_quote"],
                              ["computed_figures_in_quote", "figures"]],
         "For the {} questions whose answer is computed, the quotes hold {} of the {} figures"),
        ("filings-dev-no-labels.json", [["computed_figures_in_quote", "in_quote"]], "({} without the labels)"),
        ("filings-dev.json", [["indexing", "pages"]], "earnings releases; {:,} pages)"),
        ("filings-dev.json", [["indexing", "seconds"], ["indexing", "pages_per_s"], ["indexing", "phase_seconds",
                                                                                     "load_s"],
                              ["indexing", "phase_seconds", "embed_s"]],
         "took {} s on this AVX2 machine ({} pages a second; {} s reading the PDFs, {} s embedding)"),
        ("filings-dev-before.json", [["indexing", "seconds"], ["indexing", "pages_per_s"]],
         "`filings-dev-before.json`'s {} s ({} pages a second) was on an AVX-512 BF16 machine"),
        *[("intents.json", [["sets", name, "no_model", "n"], ["sets", name, "no_model", "right"],
                            ["sets", name, "with_model", "right"], ["sets", name, "no_model", "model_calls"],
                            ["sets", name, "no_model", "changes_on_questions"]], f"| `{name}` ({role}) | {{}} | {{}} | "
           "{} | {} | {} |")
          for name, role in (("requests.json", "guided the cue words, the margin, the object rules"),
                             ("requests-heldout.json", "new for the first version, then guided"),
                             ("requests-heldout-2.json", "new for the second version, then guided"),
                             ("requests-heldout-3.json", "judged only, never tuned on"))],
        ("intents.json", [["sets", "requests-heldout-3.json", "no_model", k] for k in
                          ("rate", "changes_on_questions", "model_calls", "n", "median_ms", "p95_ms")]
         + [["examples_fit_s"], ["sets", "requests-heldout-3.json", "with_model", "model_call_s"]],
         "On the set never tuned on: {:.1%} right, {} questions taken as a change, a close call for {} of {} messages,\n"
         "  median {} ms a message (p95 {} ms) with no model; the classifier is fitted once per process in {} s, and a "
         "close\n  call costs one constrained call of the packaged 1.5B model (median {} s)."),
        ("intents.json", [["routing_prompts", "right"], ["routing_prompts", "chat_requests"],
                          ["routing_prompts", "fetch_by_id"]],
         "the recogniser reads {} of the {} that are chat\n  requests or searches as meant; the other {} ask"),
        ("serve-load.json", [["one_client", "quotes_per_s"], ["many_clients", "quotes_per_s"], ["throughput_ratio"],
                             ["goal_ratio"], ["one_client", "quote_s", "p50"], ["many_clients", "quote_s", "p50"]],
         "Quote-only throughput: {} quotes/s with one client, {} with 20 at once (ratio {}; goal {}): the quotes\n"
         "  run on one reading thread, so 20 clients wait in its queue (p50 to the quote {} s alone, {} s with 20), and"),
        ("serve-load.json", [["mixed", "full_busy_503"], ["mixed", "retry_after", 0], ["mixed", "full_answered"],
                             ["mixed", "quote_failed"], ["mixed", "quote_requests"], ["mixed", "quote_s", "p95"]],
         "at most 2 waiting or running: {} got 503 with `Retry-After: {}` at once,\n  {} were answered; {} of the {} "
         "quotes beside them failed (p95 to the quote {} s)."),
        ("serve-load.json", [["disconnect", "model_free_after_s"]], "the model was free {} s later."),
        ("concurrency-searches.json", [["readers", 0, "searches"], ["cycles"], ["readers", 0, "checked"],
                                       ["readers", 1, "checked"]],
         "{} searches each, while a third indexes, replaces and deletes until they are done "
         "(`concurrency-searches.json`: {} cycles) | no failed search (a search overtaken by commits is ranked again, "
         "up to 5 times; a token cache the writer removed between a reader's check and its read failed one search "
         "in seven runs, now read from one opening); every hit's text is its "
         "chunk's at the "
         "generation ranked ({:,} and {:,} hits checked)"),
        ("hostile-files.json", [["files", "max:seconds"], ["files", "max:peak_mib"]],
         "none slower than {} s or over {} MiB resident"),
    ],
}

# a figure: 27,607 / 0.843 / -0.0392 / 42% / 9 s, 12ms, 13 minutes, 3.2x / both ends of 0.84-0.86; not a version
# (3.11.7) or a name (Qwen2.5-Coder, 1.5B). Plain integers (60 questions) are not looked for.
# numbers a page states that are no measurement: goals set by an issue (each must be on its page)
GOALS = {"README.md": ["took over 2 s in that run"],  # the quick tier's threshold (conftest.QUICK_MAX_S)
         "BENCHMARKS.md": ["(goal 0.8: met on limit-small only)", "(goal 80%: not met", "Goal 70%: met on that set",
                           "Goal, at most 1 s more than the quote",
                           "Goal: at least 95% right, no library\n  change taken on a question, under "
                           "150 ms a message, a model call for at most 10% of messages"]}

FIGURE = re.compile(r"(?<![\w.])[+-]?(?:\d+(?:\.\d+)? ?(?:ms|s|min|minutes|seconds|x)\b|\d{1,3}(?:,\d{3})+"
                    r"|\d+(?:\.\d+)? ?%|\d+\.\d+(?!\d|\.\d|[A-Za-z]|-[A-Za-z]))")


def lookup(data: dict, path: list) -> object:
    node = data
    for step in path:
        if isinstance(step, int):
            node = node[step]
        elif step.startswith("$"):
            node = node[data[step[1:]]]
        elif step.startswith("max:"):
            node = max(item[step[4:]] for item in node)
        elif "=" in step:
            key, want = step.split("=", 1)
            want = data[want[1:]] if want.startswith("$") else want
            node = next(item for item in node if str(item[key]) == str(want))
        else:
            node = node[step]
    return len(node) if isinstance(node, list) else node


def rendered(page: str) -> list[str]:
    out = []
    for name, paths, template in PAGES[page]:
        data = json.loads((RESULTS / name).read_text())
        out.append(template.format(*(lookup(data, p) for p in paths)))
    return out


def prose(text: str) -> str:
    """A page without its fenced code blocks (a fence of N backticks closes at a line of at least N)."""
    kept, fence = [], 0
    for line in text.splitlines():
        m = re.match(r"^(`{3,})", line)
        if fence and m and len(m.group(1)) >= fence and line.strip() == m.group(1):
            fence = 0
        elif not fence and m:
            fence = len(m.group(1))
        elif not fence:
            kept.append(line)
    return "\n".join(kept)


def _text(page: str) -> str:
    return getattr(sys.modules[__name__], "OVERRIDE", {}).get(page) or (REPO / page).read_text()


def _flat(text: str) -> str:
    """``text`` with its line breaks and runs of spaces made one space: a figure's sentence may wrap anywhere."""
    return " ".join(text.split())


@pytest.mark.parametrize("page", PAGES)
def test_each_figure_is_its_json_value(page):
    text = _flat(_text(page))
    missing = [r for r in rendered(page) if _flat(r) not in text]
    assert not missing, f"{page} does not say what its JSON files hold: {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_no_figure_without_a_json_behind_it(page):
    assert all(_flat(g) in _flat(_text(page)) for g in GOALS[page]), GOALS[page]
    allowed = {m.group(0) for f in rendered(page) + GOALS[page] for m in FIGURE.finditer(_flat(f))}  # whole, signed
    stray = [m.group(0) for m in FIGURE.finditer(_flat(prose(_text(page)))) if m.group(0) not in allowed]
    assert not stray, f"figures in {page} that no bench_results JSON gives (add them to PAGES): {stray}"


# The user manual (docs/) explains in words and points to BENCHMARKS.md / bench_results/DETAILS.md for the numbers: a
# figure in its prose (outside code blocks, which are program output) must be one of its page's numbers below, none
# of them a measurement. Keep these lists short: a measured figure belongs in README.md or BENCHMARKS.md.
DOC_NUMBERS = {
    "docs/01-getting-started.md": ["3.10"],  # the oldest Python supported
    "docs/02-indexing.md": [
        "3.2", "2.5", "1.5", "1.1",  # the Debian guide's Table 3.2, its section 2.5, "1.5 GHz", "1.1." (heading examples)
        "1,204", "1,118",  # a made-up statement's row, as the loader writes it (tests/table_pdf.py)
        "1.0",  # `--debounce 1.0`, the watcher's default
    ],
    "docs/03-searching.md": [
        "0.1", "0.9",  # settings: STAGE3_LEXICAL_FLOOR = 0.1, HOP_MIN_SCORE 0.9 (and compare's F1 goal)
        "95%",  # the level of eval's bootstrap intervals
        "1.5",  # an example: `1.5` is not `15`
        "0.8", "5 minutes", "10 s", "5%",  # goals: eval's Kendall tau, a 500-page eval, compare's time and false changes
        "2,000", "4,000",  # limits: MAX_QUERY_CHARS, MAX_QUESTION_CHARS
    ],
    "docs/04-windows-and-summaries.md": [],
    "docs/05-agent-and-chat.md": [
        "95%",  # the level of a paired interval
        "5%",  # the calibration's target: the share of answerable questions it may refuse (calibrate.TARGET)
        "2.5", "3.2",  # the Debian guide's section 2.5 and Table 3.2
        "2.0",  # JSON-RPC 2.0
        "3.1",  # OpenAPI 3.1
        "30.8%", "177,866", "135,987",  # a made-up worked-out percentage (tests/test_check.py)
    ],
    "docs/06-configuration-and-troubleshooting.md": [
        "1,000", "1,000,000",  # settings: the catalog log folded every 1,000 changes, HNSW_THRESHOLD
        "0.05", "95%",  # MATCH_MIN = 0.05, the cross-encoder's own "95% not relevant"
        "1.1",  # the packaged model's size once joined (1.1 GB), a fact of the package
        "2.5", "3.2",  # the Debian guide's section 2.5 and Table 3.2
    ],
}


def test_every_docs_page_has_its_list():
    assert sorted(DOC_NUMBERS) == sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))


@pytest.mark.parametrize("page", DOC_NUMBERS)
def test_docs_carry_no_measured_figure(page):
    found = [m.group(0) for m in FIGURE.finditer(_flat(prose(_text(page))))]
    stray = [f for f in found if f not in DOC_NUMBERS[page]]
    assert not stray, (f"figures in {page} that are not among its setting values, versions and goals (DOC_NUMBERS): "
                       f"{stray}; measured figures belong in README.md or BENCHMARKS.md, checked against bench_results "
                       "JSON here: say in words what the run showed and point to the BENCHMARKS.md section")
    unused = [n for n in DOC_NUMBERS[page] if n not in found]
    assert not unused, f"DOC_NUMBERS lists numbers {page} no longer states (remove them): {unused}"


def test_the_checks_see_a_drifted_figure_and_a_figure_with_no_file(monkeypatch):
    """The checks themselves: a figure changed in its last digit fails the first, a new number the second, a measured
    figure added to a docs page the third."""
    me = sys.modules[__name__]
    original, first = (REPO / "README.md").read_text(), rendered("README.md")[1]
    drifted = re.sub(r"\d(?=\D*$)", lambda m: str((int(m.group()) + 1) % 10), first, count=1)
    monkeypatch.setattr(me, "OVERRIDE", {"README.md": original.replace(first, drifted)}, raising=False)
    with pytest.raises(AssertionError, match="does not say"):
        test_each_figure_is_its_json_value("README.md")
    monkeypatch.setattr(me, "OVERRIDE", {"README.md": original + "\nSearches take 12.5 ms.\n"}, raising=False)
    with pytest.raises(AssertionError, match="12.5 ms"):
        test_no_figure_without_a_json_behind_it("README.md")
    page = "docs/03-searching.md"
    monkeypatch.setattr(me, "OVERRIDE", {page: (REPO / page).read_text() + "\nA search took 12.5 s.\n"}, raising=False)
    with pytest.raises(AssertionError, match=r"12\.5 s.*belong in README.md or BENCHMARKS.md"):
        test_docs_carry_no_measured_figure(page)
