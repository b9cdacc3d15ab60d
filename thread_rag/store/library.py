"""The library as readers see it: the committed catalog and each document's chunks at one generation.

The search (Retriever), the windows and the nested trees read through a :class:`Library`; none of them receives
the Engine (the tool functions and the agent, the doors, still do). A Library never writes: it re-reads the catalog other processes commit and reads chunks
from the store. The writer (the Engine) tells it to forget a document it replaced or removed.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..errors import (ChunkOutOfRangeError, CorruptFileError, LibraryChangedError, MissingDocumentError,
                      ThreadRagError, UnknownDocumentError)
from ..ids import ChunkId, format_doc_id
from ..lru import LRU
from ..records import Chunk, DocumentRecord, Thread
from .catalog import Catalog
from .chunk_store import ChunkStore


def store_place(shared: bool) -> str:
    """Where a library's chunks are kept, as the messages about lost chunks name it."""
    return "the library's collection on the Chroma server" if shared else "the data dir's chroma folder"


class Library:
    def __init__(self, catalog: Catalog, store: Callable[[], ChunkStore], cache_documents: int,
                 read_only: bool = False):
        """``store``: returns the chunk store (opened on first need: a cold command that lists documents
        opens no Chroma). ``cache_documents``: how many documents' chunk threads stay in memory. ``read_only``: the
        library is on a file system that cannot be written; what readers derive (summaries, index parts, trees)
        stays in memory."""
        self.catalog = catalog
        self.read_only = read_only
        self._store = store
        self._threads: LRU[int, Thread] = LRU(cache_documents)
        self._old_generation: tuple = (None, None, None)  # (serial, generation, chunks) read by a stale search

    def clear(self) -> None:
        """Drop what is held in memory (the next read goes to the catalog and the store)."""
        self._threads.clear()
        self._old_generation = (None, None, None)

    def forget(self, serial: int) -> None:
        """The writer replaced or removed this document: its cached thread is stale."""
        self._threads.pop(serial, None)

    # -- the catalog ---------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Pick up changes another process committed; True if anything changed."""
        changed = self.catalog.reload()
        if changed:
            committed = dict(self.catalog.committed())
            for serial in list(self._threads):
                if committed.get(serial) != self._threads[serial].record.generation:
                    del self._threads[serial]
        return changed

    def committed(self) -> list[tuple[int, int]]:
        """(serial, generation) of every committed document, as of the last :meth:`refresh`."""
        return self.catalog.committed()

    def committed_keys(self) -> list[tuple[int, int, str]]:
        """(serial, generation, content key) of every committed document, as of the last :meth:`refresh`."""
        return self.catalog.committed_keys()

    def documents(self) -> list[DocumentRecord]:
        self.refresh()
        return self.catalog.documents()

    def document(self, doc_id: str | int) -> DocumentRecord:
        self.refresh()
        return self.catalog.get(doc_id)

    # -- chunks --------------------------------------------------------------------------------
    def thread(self, doc_id: str | int) -> Thread:
        """A document's newest committed generation, in order."""
        rec = self.document(doc_id)
        cached = self._threads.get(rec.serial)
        if cached is None or cached.record.generation != rec.generation:
            chunks, _ = self._store().load(rec.serial, rec.generation)
            if len(chunks) != rec.chunk_count:  # the store lost rows, or another process replaced it meanwhile
                raise self.missing({(rec.serial, rec.generation)})
            if rec.ocr_pages:  # text read off a scanned page says so wherever its pages are named
                scanned = set(rec.ocr_pages)
                for c in chunks:
                    c.ocr = c.page_start is not None and any(
                        pg in scanned for pg in range(c.page_start, (c.page_end or c.page_start) + 1))
            cached = Thread(rec, chunks)
            self._threads[rec.serial] = cached
        return cached

    def thread_at(self, serial: int, generation: int) -> Thread | None:
        """A document at one generation (a reader pinned to what a search ranked); None once it is gone."""
        newest = self.thread(serial)
        if newest.record.generation == generation:
            return newest
        chunks = self.chunks_at(serial, generation)
        return None if chunks is None else Thread(dataclasses.replace(newest.record, generation=generation), chunks)

    def chunks_at(self, serial: int, generation: int) -> list | None:
        """A document's chunks at one generation (what a search index ranked); None once that generation is
        gone (another process committed a newer one and removed it)."""
        cached = self._threads.get(serial)
        if cached is not None and cached.record.generation == generation:
            return cached.chunks
        if self._old_generation[:2] != (serial, generation):
            chunks, _ = self._store().load(serial, generation)
            self._old_generation = (serial, generation, chunks or None)  # at most one old generation held
        return self._old_generation[2]

    def chunk(self, cid: ChunkId | str) -> Chunk:
        cid = ChunkId.parse(cid) if isinstance(cid, str) else cid
        try:
            thread = self.thread(cid.serial)
        except UnknownDocumentError:
            raise MissingDocumentError(f"{cid}: unknown document {cid.doc_id}") from None
        if not 0 <= cid.position < len(thread):
            raise ChunkOutOfRangeError(f"{cid}: out of range ({cid.doc_id} has chunks "
                               f"{ChunkId(cid.serial, 0)}..{ChunkId(cid.serial, len(thread) - 1)})")
        return thread.chunks[cid.position]

    def vectors(self, serial: int, generation: int) -> tuple[list[Chunk], np.ndarray | None]:
        """A generation's chunks with their stored embeddings (what the search index and the trees are built from);
        :meth:`missing`'s error when the store does not hold all of them."""
        chunks, vecs = self._store().load(serial, generation, with_embeddings=True)
        try:
            rec = self.catalog.get(serial)
        except UnknownDocumentError:
            rec = None
        if not chunks or (rec is not None and rec.generation == generation and len(chunks) != rec.chunk_count):
            raise self.missing({(serial, generation)})
        return chunks, vecs

    def missing(self, generations: set[tuple[int, int]]) -> ThreadRagError:
        """Why the store lacks rows of these generations: still the committed ones means the store lost them (a
        deleted chroma folder: named, with the way out); otherwise another process replaced them meanwhile."""
        self.refresh()
        lost = sorted(set(generations) & set(self.committed()))
        if not lost:
            return LibraryChangedError(generations=generations)
        names = ", ".join(format_doc_id(s) for s, _ in lost)
        return CorruptFileError(f"{names}: chunks missing from the store (was {store_place(bool(self.catalog.origin))} "
                                f"deleted or restored?); run "
                                f"`thread-rag doctor --repair`, or `thread-rag delete {format_doc_id(lost[0][0])}` "
                                f"if its file is gone")

    def get_chunks(self, keys: list[tuple[int, int, int]]) -> dict[tuple[int, int, int], Chunk]:
        """Chunks by (serial, position, generation); a key whose generation is gone is missing from the result."""
        return self._store().get_chunks(keys)
