"""The searchable corpus: every committed chunk in one FAISS index and one bm25s index.

Derived from the store (Chroma vectors and texts), persisted under ``<HOME>/index`` with a
manifest naming the committed (document, generation) pairs it was built from. When the catalog
changes, only the documents that changed are read from Chroma and re-tokenised (per-document
BM25 token lists are cached as JSON); the BM25 matrix and the FAISS index are then reassembled
from those parts, which costs milliseconds to seconds, never a re-encode. Flat (exact) inner
product below ``HNSW_THRESHOLD`` chunks, HNSW at or above it.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_replace_dir, atomic_write_json, read_json

BM25_STOPWORDS = "en"


def bm25_tokenize(texts: list[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(texts, stopwords=BM25_STOPWORDS, return_ids=False, show_progress=False)


@dataclass
class Meta:
    serial: np.ndarray
    position: np.ndarray
    page_start: np.ndarray
    page_end: np.ndarray
    heading: list


class SearchIndex:
    def __init__(self, root: Path, committed: list[tuple[int, int]], vectors: np.ndarray, meta: Meta, bm25,
                 faiss_index, kind: str):
        self.root = root
        self.committed = committed
        self._generation = {int(s): int(g) for s, g in committed}
        self.vectors = vectors
        self.meta = meta
        self.bm25 = bm25
        self.faiss = faiss_index
        self.kind = kind
        self.row_of = {(int(s), int(p)): i for i, (s, p) in enumerate(zip(meta.serial, meta.position))}
        self.doc_rows: dict[int, np.ndarray] = {}
        if len(meta.serial):
            order = np.argsort(meta.serial, kind="stable")
            sers = meta.serial[order]
            bounds = np.flatnonzero(np.diff(sers)) + 1
            for grp in np.split(order, bounds):
                self.doc_rows[int(meta.serial[grp[0]])] = grp

    def generation_of(self, serial: int) -> int | None:
        """The generation of a document this index was built from (None if it holds none)."""
        return self._generation.get(int(serial))

    def __len__(self) -> int:
        return len(self.meta.serial)

    # -- build / load ------------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path, engine, hnsw_threshold: int) -> "SearchIndex":
        committed = engine.catalog.committed()
        current = cls._load_current(root, committed, hnsw_threshold)
        if current is not None:
            return current
        from ..atomic import file_lock

        root.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(root.parent / "index.lock"):  # one process rebuilds; the others wait, then load its result
            current = cls._load_current(root, committed, hnsw_threshold)
            return current if current is not None else cls.build(root, engine, committed, hnsw_threshold)

    @classmethod
    def _load_current(cls, root: Path, committed, hnsw_threshold: int) -> "SearchIndex | None":
        """The persisted index when its manifest names exactly these generations and threshold, else None."""
        manifest = read_json(root / "manifest.json", default=None) if (root / "manifest.json").exists() else None
        if manifest and manifest.get("committed") == [list(x) for x in committed] \
                and manifest.get("hnsw_threshold") == hnsw_threshold:
            try:
                return cls._load(root, committed, manifest)
            except (OSError, ValueError, KeyError):
                pass  # rebuilt by the caller
        return None

    @classmethod
    def _load(cls, root: Path, committed, manifest) -> "SearchIndex":
        import bm25s
        import faiss

        vectors = np.load(root / "vectors.npy", mmap_mode="r")
        m = json.loads((root / "meta.json").read_text())
        meta = Meta(np.asarray(m["serial"], np.int64), np.asarray(m["position"], np.int64),
                    np.asarray(m["page_start"], np.int64), np.asarray(m["page_end"], np.int64), m["heading"])
        bm25 = bm25s.BM25.load(str(root / "bm25"), mmap=True, show_progress=False) if len(meta.serial) else None
        fi = faiss.read_index(str(root / "faiss.index")) if len(meta.serial) else None
        return cls(root, committed, vectors, meta, bm25, fi, manifest["kind"])

    @classmethod
    def build(cls, root: Path, engine, committed, hnsw_threshold: int) -> "SearchIndex":
        import bm25s
        import faiss

        t0 = time.perf_counter()
        parts = root.parent / "index_parts"
        parts.mkdir(parents=True, exist_ok=True)
        vecs, serials, positions, ps, pe, heads, tokens = [], [], [], [], [], [], []
        for serial, gen in committed:
            part = parts / f"DOC{serial}.g{gen}"
            if (part / "done").is_file():
                v = np.load(part / "vectors.npy")
                info = json.loads((part / "meta.json").read_text())
            else:
                chunks, v = engine.store.load(serial, gen, with_embeddings=True)
                from ..ingest import text_for_embedding

                info = {"position": [c.position for c in chunks],
                        "page_start": [c.page_start or -1 for c in chunks],
                        "page_end": [c.page_end or -1 for c in chunks],
                        "heading": [" > ".join(c.heading_path) for c in chunks],
                        "tokens": bm25_tokenize([text_for_embedding(c.text) for c in chunks])}
                tmp = part.with_name(f".{part.name}.{os.getpid()}.tmp")
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir(parents=True)
                np.save(tmp / "vectors.npy", v.astype(np.float32))
                (tmp / "meta.json").write_text(json.dumps(info))
                (tmp / "done").write_text("ok")
                atomic_replace_dir(tmp, part)
            vecs.append(v.astype(np.float32))
            serials.extend([serial] * len(info["position"]))
            positions.extend(info["position"])
            ps.extend(info["page_start"])
            pe.extend(info["page_end"])
            heads.extend(info["heading"])
            tokens.extend(info["tokens"])
        keep = {f"DOC{s}.g{g}" for s, g in committed}
        for d in parts.iterdir():
            if d.name not in keep and not d.name.startswith("."):
                shutil.rmtree(d, ignore_errors=True)
        dim = vecs[0].shape[1] if vecs else 384
        vectors = np.concatenate(vecs) if vecs else np.zeros((0, dim), np.float32)
        meta = Meta(np.asarray(serials, np.int64), np.asarray(positions, np.int64), np.asarray(ps, np.int64),
                    np.asarray(pe, np.int64), heads)
        kind = "hnsw" if len(vectors) >= hnsw_threshold else "flat"
        bm25 = fi = None
        tmp = root.with_name(f".{root.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if len(vectors):
            bm25 = bm25s.BM25()
            bm25.index([t if t else ["_empty_"] for t in tokens], show_progress=False)
            bm25.save(str(tmp / "bm25"), show_progress=False)
            if kind == "hnsw":
                fi = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
                fi.hnsw.efConstruction = 80
            else:
                fi = faiss.IndexFlatIP(dim)
            fi.add(vectors)
            faiss.write_index(fi, str(tmp / "faiss.index"))
        np.save(tmp / "vectors.npy", vectors)
        (tmp / "meta.json").write_text(json.dumps({"serial": serials, "position": positions, "page_start": ps,
                                                   "page_end": pe, "heading": heads}))
        atomic_write_json(tmp / "manifest.json", {"committed": [list(x) for x in committed], "kind": kind,
                                                  "hnsw_threshold": hnsw_threshold, "n": len(vectors),
                                                  "build_seconds": round(time.perf_counter() - t0, 3)})
        atomic_replace_dir(tmp, root)
        if bm25 is not None:
            bm25 = bm25s.BM25.load(str(root / "bm25"), mmap=True, show_progress=False)
        return cls(root, committed, np.load(root / "vectors.npy", mmap_mode="r"), meta, bm25, fi, kind)

    # -- queries -----------------------------------------------------------------------------
    def allowed_rows(self, serial: int | None = None, pages: tuple | None = None,
                     heading: str | None = None) -> np.ndarray | None:
        """Row indices passing the filters, or None when there is no filter."""
        if serial is None and pages is None and not heading:
            return None
        rows = self.doc_rows.get(serial, np.zeros(0, np.int64)) if serial is not None else np.arange(len(self))
        if pages is not None:
            lo, hi = pages
            ps, pe = self.meta.page_start[rows], self.meta.page_end[rows]
            rows = rows[(pe >= lo) & (ps <= hi) & (ps >= 0)]
        if heading:
            h = heading.lower()
            rows = np.array([r for r in rows if h in self.meta.heading[r].lower()], dtype=np.int64)
        return rows

    def dense(self, qvec: np.ndarray, k: int, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if len(self) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if rows is not None:
            if len(rows) == 0:
                return np.zeros(0, np.int64), np.zeros(0, np.float32)
            scores = np.asarray(self.vectors[rows]) @ qvec
            top = _top(scores, k)
            return rows[top], scores[top]
        if self.kind == "hnsw":
            self.faiss.hnsw.efSearch = max(128, 2 * k)
        d, i = self.faiss.search(qvec.reshape(1, -1).astype(np.float32), min(k, len(self)))
        keep = i[0] >= 0
        return i[0][keep].astype(np.int64), d[0][keep]

    def lexical(self, query: str, k: int, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if self.bm25 is None:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        toks = [t for t in bm25_tokenize([query])[0] if t in self.bm25.vocab_dict]
        if not toks:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        scores = self.bm25.get_scores(toks)
        if rows is not None:
            sub = scores[rows]
            top = _top(sub, k)
            top = top[sub[top] > 0]
            return rows[top], sub[top]
        top = _top(scores, k)
        top = top[scores[top] > 0]
        return top.astype(np.int64), scores[top]


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]
