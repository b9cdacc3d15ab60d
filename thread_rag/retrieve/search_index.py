"""The searchable corpus: every committed chunk's vector, BM25 postings and place, in segments.

Derived from the store (Chroma vectors and texts), never the source of truth. Two kinds of segment:

* a **part** per (document, generation) under ``<HOME>/index_parts/DOCn.gG`` (vectors, positions, pages,
  headings, BM25 tokens), written by indexing before the catalog commit (or from the store by the first
  search that misses it: a part is derived data, rebuilt whenever lost);
* the **base** under ``<HOME>/index``: many parts merged into one (vectors, BM25 postings, manifest naming
  the (document, generation) rows it holds).

Every segment names the (document, generation, content key) of its rows; a row is live only while the catalog
commits that generation with that key (:func:`thread_rag.records.content_key`), so rows made from other
content under the same name (a reused serial, a restored folder) are never searched, and a part whose key
differs is written again from the store.

An index is the base plus the committed parts it lacks. When the catalog changes, a running index is
*updated*: rows of dropped generations become dead (masked), new parts are appended; nothing else is read
again. When the parts outgrow ``COMPACT_RATIO`` of the base (or dead rows do), the next open merges them
into a new base under ``index.lock``. Dense scores are exact inner products (numpy; 100k x 384 takes
about 9 ms on 2 cores), or FAISS HNSW over a base of ``HNSW_THRESHOLD`` rows or more; BM25 is scored at
query time over the live rows (:mod:`.lexical`), so every result equals a full rebuild's; ties are broken
by (document, position), never by where a row happens to sit.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..atomic import atomic_replace_dir, atomic_write_json, file_lock, read_json
from ..errors import CorruptFileError
from ..faults import crash_point
from ..ids import format_doc_id, generation_name, parse_generation_name
from .lexical import Postings, score

BM25_STOPWORDS = "en"
FORMAT = 3             # 3: content keys in the manifest's keys
COMPACT_MIN = 2000     # rows outside the base (parts, dead rows) always tolerated
COMPACT_RATIO = 0.25   # ... and this share of the base
StoreLoad = Callable[[int, int], tuple]  # (serial, generation) -> (chunks, vectors): the store's reader
Committed = list  # [(serial, generation, content key)] of the catalog's documents


PERIOD = re.compile(r"\b(?:(FY|CY)(?:'?(\d\d)|\s?((?:19|20)\d\d))|(Q[1-4]|H[12])(?:'(\d\d)|\s?((?:19|20)\d\d)))\b",
                    re.I)  # a fiscal period: "FY2022", "FY 2022", "FY22", "Q1'21", "Q1 2021", "H2 2020"


def _period(m: re.Match) -> str:
    name, year = (m.group(1), m.group(2) or m.group(3)) if m.group(1) else (m.group(4), m.group(5) or m.group(6))
    return f"{name} {'20' + year if len(year) == 2 else year}"


def bm25_tokenize(texts: list[str]) -> list[list[str]]:
    """BM25's terms of each text: bm25s's words, stopwords out; a period such as "FY2022", "FY22", "Q1'21" or
    "Q12021" is its year as a term of its own ("fy 2022"), as a table's column prints it ("H100", "h264" and "Q400"
    are left alone)."""
    import bm25s

    texts = [PERIOD.sub(_period, t) for t in texts]
    return bm25s.tokenize(texts, stopwords=BM25_STOPWORDS, return_ids=False, show_progress=False)


@dataclass
class Meta:
    serial: np.ndarray
    position: np.ndarray
    page_start: np.ndarray
    page_end: np.ndarray
    heading: list

    @classmethod
    def concat(cls, metas: list["Meta"]) -> "Meta":
        cat = lambda name: np.concatenate([getattr(m, name) for m in metas]) if metas else np.zeros(0, np.int64)  # noqa: E731
        return cls(cat("serial"), cat("position"), cat("page_start"), cat("page_end"),
                   [h for m in metas for h in m.heading])

    def take(self, keep: np.ndarray) -> "Meta":
        return Meta(self.serial[keep], self.position[keep], self.page_start[keep], self.page_end[keep],
                    [h for h, k in zip(self.heading, keep) if k])

    def to_json(self) -> dict:
        return {"serial": self.serial.tolist(), "position": self.position.tolist(),
                "page_start": self.page_start.tolist(), "page_end": self.page_end.tolist(), "heading": self.heading}

    @classmethod
    def from_json(cls, m: dict) -> "Meta":
        a = lambda name: np.asarray(m[name], np.int64)  # noqa: E731
        return cls(a("serial"), a("position"), a("page_start"), a("page_end"), m["heading"])


@dataclass
class Segment:
    keys: list            # (serial, generation, first row, rows, content key) of each document generation inside
    vectors: np.ndarray
    meta: Meta
    postings: Postings

    def __len__(self) -> int:
        return len(self.meta.serial)

    def live_mask(self, generation: dict) -> np.ndarray:
        """Rows of the documents whose (generation, content key) is the committed one (``generation``: serial ->
        (generation, key))."""
        live = np.zeros(len(self), bool)
        for s, g, start, n, key in self.keys:
            if generation.get(s) == (g, key):
                live[start:start + n] = True
        return live


# -- parts: one per (document, generation) ----------------------------------------------------------
def part_dir(parts: Path, serial: int, generation: int) -> Path:
    return parts / generation_name(serial, generation)


def write_part(parts: Path, serial: int, generation: int, chunks: list, vectors: np.ndarray, key: str) -> dict:
    """Write a document generation's part (atomically), made from the chunks of content key ``key``; indexing
    does this, a reader only for a part it lacks."""
    info = part_info(chunks, key)
    _write_part(part_dir(parts, serial, generation), info, vectors)
    return info


def part_info(chunks: list, key: str) -> dict:
    """What a part keeps beside its vectors: the chunks' positions, pages, headings and BM25 tokens."""
    from ..ingest import text_for_embedding

    return {"position": [c.position for c in chunks],
            "page_start": [c.page_start or -1 for c in chunks],
            "page_end": [c.page_end or -1 for c in chunks],
            "heading": [" > ".join(c.heading_path) for c in chunks],
            "tokens": bm25_tokenize([text_for_embedding(c.text) for c in chunks]), "key": key}


