"""The Engine: the only place that wires the parts together.

Front doors (REPL, scripted sessions, CLI) call the tool functions in :mod:`thread_rag.tools`,
which call the Engine. Data path: file -> loader -> chunker -> thread (DOCn_i) -> store ->
retrieve -> windows -> agent.

Indexing lives in :mod:`thread_rag.indexing` (its :class:`~thread_rag.indexing.Indexer`: load, chunk, embed,
group, plan, commit; crash-safe, as that module says); the Engine's indexing methods call it. The doctor's check
and repair live in :mod:`thread_rag.repair`. What stays here: wiring the parts, opening a library (and refusing a
catalog that does not match its store), what readers see, the write lock, recovery of a killed writer's leftovers,
and removal (delete, and what recovery and indexing drop).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .atomic import atomic_write_bytes, atomic_write_json, file_lock, read_only, remove_stale_temporaries
from . import indexing
from .errors import CorruptFileError, ReadOnlyError
from .faults import crash_point
from .ids import ChunkId, format_doc_id, parse_doc_id, parse_generation_name
from .indexing import Indexer, Progress
from .records import Chunk, DocumentRecord, IndexResult, Thread
from .settings import Settings, load_settings
from .store import Catalog, ChunkStore, Library, TokenCache
from .store.read_only_store import ReadOnlyChunkStore
from .store.catalog import kept_logs

CALIBRATION_FILE = "calibration.json"  # the library's answered / not answered operating point (thread-rag calibrate)
LIBRARY_FILES = ("catalog.json", "catalog.log", "chroma", "pending", "data_dir_id")


def uploads_dir(home: Path | str) -> Path:
    """Where ``serve`` keeps the files it was sent, one folder per upload (``doctor`` names one no document holds;
    removing its document removes it)."""
    return Path(home) / "uploads"


def holds_library(home: Path) -> bool:
    """Whether ``home`` holds a library (anything indexed there, even one damaged): a mistyped data dir, or a
    folder of someone's files, does not, and a command that only reads writes nothing into it."""
    return home.is_dir() and (any((home / name).exists() for name in LIBRARY_FILES)
                              or any(home.glob("catalog.json.corrupt-*")))


