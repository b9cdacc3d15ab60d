"""The catalog of a library shared on a Chroma server: its change log lives on the server, so every data dir
(machine, user) that joins the library sees the same documents under the same ids.

The log is a server collection ``thread_rag_<library id>_catalog`` with one record per change, id ``v<version>``
(12 digits), the change as JSON in the record's document and the version in its metadata. A change is appended
by *adding* the next version's record and reading it back: Chroma keeps the first record added under an id and
ignores later adds of that id, so of several writers adding the same version exactly one finds its own change
there (its nonce); the others read the log again and retry on the new state. So changes from all machines form
one ordered log, and what a change claims (a serial, a generation) is claimed once:

* a new document's serial (with its generation 1) and a re-index's generation are claimed by a ``reserve``
  change before any chunk is written, above the highest generation the document ever had (which outlives its
  removal), so no two writers ever write the same (serial, generation);
* of two re-indexes of one document, the higher generation stays, whatever order they commit in (a commit never
  moves a document back); a change to a committed record (its content key) applies only while that generation
  is still the committed one;
* documents are this data dir's by ``origin``: paths are looked up among its own documents only (another
  machine's ``/docs/a.md`` is another file);
* recovery leaves another machine's reserved, uncommitted generations alone for ``IN_FLIGHT_HOURS``.

Readers fetch only the changes after the version they hold (one request). A process that starts reads the
newest *snapshot* first (record ``snapshot``: the folded state at some version, rewritten by whichever writer
reaches a multiple of ``SNAPSHOT_EVERY`` changes) and then only the changes after it; no change is ever
deleted, so a snapshot overwritten by an older one only means a longer replay, never a wrong catalog. The local write lock still orders
this data dir's own writers and its local files (token cache, index parts, trees), which each machine derives
for itself from the stored chunks.
"""
from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ..errors import CorruptFileError, ThreadRagError
from .catalog import Catalog, _apply

KNOWN = {"commit", "remove", "serial", "reserve", "import"}  # a change of another kind (a newer client's) is skipped

IN_FLIGHT_HOURS = 24.0
SNAPSHOT_EVERY = 200  # changes between snapshots (a new process replays at most about this many)
_RETRIES = 200