def _write_part(part: Path, info: dict, vectors: np.ndarray) -> None:
    tmp = part.with_name(f".{part.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    np.save(tmp / "vectors.npy", np.asarray(vectors, np.float32))
    (tmp / "meta.json").write_text(json.dumps(info))
    (tmp / "done").write_text("ok")
    atomic_replace_dir(tmp, part)


def part_key(parts: Path, serial: int, generation: int) -> str | None:
    """The content key a document generation's part was made from ("" before keys; None: no readable part)."""
    try:
        return str(json.loads((part_dir(parts, serial, generation) / "meta.json").read_text()).get("key", ""))
    except (OSError, ValueError, AttributeError):
        return None


def load_part(parts: Path, serial: int, generation: int, key: str, store_load: StoreLoad,
              persist: bool = True) -> Segment:
    """A document generation's segment of content key ``key``; made from the store when indexing did not leave it,
    or left one made from other content, and written (``persist``; a read-only library keeps it in memory)."""
    part = part_dir(parts, serial, generation)
    info = json.loads((part / "meta.json").read_text()) if (part / "done").is_file() else None
    v = None
    if info is not None and info.get("key", "") == key:
        try:
            v = np.load(part / "vectors.npy")
        except (OSError, ValueError, EOFError):  # a damaged part is derived data: written again from the store
            v = None
    if v is None:
        chunks, v = store_load(serial, generation)
        info = part_info(chunks, key)
        if persist:
            _write_part(part, info, v)
    n = len(info["position"])
    meta = Meta(np.full(n, serial, np.int64), np.asarray(info["position"], np.int64),
                np.asarray(info["page_start"], np.int64), np.asarray(info["page_end"], np.int64), info["heading"])
    return Segment([(serial, generation, 0, n, key)], np.asarray(v, np.float32).reshape(n, -1), meta,
                   Postings.from_tokens(info["tokens"]))


# -- the base: merged parts --------------------------------------------------------------------------
def load_base(root: Path, hnsw_threshold: int) -> tuple[Segment | None, object]:
    """The persisted base and its HNSW index (or None), if it is of this format and threshold."""
    try:
        manifest = read_json(root / "manifest.json", default=None) if (root / "manifest.json").exists() else None
    except CorruptFileError:  # set aside by read_json; the base is derived data: rebuilt by the caller
        return None, None
    if not manifest or manifest.get("format") not in (2, FORMAT) or manifest.get("hnsw_threshold") != hnsw_threshold:
        return None, None
    try:
        meta = Meta.from_json(json.loads((root / "meta.json").read_text()))
        keys = [tuple(k) if len(k) == 5 else (*k, "") for k in manifest["keys"]]  # format 2: merged before keys
        seg = Segment(keys, np.load(root / "vectors.npy"), meta, Postings.load(root / "postings"))
        fi = None
        if manifest.get("kind") == "hnsw":
            import faiss

            fi = faiss.read_index(str(root / "faiss.index"))
        return seg, fi
    except (OSError, ValueError, KeyError, EOFError):  # EOFError: an .npy cut to 0 bytes
        return None, None  # rebuilt by the caller


def base_stamp(root: Path) -> str | tuple | None:
    """Which base is on disk: the random id its merge wrote into the manifest (a base written before ids were:
    the manifest's inode, mtime and size); a merge by another process changes it."""
    try:
        st = (root / "manifest.json").stat()
        manifest = json.loads((root / "manifest.json").read_text())  # never set aside here: load_base decides
    except (OSError, ValueError):
        return None
    return manifest.get("id") if isinstance(manifest, dict) and manifest.get("id") else (st.st_ino, st.st_mtime_ns,
                                                                                          st.st_size)


def merge(segments: list[tuple[Segment, np.ndarray]]) -> Segment:
    """One segment of the live rows of ``segments`` ((segment, live mask)), documents in their order."""
    keys, start = [], 0
    for seg, live in segments:
        for s, g, a, n, key in seg.keys:
            if live[a:a + n].all() and n:
                keys.append((s, g, start, n, key))
                start += n
    vectors = [seg.vectors[live] for seg, live in segments]
    dim = segments[0][0].vectors.shape[1] if segments and segments[0][0].vectors.ndim == 2 else 384
    return Segment(keys, np.concatenate(vectors) if vectors else np.zeros((0, dim), np.float32),
                   Meta.concat([seg.meta.take(live) for seg, live in segments]),
                   Postings.merge([(seg.postings, live) for seg, live in segments]))


def save_base(root: Path, base: Segment, hnsw_threshold: int, t0: float):
    """Write ``base`` atomically as the new ``<HOME>/index``; its HNSW index when it is that large."""
    kind = "hnsw" if len(base) >= hnsw_threshold else "flat"
    tmp = root.with_name(f".{root.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        np.save(tmp / "vectors.npy", base.vectors)
        (tmp / "meta.json").write_text(json.dumps(base.meta.to_json()))
        base.postings.save(tmp / "postings")
        fi = None
        if kind == "hnsw":
            import faiss

            fi = faiss.IndexHNSWFlat(base.vectors.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
            fi.hnsw.efConstruction = 80
            fi.add(np.ascontiguousarray(base.vectors, np.float32))
            faiss.write_index(fi, str(tmp / "faiss.index"))
        atomic_write_json(tmp / "manifest.json", {"format": FORMAT, "id": uuid.uuid4().hex,
                                                  "keys": [list(k) for k in base.keys], "kind": kind,
                                                  "hnsw_threshold": hnsw_threshold, "n": len(base),
                                                  "build_seconds": round(time.perf_counter() - t0, 3)})
        crash_point("merge_before_replace")
        atomic_replace_dir(tmp, root)
    except OSError:  # a full or read-only disk: its half-written temporary goes, the old base stays
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return fi


class SearchIndex:
    """The live rows of a base and parts, addressed by one row number: ``meta``, ``vectors``, ``row_of``."""

    def __init__(self, committed: Committed, base: Segment | None, parts: list[Segment],
                 hnsw=None, *, root: Path | None = None, parts_root: Path | None = None, hnsw_threshold: int = 0,
                 stamp: str | tuple | None = None, persist: bool = True):
        self.stamp = stamp  # the on-disk base this index holds (base_stamp)
        self.persist = persist  # False in a read-only library: parts made and merges kept in memory, never written
        self.committed = [(int(s), int(g), str(k)) for s, g, k in committed]
        self._generation = {s: (g, k) for s, g, k in self.committed}
        self.base, self.parts, self.faiss = base, parts, hnsw
        self.root, self.parts_root, self.hnsw_threshold = root, parts_root, hnsw_threshold
        self.kind = "hnsw" if hnsw is not None else "flat"
        segs = ([base] if base is not None else []) + parts
        self._masks = [s.live_mask(self._generation) for s in segs]
        self._offsets = np.cumsum([0] + [len(s) for s in segs])
        dim = next((s.vectors.shape[1] for s in segs if len(s)), 384)
        self.vectors = (segs[0].vectors if len(segs) == 1 else np.concatenate([s.vectors for s in segs]) if segs
                        else np.zeros((0, dim), np.float32))
        self.meta = Meta.concat([s.meta for s in segs])
        self.live = np.concatenate(self._masks) if segs else np.zeros(0, bool)
        self._segments = [(s.postings, int(o), None if m.all() else m) for s, o, m in zip(segs, self._offsets, self._masks)]
        self._last_bm25: tuple = ("", None)  # (query, BM25 scores of every row): stage 3's floor reads it again
        rows = np.flatnonzero(self.live)
        self.tiebreak = self.meta.serial * (1 << 32) + self.meta.position  # (document, position) order
        self.row_of = dict(zip(zip(self.meta.serial[rows].tolist(), self.meta.position[rows].tolist()), rows.tolist()))
        self.doc_rows: dict[int, np.ndarray] = {}
        if len(rows):
            sers = self.meta.serial[rows]
            order = np.argsort(sers, kind="stable")
            bounds = np.flatnonzero(np.diff(sers[order])) + 1
            for grp in np.split(rows[order], bounds):
                self.doc_rows[int(self.meta.serial[grp[0]])] = grp

    def generation_of(self, serial: int) -> int | None:
        """The generation of a document this index was built from (None if it holds none)."""
        return self._generation.get(int(serial), (None, None))[0]

    def content_key_of(self, serial: int) -> str | None:
        """The content key of the generation of a document this index was built from (None if it holds none)."""
        return self._generation.get(int(serial), (None, None))[1]

    def __len__(self) -> int:
        """Live rows (chunks of committed generations)."""
        return len(self.row_of)

    @property
    def outside_base(self) -> int:
        """Rows that are not live rows of the base: parts plus dead base rows (what compaction removes)."""
        return len(self.live) - (int(self._masks[0].sum()) if self.base is not None else 0)

    # -- open / update ------------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path, parts_root: Path, committed: Committed, store_load: StoreLoad,
             hnsw_threshold: int, persist: bool = True) -> "SearchIndex":
        """The base on disk plus the parts it lacks; merged into a new base first when they outgrew it.
        One process at a time (``index.lock``): another waits, then reads what the first wrote."""
        root.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(root.parent / "index.lock"):
            return cls._open_locked(root, parts_root, committed, store_load, hnsw_threshold, persist)

    @classmethod
    def _open_locked(cls, root, parts_root, committed, store_load, hnsw_threshold, persist=True) -> "SearchIndex":
        t0 = time.perf_counter()
        stamp = base_stamp(root)
        base, hnsw = load_base(root, hnsw_threshold)
        index = cls._with_parts(committed, base, hnsw, [], root, parts_root, store_load, hnsw_threshold, stamp,
                                persist)
        if persist and (base is None or index.needs_compaction()):
            index = index.compacted(t0)
        return index

    def updated(self, committed: Committed, store_load: StoreLoad) -> "SearchIndex":
        """This index for a changed catalog: reuses every segment still committed, loads only new parts;
        merges when the parts outgrew the base (then from memory, not from the parts on disk). When another
        process merged meanwhile (the base on disk changed), its base is read instead: the parts it merged are
        gone from disk, and rebuilding them from the store would be a reader writing (and a read of another
        process's fresh Chroma rows, which a local Chroma client does not reliably see)."""
        with file_lock(self.root.parent / "index.lock"):
            if base_stamp(self.root) != self.stamp:
                return self._open_locked(self.root, self.parts_root, committed, store_load, self.hnsw_threshold,
                                         self.persist)
            parts = [p for p in self.parts if self._generation_in(p, {s: (g, k) for s, g, k in committed})]
            index = self._with_parts(committed, self.base, self.faiss, parts, self.root, self.parts_root,
                                     store_load, self.hnsw_threshold, self.stamp, self.persist)
            return index.compacted(time.perf_counter()) if self.persist and index.needs_compaction() else index

    @staticmethod
    def _generation_in(seg: Segment, generation: dict) -> bool:
        return all(generation.get(s) == (g, key) for s, g, _, _, key in seg.keys)

    @classmethod
    def _with_parts(cls, committed, base, hnsw, parts, root, parts_root, store_load, hnsw_threshold, stamp,
                    persist=True):
        have = {(s, g, k) for seg in ([base] if base is not None else []) + parts for s, g, _, _, k in seg.keys}
        parts = parts + [load_part(parts_root, s, g, k, store_load, persist) for s, g, k in committed
                         if (s, g, k) not in have]
        return cls(committed, base, parts, hnsw, root=root, parts_root=parts_root, hnsw_threshold=hnsw_threshold,
                   stamp=stamp, persist=persist)

    def needs_compaction(self) -> bool:
        base_live = 0 if self.base is None else int(self._masks[0].sum())
        return self.outside_base > max(COMPACT_MIN, COMPACT_RATIO * base_live)

    def compacted(self, t0: float) -> "SearchIndex":
        """``compact``, or this index as it is when the merge cannot be written (a full or read-only disk): the
        search reads the parts unmerged, and a later open merges them once it can."""
        try:
            return self.compact(t0)
        except OSError:  # save_base has removed its temporary
            return self

    def compact(self, t0: float) -> "SearchIndex":
        """Merge the live rows into a new base on disk (caller holds ``index.lock``); parts it now holds,
        and parts of generations no longer committed, are removed."""
        segs = ([self.base] if self.base is not None else []) + self.parts
        base = merge(list(zip(segs, self._masks)))
        hnsw = save_base(self.root, base, self.hnsw_threshold, t0)
        stamp = base_stamp(self.root)
        crash_point("merge_after_base")
        for d in self.parts_root.iterdir() if self.parts_root.is_dir() else []:
            key = parse_generation_name(d.name)  # temporaries start with a dot: never parsed
            if key is not None and key[1] <= self._generation.get(key[0], (-1,))[0]:
                shutil.rmtree(d, ignore_errors=True)  # now in the base, or a generation it replaced
        return SearchIndex(self.committed, base, [], hnsw, root=self.root, parts_root=self.parts_root,
                           hnsw_threshold=self.hnsw_threshold, stamp=stamp)

    # -- queries -----------------------------------------------------------------------------
    def allowed_rows(self, serial: int | None = None, pages: tuple | None = None,
                     heading: str | None = None) -> np.ndarray | None:
        """Live row indices passing the filters, or None when there is no filter."""
        if serial is None and pages is None and not heading:
            return None
        rows = self._rows_in(serial)
        if pages is not None:
            lo, hi = pages
            ps, pe = self.meta.page_start[rows], self.meta.page_end[rows]
            rows = rows[(pe >= lo) & (ps <= hi) & (ps >= 0)]
        if heading:
            h = heading.lower()
            rows = np.array([r for r in rows if h in self.meta.heading[r].lower()], dtype=np.int64)
        return rows

    def _rows_in(self, serial: int | None) -> np.ndarray:
        """The live rows of one document, or of the whole library."""
        return self.doc_rows.get(serial, np.zeros(0, np.int64)) if serial is not None else np.flatnonzero(self.live)

    def empty_filter_note(self, serial: int | None, pages: tuple | None, heading: str | None) -> str:
        """Why no chunk passes the filters (``allowed_rows`` came back empty), in one line."""
        where = format_doc_id(serial) if serial is not None else "the library"
        rows = self._rows_in(serial)
        if not len(rows):
            return f"{where} has no chunks"
        if pages is not None:
            ps, pe = self.meta.page_start[rows], self.meta.page_end[rows]
            paged = ps >= 0
            if not paged.any():
                return f"no chunk of {where} has page numbers (only PDFs have pages)"
            lo, hi = pages
            if not ((pe >= lo) & (ps <= hi) & paged).any():
                span = f"pp.{int(ps[paged].min())}-{int(pe[paged].max())}"
                return f"no chunk of {where} is on pages {lo}-{hi} ({'its' if serial is not None else 'the'} chunks " \
                       f"are on {span})"
        on = " on those pages" if pages is not None else ""
        return f"no chunk of {where}{on} has a heading containing {heading!r}"

    def dense(self, qvec: np.ndarray, k: int, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if rows is not None:
            if len(rows) == 0:
                return np.zeros(0, np.int64), np.zeros(0, np.float32)
            scores = np.asarray(self.vectors[rows]) @ qvec
            top = self._top(scores, k, rows)
            return rows[top], scores[top]
        if len(self) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if self.faiss is not None:
            return self._dense_hnsw(qvec, k)
        scores = np.where(self.live, self.vectors @ qvec, -np.inf).astype(np.float32)
        top = self._top(scores, min(k, len(self)))
        return top, scores[top]

    def _dense_hnsw(self, qvec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """HNSW over the base (its dead rows skipped), exact over the parts, merged by score."""
        nb = len(self.base)
        self.faiss.hnsw.efSearch = max(128, 2 * k)
        dead = int(nb - self._masks[0].sum())
        d, i = self.faiss.search(qvec.reshape(1, -1).astype(np.float32), min(k + dead, nb))
        ok = (i[0] >= 0) & self.live[np.clip(i[0], 0, None)]
        rows, scores = i[0][ok].astype(np.int64), d[0][ok]
        if len(self.live) > nb:
            tail = np.arange(nb, len(self.live))[self.live[nb:]]
            rows = np.concatenate([rows, tail])
            scores = np.concatenate([scores, np.asarray(self.vectors[tail]) @ qvec])
        top = self._top(scores, k, rows)
        return rows[top], scores[top]

    def lexical(self, query: str, k: int, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if len(self) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        scores = self._bm25(query)
        if rows is not None:
            sub = scores[rows]
            top = self._top(sub, k, rows)
            top = top[sub[top] > 0]
            return rows[top], sub[top].astype(np.float32)
        top = self._top(scores, k)
        top = top[scores[top] > 0]
        return top.astype(np.int64), scores[top].astype(np.float32)

    def unmentioned(self, query: str) -> list[str]:
        """The query's BM25 terms (3 letters or more, stopwords out) that no indexed chunk holds."""
        terms = dict.fromkeys(t for t in bm25_tokenize([query])[0] if len(t) >= 3)
        return [t for t in terms if not any(t in p.column_of for p, _, _ in self._segments)]

    def doc_freq(self, term: str) -> int:
        """How many live chunks hold ``term``."""
        return len(self.term_rows(term))

    def term_rows(self, term: str) -> np.ndarray:
        """The live rows whose chunk holds ``term`` (a BM25 token): its document frequency is their count."""
        found = []
        for p, off, m in self._segments:
            rows, _ = p.column(term)
            if m is not None and len(rows):
                rows = rows[m[rows]]
            if len(rows):
                found.append(rows + off)
        return np.concatenate(found) if found else np.zeros(0, np.int64)

    def lexical_scores(self, query: str, rows) -> np.ndarray:
        """The BM25 scores of ``rows`` (0 where a row shares no term with the query), whatever their rank."""
        return self._bm25(query)[np.asarray(rows, np.int64)] if len(self) else np.zeros(len(rows), np.float32)

    def _bm25(self, query: str) -> np.ndarray:
        last_query, scores = self._last_bm25
        if scores is None or last_query != query:
            scores = score(self._segments, bm25_tokenize([query])[0], len(self.live))
            self._last_bm25 = (query, scores)
        return scores

    def _top(self, scores: np.ndarray, k: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Positions of the ``k`` best ``scores`` (of ``rows``, or of every row), ties by (document, position)."""
        k = min(k, len(scores))
        if k <= 0:
            return np.zeros(0, np.int64)
        cut = scores[np.argpartition(-scores, k - 1)[k - 1]]
        cand = np.flatnonzero(scores >= cut)  # every tie at the cut, so the order decides, not argpartition
        keys = self.tiebreak[cand if rows is None else rows[cand]]
        return cand[np.lexsort((keys, -scores[cand]))][:k]
