"""``thread-rag watch DIR...``: keep folders indexed.

New and edited supported files are indexed, deleted ones leave the library; one line per change. Crash-safe
because it only goes through the Engine's own transactional, idempotent paths (``index_file``, ``delete``): a
watcher killed at any point leaves the library as a killed ``thread-rag index`` would, and the catch-up pass of
the next start does what was missed.

Three small parts, two of them pure so they can be tested without a file system watcher:

* :class:`Debouncer` holds raw changes until a path has been quiet for ``quiet`` seconds (a burst of writes
  to one file is one re-index);
* :func:`plan` turns a batch of settled changes into :class:`Action` s (remove / scan / index), deciding by
  what exists now, since a batch is an unordered set;
* :class:`Watcher` applies actions through the Engine and prints the lines; :func:`run_watch` is the loop.
"""
from __future__ import annotations

import json
import math
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from .errors import IngestError, ThreadRagError, UnknownDocumentError, counted, one_line, printable, shown, why_missing
from .ingest.loaders import FOLDER_SUFFIXES

ADDED, MODIFIED, DELETED = 1, 2, 3  # watchfiles.Change values (an IntEnum); plain ints keep plan() import-free

# Editor and download temporaries. Names starting with "." (hidden files, ".#x" Emacs locks, ".x.swp" Vim swap
# files, ".~lock.x#" LibreOffice locks) are ignored by the hidden-name rule, at any depth below a watched folder.
_TEMPORARY = re.compile(r"^~\$|^#.*#$|(~|\.sw[a-p]|\.te?mp|\.part|\.crdownload|\.bak|\.orig)$", re.IGNORECASE)
# (Office's "~$report.docx" owner files and Emacs' "#notes.md#" autosaves; "#1 install.md" and "~draft.md" are files)
PRUNE_MAX = 5  # more missing documents than this at once, and more than half of a watched folder's, are not removed
#                without --prune: an unmounted drive or share looks like a folder whose files were all deleted


def ignored(path: str, roots: Iterable[str]) -> bool:
    """A hidden name (file or folder) below its watched folder, an editor temporary, or outside every root."""
    rel = _relative(path, roots)
    if rel is None:
        return True
    parts = Path(rel).parts
    if not parts:
        return False  # the watched folder itself
    return any(p.startswith(".") for p in parts) or bool(_TEMPORARY.search(parts[-1]))


def supported(path: str) -> bool:
    """A file a watched folder's walk takes (its images are left out, as ``index DIR`` leaves them)."""
    return Path(path).suffix.lower() in FOLDER_SUFFIXES


def _relative(path: str, roots: Iterable[str]) -> str | None:
    for root in roots:
        if _under(path, root):
            return os.path.relpath(path, root)
    return None


