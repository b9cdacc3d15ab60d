"""Paired comparison of two `thread-rag bench answers` runs of the same questions that differ by one setting
(e.g. THREAD_RAG_QUESTION_STEPS=0 and =4): mean difference of token F1 and gold recall with the bench's own paired
bootstrap (thread_rag.bench.metrics.paired_rows), questions up and down.

    PYTHONPATH=. python bench_results/probes/paired_answers.py BASE.json OTHER.json [STRATEGY=walk]
"""
import json
import sys

from thread_rag.bench.metrics import paired_rows


def main(base_path, other_path, strategy="walk"):
    base, other = json.load(open(base_path)), json.load(open(other_path))
    b, o = base["rows"][strategy], other["rows"][strategy]
    assert [r["qid"] for r in b] == [r["qid"] for r in o], "not the same questions in the same order"
    print(f"{other['command']}\n  minus {base['command']}  ({len(b)} questions, strategy {strategy})")
    for key in ("f1", "recall"):
        diff, ci, n = paired_rows(o, b, key)
        up = sum(x[key] > y[key] for x, y in zip(o, b))
        down = sum(x[key] < y[key] for x, y in zip(o, b))
        mean_b = sum(r[key] for r in b) / len(b)
        mean_o = sum(r[key] for r in o) / len(o)
        print(f"  {key:6s} {mean_b:.3f} -> {mean_o:.3f}: {diff:+.3f} (95% CI {ci[0]:+.3f} to {ci[1]:+.3f}); "
              f"{up} up, {down} down")
    for key in ("first_token_s_median", "seconds_per_question", "llm_calls", "tokens_in"):
        print(f"  {key}: {base['strategies'][strategy][key]} -> {other['strategies'][strategy][key]}")


if __name__ == "__main__":
    main(*sys.argv[1:])