def _vid(version: int) -> str:
    return f"v{version:012d}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ServerCatalog(Catalog):
    """``collection``: a provider of the server collection (called again after :meth:`release`); ``origin``:
    this data dir's id, recorded in the documents it indexes."""

    def __init__(self, path: Path, collection: Callable, origin: str):
        self._provider, self._collection = collection, None
        self.origin = origin
        self.nonce_prefix = uuid.uuid4().hex[:8]
        self._won: dict[int, str] = {}  # versions this process appended -> its nonce there (checked on each append)
        self._checked = False
        super().__init__(path)  # reads the snapshot, then the changes after it

    @property
    def collection(self):
        if self._collection is None:
            self._collection = self._provider()
            if not self._checked:
                self._check_first_add_wins(self._collection)
                self._checked = True
        return self._collection

    @staticmethod
    def _check_first_add_wins(col) -> None:
        """The log's ordering rests on the server keeping the first record added under an id: checked once per
        process with a record of its own (added twice, read back, removed). A server that overwrites is refused."""
        probe = f"probe-{uuid.uuid4().hex}"
        try:
            col.add(ids=[probe], documents=["first"], metadatas=[{"probe": 1}], embeddings=[[0.0]])
            col.add(ids=[probe], documents=["second"], metadatas=[{"probe": 1}], embeddings=[[0.0]])
            got = col.get(ids=[probe], include=["documents"])
        finally:
            col.delete(ids=[probe])
        if (got.get("documents") or [None])[0] != "first":
            raise ThreadRagError(f"the Chroma server behind {getattr(col, 'name', 'this library')} replaces a record "
                                 f"added twice under one id; the shared catalog needs the first add to stay (it is "
                                 f"how writers take turns), so this library is not opened: use the chromadb server "
                                 f"version requirements.txt pins")

    def _verify_won(self) -> None:
        """Each change this process appended (the last 50) still holds its nonce: another writer that replaced one
        is named, not merged."""
        recent = sorted(self._won)[-50:]
        if not recent:
            return
        got = self.collection.get(ids=[_vid(v) for v in recent], include=["documents"])
        held = {i: d for i, d in zip(got.get("ids") or [], got.get("documents") or [])}
        for v in recent:
            body = held.get(_vid(v), "")
            if self._won[v] not in body:
                try:
                    other = json.loads(body).get("nonce", "?")
                except (ValueError, AttributeError):
                    other = "?"
                raise CorruptFileError(f"change {v} of the catalog on the server ({self.collection.name}) was "
                                       f"replaced by another writer's (nonce {other}; this one wrote "
                                       f"{self._won[v]}): two writers overwrote each other; stop every writer and "
                                       f"run `thread-rag doctor` on each data dir")

    def release(self) -> None:
        """Forget the collection (its client was closed); the next read asks the provider again."""
        self._collection = None

    # -- persistence: the server's log ---------------------------------------------------------
    def reload(self) -> bool:
        """Apply the changes after the version held, in order; True when there were any."""
        before = self.version
        if before == 0:
            self._load_snapshot()
        got = self.collection.get(where={"v": {"$gt": self.version}}, include=["documents", "metadatas"])
        try:
            ops = sorted(((int(m["v"]), doc) for m, doc in zip(got["metadatas"] or [], got["documents"] or [])))
            for v, doc in ops:
                if v != self.version + 1:
                    break  # not visible yet: the next reload reads on from here
                op = json.loads(doc)
                if op.get("op") in KNOWN:
                    _apply(self._data, op)
                else:
                    self._data["version"] = v
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptFileError(f"the catalog log on the server ({self.collection.name}, after version "
                                   f"{self.version}) is corrupt ({type(exc).__name__})") from None
        return self.version != before

    def _append(self, make_op: Callable[[], dict]) -> dict:
        """Append the change ``make_op`` builds from the current state; built again on the newer state when
        another writer took the version first. Returns the change as it was logged."""
        self._verify_won()
        for _ in range(_RETRIES):
            self.reload()
            op = make_op()
            op["v"] = self.version + 1
            op["nonce"] = f"{self.nonce_prefix}-{uuid.uuid4().hex[:12]}"
            body = json.dumps(op, ensure_ascii=False)
            self.collection.add(ids=[_vid(op["v"])], documents=[body], metadatas=[{"v": op["v"]}],
                                embeddings=[[0.0]])
            got = self.collection.get(ids=[_vid(op["v"])], include=["documents"])
            if got["documents"] and op["nonce"] in got["documents"][0]:  # the winner's JSON holds its nonce
                self._won[op["v"]] = op["nonce"]
                self.reload()  # applies it (and keeps versions contiguous)
                if op["v"] % SNAPSHOT_EVERY == 0 and self.version >= op["v"]:
                    self._save_snapshot()
                return op
            time.sleep(0.005)
        raise ThreadRagError(f"the catalog on the server ({self.collection.name}) changed on every try; "
                             f"too many writers at once? try again")

    def _load_snapshot(self) -> None:
        got = self.collection.get(ids=["snapshot"], include=["documents"])
        if not got["documents"]:
            return
        try:
            data = json.loads(got["documents"][0])
            int(data["version"]), dict(data["documents"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptFileError(f"the catalog snapshot on the server ({self.collection.name}) is corrupt "
                                   f"({type(exc).__name__})") from None
        self._data = data

    def _save_snapshot(self) -> None:
        """The state as of now, for processes that start later (best effort: the log stays the truth)."""
        self.collection.upsert(ids=["snapshot"], documents=[json.dumps(self._data, ensure_ascii=False)],
                               metadatas=[{"snapshot_of": self.version}], embeddings=[[0.0]])

    # -- changes -------------------------------------------------------------------------------
    def import_local(self, data: dict) -> None:
        """Start the server's log with a data dir's own catalog (the first time it joins with documents); refused
        once the log has begun (another machine joined first)."""
        def make() -> dict:
            if self.version:
                raise CorruptFileError(f"the library on the server ({self.collection.name}) already has a catalog; "
                                       f"use a new --data-dir to join it")
            return {"op": "import", "data": data, "origin": self.origin}

        self._append(make)

    @property
    def imported_by(self) -> str:
        """The data dir whose local catalog began the server's log ("" if none did)."""
        return str(self._data.get("imported_by", ""))

    def allocate_serial(self) -> int:
        """A new document's serial, claimed with its first generation (a ``reserve``: recovery on another
        machine leaves the rows it is about to write alone)."""
        op = self._append(lambda: {"op": "reserve", "serial": self.next_serial, "generation": 1, "t": _now()})
        return int(op["serial"])

    def next_generation(self, serial: int) -> int:
        def reserve() -> dict:
            return {"op": "reserve", "serial": serial, "generation": self._generation_after(serial), "t": _now()}

        return int(self._append(reserve)["generation"])

    def commit(self, record, if_current: bool = False) -> None:
        self._append(lambda: {"op": "commit", "record": record.__dict__.copy(), "if_current": if_current})

    def remove(self, serial: int) -> None:
        self._append(lambda: {"op": "remove", "serial": serial})

    def in_flight(self) -> set[tuple[int, int]]:
        now = datetime.now(timezone.utc)
        out = set()
        for key, held in self._data.get("reserved", {}).items():
            committed = int(self._data["documents"].get(key, {}).get("generation", 0))
            for gen, when in held.items():
                try:
                    age_h = (now - datetime.fromisoformat(when)).total_seconds() / 3600
                except (TypeError, ValueError):
                    age_h = 0.0
                if int(gen) > committed and age_h < IN_FLIGHT_HOURS:
                    out.add((int(key), int(gen)))
        return out