class Engine:
    LOOKING = False  # True for doctor's engine: it opens the library without writing anything

    def __init__(self, settings: Settings | None = None, *, embedder=None, summarizer=None, chat_model=None):
        self.settings = settings or load_settings()
        self.home = self.settings.home
        self._writer: int | None = None  # the thread holding the write lock (``write_lock``)
        self.shared = bool(self.settings.CHROMA_HOST.strip())  # the catalog lives on the Chroma server
        fresh = self.fresh
        if self.home.exists() or not fresh:
            self.home.mkdir(parents=True, exist_ok=True)  # a file there is named here, before anything is read
        # a library on a read-only file system is read as it is: nothing recovered, locked or stored
        self.read_only = not fresh and not self.shared and read_only(self.home)
        self._store: ChunkStore | None = None
        self._store_counted: tuple = (None, False)  # (catalog version, whether the store held every chunk then)
        self.catalog = self._server_catalog() if self.shared else Catalog(self.home / "catalog.json")
        if self.shared:
            self._hand_over_local_catalog()
        self.token_cache = TokenCache(self.home / "tokcache", max_open=self.settings.CACHE_DOCUMENTS)
        self._refuse_a_lost_catalog()
        self._refuse_a_catalog_behind_its_store()
        self._embedder = embedder
        self._query_embedder = None
        self._summarizer = summarizer
        self._chat_model = chat_model
        self.library = Library(self.catalog, lambda: self.store, self.settings.CACHE_DOCUMENTS,  # what readers see
                               read_only=self.read_only)
        self.indexer = Indexer(self)  # the indexing pipeline (indexing.py), given this engine's parts
        self._retriever = None
        self._calibration = None  # (file stamp, Calibration or None)
        self._windows = None
        self._nested = None
        if not fresh and not self.read_only:
            self.recover()

    @property
    def fresh(self) -> bool:
        """Nothing indexed in this data dir yet: a command that only reads writes nothing into it."""
        return not self.shared and not holds_library(self.home)

    def _server_catalog(self):
        """A library on a Chroma server keeps its catalog log there (store/server_catalog.py); the documents this
        data dir indexes carry its id (``<HOME>/data_dir_id``, made once)."""
        from .store.server_catalog import ServerCatalog

        id_file = self.home / "data_dir_id"
        if not id_file.exists() and not self.LOOKING:
            atomic_write_bytes(id_file, uuid.uuid4().hex.encode(), exclusive=True)  # another process's first: kept
        origin = id_file.read_text().strip() if id_file.exists() else ""
        return ServerCatalog(self.home / "catalog.json", lambda: self.store.catalog_collection(), origin=origin)

    def _hand_over_local_catalog(self) -> None:
        """A server data dir that kept its catalog locally (before catalogs were shared) hands it over the first
        time: imported as the server log's first change, the local files moved aside."""
        local = self.home / "catalog.json"
        if not local.exists():
            return
        with self.write_lock():
            if not local.exists():  # another process of this data dir handed it over meanwhile
                return
            own = Catalog(local)
            self.catalog.reload()
            handed = self.catalog.imported_by == self.catalog.origin  # an earlier start imported it, then stopped
            if own.documents() and not handed:
                if self.catalog.version:
                    raise CorruptFileError(f"{local} lists this data dir's own documents, but the library on the "
                                           f"server already has a catalog; use a new --data-dir to join it")
                self.catalog.import_local(dict(own._data))  # refused if another machine began the log meanwhile
            stamp = time.strftime("%Y%m%d-%H%M%S")
            for f in (local, own.log_path):
                if f.exists():
                    os.replace(f, f.with_name(f"{f.name}.imported-{stamp}"))

    def _refuse_a_lost_catalog(self) -> None:
        """No catalog file but a store that holds chunks (the catalog was set aside as corrupt, or deleted):
        an empty catalog would hand out DOC1 again over the old DOC1's chunks, vectors and index parts."""
        if self.shared:
            if self.catalog.version == 0 and self.store.count():
                raise CorruptFileError(f"the library's catalog on the Chroma server is empty, but its collection "
                                       f"{self.store.collection_name} holds indexed chunks; an empty catalog would "
                                       f"reuse their document ids. Restore the server's data, or use a new library")
            return
        if self.catalog.path.exists():
            return
        aside = sorted(self.home.glob("catalog.json.corrupt-*"))
        if not aside and not ((self.home / "chroma").is_dir() and self.store.count()):
            return
        where = f" ({aside[-1].name} holds the damaged copy)" if aside else ""
        raise CorruptFileError(f"{self.catalog.path} is missing{where} but {self.home} still holds indexed chunks; "
                               f"an empty catalog would reuse their document ids. Run `thread-rag doctor --repair` "
                               f"(it rebuilds the catalog from catalog.log if the log holds its whole history), "
                               f"restore a good catalog.json, or move {self.home} away and index again")

    def _refuse_a_catalog_behind_its_store(self) -> None:
        """A catalog older than the store (restored from a backup) would hand out a (serial, generation) the
        store still holds: DOCn again over another document's chunks, or a re-index's generation over stored
        rows of that generation, mixing old and new. Refused with one line. Something that looks ahead is
        looked at again under the write lock: a recovery that is removing a dead writer's files (files first,
        its marker last) has finished by then."""
        ahead = self._generations_ahead()
        if ahead and not self.read_only:
            with contextlib.suppress(TimeoutError), self.write_lock(timeout=30):
                ahead = self._generations_ahead()
        if ahead:
            nxt = self.catalog.next_serial
            names = ", ".join(format_doc_id(s) if s >= nxt else f"{format_doc_id(s)} generation {g}" for s, g in ahead)
            if self.shared:
                raise CorruptFileError(f"the library's catalog on the Chroma server does not name {names}, which this "
                                       f"data dir derived from it: was the server's data restored from a backup? "
                                       f"Move {self.home} away and join the library with a new data dir")
            raise CorruptFileError(f"{self.catalog.path} is older than the store in {self.home}: it does not name "
                                   f"{names}, which the store holds, and would hand their ids out again. Put back the "
                                   f"newest catalog.json and catalog.log, or move {self.home} away and index again")

    def _generations_ahead(self) -> list[tuple[int, int]]:
        """(serial, generation)s on disk that the catalog could hand out again: a serial at or past its next one,
        or a generation past the committed one. What the store holds is read from the token-cache and index-part
        folders (a listing, no Chroma read; a committed generation normally has both, so a catalog behind a store
        that lost both folders goes unnoticed); a generation with a pending marker is a write in progress. The
        listing comes first and the catalog is read after it, so a writer committing meanwhile is seen committed."""
        on_disk = self.token_cache.present() | self.part_generations()
        writing = self._pending_generations()
        self.catalog.reload()
        committed, nxt = dict(self.catalog.committed()), self.catalog.next_serial
        return sorted(k for k in on_disk - writing if k[0] >= nxt or k[1] > committed.get(k[0], k[1]))

    def close(self) -> None:
        """Release the store's client (its files and threads), open token files and the caches. The engine can
        be used again afterwards (the parts reopen on need); long-lived doors and the tests call this."""
        store, self._store = getattr(self, "_store", None), None  # also after a failed __init__
        self._store_counted = (None, False)
        if store is not None:
            store.close()
        if hasattr(self, "token_cache"):
            self.token_cache.close()
        if hasattr(self, "library"):
            self.library.clear()
        release = getattr(getattr(self, "catalog", None), "release", None)
        if release is not None:
            release()  # a server catalog's collection belonged to the closed client
        self.drop_parts()

    def drop_parts(self) -> None:
        """Forget the search, window and tree parts: they reopen on need (their caches may hold what changed)."""
        self._retriever = self._windows = self._nested = None

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- lazily built parts -----------------------------------------------------------------
    @property
    def store(self) -> ChunkStore:
        if self._store is None and self.read_only:
            self._store = ReadOnlyChunkStore(self.home / "chroma")
        if self._store is None:
            self._store = ChunkStore(self.home / "chroma", host=self.settings.CHROMA_HOST.strip() or None,
                                     join=self.settings.CHROMA_LIBRARY.strip() or None,
                                     token=self.settings.CHROMA_TOKEN)
        return self._store

    @property
    def embedder(self):
        if self._embedder is None:
            from .embedder import make_embedder

            self._embedder = make_embedder(self.settings)
        return self._embedder

    @property
    def query_embedder(self):
        """The embedder for queries (search, the agent's relevance floor, nested retrieval). On a store indexed
        with the default MiniLM and ``QUERY_EMBEDDER`` auto/onnx: the same MiniLM as INT8 ONNX, so a search never
        imports torch (``embedder.make_query_embedder``); else :attr:`embedder`. An embedder passed in
        (``Engine(embedder=...)``, e.g. by tests) embeds the queries too. Indexing always uses :attr:`embedder`."""
        if self._query_embedder is None:
            if self._embedder is not None and not getattr(self._embedder, "from_settings", False):
                return self._embedder
            from .embedder import make_query_embedder

            self._query_embedder = make_query_embedder(self.settings, lambda: self.embedder)
        return self._query_embedder

    @property
    def retriever(self):
        if self._retriever is None:
            from .retrieve.pipeline import Retriever

            self._retriever = Retriever(self.library, self.settings, self.home, self.token_cache,
                                        query_embedder=lambda: self.query_embedder, embedder=lambda: self.embedder)
        return self._retriever

    @property
    def windows(self):
        if self._windows is None:
            from .threads.windows import WindowBuilder

            self._windows = WindowBuilder(self.library, self.settings, summarizer=lambda: self.summarizer,
                                          query_embedder=lambda: self.query_embedder,
                                          count_tokens=lambda texts: self.embedder.count_tokens(texts),
                                          index=lambda: self.retriever.index)
        return self._windows

    @property
    def summarizer(self):
        if self._summarizer is None:
            from .threads.summarizers import make_summarizer

            self._summarizer = make_summarizer(self.settings)
        return self._summarizer

    @property
    def nested(self):
        if self._nested is None:
            from .nested.tree import NestedIndex

            self._nested = NestedIndex(self.library, self.settings, self.home / "trees",
                                       query_embedder=lambda: self.query_embedder)
        return self._nested

    @property
    def chat_model(self):
        if self._chat_model is None:
            from .llm.backends import make_chat_model

            self._chat_model = make_chat_model(self.settings)
        return self._chat_model

    def calibration(self):
        """The library's calibration of answered / not answered (``thread-rag calibrate``; ``agent/outcome.py``),
        None when it has none or one an older version made (today's floors then apply)."""
        from .agent.outcome import Calibration

        path = self.home / CALIBRATION_FILE
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            return None
        if self._calibration is None or self._calibration[0] != stamp:
            try:
                cal = Calibration.from_dict(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError, KeyError, AttributeError):  # damaged or another version's: floors
                cal = None
            self._calibration = (stamp, cal)
        return self._calibration[1]

    # -- locking & recovery -----------------------------------------------------------------
    def writable(self, path: Path | None = None, what: str = "summaries can be made and read, not stored") -> None:
        """ReadOnlyError, before any work is done, for a change asked of a library on a read-only file system (or
        of ``path``, e.g. the summary cache, when it cannot be written: ``what`` says what that means)."""
        if path is not None:
            there = next((p for p in (path, *path.parents) if p.exists()), path)
            if read_only(there):
                raise ReadOnlyError(f"{path} is read-only: {what}")
        elif self.read_only:
            raise ReadOnlyError(f"{self.home} is read-only: its documents can be searched and read, but indexing, "
                                f"deleting, pre-heating and repairs need a data dir that can be written")

    @contextlib.contextmanager
    def write_lock(self, timeout: float | None = None):
        """The library's write lock (a file lock, held against other processes). A thread that holds it already
        takes it again at no cost: a server takes it before its own readers' lock, and the store inside it."""
        if self._writer == threading.get_ident():
            yield
            return
        self.writable()
        (self.home / "index.lock").touch()  # there before a copy of the library is ever mounted read-only
        with file_lock(self.home / "write.lock", timeout=timeout):
            self._writer = threading.get_ident()
            try:
                yield
            finally:
                self._writer = None

    def pending_dir(self) -> Path:
        """Where a write's pending marker is kept until it commits (recovery reads them)."""
        return self.home / "pending"

    def _pending_generations(self) -> set[tuple[int, int]]:
        """(serial, generation)s with a pending marker: writes in progress, or a killed writer's to recover."""
        markers = self.pending_dir().glob("DOC*.json")
        return {key for key in (parse_generation_name(m.name, (".json",)) for m in markers) if key}

    def recover(self, full: bool = False, sweep: bool = True) -> list[str]:
        """Remove what a killed writer left behind. Runs only if no writer holds the lock. ``sweep``: also dead
        writers' temporaries (see ``recover_locked``)."""
        if self._writer == threading.get_ident():
            return []  # this thread is writing: its own marker is no dead writer's
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(self.write_lock(timeout=0))
            except TimeoutError:
                return []  # a live writer holds the lock; it cleans up after itself
            return self.recover_locked(full, sweep)

    def recover_locked(self, full: bool = False, sweep: bool = True) -> list[str]:
        """Recovery proper; the caller holds the write lock (flock locks belong to one open file,
        so a writer that already holds it must call this, not :meth:`recover`). ``sweep``: also remove dead
        writers' temporaries (at start; a commit skips it: listing every document's files per commit would
        make indexing a folder quadratic)."""
        self._store_counted = (None, False)  # rows may be removed below
        notes = [f"removed leftover temporary {p}" for p in self._remove_temporaries()] if sweep else []
        if sweep and self.shared:
            notes += self._drop_local_files_of_replaced_documents()
        pending = self.pending_dir()
        markers = sorted(pending.glob("*.json")) if pending.is_dir() else []
        if not markers and not full:
            return notes
        self.catalog.reload()
        committed = set(self.catalog.committed())
        for marker in markers:
            notes += self._finish_marker(marker, committed)
        return notes + self._remove_orphans() if full else notes

    def _finish_marker(self, marker: Path, committed: set) -> list[str]:
        """A pending marker's write, finished or undone as the catalog says (the caller holds the write lock)."""
        try:
            info = json.loads(marker.read_text())
            serial = int(info["serial"])
            gen = None if info.get("delete") else int(info["generation"])
        except (ValueError, KeyError, TypeError, OSError, AttributeError):  # torn: its name says what it was
            info, key = {}, parse_generation_name(marker.name, (".json",))
            deleting = re.fullmatch(r"DELETE-DOC(\d+)\.json", marker.name)
            if key is None and deleting is None:
                marker.unlink(missing_ok=True)
                return []
            serial, gen = key if key else (int(deleting[1]), None)
        notes = []
        if gen is None:  # a delete: finish it if the catalog commit (the removal) happened
            if serial not in {s for s, _ in committed}:
                self._purge_document(serial, info.get("content_hash"), upto=info.get("generation"))
                notes.append(f"finished deleting {format_doc_id(serial)}")
        elif (serial, gen) not in committed:
            self.drop_generation(serial, gen)
            notes.append(f"removed uncommitted {format_doc_id(serial)} generation {gen}")
        else:  # committed, but the old generation may not have been cleaned
            self.drop_older(serial, gen)
        self.library.forget(serial)
        marker.unlink(missing_ok=True)
        return notes

    def _remove_orphans(self) -> list[str]:
        """Full recovery: what no committed record names (chunks, token caches, trees, index parts), removed;
        kept all while a mended catalog log is kept (a dropped line may have committed it)."""
        stored = self.store.generations()  # listed before the catalog is read again: a generation another
        self.catalog.reload()               # machine writes meanwhile is then claimed (in flight) or committed
        committed = set(self.catalog.committed())
        orphans = sorted(stored - committed - self.catalog.in_flight())
        kept = kept_logs(self.home)
        if kept:  # a mended log's dropped line may have committed what no record names now: keep it all
            if not orphans:
                return []
            return [f"kept {', '.join(f'{format_doc_id(s)} generation {g}' for s, g in orphans)}: no catalog record "
                    f"names them, but a dropped line of {kept[-1].name} may have committed them; index their files "
                    f"again, then delete {kept[-1].name} and run `thread-rag doctor --repair` to remove what is left"]
        notes = []
        for serial, gen in orphans:
            self.store.delete_generation(serial, gen)
            notes.append(f"removed orphan chunks {format_doc_id(serial)} generation {gen}")
        for serial, gen in self.token_cache.present() - committed:
            self.token_cache.remove(serial, gen)
            notes.append(f"removed orphan token cache {format_doc_id(serial)} generation {gen}")
        for serial, gen in self.tree_generations() - committed:
            self._remove_derived(serial, gen=gen)
            notes.append(f"removed orphan tree {format_doc_id(serial)} generation {gen}")
        for serial, gen in self.part_generations() - committed:
            self._remove_derived(serial, gen=gen)
            notes.append(f"removed orphan index part {format_doc_id(serial)} generation {gen}")
        return notes

    def _drop_local_files_of_replaced_documents(self) -> list[str]:
        """On a shared library, another machine may replace or remove a document whose token cache, index part or
        tree this data dir derived: those local files are removed at start (this data dir's own killed writes
        are recovered by their pending markers)."""
        self.catalog.reload()
        committed, flying = dict(self.catalog.committed()), self.catalog.in_flight()
        local = self.token_cache.present() | self.part_generations() | self.tree_generations()
        stale = sorted((s, g) for s, g in local - flying - self._pending_generations()
                       if (s in committed and g < committed[s]) or (s not in committed and s < self.catalog.next_serial))
        for s, g in stale:
            self.token_cache.remove(s, g)
            self._remove_derived(s, gen=g)
        return [f"removed local files of {format_doc_id(s)} generation {g} (replaced or removed elsewhere)"
                for s, g in stale]

    def _remove_temporaries(self) -> list[Path]:
        """Temporaries of writers killed mid-write. Catalog, pending markers and token cache are
        written only under the write lock (which the caller holds), so any temporary there is dead;
        trees, search-index parts and summaries are also written by readers: PID or age decides."""
        places = [(self.home, True), (self.pending_dir(), True), (self.token_cache.root, True),
                  (self.home / "trees", False), (self.home / "index_parts", False), (self.settings.cache_path, False)]
        return [p for d, owned in places for p in remove_stale_temporaries(d, owned=owned)]

    def check_consistency(self) -> list[str]:
        """Problems between catalog, Chroma and token cache (empty list = consistent): see ``repair.py``."""
        from .repair import consistency_problems

        return consistency_problems(self)

    def repair(self, timeout: float = 60, reindex: bool = True) -> list[str]:
        """``thread-rag doctor --repair``: mend what ``check_consistency`` finds (``repair.py``; one note per change)."""
        from .repair import repair

        return repair(self, timeout=timeout, reindex=reindex)

    def stored(self, rec: DocumentRecord, strict: bool = True) -> bool:
        """Whether the store holds the record's first and last chunk (one read by id; a lost chroma folder).
        Not ``strict`` (a re-index's "unchanged" check): a store that holds at least as many rows as the catalog's
        documents have chunks is taken as whole, counted once per catalog version (one call for a folder)."""
        if not strict:
            version = self.catalog.version
            if self._store_counted[0] != version:  # equal, not at least: surplus rows (orphans) must not hide a loss
                need = sum(d.chunk_count for d in self.catalog.documents())
                self._store_counted = (version, self.store.count() == need)
            if self._store_counted[1]:
                return True
        ends = {(rec.serial, 0, rec.generation), (rec.serial, max(0, rec.chunk_count - 1), rec.generation)}
        return len(self.store.get_chunks(sorted(ends))) == len(ends)

    # -- what readers see (the Library) ----------------------------------------------------------
    def refresh(self) -> bool:
        return self.library.refresh()

    def documents(self) -> list[DocumentRecord]:
        return self.library.documents()

    def own_documents(self) -> list[DocumentRecord]:
        """The documents this data dir indexed (all of them, unless the library is shared on a server)."""
        return [d for d in self.documents() if self.catalog.own(d)]

    def document(self, doc_id: str | int) -> DocumentRecord:
        return self.library.document(doc_id)

    def thread(self, doc_id: str | int) -> Thread:
        return self.library.thread(doc_id)

    def chunk(self, cid: ChunkId | str) -> Chunk:
        return self.library.chunk(cid)

    # -- indexing ---------------------------------------------------------------------------
    def supported(self, path: Path) -> bool:
        return indexing.supported(path)

    def expand_paths(self, paths: Iterable[str | Path]) -> list[Path]:
        """Files to index, directories expanded (``indexing.expand_paths``)."""
        return indexing.expand_paths(paths)

    def index_paths(self, paths: Iterable[str | Path], progress: Progress | None = None,
                    check: Callable[[Path], object] | None = None, storing=contextlib.nullcontext) -> list[IndexResult]:
        return self.indexer.index_paths(paths, progress, check, storing)

    def index_each(self, paths: Iterable[str | Path], progress: Progress | None = None,
                   check: Callable[[Path], object] | None = None) -> Iterator[IndexResult]:
        return self.indexer.index_each(paths, progress, check)

    def index_file(self, path: str | Path, progress: Progress | None = None) -> IndexResult:
        return self.indexer.index_file(path, progress)

    def index_loaded(self, doc, key: str, name: str, content_hash: str, progress: Progress | None = None,
                     shown_path: str | None = None, t0: float | None = None) -> IndexResult:
        return self.indexer.index_loaded(doc, key, name, content_hash, progress, shown_path, t0)

    def index_loaded_many(self, docs: Iterable[tuple], group_chunks: int | None = None) -> Iterator[IndexResult]:
        return self.indexer.index_loaded_many(docs, group_chunks)

    def embed_tokens(self, texts: list[str], staged, progress: Progress | None = None, single: bool = False):
        return self.indexer.embed_tokens(texts, staged, progress, single)

    # -- removal: shared by delete, recovery and indexing ----------------------------------------
    _TREE_SUFFIXES = (".json", ".npy")

    def _generations_in(self, folder: str, suffixes: tuple[str, ...] = ("",)) -> set[tuple[int, int]]:
        """(serial, generation) of every ``DOCn.gX<suffix>`` in a derived-data folder of the data dir."""
        found = (parse_generation_name(f.name, suffixes) for f in (self.home / folder).glob("DOC*.g*"))
        return {key for key in found if key}

    def tree_generations(self) -> set[tuple[int, int]]:
        """Nested-tree files (``trees/DOCn.gX.json`` and ``.npy``)."""
        return self._generations_in("trees", self._TREE_SUFFIXES)

    def part_generations(self) -> set[tuple[int, int]]:
        """Search-index parts (``index_parts/DOCn.gX``)."""
        return self._generations_in("index_parts")

    def _remove_derived(self, serial: int, gen: int | None = None, keep: int | None = None) -> None:
        """A document's nested-tree files and search-index parts (derived data): of generation ``gen``, of all
        but ``keep``, or all of them."""
        import shutil

        for folder, suffixes in (("trees", self._TREE_SUFFIXES), ("index_parts", ("",))):
            for f in (self.home / folder).glob(f"DOC{serial}.g*"):
                key = parse_generation_name(f.name, suffixes)
                g = key[1] if key and key[0] == serial else None
                if g is None or gen not in (None, g) or g == keep:
                    continue
                if f.is_dir():
                    shutil.rmtree(f, ignore_errors=True)
                else:
                    f.unlink(missing_ok=True)

    def drop_generation(self, serial: int, gen: int) -> None:
        """One generation of a document, not (or no longer) committed: its stored rows, token cache and derived
        files (a killed writer's, or one another machine's newer commit overtook)."""
        self.store.delete_generation(serial, gen)
        self.token_cache.remove(serial, gen)
        self._remove_derived(serial, gen=gen)

    def drop_older(self, serial: int, gen: int) -> None:
        """What a document's committed generation ``gen`` replaced: the other generations' rows (see
        ``_drop_older_rows``), then their token caches and derived files."""
        self._drop_older_rows(serial, gen)
        self._remove_stale_files(serial, gen)

    def _remove_stale_files(self, serial: int, keep_gen: int) -> None:
        for s, g in self.token_cache.present():
            if s == serial and g != keep_gen:
                self.token_cache.remove(s, g)
        self._remove_derived(serial, keep=keep_gen)

    def _drop_older_rows(self, serial: int, gen: int) -> None:
        """Stored rows of a document's generations other than the committed ``gen``; on a shared library only
        the older ones (a newer one may be another machine's re-index in progress)."""
        if self.shared:
            self.store.delete_older(serial, gen)
        else:
            self.store.delete_document(serial, keep_generation=gen)

    def _purge_document(self, serial: int, content_hash: str | None, upto: int | None = None) -> None:
        """Everything stored for a document the catalog no longer names (caller holds the write lock); on a
        shared library only its rows up to generation ``upto`` (a newer one is another machine's re-index)."""
        if not self.shared:
            self.store.delete_document(serial)
        elif upto is not None:
            self.store.delete_older(serial, upto + 1)
        else:  # which generation was removed is not known: all but another machine's claimed ones
            for s, g in self.store.generations() - self.catalog.in_flight():
                if s == serial:
                    self.store.delete_generation(s, g)
        self.token_cache.remove(serial)
        self._remove_derived(serial)
        self.library.forget(serial)
        if content_hash and self.settings.cache_path.is_dir():
            from .threads.summary_cache import SummaryCache

            SummaryCache(self.settings.cache_path).forget(content_hash)

    def delete(self, doc_id: str) -> DocumentRecord:
        serial = parse_doc_id(doc_id)
        if self.fresh:  # an unknown id's error, and no library made for it
            self.catalog.get(serial)
        with self.write_lock():
            self.recover_locked(sweep=False)
            self.catalog.reload()
            rec = self.catalog.get(serial)
            marker = self.pending_dir() / f"DELETE-DOC{serial}.json"  # recovery finishes a killed delete
            atomic_write_json(marker, {"serial": serial, "delete": True, "content_hash": rec.content_hash,
                                       "generation": rec.generation,
                                       "pid": os.getpid()})
            self.catalog.remove(serial)  # commit point: readers stop seeing it
            crash_point("delete_after_remove")
            self._purge_document(serial, rec.content_hash, upto=rec.generation)
            marker.unlink(missing_ok=True)
        return rec
