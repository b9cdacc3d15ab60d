"""Metrics, each a small pure function checked against hand-computed cases in tests."""
from __future__ import annotations

import math
import re
import string
from collections import Counter
from typing import Sequence

import numpy as np

from thread_rag.evaluate.stats import bootstrap_ci, paired_rows  # noqa: F401 - the product's; the lab uses them too


def dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], relevant: set, k: int = 10) -> float:
    gains = [1.0 if d in relevant else 0.0 for d in ranked[:k]]
    ideal = dcg([1.0] * min(len(relevant), k))
    return dcg(gains) / ideal if ideal > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevant: set, k: int) -> float:
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & relevant) / len(relevant)


def mrr_at_k(ranked: Sequence[str], relevant: set, k: int = 10) -> float:
    for i, d in enumerate(ranked[:k]):
        if d in relevant:
            return 1.0 / (i + 1)
    return 0.0


def all_found_at_k(ranked: Sequence[str], relevant: set, k: int) -> float:
    return 1.0 if relevant and relevant <= set(ranked[:k]) else 0.0


def normalize_answer(s: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def token_f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_coverage(context: str, gold: str) -> float:
    """Share of the gold answer's normalised tokens (with multiplicity) present in the context."""
    g = Counter(normalize_answer(gold).split())
    if not g:
        return 0.0
    c = Counter(normalize_answer(context).split())
    return sum((g & c).values()) / sum(g.values())


def span_found(context: str, span: str) -> float:
    """1 if the normalised gold span occurs verbatim in the normalised context."""
    n = normalize_answer(span)
    return float(bool(n) and n in normalize_answer(context))


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")
