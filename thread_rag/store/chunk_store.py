"""Chunk texts, raw-text embeddings and metadata in ChromaDB (``PersistentClient``).

Records are keyed ``DOC1_006@g2``: the generation suffix lets a re-index write the new chunks
beside the old ones and switch over atomically when the catalog commits. Chroma never embeds
anything itself (``embedding_function=None``) and never phones home (telemetry off).
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Iterable

import numpy as np

from ..ids import ChunkId
from ..records import Chunk

for _name in ("chromadb", "chromadb.telemetry", "chromadb.telemetry.product.posthog"):
    logging.getLogger(_name).setLevel(logging.ERROR)
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def record_id(serial: int, position: int, generation: int) -> str:
    return f"{ChunkId(serial, position)}@g{generation}"


class ChunkStore:
    COLLECTION = "chunks"

    def __init__(self, path: Path):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._client = chromadb.PersistentClient(
            path=str(self.path), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False))
        self._col = self._client.get_or_create_collection(
            self.COLLECTION, embedding_function=None, metadata={"hnsw:space": "ip"})
        try:
            self._batch = max(100, min(2000, int(self._client.get_max_batch_size())))
        except Exception:  # noqa: BLE001
            self._batch = 1000

    # -- writes ----------------------------------------------------------------------------
    def add(self, chunks: list[Chunk], embeddings: np.ndarray, generation: int) -> None:
        serial = ChunkId.parse(chunks[0].chunk_id).serial if chunks else 0
        for i in range(0, len(chunks), self._batch):
            part = chunks[i:i + self._batch]
            self._col.upsert(
                ids=[record_id(serial, c.position, generation) for c in part],
                embeddings=embeddings[i:i + len(part)].astype(np.float32),
                documents=[c.text for c in part],
                metadatas=[_meta(c, serial, generation) for c in part],
            )

    def delete_generation(self, serial: int, generation: int) -> None:
        self._col.delete(where={"$and": [{"serial": serial}, {"generation": generation}]})

    def delete_document(self, serial: int, keep_generation: int | None = None) -> None:
        if keep_generation is None:
            self._col.delete(where={"serial": serial})
        else:
            self._col.delete(where={"$and": [{"serial": serial}, {"generation": {"$ne": keep_generation}}]})

    # -- reads -----------------------------------------------------------------------------
    def count(self) -> int:
        return self._col.count()

    def rows(self) -> list[tuple[str, str, dict]]:
        """Every record as (id, text, metadata), sorted by id, committed or not (for checks and tests)."""
        got = self._col.get(include=["documents", "metadatas"])
        return sorted(zip(got["ids"], got["documents"], got["metadatas"]), key=lambda r: r[0])

    def generations(self) -> set[tuple[int, int]]:
        """Every (serial, generation) present, committed or not (for recovery)."""
        got = self._col.get(include=["metadatas"])
        return {(int(m["serial"]), int(m["generation"])) for m in got["metadatas"] or []}

    def load(self, serial: int, generation: int, with_embeddings: bool = False) -> tuple[list[Chunk], np.ndarray | None]:
        include = ["documents", "metadatas"] + (["embeddings"] if with_embeddings else [])
        got = self._col.get(where={"$and": [{"serial": serial}, {"generation": generation}]}, include=include)
        rows = sorted(range(len(got["ids"])), key=lambda i: got["metadatas"][i]["position"])
        chunks = [_chunk(got["documents"][i], got["metadatas"][i]) for i in rows]
        emb = None
        if with_embeddings:
            raw = got["embeddings"]
            emb = np.asarray([raw[i] for i in rows], dtype=np.float32).reshape(len(rows), -1)
        return chunks, emb

    def load_many(self, docs: Iterable[tuple[int, int]], with_embeddings: bool = True):
        for serial, gen in docs:
            yield serial, gen, *self.load(serial, gen, with_embeddings)


def _meta(c: Chunk, serial: int, generation: int) -> dict:
    return {
        "serial": serial, "generation": generation, "position": c.position, "doc_id": c.doc_id,
        "page_start": -1 if c.page_start is None else int(c.page_start),
        "page_end": -1 if c.page_end is None else int(c.page_end),
        "heading": " > ".join(c.heading_path), "char_start": int(c.char_start), "char_end": int(c.char_end),
        "parent": -1 if c.parent is None else int(c.parent), "n_tokens": int(c.n_tokens),
    }


def _chunk(text: str, m: dict) -> Chunk:
    return Chunk(
        chunk_id=str(ChunkId(int(m["serial"]), int(m["position"]))), doc_id=m["doc_id"], position=int(m["position"]),
        text=text, page_start=None if m["page_start"] < 0 else int(m["page_start"]),
        page_end=None if m["page_end"] < 0 else int(m["page_end"]),
        heading_path=[h for h in m.get("heading", "").split(" > ") if h], char_start=int(m["char_start"]),
        char_end=int(m["char_end"]), parent=None if m.get("parent", -1) < 0 else int(m["parent"]),
        n_tokens=int(m.get("n_tokens", 0)))
