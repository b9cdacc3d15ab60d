"""Monotone alignment of two chunk threads in linear memory (pure: vectors and heading ids in, pairs out).

Objective (global alignment, Needleman-Wunsch style): pick a monotone set of pairs (i, j) maximising

    sum over pairs of  w(i, j) = cos(a_i, b_j) + HEADING_BONUS * [same deepest heading] - MATCH_MIN
    minus GAP for every chunk left without a counterpart.

A pair scores only when the chunks are similar enough (``cos > MATCH_MIN`` on its own); between two
aligned neighbours a weaker pair still wins over two gaps when ``w > -2 * GAP``, which is how an edited
chunk keeps its counterpart while an inserted one becomes a gap.

Why Hirschberg (and not a banded DP or anchors-then-DP): it returns the exact optimum of the same
objective as the full table, with O(n + m) memory, for about twice the full table's arithmetic. A band
would miss large insertions (a whole chapter only in one edition shifts the diagonal by hundreds of
chunks); anchors depend on unique exact matches, which a PDF and a TXT rendering of one text rarely have.
Each DP row is vectorised with numpy: with a linear gap cost the in-row recurrence
``H[j] = max(T[j], H[j-1] - GAP)`` is a running maximum of ``T[j] + GAP * j``, so a row costs a few numpy
calls, and similarities come from one matrix product per block of rows (``BLOCK x m`` floats).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .labels import heading_key
from .vectors import unit_rows

Pair = tuple  # (i | None, j | None)


@dataclass(frozen=True)
class AlignParams:
    match_min: float = 0.62     # cosine a pair needs on its own; bench compare sweeps 0.5-0.75: the labels do not
    gap: float = 0.12           # move, counterparts within 0.5 point (bench_results/DETAILS.md). A chunk with no match
    #                             costs ``gap``, so between two aligned neighbours a pair matches above 0.62 - 0.24
    heading_bonus: float = 0.25  # same deepest heading on both sides (only when both sides have headings)
    block: int = 256            # DP rows whose similarities are computed in one matrix product
    base_cells: int = 1 << 16   # sub-problems up to this many cells are solved with a full table + traceback


def heading_ids(paths_a: Sequence, paths_b: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids of each chunk's normalised deepest heading, shared by both sides (-1: no heading)."""
    ids: dict[str, int] = {}

    def one(paths) -> np.ndarray:
        out = np.full(len(paths), -1, dtype=np.int64)
        for k, p in enumerate(paths):
            key = heading_key(p)
            if key:
                out[k] = ids.setdefault(key, len(ids))
        return out

    return one(paths_a), one(paths_b)


