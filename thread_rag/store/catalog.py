"""The catalog: which documents exist, under which serial and which committed generation.

One JSON file (``catalog.json``) written atomically. It is the commit point of indexing: chunks,
vectors and token-cache files of a (serial, generation) that the catalog does not name are
invisible to readers and are removed by recovery. Serial numbers come from a counter that only
grows, so a deleted document's id is never reused.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from ..atomic import atomic_write_json, read_json
from ..errors import UnknownDocumentError
from ..ids import format_doc_id, parse_doc_id
from ..records import DocumentRecord


class Catalog:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._data = {"format": 1, "next_serial": 1, "version": 0, "documents": {}}
        self._stamp: tuple | None = None
        self.reload()

    # -- persistence -----------------------------------------------------------------------
    def stamp(self) -> tuple | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def reload(self) -> bool:
        """Re-read the file if another process changed it; True when something changed."""
        stamp = self.stamp()
        if stamp == self._stamp and stamp is not None:
            return False
        data = read_json(self.path, default=None)
        if data is not None:
            self._data = data
        self._stamp = stamp
        return True

    def save(self) -> None:
        self._data["version"] = int(self._data.get("version", 0)) + 1
        atomic_write_json(self.path, self._data)
        self._stamp = self.stamp()

    # -- queries ---------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return int(self._data.get("version", 0))

    def documents(self) -> list[DocumentRecord]:
        docs = [DocumentRecord(**d) for d in self._data["documents"].values()]
        return sorted(docs, key=lambda d: d.serial)

    def get(self, doc: str | int) -> DocumentRecord:
        serial = doc if isinstance(doc, int) else parse_doc_id(doc)
        rec = self._data["documents"].get(str(serial))
        if rec is None:
            known = ", ".join(d.doc_id for d in self.documents()) or "none indexed yet"
            raise UnknownDocumentError(f"unknown document {format_doc_id(serial)} (known: {known})")
        return DocumentRecord(**rec)

    def find_by_path(self, path: str) -> DocumentRecord | None:
        for d in self._data["documents"].values():
            if d["path"] == path:
                return DocumentRecord(**d)
        return None

    def find_by_hash(self, content_hash: str) -> DocumentRecord | None:
        for d in self._data["documents"].values():
            if d["content_hash"] == content_hash:
                return DocumentRecord(**d)
        return None

    def committed(self) -> list[tuple[int, int]]:
        """(serial, generation) of every committed document, by serial."""
        return sorted((int(k), int(v["generation"])) for k, v in self._data["documents"].items())

    # -- changes (caller holds the store's write lock) ---------------------------------------
    def allocate_serial(self) -> int:
        serial = int(self._data["next_serial"])
        self._data["next_serial"] = serial + 1
        self.save()  # persisted before use: a crash can waste a serial, never reuse one
        return serial

    def commit(self, record: DocumentRecord) -> None:
        self._data["documents"][str(record.serial)] = record.__dict__.copy()
        self.save()

    def remove(self, serial: int) -> None:
        self._data["documents"].pop(str(serial), None)
        self.save()

    @staticmethod
    def now() -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S%z")
