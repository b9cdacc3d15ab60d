"""A search index with some chunks hidden: how the library would answer if it did not hold them.

Calibration (``evaluate/calibrate.py``) asks each question it made from the library twice: as the library is, and
with the chunks that answer it hidden everywhere the answer path looks, at query time and with no re-index: dense
and BM25 search never rank them (``allowed_rows``), the walk and the cosine floor do not see them (``row_of``), and
a word only they hold counts as a word the library never uses (``unmentioned``). Their neighbours stay: the
realistic case of a manual that simply does not cover something. BM25's scores still count them in its document
frequencies (a hidden chunk is one of thousands); the rarity of a question's words does not (``doc_freq``). The
nested reader's tree and the windows reader's neighbour summaries are not covered: calibration reads by the walk.
"""
from __future__ import annotations

import numpy as np

from .search_index import bm25_tokenize


class HiddenView:
    """``index`` without the chunks ``keys`` ((serial, position) pairs); everything else is the index's own."""

    def __init__(self, index, keys: frozenset):
        self._index, self.keys = index, keys
        self.hidden_rows = np.asarray(sorted(r for k in keys if (r := index.row_of.get(k)) is not None), np.int64)
        self.row_of = {k: r for k, r in index.row_of.items() if k not in keys}

    def __getattr__(self, name):
        return getattr(self._index, name)

    def __len__(self) -> int:
        return len(self.row_of)

    def allowed_rows(self, serial: int | None = None, pages: tuple | None = None,
                     heading: str | None = None) -> np.ndarray:
        rows = self._index.allowed_rows(serial, pages, heading)
        rows = np.flatnonzero(self._index.live) if rows is None else rows
        return np.setdiff1d(rows, self.hidden_rows)

    def empty_filter_note(self, serial, pages, heading) -> str:
        return "every chunk there is hidden"

    def doc_freq(self, term: str) -> int:
        return len(np.setdiff1d(self._index.term_rows(term), self.hidden_rows))

    def unmentioned(self, query: str) -> list[str]:
        terms = dict.fromkeys(t for t in bm25_tokenize([query])[0] if len(t) >= 3)
        return [t for t in terms if not self.doc_freq(t)]
