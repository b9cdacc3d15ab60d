"""Metric functions against hand-computed cases; data set loaders on tiny slices."""
import math

import pytest

from conftest import DATA, needs_shared
from bench.datasets import load_dataset, strip_leval
from bench.metrics import (all_found_at_k, bootstrap_ci, exact_match, mrr_at_k, ndcg_at_k, normalize_answer,
                                      recall_at_k, span_found, token_coverage, token_f1)


def test_ndcg_recall_mrr():
    ranked = ["a", "x", "b", "y"]
    rel = {"a", "b"}
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at_k(ranked, rel, 10) == pytest.approx((1 + 1 / math.log2(4)) / ideal)
    assert ndcg_at_k(["b", "a"], rel) == pytest.approx(1.0)
    assert ndcg_at_k(["x"], rel) == 0.0
    assert recall_at_k(ranked, rel, 1) == 0.5 and recall_at_k(ranked, rel, 3) == 1.0
    assert mrr_at_k(["x", "y", "b"], rel) == pytest.approx(1 / 3) and mrr_at_k(["x"], rel) == 0.0
    assert all_found_at_k(ranked, rel, 2) == 0.0 and all_found_at_k(ranked, rel, 3) == 1.0


def test_f1_em_coverage():
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    assert token_f1("the cat sat on the mat", "a cat sat") == pytest.approx(2 * (2 / 4) * (2 / 2) / (2 / 4 + 1))
    assert token_f1("", "") == 1.0 and token_f1("dog", "cat") == 0.0
    assert exact_match("The Cat.", "cat") == 1.0 and exact_match("cat s", "cat") == 0.0
    assert token_coverage("cat sat there", "the cat sat on mat") == pytest.approx(2 / 4)
    assert span_found("He said: the initial term is five (5) years.", "initial term is five (5) years") == 1.0
    lo, hi = bootstrap_ci([0, 1] * 50)
    assert lo < 0.5 < hi


@needs_shared
@pytest.mark.parametrize("name", ["limit-small", "aws-docs-qa", "musique", "leval-legal"])
def test_loaders_on_slices(name):
    ds = load_dataset(name, DATA, limit=5)
    assert len(ds.queries) == 5 and 0 < len(ds.corpus) <= 60
    keys = {d.key for d in ds.corpus}
    for q in ds.queries:
        assert q.text and q.gold_docs and q.gold_docs <= keys


def test_strip_leval():
    q = ('Highlight the parts (if any) of this contract related to "Expiration Date" that should be reviewed by a '
         'lawyer. Details: On what date will the contract\'s initial term expire?')
    assert strip_leval(q) == "Expiration Date: On what date will the contract's initial term expire?"


def test_the_refusal_benchs_second_floor_adds_to_the_cosine_floor():
    from bench.refusal import rerank_floor_grid
    from bench.report import refusal_table

    both = {"answerable": ([0.5, 0.5, 0.2], [0.9, 0.01, None]), "in_domain_unanswerable": ([], []),
            "off_domain": ([0.4, 0.1], [0.001, 0.5])}
    rows = rerank_floor_grid(both, floor=0.35, grid=[0.0, 0.005, 0.05])
    assert rows == [{"rerank_min": 0.0, "answerable_refused": 0.3333, "in_domain_unanswerable_refused": None,
                     "off_domain_refused": 0.5},
                    {"rerank_min": 0.005, "answerable_refused": 0.3333, "in_domain_unanswerable_refused": None,
                     "off_domain_refused": 1.0},
                    {"rerank_min": 0.05, "answerable_refused": 0.6667, "in_domain_unanswerable_refused": None,
                     "off_domain_refused": 1.0}]
    table = refusal_table({"dataset": "d", "off_domain_from": "o", "path": "p", "auc_vs_in_domain": None,
                           "auc_vs_off_domain": 1.0, "current_RELEVANCE_MIN": 0.35, "grid": [],
                           "questions": {"answerable": 3, "in_domain_unanswerable": 0, "off_domain": 2},
                           "rerank_grid": rows})
    assert "| 0.005 | 0.333 | - | 1.000 |" in table


