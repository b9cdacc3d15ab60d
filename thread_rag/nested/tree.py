"""Hierarchical semantic chunk tree and ``nested_retrieve``.

Build (at index time, for documents with >= ``NESTED_MIN_CHUNKS`` chunks): the root covers the
whole thread; a node is split into ``NUM_SEMANTIC_CHUNKS`` contiguous parts at the chunk
boundaries where the embedding distance between neighbouring chunks peaks (one cut searched near
each equal-size cut point, so parts stay balanced), recursively to ``MAX_DEPTH`` or a single
chunk. Every node therefore maps exactly to the thread chunks it covers (``DOC1_010..DOC1_014``),
so the agent can WALK from a nested pick. A node's vector is the normalised mean of the raw-text
embeddings of the chunks it covers (MiniLM reads only 256 word-pieces, so encoding a large
node's text would see only its first lines). Persisted as JSON (structure) + .npy (vectors).

Retrieve: one vector query scores every node of the allowed documents; greedy picks from a
candidate pool of the best ``pool_factor * limit`` nodes exclude the ancestors and descendants of
every pick (in a tree, exactly the nodes whose chunk ranges overlap it); when the pool runs out,
the scan continues over the remaining nodes.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..atomic import atomic_write_bytes, atomic_write_json
from ..errors import ThreadRagError
from ..ids import ChunkId, format_doc_id, generation_name
from ..lru import LRU
from ..retrieve.pipeline import plain_query

MAX_LIMIT = 50
MAX_OFFSET = 1000


@dataclass
class NestedHit:
    node_id: str
    doc_id: str
    level: int
    score: float
    chunk_ids: list
    first_chunk: str
    last_chunk: str
    page_start: int | None
    page_end: int | None
    pages_label: str
    text: str
    words: int


@dataclass
class NestedResult:
    query: str
    limit: int
    offset: int
    hits: list
    nodes_scored: int
    pool_refills: int
    timings_ms: dict = field(default_factory=dict)


def _split_points(vecs: np.ndarray, a: int, b: int, parts: int) -> list[int]:
    """Cut positions c (a < c <= b; a part ends at c-1) for range [a, b]."""
    n = b - a + 1
    parts = min(parts, n)
    if parts < 2:
        return []
    dist = 1.0 - np.sum(vecs[a + 1:b + 1] * vecs[a:b], axis=1)  # dist[i] is the boundary before a+1+i
    cuts: list[int] = []
    lo = a + 1
    for j in range(1, parts):
        ideal = a + j * n / parts
        half = max(0.5, 0.3 * n / parts)
        cand = [c for c in range(int(np.floor(ideal - half)), int(np.ceil(ideal + half)) + 1) if lo <= c <= b
                and (not cuts or c > cuts[-1]) and c <= b - (parts - 1 - j)]
        if not cand:
            cand = [c for c in range(lo, b + 1) if (not cuts or c > cuts[-1])]
            if not cand:
                break
        best = max(cand, key=lambda c: (dist[c - a - 1], -abs(c - ideal)))
        cuts.append(best)
        lo = best + 1
    return cuts


def build_tree(vecs: np.ndarray, words: list[int], parts: int, max_depth: int, min_words: int) -> list[dict]:
    nodes: list[dict] = []

    def add(a: int, b: int, level: int, parent: int | None) -> int:
        nid = len(nodes)
        nodes.append({"id": nid, "parent": parent, "level": level, "first": a, "last": b, "children": []})
        if parent is not None:
            nodes[parent]["children"].append(nid)
        if level < max_depth and b > a and sum(words[a:b + 1]) >= 2 * min_words:
            cuts = _split_points(vecs, a, b, parts)
            bounds = [a] + cuts + [b + 1]
            if len(bounds) > 2:
                for s, e in zip(bounds, bounds[1:]):
                    add(s, e - 1, level + 1, nid)
        return nid

    add(0, len(vecs) - 1, 0, None)
    return nodes


def node_vectors(vecs: np.ndarray, nodes: list[dict]) -> np.ndarray:
    csum = np.vstack([np.zeros((1, vecs.shape[1]), np.float64), np.cumsum(vecs, axis=0, dtype=np.float64)])
    out = np.stack([(csum[n["last"] + 1] - csum[n["first"]]) for n in nodes]).astype(np.float32)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


def tree_stats(nodes: list[dict]) -> dict:
    levels: dict[int, int] = {}
    for n in nodes:
        levels[n["level"]] = levels.get(n["level"], 0) + 1
    leaves = [n for n in nodes if not n["children"]]
    return {"nodes": len(nodes), "depth": max(levels) if levels else 0, "per_level": levels,
            "leaves": len(leaves), "mean_leaf_chunks": round(float(np.mean([n["last"] - n["first"] + 1 for n in leaves])), 2)
            if leaves else 0}


class NestedIndex:
    """The documents' trees: built at index time (``build``), read by ``retrieve``.

    Receives what it uses: the ``library`` (documents, chunks and their stored vectors), ``trees`` (the folder
    of the persisted trees) and the ``query_embedder`` provider (called on first need)."""

    def __init__(self, library, settings, trees: Path, query_embedder: Callable):
        self.library, self.settings, self.trees, self._query_embedder = library, settings, trees, query_embedder
        self._loaded: LRU[tuple[int, int, str], tuple[list[dict], np.ndarray]] = LRU(settings.CACHE_DOCUMENTS)
        self._joined_nodes: tuple = (None, None)  # (the documents' (serial, generation)s, their nodes joined)

    def path(self, serial: int, gen: int) -> Path:
        return self.trees / generation_name(serial, gen, ".json")

    def build(self, serial: int, gen: int, chunks, vecs: np.ndarray | None = None, persist: bool = True,
              key: str = "") -> dict:
        """Build the tree of one document generation, whose chunks have content key ``key`` (vectors from the store
        if not given); indexing persists it under the write lock, a reader (``load``) keeps it in memory only."""
        t0 = time.perf_counter()
        if vecs is None:
            _, vecs = self.library.vectors(serial, gen)
        s = self.settings
        words = [len(c.text.split()) for c in chunks]
        nodes = build_tree(np.asarray(vecs, np.float32), words, s.NUM_SEMANTIC_CHUNKS, s.MAX_DEPTH, s.NESTED_MIN_WORDS)
        nv = node_vectors(np.asarray(vecs, np.float32), nodes)
        stats = tree_stats(nodes)
        stats["build_seconds"] = round(time.perf_counter() - t0, 4)
        if persist:
            p = self.path(serial, gen)
            import io

            buf = io.BytesIO()
            np.save(buf, nv)
            atomic_write_bytes(p.with_suffix(".npy"), buf.getvalue())
            atomic_write_json(p, {"format": 1, "doc_id": format_doc_id(serial), "generation": gen, "key": key,
                                  "stats": stats, "nodes": nodes}, indent=None)
        self._loaded[(serial, gen, key)] = (nodes, nv)
        return stats

    def persisted(self, rec) -> dict | None:
        """The persisted tree of ``rec``'s committed generation, if there is one made from its content."""
        p = self.path(rec.serial, rec.generation)
        try:
            data = json.loads(p.read_text()) if p.with_suffix(".npy").is_file() else None
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("key", "") == rec.content_key else None

    def state(self, rec) -> str:
        """``ok``, ``missing`` (either of its two files gone) or ``other`` (made from other content, or damaged)."""
        p = self.path(rec.serial, rec.generation)
        if not (p.is_file() and p.with_suffix(".npy").is_file()):
            return "missing"
        return "ok" if self.persisted(rec) is not None else "other"

    def load(self, rec) -> tuple[list[dict], np.ndarray]:
        """The tree of a document's committed generation (``rec``: its catalog record)."""
        key = (rec.serial, rec.generation, rec.content_key)
        if key not in self._loaded:
            data = self.persisted(rec)
            vectors = None
            if data is not None:
                try:
                    vectors = np.load(self.path(rec.serial, rec.generation).with_suffix(".npy"))
                except (OSError, ValueError, EOFError):  # a damaged tree: built in memory as if it were lost
                    data = None
            if data is None:
                if rec.chunk_count < 1:
                    raise ThreadRagError(f"{rec.doc_id} has no chunks")
                # small documents get no tree at index time (NESTED_MIN_CHUNKS), a lost file (or one made from
                # other content) none either: build it in memory; readers never write
                chunks, vecs = self.library.vectors(rec.serial, rec.generation)  # both of rec's generation
                self.build(rec.serial, rec.generation, chunks, vecs=vecs, persist=False, key=rec.content_key)
            else:
                self._loaded[key] = (data["nodes"], vectors)
        return self._loaded[key]

    def stats(self, doc_id: str) -> dict:
        """Tree statistics, with the build time recorded when the tree was persisted."""
        rec = self.library.document(doc_id)
        nodes, _ = self.load(rec)
        stats = tree_stats(nodes)
        p = self.path(rec.serial, rec.generation)
        if p.is_file():
            stats["build_seconds"] = json.loads(p.read_text()).get("stats", {}).get("build_seconds")
        return stats

    def _joined(self, docs) -> tuple[list[int], list[dict], np.ndarray]:
        """Owners, nodes and node vectors of ``docs`` joined, kept for as long as the same generations are asked."""
        key = tuple((d.serial, d.generation, d.content_key) for d in docs)
        if self._joined_nodes[0] != key:
            owners, all_nodes, mats = [], [], []
            for rec in docs:
                nodes, nv = self.load(rec)
                owners.extend([rec.serial] * len(nodes))
                all_nodes.extend(nodes)
                mats.append(nv)
            self._joined_nodes = (key, (owners, all_nodes, np.concatenate(mats)))
        return self._joined_nodes[1]

    def retrieve(self, query: str, limit: int = 5, doc_id: str | None = None, offset: int = 0,
                 pool_factor: int = 8) -> NestedResult:
        if not isinstance(query, str) or not query.strip():
            raise ThreadRagError("query is empty")
        for name, v, lo, hi in (("limit", limit, 1, MAX_LIMIT), ("offset", offset, 0, MAX_OFFSET)):
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                raise ThreadRagError(f"{name}={v!r} must be an integer from {lo} to {hi}")
        t0 = time.perf_counter()
        query = plain_query(query)
        docs = [self.library.document(doc_id)] if doc_id else self.library.documents()
        if not docs:  # an empty library: no hits, as a search of it
            return NestedResult(query=query, limit=limit, offset=offset, hits=[], nodes_scored=0, pool_refills=0)
        from ..embedder import check_recipe

        check_recipe(docs, self.settings.EMBEDDER_MODEL)
        owners, all_nodes, matrix = self._joined(docs)
        q = self._query_embedder().embed_queries([query])[0]
        scores = matrix @ q  # one vector query over every node
        order = np.argsort(-scores, kind="stable")
        want = limit + offset
        pool = order[: max(pool_factor * want, want)]
        picks: list[int] = []
        taken: dict[int, list[tuple[int, int]]] = {}
        refills = 0
        pos = 0
        cand = list(pool)
        while len(picks) < want:
            if pos >= len(cand):
                if len(cand) >= len(order):
                    break
                refills += 1
                cand = list(order[: min(len(order), 2 * len(cand))])
                continue
            i = int(cand[pos])
            pos += 1
            if i in picks:
                continue
            n, ser = all_nodes[i], owners[i]
            if any(not (n["last"] < a or n["first"] > b) for a, b in taken.get(ser, [])):
                continue  # an ancestor or descendant of a pick
            picks.append(i)
            taken.setdefault(ser, []).append((n["first"], n["last"]))
        hits = []
        for i in picks[offset:]:
            n, ser = all_nodes[i], owners[i]
            thread = self.library.thread(ser)
            chunks = thread.chunks[n["first"]:n["last"] + 1]
            from ..records import pages_label
            from ..threads.passages import join_thread

            text = join_thread(chunks)
            pages = [p for c in chunks for p in (c.page_start, c.page_end) if p is not None]
            hits.append(NestedHit(
                node_id=f"{format_doc_id(ser)}#n{n['id']}", doc_id=format_doc_id(ser), level=n["level"],
                score=round(float(scores[i]), 6), chunk_ids=[c.chunk_id for c in chunks],
                first_chunk=str(ChunkId(ser, n["first"])), last_chunk=str(ChunkId(ser, n["last"])),
                page_start=min(pages) if pages else None, page_end=max(pages) if pages else None,
                pages_label=pages_label(min(pages), max(pages)) if pages else "", text=text, words=len(text.split())))
        return NestedResult(query=query, limit=limit, offset=offset, hits=hits, nodes_scored=len(all_nodes),
                            pool_refills=refills, timings_ms={"total_ms": round((time.perf_counter() - t0) * 1000, 3)})
