"""The summary cache: one JSON file per document under ``CACHE_PATH`` (``doc_cache/``).

An entry's key is ``sha256(summarizer id + chunk text)``, so a changed chunk or a changed
summarizer can never be served a stale summary. Writes merge with what is on disk under a file
lock and replace the file atomically, so two processes pre-heating the same document lose
nothing. A corrupt file is moved aside (``*.corrupt-*``) and reported, never silently emptied. A read-only library's
new summaries are kept in memory for the process (``remember``).
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

from ..atomic import atomic_write_json, file_lock, read_json
from ..errors import CorruptFileError
from ..lru import LRU


def _entries(items: list[tuple[str, str, str, str]]) -> dict:
    now = time.strftime("%Y-%m-%dT%H:%M:%S")
    return {entry_key(sid, text): {"summary": summary, "summarizer": sid, "chunk": cid, "at": now}
            for sid, text, cid, summary in items}


def entry_key(summarizer_id: str, text: str) -> str:
    return hashlib.sha256(f"{summarizer_id}\n{text}".encode("utf-8")).hexdigest()[:32]


class SummaryCache:
    def __init__(self, root: Path, max_documents: int = 64):
        self.root = Path(root)
        self._mem: LRU[str, tuple[int, dict]] = LRU(max_documents)  # (file mtime, entries) of recent documents
        self.warnings: list[str] = []

    def path_for(self, content_hash: str) -> Path:
        return self.root / f"summaries-{content_hash[:24]}.json"

    def _read(self, content_hash: str) -> dict:
        path = self.path_for(content_hash)
        try:
            data = read_json(path, default={"entries": {}})
        except CorruptFileError as exc:
            self.warnings.append(str(exc))
            data = {"entries": {}}
        if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
            self.warnings.append(f"{path}: unexpected layout; ignored")
            data = {"entries": {}}
        return data["entries"]

    def entries(self, content_hash: str) -> dict:
        path = self.path_for(content_hash)
        try:
            mtime = path.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = -1
        held = self._mem.get(content_hash)
        if held is None or held[0] != mtime:
            held = self._mem[content_hash] = (mtime, self._read(content_hash))
        return held[1]

    def get(self, content_hash: str, summarizer_id: str, text: str) -> str | None:
        e = self.entries(content_hash).get(entry_key(summarizer_id, text))
        return e["summary"] if e else None

    def put_many(self, content_hash: str, items: list[tuple[str, str, str, str]]) -> None:
        """Merge ``(summarizer_id, text, chunk_id, summary)`` items into the file (locked, atomic)."""
        if not items:
            return
        path = self.path_for(content_hash)
        with file_lock(path.with_name(path.name + ".lock")):
            current = self._read(content_hash)
            current.update(_entries(items))
            atomic_write_json(path, {"format": 1, "entries": current}, indent=None)
        self._mem.pop(content_hash, None)

    def remember(self, content_hash: str, items: list[tuple[str, str, str, str]]) -> None:
        """``put_many`` in memory only, for this process (a read-only library's summaries)."""
        self.entries(content_hash).update(_entries(items))

    def forget(self, content_hash: str) -> None:
        self.path_for(content_hash).unlink(missing_ok=True)
        self._mem.pop(content_hash, None)