def test_the_weak_match_band_is_the_cosine_floors_passes_under_match_min():
    from bench.refusal import in_band
    from bench.report import refusal_table
    from thread_rag.settings import Settings

    # passes the floor and is weak / fails the floor / strong / no cross-encoder score / exactly at MATCH_MIN
    settings = Settings(RELEVANCE_MIN=0.35, MATCH_MIN=0.05)
    assert in_band([0.5, 0.2, 0.5, 0.5, 0.5], [0.01, 0.01, 0.9, None, 0.05], settings) == [0]
    band = {"answerable": {"questions": 30, "in_band": 2, "refused_with_leave": 1, "refused_without_leave": 0}}
    table = refusal_table({"dataset": "d", "off_domain_from": "o", "path": "p", "auc_vs_in_domain": None,
                           "auc_vs_off_domain": 1.0, "current_RELEVANCE_MIN": 0.35, "grid": [],
                           "questions": {"answerable": 30, "in_domain_unanswerable": 0, "off_domain": 0},
                           "band": band, "MATCH_MIN": 0.05})
    assert "MATCH_MIN = 0.05" in table and "| answerable | 30 | 2 | 1 | 0 |" in table


def test_the_band_bench_sets_the_band_against_the_rest():
    from bench.refusal import published_split
    from bench.report import band_table

    rows = [{"qid": "a", "f1": 0.2, "recall": 1.0}, {"qid": "b", "f1": 0.4, "recall": 0.0},
            {"qid": "c", "f1": 0.6, "recall": 1.0}]
    split = published_split(rows, {"a"})
    assert split == {"band_n": 1, "band_f1": 0.2, "band_recall": 1.0, "rest_n": 2, "rest_f1": 0.5, "rest_recall": 0.5}
    answered = [{"qid": "a", "f1": 0.3, "recall": 1.0, "refused": False}]
    table = band_table({"dataset": "d", "questions": 3, "split": "test", "k": 3, "MATCH_MIN": 0.05, "in_band": ["a"],
                        "refuse": {"walk": [{"qid": "a", "f1": 0.0, "recall": 0.0, "refused": True}]},
                        "note": {"walk": answered}, "published": {"file": "f", **split}})
    assert "1 of 3 questions" in table and "| walk | refuse | 1 of 1 | 0.000 | 0.000 |" in table
    assert "| walk | note | 0 of 1 | 0.300 | 1.000 |" in table and "in the band F1 0.200" in table


def test_answer_score_strips_citations_and_zeroes_refusals():
    from bench.answers import score, summarise

    assert score("Five years [DOC3_012 p.4] [2].", False, ["five years", "5 years"]) == {"f1": 1.0, "em": 1.0,
                                                                                          "recall": 1.0}
    assert score("five years", True, ["five years"]) == {"f1": 0.0, "em": 0.0, "recall": 0.0}
    # F1 against the best of several gold answers: "ten" vs "ten days" -> P=1, R=1/2
    assert score("ten", False, ["five", "ten days"])["f1"] == pytest.approx(2 / 3)
    # recall: a long answer holding all gold tokens is not wrong for being long
    assert score("the term is ten days from signing, renewable", False, ["ten days"])["recall"] == 1.0
    rows = lambda f1s: [{"qid": str(i), "f1": f, "em": 0.0, "recall": f, "refused": False, "seconds": 1.0,  # noqa: E731
                         "first_token_s": 0.5, "tokens_in": 10, "tokens_out": 2, "llm_calls": 1,
                         "citations": [{"how": "written", "precise": True}, {"how": "matched", "precise": False}]}
                        for i, f in enumerate(f1s)]
    base = rows([0.0, 0.5, 1.0])
    s = summarise(rows([0.5, 0.5, 1.0]), base)
    approx = lambda x: pytest.approx(x, abs=1e-4)  # summaries are rounded to 4 places  # noqa: E731
    assert s["f1"] == approx(2 / 3) and s["f1_minus_topk"] == approx(0.5 / 3) and s["recall_minus_topk"] == approx(0.5 / 3)
    assert s["topk_f1_same_questions"] == approx(0.5)
    assert s["correct_rate_f1>=0.7"] == approx(1 / 3) and s["wrong_rate_f1<0.6"] == approx(2 / 3)
    assert s["written_rate"] == 0.5 and s["citation_precision"] == 0.5 and s["cited_by"]["matched"] == 3
    # a subset is compared with top-k on the same questions only
    sub = summarise(rows([1.0]), base)
    assert sub["questions"] == 1 and sub["topk_f1_same_questions"] == 0.0 and sub["f1_minus_topk"] == 1.0