class _Problem:
    def __init__(self, a, b, ha, hb, p: AlignParams):
        self.a, self.b, self.ha, self.hb, self.p = a, b, ha, hb, p
        self.with_headings = bool(p.heading_bonus) and (ha >= 0).any() and (hb >= 0).any()

    def weights(self, ia: np.ndarray, jb: np.ndarray) -> np.ndarray:
        """w(i, j) for rows ``ia`` x columns ``jb`` (index arrays into the full threads)."""
        w = self.a[ia] @ self.b[jb].T
        w -= np.float32(self.p.match_min)
        if self.with_headings:
            ha = self.ha[ia]
            same = ha[:, None] == self.hb[jb][None, :]
            same &= (ha >= 0)[:, None]
            w[same] += np.float32(self.p.heading_bonus)
        return w

    def last_row(self, ia: np.ndarray, jb: np.ndarray) -> np.ndarray:
        """Best scores of aligning all rows ``ia`` with every prefix of columns ``jb`` (length m + 1)."""
        g = self.p.gap
        m = len(jb)
        ramp = g * np.arange(m + 1, dtype=np.float64)
        h = -ramp.copy()
        for r0 in range(0, len(ia), self.p.block):
            w = self.weights(ia[r0:r0 + self.p.block], jb)
            for row in w:
                t = np.maximum(h[:-1] + row, h[1:] - g)
                first = h[0] - g
                u = np.empty(m + 1)
                u[0] = first
                u[1:] = t + ramp[1:]
                np.maximum.accumulate(u, out=u)
                h = u - ramp
        return h

    def full(self, ia: np.ndarray, jb: np.ndarray) -> tuple[list, float]:
        """Full table with traceback for a small sub-problem: (pairs, score)."""
        g = self.p.gap
        n, m = len(ia), len(jb)
        ramp = g * np.arange(m + 1, dtype=np.float64)
        h = -ramp.copy()
        moves = np.zeros((n, m + 1), dtype=np.int8)  # 0 diagonal, 1 up (gap in B), 2 left (gap in A)
        w = self.weights(ia, jb) if n and m else np.zeros((n, m))
        for i in range(n):
            diag = h[:-1] + w[i]
            up = h[1:] - g
            t = np.maximum(diag, up)
            u = np.empty(m + 1)
            u[0] = h[0] - g
            u[1:] = t + ramp[1:]
            acc = np.maximum.accumulate(u)
            mv = moves[i]
            mv[0] = 1
            mv[1:] = np.where(diag >= up, 0, 1)
            mv[1:][acc[1:] > u[1:]] = 2
            h = acc - ramp
        pairs: list = []
        i, j = n, m
        while i > 0 or j > 0:
            mv = moves[i - 1, j] if i > 0 else 2
            if mv == 0:
                pairs.append((int(ia[i - 1]), int(jb[j - 1])))
                i, j = i - 1, j - 1
            elif mv == 1:
                pairs.append((int(ia[i - 1]), None))
                i -= 1
            else:
                pairs.append((None, int(jb[j - 1])))
                j -= 1
        pairs.reverse()
        return pairs, float(h[m])

    def solve(self, ia: np.ndarray, jb: np.ndarray, out: list) -> None:
        n, m = len(ia), len(jb)
        if n == 0:
            out.extend((None, int(j)) for j in jb)
            return
        if m == 0:
            out.extend((int(i), None) for i in ia)
            return
        if n == 1 or m == 1 or n * m <= self.p.base_cells:
            out.extend(self.full(ia, jb)[0])
            return
        mid = n // 2
        fwd = self.last_row(ia[:mid], jb)
        bwd = self.last_row(ia[mid:][::-1], jb[::-1])
        k = int(np.argmax(fwd + bwd[::-1]))
        self.solve(ia[:mid], jb[:k], out)
        self.solve(ia[mid:], jb[k:], out)


def _prepare(vec_a, vec_b, heads_a, heads_b, params):
    a, b = unit_rows(vec_a), unit_rows(vec_b)
    if a.shape[1] != b.shape[1] and len(a) and len(b):
        raise ValueError(f"vectors of different dimensions ({a.shape[1]} vs {b.shape[1]})")
    ha = np.full(len(a), -1, dtype=np.int64) if heads_a is None else np.asarray(heads_a, dtype=np.int64)
    hb = np.full(len(b), -1, dtype=np.int64) if heads_b is None else np.asarray(heads_b, dtype=np.int64)
    if len(ha) != len(a) or len(hb) != len(b):
        raise ValueError("one heading id per chunk")
    return _Problem(a, b, ha, hb, params or AlignParams())


def align(vec_a, vec_b, heads_a=None, heads_b=None, params: AlignParams | None = None) -> list[Pair]:
    """Monotone alignment of thread A (``n x d`` vectors) with thread B (``m x d``), in O(n + m) memory.

    ``heads_a``/``heads_b``: integer heading ids per chunk (see :func:`heading_ids`; -1 = none).
    Returns pairs in thread order: ``(i, j)`` aligned, ``(i, None)`` only in A, ``(None, j)`` only in B;
    every chunk of both threads appears exactly once.
    """
    prob = _prepare(vec_a, vec_b, heads_a, heads_b, params)
    out: list = []
    prob.solve(np.arange(len(prob.a)), np.arange(len(prob.b)), out)
    return tidy(out)


def tidy(pairs: list) -> list:
    """Within each run of unaligned chunks, A's come before B's (as a diff lists deletions before insertions);
    the alignment itself is unchanged."""
    out, run = [], []
    for pr in pairs + [(0, 0)]:
        if pr[0] is None or pr[1] is None:
            run.append(pr)
            continue
        out.extend([x for x in run if x[1] is None] + [x for x in run if x[0] is None])
        run = []
        out.append(pr)
    return out[:-1]
