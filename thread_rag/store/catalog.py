"""The catalog: which documents exist, under which serial and which committed generation.

A snapshot (``catalog.json``, written atomically) and a log beside it (``catalog.log``, one JSON line per
change, appended and fsynced): a commit costs one short line, not a rewrite of every record, so indexing a
folder of N files writes O(N) bytes, not O(N^2). The log is folded into a new snapshot every
``COMPACT_LINES`` changes. Each line carries the catalog version it makes; a line at or below the snapshot's
version is already in it, so a writer killed between writing a snapshot and emptying the log loses or
doubles nothing, and a torn last line (a writer killed mid-append) was never committed: readers skip it, the
next writer cuts it off. Appending the line is the commit point of indexing: chunks, vectors and token-cache
files of a (serial, generation) that the catalog does not name are invisible to readers and removed by
recovery. Serial numbers come from a counter that only grows, so a deleted document's id is never reused.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path

from ..atomic import atomic_write_bytes, atomic_write_json, read_json, set_aside
from ..errors import CorruptFileError, MissingDocumentError
from ..ids import format_doc_id, parse_doc_id
from ..records import DocumentRecord

COMPACT_LINES = 1000


def _read_snapshot(path: Path) -> dict | None:
    """The catalog snapshot, None when there is none; a torn one is set aside and named with the way out."""
    try:
        return read_json(path, default=None)
    except CorruptFileError as exc:
        raise CorruptFileError(f"{exc}; run `thread-rag doctor --repair` (it rebuilds the catalog from catalog.log "
                               f"when the log holds its whole history)") from None


def _fresh() -> dict:
    return {"format": 1, "next_serial": 1, "version": 0, "documents": {}}


def _apply(data: dict, op: dict) -> None:
    """One change. A commit never moves a document back to an older generation (on a shared server library
    another machine may have committed a newer one meanwhile: the older commit is then a no-op); a reservation
    (``reserve``: a generation claimed before its chunks are written, server libraries only) makes the next
    generation of that document come after it."""
    kind = op["op"]
    if kind == "commit":
        key, rec = str(op["record"]["serial"]), op["record"]
        now = data["documents"].get(key)
        if op.get("if_current") and (now is None or int(now["generation"]) != int(rec["generation"])):
            pass  # a change to the record of a generation that is no longer the committed one: dropped
        elif int(rec["generation"]) >= int((now or {}).get("generation", 0)):
            data["documents"][key] = rec
            _raise_high(data, key, rec["generation"])
            held = data.get("reserved", {}).get(key)
            if held:  # reservations up to the committed generation are done
                data["reserved"][key] = {g: t for g, t in held.items() if int(g) > int(rec["generation"])}
    elif kind == "remove":
        data["documents"].pop(str(op["serial"]), None)  # its highest generation stays: never handed out again
    elif kind == "serial":
        data["next_serial"] = max(int(data["next_serial"]), int(op["next"]))
    elif kind == "reserve":  # {serial: {generation: when}}
        data.setdefault("reserved", {}).setdefault(str(op["serial"]), {})[str(op["generation"])] = op.get("t", "")
        _raise_high(data, str(op["serial"]), op["generation"])
        data["next_serial"] = max(int(data["next_serial"]), int(op["serial"]) + 1)
    elif kind == "import":  # a server library's first change: the data dir's catalog as it was
        docs = {k: {**v, "origin": v.get("origin") or op.get("origin", "")} for k, v in op["data"]["documents"].items()}
        data["documents"].update(docs)
        data["next_serial"] = max(int(data["next_serial"]), int(op["data"].get("next_serial", 1)))
        for key, rec in docs.items():
            _raise_high(data, key, rec["generation"])
        data["imported_by"] = op.get("origin", "")
    else:
        raise ValueError(f"unknown catalog change {kind!r}")
    data["version"] = int(op["v"])


def _raise_high(data: dict, serial: str, generation) -> None:
    """The highest generation a document ever had or claimed; survives its removal."""
    high = data.setdefault("high", {})
    high[serial] = max(int(generation), int(high.get(serial, 0)))


def read_log(path: Path, data: dict, offset: int = 0) -> tuple[int, int]:
    """Apply the complete lines of the log from ``offset`` that are newer than ``data``; returns (the offset
    after the last complete line, lines read). A torn last line (no newline yet) is left for later."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            raw = fh.read()
    except FileNotFoundError:
        return offset, 0
    done = raw.rfind(b"\n") + 1
    lines = raw[:done].splitlines()
    for i, line in enumerate(lines):
        try:
            op = json.loads(line)
            if int(op["v"]) > int(data.get("version", 0)):
                _apply(data, op)
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptFileError(f"{path}: line {i + 1} after byte {offset} is corrupt ({exc.__class__.__name__}); "
                                   f"run `thread-rag doctor --repair` (it drops the line and keeps a copy of the log), "
                                   f"or restore the data dir from a backup") from None
    return offset + done, len(lines)


