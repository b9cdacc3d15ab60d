"""The catalog of a library shared on a Chroma server: its change log lives on the server, so every data dir
(machine, user) that joins the library sees the same documents under the same ids.

The log is a server collection ``thread_rag_<library id>_catalog`` with one record per change, id ``v<version>``
(12 digits), the change as JSON in the record's document and the version in its metadata. A change is appended
by *adding* the next version's record and reading it back: Chroma keeps the first record added under an id and
ignores later adds of that id, so of several writers adding the same version exactly one finds its own change
there (its nonce); the others read the log again and retry on the new state. So changes from all machines form
one ordered log, and what a change claims (a serial, a generation) is claimed once:

* a new document's serial is claimed by a ``serial`` change before its chunks are written;
* a re-index claims its generation by a ``reserve`` change, so two machines re-indexing one document write
  different generations, and the newer commit wins (a commit never moves a document back);
* recovery leaves another machine's reserved, uncommitted generations alone for ``IN_FLIGHT_HOURS``.

Readers fetch only the changes after the version they hold (one request). The local write lock still orders
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

IN_FLIGHT_HOURS = 24.0
_RETRIES = 200


def _vid(version: int) -> str:
    return f"v{version:012d}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ServerCatalog(Catalog):
    def __init__(self, path: Path, collection):
        self.collection = collection
        self.nonce_prefix = uuid.uuid4().hex[:8]
        super().__init__(path)

    # -- persistence: the server's log ---------------------------------------------------------
    def stamp(self):
        return self.version

    def reload(self) -> bool:
        """Apply the changes after the version held, in order; True when there were any."""
        got = self.collection.get(where={"v": {"$gt": self.version}}, include=["documents", "metadatas"])
        ops = sorted(((int(m["v"]), doc) for m, doc in zip(got["metadatas"] or [], got["documents"] or [])))
        before = self.version
        for v, doc in ops:
            if v != self.version + 1:
                break  # not visible yet: the next reload reads on from here
            try:
                op = json.loads(doc)
                _apply(self._data, op)
            except (ValueError, KeyError, TypeError) as exc:
                raise CorruptFileError(f"the catalog log on the server ({self.collection.name}, version {v}) is "
                                       f"corrupt ({type(exc).__name__})") from None
        return self.version != before

    def _append(self, make_op: Callable[[], dict]) -> dict:
        """Append the change ``make_op`` builds from the current state; built again on the newer state when
        another writer took the version first. Returns the change as it was logged."""
        for _ in range(_RETRIES):
            self.reload()
            op = make_op()
            op["v"] = self.version + 1
            op["nonce"] = f"{self.nonce_prefix}-{uuid.uuid4().hex[:12]}"
            body = json.dumps(op, ensure_ascii=False)
            self.collection.add(ids=[_vid(op["v"])], documents=[body], metadatas=[{"v": op["v"]}],
                                embeddings=[[0.0]])
            got = self.collection.get(ids=[_vid(op["v"])], include=["documents"])
            if got["documents"] and json.loads(got["documents"][0]).get("nonce") == op["nonce"]:
                self.reload()  # applies it (and keeps versions contiguous)
                return op
            time.sleep(0.005)
        raise ThreadRagError(f"the catalog on the server ({self.collection.name}) changed on every try; "
                             f"too many writers at once? try again")

    # -- changes -------------------------------------------------------------------------------
    def import_local(self, data: dict) -> None:
        """Start the server's log with a data dir's own catalog (the first time it joins with documents)."""
        self._append(lambda: {"op": "import", "data": data})

    def allocate_serial(self) -> int:
        """A new document's serial, claimed with its first generation (a ``reserve``: recovery on another
        machine leaves the rows it is about to write alone)."""
        op = self._append(lambda: {"op": "reserve", "serial": self.next_serial, "generation": 1, "t": _now()})
        return int(op["serial"])

    def next_generation(self, serial: int) -> int:
        def reserve() -> dict:
            committed = int(self._data["documents"].get(str(serial), {}).get("generation", 0))
            reserved = max(map(int, self._data.get("reserved", {}).get(str(serial), {})), default=0)
            return {"op": "reserve", "serial": serial, "generation": max(committed, reserved) + 1, "t": _now()}

        return int(self._append(reserve)["generation"])

    def commit(self, record) -> None:
        self._append(lambda: {"op": "commit", "record": record.__dict__.copy()})

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
