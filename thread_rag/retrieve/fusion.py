"""Reciprocal rank fusion."""
from __future__ import annotations

from typing import Sequence


def rrf(rankings: Sequence[Sequence[int]], weights: Sequence[float] | None = None, k: int = 60) -> dict[int, float]:
    """Fuse ranked lists of item ids: ``score(d) = sum_i w_i / (k + rank_i(d))`` with 1-based ranks.

    Returns item -> fused score (higher is better). Items missing from a list get nothing from it.
    """
    if k <= 0:
        raise ValueError("k must be > 0")
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    out: dict[int, float] = {}
    for ranking, w in zip(rankings, weights):
        if w == 0:
            continue
        for rank, item in enumerate(ranking, start=1):
            out[item] = out.get(item, 0.0) + w / (k + rank)
    return out
