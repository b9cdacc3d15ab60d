"""Statistics a run on the user's own library reports: a bootstrap interval of a mean, a paired difference."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def bootstrap_ci(values: Sequence[float], n: int = 1000, seed: int = 13, alpha: float = 0.05) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n, len(v)))].mean(axis=1)
    return float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2))


def paired_rows(rows: list[dict], base: list[dict], key: str) -> tuple[float | None, list | None, int]:
    """Mean of ``rows[key]`` minus ``base[key]`` over the questions (``qid``) both answered, its bootstrap 95% CI
    (rounded to 4 places) and how many questions were paired; (None, None, 0) when none were."""
    by_q = {r["qid"]: r for r in base}
    diff = [r[key] - by_q[r["qid"]][key] for r in rows if r["qid"] in by_q]
    if not diff:
        return None, None, 0
    return round(float(np.mean(diff)), 4), [round(x, 4) for x in bootstrap_ci(diff)], len(diff)
