"""BM25 over segments: Lucene's variant (bm25s's default, k1=1.5, b=0.75), scored at query time.

Each segment keeps only its rows' term frequencies (:class:`Postings`, column-major per term). Document
frequencies, the number of rows and their average length are summed over the *live* rows of all segments
when a query comes, so a segment can be added or dropped without touching the others, and the scores are
those of one index built over exactly the live rows (tests compare both, and bm25s as the reference).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

K1, B = 1.5, 0.75
EMPTY = "_empty_"  # a chunk with no token after stopwords still counts as one row of length 1


@dataclass
class Postings:
    terms: list            # term of each column
    indptr: np.ndarray     # column c holds entries indptr[c]:indptr[c+1]
    rows: np.ndarray       # segment-local row of each entry, ascending within a column
    tf: np.ndarray         # term frequency of each entry
    doclen: np.ndarray     # tokens per row

    def __post_init__(self):
        self.column_of = {t: i for i, t in enumerate(self.terms)}

    def __len__(self) -> int:
        return len(self.doclen)

    @classmethod
    def from_tokens(cls, token_lists: list[list[str]]) -> "Postings":
        column_of: dict[str, int] = {}
        cols, rows, tfs, lens = [], [], [], []
        for r, toks in enumerate(token_lists):
            toks = toks or [EMPTY]
            lens.append(len(toks))
            for term, n in Counter(toks).items():
                cols.append(column_of.setdefault(term, len(column_of)))
                rows.append(r)
                tfs.append(n)
        return cls._from_entries(list(column_of), np.asarray(cols, np.int64), np.asarray(rows, np.int64),
                                 np.asarray(tfs, np.float32), np.asarray(lens, np.int64))

    @classmethod
    def _from_entries(cls, terms: list, cols: np.ndarray, rows: np.ndarray, tf: np.ndarray,
                      doclen: np.ndarray) -> "Postings":
        order = np.lexsort((rows, cols))
        indptr = np.zeros(len(terms) + 1, np.int64)
        np.cumsum(np.bincount(cols, minlength=len(terms)), out=indptr[1:])
        return cls(terms, indptr, rows[order], tf[order], doclen)

    @classmethod
    def merge(cls, parts: list[tuple["Postings", np.ndarray | None]]) -> "Postings":
        """One Postings of the kept rows of each part, in order (``keep``: a row mask, None = all)."""
        column_of: dict[str, int] = {}
        all_cols, all_rows, all_tf, all_lens = [], [], [], []
        base = 0
        for p, keep in parts:
            keep = np.ones(len(p), bool) if keep is None else keep
            new_row = np.cumsum(keep) - 1 + base  # renumbered rows of the kept ones
            remap = np.asarray([column_of.setdefault(t, len(column_of)) for t in p.terms], np.int64)
            entry_col = np.repeat(np.arange(len(p.terms)), np.diff(p.indptr))
            k = keep[p.rows]
            all_cols.append(remap[entry_col[k]])
            all_rows.append(new_row[p.rows[k]])
            all_tf.append(p.tf[k])
            all_lens.append(p.doclen[keep])
            base += int(keep.sum())
        cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
        return cls._from_entries(list(column_of), cat(all_cols, np.int64), cat(all_rows, np.int64),
                                 cat(all_tf, np.float32), cat(all_lens, np.int64))

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        c = self.column_of.get(term)
        if c is None:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        a, b = self.indptr[c], self.indptr[c + 1]
        return self.rows[a:b], self.tf[a:b]

    # -- persistence ---------------------------------------------------------------------------
    def save(self, d: Path) -> None:
        d.mkdir(parents=True, exist_ok=True)
        for name in ("indptr", "rows", "tf", "doclen"):
            np.save(d / f"{name}.npy", getattr(self, name))
        (d / "terms.json").write_text(json.dumps(self.terms, ensure_ascii=False))

    @classmethod
    def load(cls, d: Path) -> "Postings":
        arrays = {n: np.load(d / f"{n}.npy") for n in ("indptr", "rows", "tf", "doclen")}
        return cls(json.loads((d / "terms.json").read_text()), **arrays)


def score(segments: list[tuple[Postings, int, np.ndarray | None]], terms: list[str], n_rows: int) -> np.ndarray:
    """BM25 scores of every row for the query ``terms`` (repeats count again, as in bm25s).

    ``segments``: (postings, offset of its first row in the result, live-row mask or None for all live).
    Rows that are not live score 0 and count nowhere (not in N, the average length, or any frequency)."""
    live_n = sum(len(p) if m is None else int(m.sum()) for p, _, m in segments)
    scores = np.zeros(n_rows, np.float64)
    if live_n == 0:
        return scores
    avgdl = sum(int(p.doclen.sum() if m is None else p.doclen[m].sum()) for p, _, m in segments) / live_n
    for term in terms:
        found = []
        for p, off, m in segments:
            rows, tf = p.column(term)
            if m is not None and len(rows):
                ok = m[rows]
                rows, tf = rows[ok], tf[ok]
            if len(rows):
                found.append((rows + off, tf.astype(np.float64), p.doclen[rows]))
        df = sum(len(f[0]) for f in found)
        if df == 0:
            continue
        idf = np.log(1.0 + (live_n - df + 0.5) / (df + 0.5))
        for rows, tf, dl in found:
            scores[rows] += idf * tf / (K1 * ((1 - B) + B * dl / avgdl) + tf)
    return scores