def _under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it (plain strings; a key such as ``bench://x`` is under nothing)."""
    try:
        return os.path.commonpath([root, path]) == root
    except ValueError:  # relative and absolute mixed, or different drives
        return False


@dataclass(frozen=True, order=True)
class Action:
    kind: str   # "remove" (path or folder gone) | "forget" (that one document: its path is a folder or a link now)
    #             | "scan" (a folder appeared) | "index" (a file appeared or changed)
    path: str


def plan(changes: Iterable[tuple[int, str]], roots: Iterable[str], library: Iterable[str] = (), *,
         exists: Callable[[str], bool] = os.path.exists, isdir: Callable[[str], bool] = os.path.isdir,
         realpath: Callable[[str], str] = os.path.realpath, islink: Callable[[str], bool] = os.path.islink
         ) -> list[Action]:
    """Actions for a batch of ``(change, path)`` pairs, removals first (a rename is a removal and an addition;
    removing first lets the new name index as itself). A path's changes collapse to one action decided by
    whether it exists now. ``library``: the paths of indexed documents (a gone path is removed only if it is
    one of them or a folder holding some)."""
    roots = list(roots)
    kinds: dict[str, set[int]] = {}
    for change, path in changes:
        kinds.setdefault(path, set()).add(int(change))
    library = list(library)
    removes: list[Action] = []
    scans: list[Action] = []
    indexes: list[Action] = []
    for path, seen in sorted(kinds.items()):
        if ignored(path, roots):
            continue
        if exists(path):
            if isdir(path):
                real = realpath(path)
                if real in library:  # a file replaced by a folder of its name: its document goes (only it)
                    removes.append(Action("forget", real))
                if ADDED in seen:  # a folder created or moved in: its files may have no events of their own
                    scans.append(Action("scan", path))
            elif supported(path):
                if path in library and islink(path):  # a stored file replaced by a link: stored by its own path
                    removes.append(Action("forget", path))
                indexes.append(Action("index", path))
        else:
            real = realpath(path)  # documents are stored under their resolved path
            if any(p == real or _under(p, real) for p in library):
                removes.append(Action("remove", real))
    scanned = [a.path for a in scans]
    indexes = [a for a in indexes if not any(_under(a.path, d) for d in scanned)]
    scans = [a for a in scans if not any(d != a.path and _under(a.path, d) for d in scanned)]
    return removes + scans + indexes


class Debouncer:
    """Raw changes held per path until that path has had no event for ``quiet`` seconds (or waited ``longest``
    seconds in all, so a file written without pause is still indexed now and then). Time comes in as ``now``."""

    def __init__(self, quiet: float = 1.0, longest: float = 30.0):
        self.quiet = quiet
        self.longest = longest
        self._held: dict[str, list] = {}  # path -> [first seen, last seen, {changes}]

    def __len__(self) -> int:
        return len(self._held)

    def add(self, changes: Iterable[tuple[int, str]], now: float) -> None:
        for change, path in changes:
            held = self._held.setdefault(path, [now, now, set()])
            held[1] = now
            held[2].add(int(change))

    def ready(self, now: float) -> set[tuple[int, str]]:
        """Pop and return the changes of every path that has settled."""
        out: set[tuple[int, str]] = set()
        for path, (first, last, kinds) in list(self._held.items()):
            if now - last >= self.quiet or now - first >= self.longest:
                out.update((k, path) for k in kinds)
                del self._held[path]
        return out


def _stamp(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class Watcher:
    """Applies actions through the Engine and prints one line per change (``--json``: one JSON object)."""

    def __init__(self, engine, roots: Iterable[str], *, as_json: bool = False, out=None, err=None,
                 prune: bool = False):
        engine.writable()  # a read-only library is refused once, not file by file
        self.engine = engine
        self.roots = [os.path.realpath(r) for r in roots]
        self.prune = prune  # at start: remove however many documents went missing (an unmount while watching is kept)
        self.as_json = as_json
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.aliases: dict[str, set[str]] = {}  # doc id -> other files with the same bytes (indexed as that doc)
        self.failures: dict[str, tuple] = {}  # path -> (size and mtime, reason) last reported: said once, not again

    # -- output ---------------------------------------------------------------------------------
    def emit(self, event: str, path: str, doc_id: str | None = None, chunks: int | None = None,
             reason: str | None = None, moved_from: str | None = None) -> None:
        if self.as_json:
            rec = {"event": event, "path": printable(path), "doc_id": doc_id, "chunks": chunks, "error": reason,
                   "moved_from": None if moved_from is None else printable(moved_from)}
            print(json.dumps({k: v for k, v in rec.items() if v is not None}, ensure_ascii=False), file=self.out,
                  flush=True)
            return
        path = shown(path)
        if event == "failed":
            line = f"failed {path}: {reason}"
        elif event == "removed":
            line = f"removed {doc_id} {path}"
        elif event == "duplicate":
            line = f"duplicate {doc_id} {path} ({reason})"
        elif event == "moved":
            line = f"moved {doc_id} {path} (from {shown(moved_from)})"
        else:
            line = f"{event} {doc_id} ({counted(chunks, 'chunk')}) {path}"
        print(line, file=self.out, flush=True)

    def note(self, text: str) -> None:
        print(text, file=self.err, flush=True)

    # -- actions --------------------------------------------------------------------------------
    def library(self) -> list[str]:
        return [d.path for d in self.engine.documents()]

    def _record(self, doc_id: str | None):
        return next((d for d in self.engine.documents() if d.doc_id == doc_id), None)

    def files(self, folder: str) -> list[str]:
        return [str(f) for f in self.engine.expand_paths([folder]) if not ignored(str(f), self.roots)]

    def index(self, path: str, quiet_unchanged: bool = True) -> str:
        """Index one file; returns its status (indexed | replaced | unchanged | failed). A link to a file
        outside the watched folders is not followed (the library would keep it under a path no event names)."""
        if not any(_under(os.path.realpath(path), r) for r in self.roots):
            return self.fail(path, "links to a file outside the watched folders (not followed)")
        try:
            res = self.engine.index_file(path)
        except IngestError as exc:  # the line names the file already
            return self.fail(path, exc.reason)
        except Exception as exc:  # noqa: BLE001 - a bad file is one line and the watcher goes on
            return self.fail(path, one_line(exc))
        self.failures.pop(path, None)
        for w in res.warnings:
            self.note(f"warning: {shown(path)}: {w}")
        if res.moved_from:  # its old path is gone: the document follows the file (before the removal's event)
            self.emit("moved", path, doc_id=res.doc_id, moved_from=res.moved_from)
            return "unchanged"
        if res.status == "unchanged":
            rec = self._record(res.doc_id)
            real = os.path.realpath(path)
            if rec is not None and rec.path != real:  # same bytes as another indexed file: kept as that document
                known = self.aliases.setdefault(rec.doc_id, set())
                if real not in known:
                    known.add(real)
                    self.emit("duplicate", path, doc_id=rec.doc_id, reason=f"same content as {shown(rec.path)}")
            return "unchanged"
        self.emit("indexed" if res.status == "indexed" else "updated", path, doc_id=res.doc_id, chunks=res.chunks)
        self._index_copies(res.doc_id)  # they had the bytes this document no longer has
        return res.status

    def fail(self, path: str, reason: str) -> str:
        """One ``failed`` line, said once per state of the file (a catch-up after re-arming does not repeat it)."""
        seen = (_stamp(path), reason)
        if self.failures.get(path) != seen:
            self.failures[path] = seen
            self.emit("failed", path, reason=reason)
        return "failed"

    def _index_copies(self, doc_id: str | None) -> None:
        """The files kept as duplicates of ``doc_id``, indexed as themselves (the document changed or went)."""
        for other in sorted(self.aliases.pop(doc_id, ())):
            if os.path.isfile(other) and not ignored(other, self.roots):
                self.index(other)

    def remove(self, path: str, exact: bool = False) -> int:
        """Remove every document stored under ``path`` (a file, or a folder that was deleted or moved away); with
        ``exact``, only the document stored at ``path`` (a folder or a link is there now: what is inside stays)."""
        removed = 0
        for known in [f for f in self.failures if f == path or (not exact and _under(f, path))]:
            del self.failures[known]  # gone: a file there again is news
        for rec in self.engine.own_documents():
            if rec.path == path or (not exact and _under(rec.path, path)):
                try:
                    self.engine.delete(rec.doc_id)
                except UnknownDocumentError:
                    continue  # another process removed it first
                except Exception as exc:  # noqa: BLE001 - one line; the next start's catch-up removes it
                    self.fail(rec.path, f"not removed: {one_line(exc)}")
                    continue
                removed += 1
                self.emit("removed", rec.path, doc_id=rec.doc_id)
                self._index_copies(rec.doc_id)  # a copy with the same bytes still exists: it becomes its own document
        return removed

    def held_back(self, paths: list[str], prune: bool = False) -> set[str]:
        """Of the documents stored at ``paths`` (files gone, or folders holding them), those a watched folder keeps
        because it looks unmounted, not emptied: its folder is gone or unreadable, two or more went and it holds no
        supported file any more, or more than ``PRUNE_MAX`` and more than half of its documents went at once (one
        warning line per folder). ``prune`` (``--prune``, at start only) removes them all the same."""
        if prune:
            return set()
        own = [rec.path for rec in self.engine.own_documents()]
        kept: set[str] = set()
        for root in self.roots:
            held = [p for p in own if _under(p, root)]
            gone = [p for p in held if any(p == x or _under(p, x) for x in paths)]
            if not gone:
                continue
            if not _readable(root):
                why = "the folder is gone or cannot be read"
            elif len(gone) > 1 and not any(supported(f) for f in self.files(root)):
                why = "it holds no supported file any more"
            elif len(gone) > PRUNE_MAX and 2 * len(gone) > len(held):
                why = f"{len(gone)} of its {counted(len(held), 'document')} went at once"
            else:
                continue
            kept.update(gone)
            self.note(f"warning: {shown(root)}: the files of {counted(len(gone), 'document')} are missing ({why}: an "
                      f"unmounted drive or share?); none removed. `thread-rag watch --prune` removes them, "
                      f"`thread-rag delete DOCn` one at a time")
        return kept

    def apply(self, actions: Iterable[Action]) -> None:
        actions = list(actions)
        kept = self.held_back([a.path for a in actions if a.kind == "remove"])
        for a in actions:
            if a.kind == "remove" and kept:
                for rec in self.engine.own_documents():
                    if (rec.path == a.path or _under(rec.path, a.path)) and rec.path not in kept:
                        self.remove(rec.path, exact=True)
            elif a.kind in ("remove", "forget"):
                self.remove(a.path, exact=a.kind == "forget")
            elif a.kind == "scan":
                for f in self.files(a.path):
                    self.index(f)
            else:
                self.index(a.path)

    def catch_up(self) -> dict:
        """What changed while nobody watched: documents whose file under a watched folder is gone are removed
        (first, so a renamed file indexes under its new name), then every file is indexed (a no-op if
        unchanged)."""
        counts = {"removed": 0, "indexed": 0, "replaced": 0, "unchanged": 0, "failed": 0, "kept": 0}
        gone = [rec.path for rec in self.engine.own_documents()  # a shared library: this data dir's (this machine's)
                if any(_under(rec.path, r) for r in self.roots)
                and (os.path.islink(rec.path) or not os.path.isfile(rec.path))]  # or a folder or a link now
        kept = self.held_back(gone, prune=self.prune)  # --prune: what went while nobody watched
        counts["kept"] = len(kept)
        for path in gone:
            if path not in kept:
                counts["removed"] += self.remove(path, exact=True)
        files = {}  # each file once: folders may overlap, and a link may sit beside its file
        for root in self.roots:
            for f in self.files(root):
                files.setdefault(os.path.realpath(f), f)
        for f in files.values():
            counts[self.index(f)] += 1
        return counts


REARMS = 5  # the watcher is armed again after it stops (an event it cannot decode), at most this many times in a row


def _watch(w: Watcher, watchfiles, roots: list[str], pending: Debouncer, stop_event: threading.Event,
           quiet: float) -> None:
    """Catch up, then apply settled changes until ``stop_event``. The watcher is armed before the catch-up pass (its
    first, empty, yield comes after ``rust_timeout``), so nothing written during the pass is missed; periodic empty
    yields let settled changes out."""
    started = False
    for changes in watchfiles.watch(*roots, watch_filter=None, stop_event=stop_event, raise_interrupt=False,
                                    rust_timeout=max(50, int(min(quiet / 2, 0.5) * 1000)), yield_on_timeout=True):
        now = time.monotonic()
        pending.add(changes, now)
        if not started:
            started = True
            c = w.catch_up()
            w.note(f"watching {', '.join(roots)}: {c['unchanged']} up to date, {c['indexed']} indexed, "
                   f"{c['replaced']} updated, {c['removed']} removed, {c['failed']} failed"
                   + (f", {c['kept']} missing kept" if c["kept"] else "") + " (Ctrl-C to stop)")
            continue
        settled = pending.ready(now)
        if settled:
            w.apply(plan(settled, roots, w.library()))


def _readable(folder: str) -> bool:
    try:
        os.listdir(folder)
        return True
    except OSError:
        return False


def run_watch(engine, paths: Iterable[str], *, stop_event: threading.Event | None = None, as_json: bool = False,
              quiet: float = 1.0, out=None, err=None, prune: bool = False) -> int:
    """Catch up, then watch until ``stop_event`` is set, Ctrl-C or SIGTERM; returns 0."""
    import logging

    import watchfiles
    from watchfiles._rust_notify import WatchfilesRustInternalError

    logging.getLogger("watchfiles").setLevel(logging.ERROR)  # its "KeyboardInterrupt caught" warning on Ctrl-C
    if not math.isfinite(quiet) or quiet < 0:
        raise ThreadRagError(f"--debounce {quiet}: must be 0 or more seconds")
    roots = []
    for p in paths:
        p = os.path.expanduser(str(p))
        if not os.path.isdir(p):
            why = "not a folder (watch takes folders)" if os.path.exists(p) else why_missing(Path(p), "folder")
            raise ThreadRagError(f"{p}: {why}")
        roots.append(os.path.realpath(p))
    roots = list(dict.fromkeys(roots))
    w = Watcher(engine, roots, as_json=as_json, out=out, err=err, prune=prune)
    pending = Debouncer(quiet=quiet)
    stop_event = stop_event or threading.Event()

    def on_term(signum, frame):  # SIGTERM ends the watcher as Ctrl-C does (a half-done index is rolled back)
        stop_event.set()
        raise KeyboardInterrupt

    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGTERM, on_term)
    try:
        stops = 0  # in a row: a run that lasted a minute starts the count again
        while not stop_event.is_set():
            armed = time.monotonic()
            try:
                _watch(w, watchfiles, roots, pending, stop_event, quiet)
                break
            except WatchfilesRustInternalError as exc:  # e.g. an event it could not decode ended its stream
                stops = 1 if time.monotonic() - armed > 60 else stops + 1
                if stops > REARMS:
                    raise ThreadRagError(f"the file watcher stopped {stops} times in a row: {exc}") from None
                w.note(f"the file watcher stopped ({exc}; a file name that is not valid UTF-8 can do this: rename "
                       f"the file); watching again")
                stop_event.wait(min(0.5 * 2 ** (stops - 1), 5.0))
    except KeyboardInterrupt:
        pass
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    w.note(f"stopped watching ({len(pending)} pending change(s) left for the next start's catch-up)"
           if len(pending) else "stopped watching")
    return 0