def _complete_lines(raw: bytes) -> list[bytes]:
    """The log's lines up to its last newline (a torn last line stays for the next writer to cut)."""
    return raw[: raw.rfind(b"\n") + 1].splitlines()


def _past_every_serial(data: dict) -> None:
    """The next serial past every serial the catalog names or ever named (none is handed out twice)."""
    named = [int(k) for k in data["documents"]] + [int(k) for k in data.get("high", {})]
    data["next_serial"] = max([int(data["next_serial"]), *(n + 1 for n in named)])


def kept_logs(home: Path) -> list[Path]:
    """The damaged catalog logs ``mend_log`` set aside in ``home``, oldest first. While one is kept, a line it
    dropped may have committed or removed what the catalog no longer says: repairs keep what no record names and
    do not index lost documents again."""
    return sorted(home.glob("catalog.log.corrupt-*"))


def mend_log(path: Path) -> list[str]:
    """``doctor --repair`` for a log with lines that do not read (a disk error; a torn last line is not one): every
    line that still reads is folded into a new snapshot, the damaged log is kept beside it as
    ``catalog.log.corrupt-<time>-<pid>`` and the log starts again. The next serial goes past every serial the
    catalog names or named and the version past every version the log wrote, so neither is handed out twice.
    Nothing on disk is taken for committed: if a dropped line committed a generation whose files are there, the
    library is still refused as older than its store afterwards (nothing is deleted). Without a snapshot nothing is
    done (a log is never read without one). The caller holds the write lock. One note per dropped line ([] when
    the log reads)."""
    path = Path(path)
    log = path.with_name("catalog.log")
    try:
        raw = log.read_bytes()
    except FileNotFoundError:
        return []
    data = read_json(path, default=None)  # the repair's own read: no advice to run the repair
    if data is None:
        return []
    notes = []
    for i, line in enumerate(_complete_lines(raw)):
        try:
            op = json.loads(line)
            if int(op["v"]) > int(data.get("version", 0)):
                _apply_checked(data, op)
        except (ValueError, KeyError, TypeError) as exc:
            notes.append(f"{log.name}: line {i + 1} did not read ({exc.__class__.__name__}) and was dropped; what it "
                         f"changed is lost: a document it committed or re-indexed may be missing or older (if the "
                         f"library is then refused as older than its store, move the data dir away and index again), "
                         f"and one it deleted may be listed again")
    if not notes:
        return []
    _past_every_serial(data)
    seen = [int(v) for v in re.findall(rb'"v": ?(\d+)', raw)]  # damaged lines' versions too: none is used again
    data["version"] = max([int(data.get("version", 0)), *seen])
    aside = log.with_name(f"{log.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    atomic_write_bytes(aside, raw)
    atomic_write_json(path, data)          # every line that read is in the snapshot now ...
    atomic_write_bytes(log, b"")           # ... so the log starts again
    return notes + [f"{log.name}: the damaged log is kept as {aside.name}"]


FORMAT = 1  # the snapshot format this version writes; a higher one is a newer thread-rag's, never set aside


def checked_snapshot(data, path: Path) -> dict:
    """``data`` read from a snapshot, or CorruptFileError when it is JSON of another shape (the fields every reader
    and writer relies on: documents an object of records, the counters integers) or a newer thread-rag's format."""
    try:
        if not isinstance(data, dict) or not isinstance(data["documents"], dict):
            raise TypeError("documents")
        if int(data.get("format", 1)) > FORMAT:
            raise CorruptFileError(f"{path}: written by a newer thread-rag (format {data['format']}); use that "
                                   f"version with this data dir")
        int(data["next_serial"]), int(data.get("version", 0))
        for rec in data["documents"].values():
            int(rec["serial"]), int(rec["generation"]), int(rec["chunk_count"])
        return data
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise CorruptFileError(f"{path}: not a catalog ({exc.__class__.__name__}: {str(exc)[:60]}); run `thread-rag "
                               f"doctor --repair` (it rebuilds the catalog from catalog.log if the log holds its "
                               f"whole history), or restore a good catalog.json") from None


def rebuild_from_log(path: Path) -> list[str]:
    """``doctor --repair`` for a missing or unreadable snapshot (``catalog.json``) whose log still holds the
    catalog's whole history: its lines start at version 2 (the first change writes the snapshot, and a compaction
    would have emptied the log since) and follow each other without a gap, every one readable. Then the damaged
    snapshot is set aside and a new one folded from them, the next serial raised past every serial they name.
    Otherwise nothing is changed and the note says why (restore a backup). The caller holds the write lock. One
    note, or [] when the snapshot reads (or there is no catalog at all)."""
    path = Path(path)
    log = path.with_name("catalog.log")
    if path.exists():
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            data = None
        try:
            checked_snapshot(data, path)
            return []
        except CorruptFileError as exc:
            if "newer thread-rag" in str(exc):
                return [str(exc)]
    elif not log.exists():
        return []
    try:
        raw = log.read_bytes()
        ops = [json.loads(line) for line in _complete_lines(raw)]
        if not ops or [int(op["v"]) for op in ops] != list(range(2, len(ops) + 2)):
            return [f"{path.name} is missing or unreadable, and {log.name} does not hold the catalog's whole history "
                    f"(its versions {'start at ' + str(ops[0].get('v')) if ops else 'are none'}, not 2, 3, ...): "
                    f"restore a good {path.name}, or move the data dir away and index again"]
        data = _fresh()
        data["version"], data["next_serial"] = 1, 2  # the first change: DOC1's serial, written to the first snapshot
        for op in ops:
            _apply_checked(data, op)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return [f"{path.name} is missing or unreadable, and {log.name} cannot rebuild it ({exc.__class__.__name__}): "
                f"restore a good {path.name}, or move the data dir away and index again"]
    _past_every_serial(data)
    if path.exists():
        set_aside(path)
    atomic_write_json(path, data)
    return [f"{path.name} was missing or unreadable: rebuilt from {log.name}, which holds its whole history "
            f"({len(data['documents'])} documents)"]


def _apply_checked(data: dict, op: dict) -> None:
    """``_apply`` for a line that may be damaged yet parse: checked whole first, so it applies whole or not at all."""
    kind = op.get("op")
    if kind == "commit":
        DocumentRecord.from_dict(op["record"])  # a record every reader can read
        int(op["record"]["serial"]), int(op["record"]["generation"])
    elif kind == "remove":
        int(op["serial"])
    elif kind == "serial":
        int(op["next"])
    elif kind in ("reserve", "import"):  # rare and many-fielded: tried on a copy
        trial = json.loads(json.dumps(data))
        _apply(trial, op)
    _apply(data, op)


class Catalog:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.log_path = self.path.with_name("catalog.log")
        self._data = _fresh()
        self._stamp: tuple | None = None
        self._offset = 0      # bytes of the log already applied
        self._lines = 0       # lines in the log (compaction counts them)
        self.reload()

    # -- persistence -----------------------------------------------------------------------
    def stamp(self) -> tuple | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        try:
            lg = os.stat(self.log_path)
            log = (lg.st_ino, lg.st_size)
        except FileNotFoundError:
            log = (None, 0)
        return (st.st_mtime_ns, st.st_size, st.st_ino) + log

    def reload(self) -> bool:
        """Read what other processes changed (only the new log lines when the snapshot is the same);
        True when something changed."""
        for _ in range(5):
            stamp = self.stamp()
            if stamp == self._stamp and stamp is not None:
                return False
            if stamp is None:  # no snapshot (a new library, or one set aside): what was read stays; a log
                self._stamp, self._offset, self._lines = None, 0, 0  # without its snapshot is not read
                return True
            if self._stamp is not None and stamp[:4] == self._stamp[:4]:  # same snapshot, same log file: new lines
                self._offset, n = read_log(self.log_path, self._data, self._offset)
                self._lines += n
            else:
                data = _read_snapshot(self.path)
                data = _fresh() if data is None else checked_snapshot(data, self.path)
                self._offset, self._lines = read_log(self.log_path, data)
                self._data = data
            if (self.stamp() or ())[:4] == stamp[:4]:  # no compaction replaced the files while they were read
                self._stamp = stamp
                return True
        raise CorruptFileError(f"{self.path}: changed on every read; is another process rewriting it in a loop?")

    def _change(self, op: dict) -> None:
        """Record one change (the caller holds the store's write lock and has applied it to ``_data``); when it
        cannot be written (a full disk), what is in memory is read again from disk before the error goes on: a
        change that is not on disk must not look committed to this process (its recovery would act on it)."""
        try:
            self._write(op)
        except BaseException:
            self._stamp = None  # the next reload reads everything from disk (also if this one fails)
            with contextlib.suppress(Exception):
                self.reload()
            raise

    def _write(self, op: dict) -> None:
        if not self.path.exists() and self.log_path.exists() and self.log_path.stat().st_size:
            # the snapshot went away under this process (damaged and set aside): writing one from memory would
            # empty a log that holds other processes' changes, and the repair's material with it
            raise CorruptFileError(f"{self.path} is missing but {self.log_path.name} holds changes; run "
                                   f"`thread-rag doctor --repair`")
        op["v"] = int(self._data.get("version", 0)) + 1
        self._data["version"] = op["v"]
        if not self.path.exists() or self._lines >= COMPACT_LINES:
            atomic_write_json(self.path, self._data)        # the snapshot holds every change so far ...
            atomic_write_bytes(self.log_path, b"")          # ... so the log starts again (its lines are <= it)
            self._offset = self._lines = 0
        else:
            line = (json.dumps(op, ensure_ascii=False) + "\n").encode("utf-8")
            with open(self.log_path, "ab+") as fh:
                self._cut_torn_tail(fh)
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())  # <- the commit point
                self._offset = fh.tell()
            self._lines += 1
        self._stamp = self.stamp()

    @staticmethod
    def _cut_torn_tail(fh) -> None:
        """A writer killed mid-append left a line without its newline: it never committed; cut it off."""
        end = fh.seek(0, os.SEEK_END)
        start, step = end, 65536
        while start > 0:  # back from the end until the last newline (a torn line can be longer than a step)
            start = max(0, start - step)
            fh.seek(start)
            tail = fh.read(end - start)
            if tail.endswith(b"\n"):
                return
            cut = tail.rfind(b"\n")
            if cut >= 0:
                fh.truncate(start + cut + 1)
                return
            step *= 2
        fh.truncate(0)  # not one complete line: nothing in it was committed

    @property
    def next_serial(self) -> int:
        """The serial the next new document gets."""
        return int(self._data["next_serial"])

    @property
    def version(self) -> int:
        return int(self._data.get("version", 0))

    # -- queries ---------------------------------------------------------------------------
    def documents(self) -> list[DocumentRecord]:
        docs = [DocumentRecord.from_dict(d) for d in self._data["documents"].values()]
        return sorted(docs, key=lambda d: d.serial)

    def get(self, doc: str | int) -> DocumentRecord:
        serial = doc if isinstance(doc, int) else parse_doc_id(doc)
        rec = self._data["documents"].get(str(serial))
        if rec is None:
            known = ", ".join(d.doc_id for d in self.documents())
            raise MissingDocumentError(f"unknown document {format_doc_id(serial)} "
                                       f"({'known: ' + known if known else 'the library holds no documents'})")
        return DocumentRecord.from_dict(rec)

    def find_by_path(self, path: str) -> DocumentRecord | None:
        """This data dir's document indexed from ``path`` (paths are this machine's)."""
        return self._find_own("path", path)

    def find_by_hash(self, content_hash: str) -> DocumentRecord | None:
        """This data dir's document with these bytes (another data dir's copy of a file is its own document)."""
        return self._find_own("content_hash", content_hash)

    def _find_own(self, field: str, value: str) -> DocumentRecord | None:
        for d in self._data["documents"].values():
            if d[field] == value and d.get("origin", "") == self.origin:
                return DocumentRecord.from_dict(d)
        return None

    def committed(self) -> list[tuple[int, int]]:
        """(serial, generation) of every committed document, by serial."""
        return sorted((int(k), int(v["generation"])) for k, v in self._data["documents"].items())

    def committed_keys(self) -> list[tuple[int, int, str]]:
        """(serial, generation, content key) of every committed document, by serial ("" before content keys)."""
        return sorted((int(k), int(v["generation"]), str(v.get("content_key", "")))
                      for k, v in self._data["documents"].items())

    origin = ""  # this data dir's documents in a shared library; a local catalog has no others

    def own(self, rec: DocumentRecord) -> bool:
        """Whether this data dir indexed ``rec`` (every document of a local catalog)."""
        return rec.origin == self.origin

    def next_generation(self, serial: int) -> int:
        """The generation a re-index of ``serial`` writes (the caller holds the write lock; on a shared server
        library it is also reserved there first, so no other machine writes the same one)."""
        self.get(serial)  # an unknown document is one clear error
        return self._generation_after(serial)

    def _generation_after(self, serial: int) -> int:
        """One past the highest generation ``serial`` ever had or claimed (its removal does not lower it)."""
        committed = int(self._data["documents"].get(str(serial), {}).get("generation", 0))
        return max(committed, int(self._data.get("high", {}).get(str(serial), 0))) + 1

    def in_flight(self) -> set[tuple[int, int]]:
        """(serial, generation)s another machine reserved and has not committed yet (server libraries)."""
        return set()

    # -- changes (caller holds the store's write lock) ---------------------------------------
    def allocate_serial(self) -> int:
        serial = int(self._data["next_serial"])
        self._data["next_serial"] = serial + 1
        self._change({"op": "serial", "next": serial + 1})  # persisted before use: a crash can waste a serial, never reuse one
        return serial

    def commit(self, record: DocumentRecord, if_current: bool = False) -> None:
        """Commit ``record``; with ``if_current`` only while its generation is still the committed one (a change
        to a committed record, e.g. its content key, that must not bring back a removed or replaced one)."""
        rec = record.__dict__.copy()
        op = {"op": "commit", "record": rec, "if_current": if_current}
        _apply(self._data, {**op, "v": self.version})
        self._change(op)

    def remove(self, serial: int) -> None:
        self._data["documents"].pop(str(serial), None)
        self._change({"op": "remove", "serial": serial})

    @staticmethod
    def now() -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S%z")
