"""A local library's chunks read straight from Chroma's sqlite file, for a data dir on a read-only file system.

Chroma's own client opens its database for writing, so on a read-only mount (a team's share, a library baked into a
container image, a backup mounted to check) it cannot open at all. Texts and metadata are rows of ``chroma.sqlite3``
(the metadata segment: ``embeddings`` and ``embedding_metadata``), read here through sqlite in read-only mode: no
file is created, nothing is locked for writing, and a writer on a writable mount of the same files is seen as sqlite
readers see it. The vectors live in Chroma's HNSW files; the rare reader that needs them (a search index part or a
nested tree the data dir lacks) gets them from a private copy of the chroma folder (the database copied through
sqlite's backup, so a write on a writable mount cannot tear it) opened by Chroma itself, made again when it lacks a
generation the database holds, and removed when the store is closed or the process ends.
"""
from __future__ import annotations

import shutil
import sqlite3
import tempfile
import weakref
from pathlib import Path

import numpy as np

from ..errors import CorruptFileError
from ..records import Chunk
from .chunk_store import ChunkStore, _chunk, record_id

_VALUE = "COALESCE(string_value, int_value, float_value, bool_value)"
_OF_GENERATION = ("SELECT id FROM embedding_metadata WHERE key = 'serial' AND int_value = ? INTERSECT "
                  "SELECT id FROM embedding_metadata WHERE key = 'generation' AND int_value = ?")  # one generation's rows


class ReadOnlyChunkStore:
    """The reads of :class:`ChunkStore` (``count``, ``rows``, ``generations``, ``load``, ``get_chunks``) on a local
    store that must not be written."""

    host = None
    url = None

    def __init__(self, path: Path):
        self.path = Path(path)
        db = self.path / "chroma.sqlite3"
        self._db = None
        try:
            self._db = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False)
            self._segment = self._metadata_segment()
        except sqlite3.Error as exc:
            if self._db is not None:
                self._db.close()
            raise CorruptFileError(f"{db} cannot be read ({exc}); the data dir is read-only, so it cannot be "
                                   f"repaired in place: copy it somewhere writable and run `thread-rag doctor`") from None
        self._copy: tuple[weakref.finalize, ChunkStore] | None = None

    def _metadata_segment(self) -> str:
        """The metadata segment of the ``chunks`` collection, refused when Chroma has not applied its whole log to
        it (its rows would be behind what was written)."""
        row = self._db.execute(
            "SELECT s.id, c.id FROM segments s JOIN collections c ON s.collection = c.id "
            "WHERE c.name = ? AND s.scope = 'METADATA'", (ChunkStore.COLLECTION,)).fetchone()
        if row is None:
            raise sqlite3.DatabaseError("no chunks collection")
        applied = self._db.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", row[:1]).fetchone()
        logged = self._db.execute("SELECT MAX(seq_id) FROM embeddings_queue WHERE topic LIKE ?",
                                  (f"%/{row[1]}",)).fetchone()  # this collection's writes
        if logged[0] is not None and (applied is None or int(applied[0]) < int(logged[0])):
            raise sqlite3.DatabaseError("Chroma's log holds changes its metadata segment has not applied")
        return row[0]

    def close(self) -> None:
        self._drop_copy()  # its folder goes (also at exit for a store nobody closed: weakref.finalize)
        db, self._db = getattr(self, "_db", None), None
        if db is not None:
            db.close()

    # -- rows ------------------------------------------------------------------------------
    def _records(self, ids_sql: str, args: tuple) -> list[tuple[str, str, dict]]:
        """(record id, text, metadata) of the rows whose ``embeddings.id`` the query ``ids_sql`` selects."""
        rows = self._db.execute(
            f"SELECT e.id, e.embedding_id, m.key, {_VALUE} FROM embeddings e JOIN embedding_metadata m ON m.id = e.id "
            f"WHERE e.segment_id = ? AND e.id IN ({ids_sql})", (self._segment, *args)).fetchall()
        found: dict[int, tuple[str, dict]] = {}
        for rid, name, key, value in rows:
            found.setdefault(rid, (name, {}))[1][key] = value
        return [(name, meta.pop("chroma:document", ""), meta) for name, meta in found.values()]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM embeddings WHERE segment_id = ?", (self._segment,)).fetchone()[0]

    def rows(self) -> list[tuple[str, str, dict]]:
        return sorted(self._records("SELECT id FROM embeddings", ()), key=lambda r: r[0])

    def generations(self) -> set[tuple[int, int]]:
        got = self._db.execute(
            "SELECT s.int_value, g.int_value FROM embeddings e "
            "JOIN embedding_metadata s ON s.id = e.id AND s.key = 'serial' "
            "JOIN embedding_metadata g ON g.id = e.id AND g.key = 'generation' WHERE e.segment_id = ?",
            (self._segment,)).fetchall()
        return {(int(s), int(g)) for s, g in got}

    def load(self, serial: int, generation: int, with_embeddings: bool = False) -> tuple[list[Chunk], np.ndarray | None]:
        if with_embeddings:
            chunks, vecs = self._vectors().load(serial, generation, with_embeddings=True)
            if len(chunks) != self._count(serial, generation):  # written since the copy was made: copy again
                self._drop_copy()
                chunks, vecs = self._vectors().load(serial, generation, with_embeddings=True)
            return chunks, vecs
        got = self._records(_OF_GENERATION, (serial, generation))
        return sorted((_chunk(text, m) for _, text, m in got), key=lambda c: c.position), None

    def _count(self, serial: int, generation: int) -> int:
        return self._db.execute(f"SELECT COUNT(*) FROM embeddings WHERE segment_id = ? AND id IN ({_OF_GENERATION})",
                                (self._segment, serial, generation)).fetchone()[0]

    def get_chunks(self, keys: list[tuple[int, int, int]]) -> dict[tuple[int, int, int], Chunk]:
        if not keys:
            return {}
        names = [record_id(s, p, g) for s, p, g in keys]
        got = []
        for i in range(0, len(names), 500):  # sqlite's limit on bound parameters
            part = names[i:i + 500]
            got += self._records(f"SELECT id FROM embeddings WHERE embedding_id IN ({','.join('?' * len(part))})",
                                 tuple(part))
        return {(int(m["serial"]), int(m["position"]), int(m["generation"])): _chunk(text, m) for _, text, m in got}

    def _vectors(self) -> ChunkStore:
        """Chroma opened on a private copy of the chroma folder (made on first need; removed by :meth:`close`, or
        when the process ends)."""
        if self._copy is None:
            tmp = Path(tempfile.mkdtemp(prefix="thread-rag-readonly-"))
            gone = weakref.finalize(self, shutil.rmtree, tmp, True)
            try:
                shutil.copytree(self.path, tmp / "chroma", ignore=shutil.ignore_patterns("chroma.sqlite3*"))
                with sqlite3.connect(tmp / "chroma" / "chroma.sqlite3") as into:
                    self._db.backup(into)  # a consistent snapshot, whatever a writer elsewhere is doing
                into.close()
                self._copy = (gone, ChunkStore(tmp / "chroma"))
            except BaseException:
                gone()
                raise
        return self._copy[1]

    def _drop_copy(self) -> None:
        copy, self._copy = self._copy, None
        if copy is not None:
            copy[1].close()
            copy[0]()
