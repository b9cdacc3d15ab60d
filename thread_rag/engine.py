"""The Engine: the only place that wires the parts together.

Front doors (REPL, scripted sessions, CLI) call the tool functions in :mod:`thread_rag.tools`,
which call the Engine. Data path: file -> loader -> chunker -> thread (DOCn_i) -> store ->
retrieve -> windows -> agent.

Indexing is crash-safe: the expensive work (load, chunk, embed) happens outside the write lock;
under the lock a pending marker is written, the new generation's chunks and token cache are
stored beside the old ones, and the catalog commit switches readers over. A process killed at
any point leaves either the old document or the new one; recovery removes the leftovers.
A folder's small files are stored in groups (one Chroma write for the group's rows, then each
file's own files and catalog commit), so a kill leaves each file committed or pending, never half.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .atomic import atomic_write_bytes, atomic_write_json, file_lock, read_only, remove_stale_temporaries
from .errors import CorruptFileError, IngestError, ReadOnlyError, ThreadRagError, printable, why_missing
from .faults import crash_point
from .ids import ChunkId, format_doc_id, generation_name, parse_doc_id, parse_generation_name
from .ingest import SUPPORTED_SUFFIXES, load_document, make_chunker, text_for_embedding
from .ingest.loaders import FOLDER_SUFFIXES
from .records import Chunk, DocumentRecord, IndexResult, Thread, content_key
from .settings import Settings, load_settings
from .store import Catalog, ChunkStore, Library, TokenCache
from .store.read_only_store import ReadOnlyChunkStore
from .store.catalog import kept_logs

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except (OSError, ValueError):  # ValueError: a name no file system can hold (a lone surrogate)
        return 0


def _folder_progress(progress: Progress, name: str, before: int, size: int, total: int) -> Progress:
    """A file's stages as a share of its size on the folder's bar (embedding is the part that takes time; a file
    read by OCR spends its first half on that)."""
    ocr = []

    def update(stage: str, done: int, of: int) -> None:
        share = done / max(of, 1)
        if stage.startswith("OCR"):
            ocr.append(1)
            share /= 2
        elif stage == "embed":
            share = (1 + share) / 2 if ocr else share
        else:
            share = 0.0 if stage == "load" else 1.0
        progress(f"{name}: {stage} {done}/{of}", before + int(size * share), total)
    return update


@dataclasses.dataclass
class _Pending:
    """A document to index: its key and content hash known, its loading, chunking and embedding still to do."""
    key: str
    content_hash: str
    shown: str  # the path as the user gave it
    prepare: Callable[[], "IndexResult | _Ready"]  # raises ThreadRagError for a document it refuses


@dataclasses.dataclass
class _Ready:
    """A document chunked and embedded outside the write lock, waiting to be stored."""
    doc: object
    key: str
    name: str
    content_hash: str
    recipe: dict
    drafts: list
    vectors: object
    staged: object  # its token vectors, staged on disk (TokenCache.stage)
    shown: str
    prepared_s: float  # loading, chunking and embedding it took
    timings: dict
    progress: Progress | None = None


@dataclasses.dataclass
class _Plan:
    """Under the write lock: where a prepared document goes (its pending marker is written)."""
    serial: int
    gen: int
    doc_id: str
    old: DocumentRecord | None
    marker: Path
    chunks: list


def _make(item: _Pending) -> "IndexResult | _Ready":
    try:
        return item.prepare()
    except ThreadRagError as exc:
        return IndexResult(path=item.shown, status="failed", error=str(exc))


def _unchanged_result(shown: str, same: DocumentRecord, seconds: float, key: str) -> IndexResult:
    """``key``'s file needs no indexing: it is ``same``'s, or a copy of it (``same_as`` names the file indexed)."""
    return IndexResult(path=shown, status="unchanged", doc_id=same.doc_id, chunks=same.chunk_count, pages=same.pages,
                       seconds=seconds, same_as=same.path if same.path != key else None)


LIBRARY_FILES = ("catalog.json", "catalog.log", "chroma", "pending", "data_dir_id")


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
        self._retriever = None
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
        self.writable()
        (self.home / "index.lock").touch()  # there before a copy of the library is ever mounted read-only
        with file_lock(self.home / "write.lock", timeout=timeout):
            yield

    def _pending_dir(self) -> Path:
        return self.home / "pending"

    def _pending_generations(self) -> set[tuple[int, int]]:
        """(serial, generation)s with a pending marker: writes in progress, or a killed writer's to recover."""
        markers = self._pending_dir().glob("DOC*.json")
        return {key for key in (parse_generation_name(m.name, (".json",)) for m in markers) if key}

    def recover(self, full: bool = False, sweep: bool = True) -> list[str]:
        """Remove what a killed writer left behind. Runs only if no writer holds the lock. ``sweep``: also dead
        writers' temporaries (see ``recover_locked``)."""
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
        pending = self._pending_dir()
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
            self.store.delete_generation(serial, gen)
            self.token_cache.remove(serial, gen)
            self._remove_derived(serial, gen=gen)
            notes.append(f"removed uncommitted {format_doc_id(serial)} generation {gen}")
        else:  # committed, but the old generation may not have been cleaned
            self._drop_older_rows(serial, gen)
            self._remove_stale_files(serial, gen)
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
        places = [(self.home, True), (self._pending_dir(), True), (self.token_cache.root, True),
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
        return path.suffix.lower() in SUPPORTED_SUFFIXES

    def expand_paths(self, paths: Iterable[str | Path]) -> list[Path]:
        """Files to index (directories expanded; hidden folders, folder links leading out of the folder
        being walked, symlink loops, unsupported files and images skipped: an image is indexed when named)."""
        files: list[Path] = []
        for raw in paths:
            p = Path(raw).expanduser()
            if p.is_dir():
                top = os.path.realpath(p)
                inside = lambda d: os.path.commonpath([top, os.path.realpath(d)]) == top  # noqa: E731
                seen: set = set()
                for root, dirs, names in os.walk(p, followlinks=True):
                    real = os.path.realpath(root)
                    if real in seen:
                        dirs[:] = []
                        continue
                    seen.add(real)
                    dirs[:] = sorted(d for d in dirs if not d.startswith(".") and inside(os.path.join(root, d)))
                    for name in sorted(names):
                        f = Path(root) / name
                        if f.suffix.lower() in FOLDER_SUFFIXES and not name.startswith(".") and (
                                f.is_file() or not f.exists()):
                            files.append(f)  # no pipe, socket or device (a broken link: its one error line)
            else:
                files.append(p)
        return files

    def index_paths(self, paths: Iterable[str | Path], progress: Progress | None = None,
                    check: Callable[[Path], object] | None = None) -> list[IndexResult]:
        """Every file's result (``index_each``, all of them)."""
        return list(self.index_each(paths, progress, check))

    def index_each(self, paths: Iterable[str | Path], progress: Progress | None = None,
                   check: Callable[[Path], object] | None = None) -> Iterator[IndexResult]:
        """Index every file; a bad file becomes a ``failed`` result and the rest go on.
        ``check(file)`` may refuse a file by raising ThreadRagError (the agent's allowed-roots rule).
        Files are stored in groups (``_in_groups``): one Chroma write for several small files, each file still
        its own catalog commit. Progress: one bar for all files (done and total in KiB of file size, so the ETA
        covers the folder); its label names the file ([i/N] name), the stage and that stage's own count."""
        self.writable()
        files = self.expand_paths(paths)
        kib = [max(1, _size(f) // 1024) for f in files]
        total_kib = sum(kib)

        def items():
            before = 0
            for i, f in enumerate(files):  # one bar for the whole folder, its ETA by file size (KiB)
                labelled = None if progress is None else _folder_progress(
                    progress, f"[{i + 1}/{len(files)}] {f.name}", before, kib[i], total_kib)
                before += kib[i]
                yield self._pending_file(f, labelled, check, single=len(files) == 1)

        for r in self._in_groups(items()):  # each as its group commits: a Ctrl-C leaves what was said true
            yield dataclasses.replace(r, error=r.error + self._kept_version(r.path)) if r.status == "failed" else r

    def index_file(self, path: str | Path, progress: Progress | None = None) -> IndexResult:
        self.writable()
        try:
            p, resolved, content_hash, t0 = self._identify(path)
            ready = self._prepare_file(p, resolved, content_hash, t0, progress, single=True)
            return ready if isinstance(ready, IndexResult) else self._store_one(ready)
        except ThreadRagError as exc:  # as index_paths says it of a failed file
            exc.noting(self._kept_version(path))
            raise

    def _kept_version(self, path: str | Path) -> str:
        """For a file that failed to index: what the library still serves for it, if it was indexed before."""
        try:
            rec = self.catalog.find_by_path(str(Path(path).expanduser().resolve()))
        except (OSError, RuntimeError):  # a path that cannot be resolved names no document
            return ""
        return f"; {rec.doc_id} keeps the version indexed {rec.indexed_at}" if rec else ""

    def _pending_file(self, f: Path, progress: Progress | None, check=None,
                      single: bool = False) -> "_Pending | IndexResult":
        """The file identified (checked, its bytes hashed) with its preparation to come, or its failed result."""
        try:
            if check is not None:
                check(f)
            p, resolved, content_hash, t0 = self._identify(f)
        except ThreadRagError as exc:
            return IndexResult(path=printable(f), status="failed", error=str(exc))
        identify_s = time.perf_counter() - t0  # its clock restarts when it is prepared (a group may be stored first)
        return _Pending(str(resolved), content_hash, str(p),
                        lambda: self._prepare_file(p, resolved, content_hash, time.perf_counter() - identify_s,
                                                   progress, single))

    def _identify(self, path: str | Path) -> tuple[Path, Path, str, float]:
        """(path as given, resolved path, SHA-256 of the bytes, start time), or IngestError."""
        t0 = time.perf_counter()
        p = Path(path).expanduser()
        if printable(p) != str(p):  # the catalog, the logs and the terminal take text
            raise IngestError(p, "the file name is not valid UTF-8 (rename the file)")
        if not p.exists():
            raise IngestError(p, why_missing(p))
        resolved = p.resolve()
        if printable(resolved) != str(resolved):  # reached through a link or the current folder
            raise IngestError(p, f"its real path {printable(resolved)} is not valid UTF-8 (rename the folder or file)")
        if resolved.is_dir():
            raise IngestError(p, "is a directory (use index_paths)")
        if not resolved.is_file():  # reading a pipe would wait for a writer forever
            raise IngestError(p, "not a regular file (a pipe, socket or device)")
        if not self.supported(resolved):
            raise IngestError(p, f"unsupported file type '{resolved.suffix or '(none)'}' "
                              f"(supported: {', '.join(sorted(SUPPORTED_SUFFIXES))})")
        try:
            raw = resolved.read_bytes()
        except OSError as exc:
            raise IngestError(p, f"cannot read ({exc.strerror})") from None
        return p, resolved, hashlib.sha256(raw).hexdigest(), t0

    def _prepare_file(self, p: Path, resolved: Path, content_hash: str, t0: float,
                      progress: Progress | None, single: bool = False) -> "IndexResult | _Ready":
        """The file loaded, chunked and embedded, or its ``unchanged`` result (checked before loading)."""
        self.refresh()
        same = self._unchanged(str(resolved), content_hash, self._recipe())
        if same is not None:
            moved = self._moved(same, str(resolved), resolved.name)
            result = _unchanged_result(str(p), moved or same, time.perf_counter() - t0, str(resolved))
            return dataclasses.replace(result, moved_from=same.path) if moved else result
        if progress:
            progress("load", 0, 1)
        t_load = time.perf_counter()
        doc = load_document(resolved, shown=p, ocr=self.settings.OCR != "off", progress=progress)
        load_s = round(time.perf_counter() - t_load, 3)
        ready = self._prepare(doc, str(resolved), resolved.name, content_hash, progress, str(p), t0, single)
        ready.timings["load_s"] = load_s
        return ready

    def index_loaded(self, doc, key: str, name: str, content_hash: str, progress: Progress | None = None,
                     shown_path: str | None = None, t0: float | None = None) -> IndexResult:
        """Chunk, embed and commit an already loaded document under ``key`` (its path, or any
        unique name such as ``bench://musique/12``)."""
        return self._store_one(self._prepare(doc, key, name, content_hash, progress, shown_path, t0))

    def index_loaded_many(self, docs: Iterable[tuple], group_chunks: int | None = None) -> Iterator[IndexResult]:
        """``index_loaded`` for each ``(doc, key, name, content_hash)``, stored in groups of about ``group_chunks``
        chunks (``_in_groups``). Lazy: documents are read from ``docs`` and indexed as the results are read; each
        result comes, in order, once its group committed. A document refused with a ThreadRagError, or whose
        storing failed, gives a ``failed`` result."""
        def pending(item):
            doc, key, name, content_hash = item

            def prepare():
                same = self._unchanged(key, content_hash, self._recipe())  # stored already: not embedded again
                return _unchanged_result(key, same, 0.0, key) if same else self._prepare(doc, key, name, content_hash)

            return _Pending(key, content_hash, key, prepare)

        return self._in_groups((pending(d) for d in docs), group_chunks)

    def _prepare(self, doc, key: str, name: str, content_hash: str, progress: Progress | None = None,
                 shown_path: str | None = None, t0: float | None = None, single: bool = False) -> "_Ready":
        """Chunk and embed outside the write lock (token vectors go to a staging area on disk). ``single``: the
        document is all the job indexes (``_indexing_embedder``)."""
        t0 = time.perf_counter() if t0 is None else t0
        t_chunk = time.perf_counter()
        chunker = make_chunker(self.settings, self.embedder.count_tokens,
                               embed=self.embedder.embed if self.settings.CHUNK_STRATEGY == "semantic" else None)
        drafts = chunker.chunk(doc)
        texts = [text_for_embedding(d.text) for d in drafts]
        timings = {"chunk_s": round(time.perf_counter() - t_chunk, 3)}
        staged = self.token_cache.stage()  # token vectors go to disk per batch, never all in memory
        try:
            t_embed = time.perf_counter()
            vectors = self.embed_tokens(texts, staged, progress, single)
            timings["embed_s"] = round(time.perf_counter() - t_embed, 3)
        except BaseException:
            staged.discard()
            raise
        return _Ready(doc, key, name, content_hash, self._recipe(), drafts, vectors, staged, shown_path or key,
                      time.perf_counter() - t0, timings, progress)

    def embed_tokens(self, texts: list[str], staged, progress: Progress | None = None, single: bool = False):
        """Embed ``texts`` 64 at a time with the indexing model: token vectors go to ``staged`` (the token cache's
        stage), the chunk vectors are returned (n x dim)."""
        import numpy as np

        embedder = self._indexing_embedder(len(texts)) if single else self.embedder
        vectors, step = [], 64
        for i in range(0, len(texts), step):
            if progress:
                progress("embed", i, len(texts))
            v, t = embedder.embed_with_tokens(texts[i:i + step])
            vectors.append(v)
            staged.add(t)
        if progress:
            progress("embed", len(texts), len(texts))
        return np.concatenate(vectors)

    def _indexing_embedder(self, chunks: int):
        """The embedder for a job that indexes one document (``index note.txt``, the watcher's and the chat's
        files): the indexing model, except for a document of at most ``SMALL_INDEX_CHUNKS`` chunks while that model
        is not loaded: then the query embedder, where it is the same MiniLM as INT8 ONNX
        (``embedder.OnnxMiniLMQueryEmbedder``), so a cold one-page index never imports torch. Its vectors are those
        queries are already embedded with (cosine to the torch model's >= 0.999 on the Debian guide's chunks);
        folders and benchmark corpora keep the torch model. Measured in bench_results/DETAILS.md (issue 44)."""
        emb = self.embedder
        if (chunks > self.settings.SMALL_INDEX_CHUNKS or not getattr(emb, "from_settings", False)
                or getattr(emb, "_model", None) is not None):
            return emb
        from .embedder import OnnxMiniLMQueryEmbedder

        query = self.query_embedder
        return query if isinstance(query, OnnxMiniLMQueryEmbedder) else emb

    # -- storing: groups of prepared documents, each its own transaction --------------------------
    def _store_one(self, ready: "_Ready") -> IndexResult:
        out = self._store_group([ready])[0]
        if isinstance(out, ThreadRagError):
            raise out
        return out

    def _in_groups(self, items: Iterable, group_chunks: int | None = None) -> Iterator[IndexResult]:
        """Results for ``items`` (``_Pending`` documents, or results already final), in order. Prepared documents
        wait until about ``group_chunks`` (``STORE_GROUP_CHUNKS``) chunks do, then are stored together, so small
        files share one Chroma write (a call costs ~7 ms on top of its rows); a document with the path or bytes of
        a waiting one first has those stored (its "unchanged" check must see them committed). A waiting group is
        at most ``group_chunks`` chunks of embedding: what a kill loses. On an error from one document's loading
        (not a ThreadRagError, which is its failed result) the waiting ones are stored before the error goes on,
        as indexing one file at a time would have (their results are not given); on Ctrl-C they are dropped."""
        limit = self.settings.STORE_GROUP_CHUNKS if group_chunks is None else group_chunks
        slots: list = []  # results and prepared documents, in order
        keys: set[str] = set()
        hashes: set[str] = set()
        waiting, it, end = 0, iter(items), object()
        try:
            while True:
                try:
                    item = next(it, end)
                    if item is end:
                        break
                    if isinstance(item, _Pending) and (item.key in keys or item.content_hash in hashes):
                        flushing, slots, keys, hashes, waiting = slots, [], set(), set(), 0
                        yield from self._flush(flushing)
                    item = _make(item) if isinstance(item, _Pending) else item
                except Exception:  # a bug reading or loading one document: what waits is stored, then it surfaces
                    flushing, slots = slots, []
                    for _ in self._flush(flushing):
                        pass
                    raise
                slots.append(item)
                if isinstance(item, _Ready):
                    keys.add(item.key)
                    hashes.add(item.content_hash)
                    waiting += len(item.drafts)
                if waiting >= limit:
                    flushing, slots, keys, hashes, waiting = slots, [], set(), set(), 0
                    yield from self._flush(flushing)
            flushing, slots = slots, []
            yield from self._flush(flushing)
        finally:  # abandoned part-way (Ctrl-C, or the caller stopped reading): nothing staged stays behind
            for s in slots:
                if isinstance(s, _Ready):
                    s.staged.discard()

    def _flush(self, slots: list) -> Iterator[IndexResult]:
        """Store the prepared documents among ``slots``, then give every slot's result in order."""
        group = [s for s in slots if isinstance(s, _Ready)]
        if group and slots[-1] is not group[-1]:  # a later file (failed or unchanged) moved the bar on already
            group[-1].progress = None
        stored = iter(self._store_group(group) if group else [])
        for s in slots:
            if not isinstance(s, _Ready):
                yield s
                continue
            out = next(stored)
            yield out if isinstance(out, IndexResult) else IndexResult(path=s.shown, status="failed", error=str(out))

    def _store_group(self, group: list["_Ready"]) -> list:
        """Store prepared documents: a result, or the ThreadRagError that refused it, per document. When the shared
        part fails (the Chroma write, a file system error), each document is tried again alone, so one bad document
        or a passing fault fails only what it must; when the first one alone fails the same way, the fault stays and
        the rest fail without more tries. An OSError alone goes on, as it did for one file."""
        try:
            try:
                return self._store_together(group)
            except (ThreadRagError, OSError) as exc:
                if len(group) == 1 and isinstance(exc, ThreadRagError):
                    return [exc]
                if len(group) == 1:
                    raise
                first = exc
            out: list = []
            for r in group:
                if out and isinstance(out[0], ThreadRagError) and str(out[0]) == str(first):
                    out.append(out[0])
                    continue
                try:
                    out.append(self._store_together([r if r is group[-1] else dataclasses.replace(r, progress=None)])[0])
                except ThreadRagError as exc:
                    out.append(exc)
            return out
        finally:
            for r in group:
                r.staged.discard()  # a no-op once committed

    def _store_together(self, group: list["_Ready"]) -> list:
        """Under the write lock: every document's pending marker, one Chroma write for all their rows, then per
        document its token cache, search part, tree and catalog commit (``_commit_one``). A kill anywhere leaves
        each document committed or pending (recovery removes it). Raises ThreadRagError when the shared part fails."""
        t_shared = time.perf_counter()  # the lock, markers and Chroma write: shared by the group's documents
        with self.write_lock():
            self.recover_locked(sweep=False)  # an attempt aborted in this process (Ctrl-C) left a pending marker
            self.catalog.reload()
            plans = [self._plan(r) for r in group]
            crash_point("after_marker")
            todo = [(r, pl) for r, pl in zip(group, plans) if isinstance(pl, _Plan)]
            shown = group[-1].progress  # the bar is past the others already: only the last one reports
            if shown and todo:
                shown("store", 0, 1)
            self.store.add_many([(pl.chunks, r.vectors, pl.gen) for r, pl in todo])
            crash_point("after_chroma")
            shared_s, total = time.perf_counter() - t_shared, max(1, sum(len(r.drafts) for r, _ in todo))
            out = []
            for r, pl in zip(group, plans):
                if isinstance(pl, _Plan):
                    try:
                        pl = self._commit_one(r, pl, shared_s * len(r.drafts) / total,
                                              shown if r is group[-1] else None)
                    except ThreadRagError as exc:
                        pl = exc
                out.append(pl)
        if shown and isinstance(out[-1], IndexResult) and out[-1].status != "unchanged":
            shown("done", 1, 1)
        return out

    def _plan(self, r: "_Ready") -> "_Plan | IndexResult | ThreadRagError":
        """Under the lock: the document's serial, generation, pending marker and chunks; or its ``unchanged`` result
        (another process indexed the same bytes meanwhile); or the error that refused it."""
        same = self._unchanged(r.key, r.content_hash, r.recipe)
        if same is not None:
            return _unchanged_result(r.shown, same, r.prepared_s, r.key)
        try:
            old = self.catalog.find_by_path(r.key)
            serial = old.serial if old else self.catalog.allocate_serial()
            gen = self.catalog.next_generation(serial) if old else 1  # on a server: reserved there first
        except ThreadRagError as exc:
            return exc
        doc_id = format_doc_id(serial)
        marker = self._pending_dir() / generation_name(serial, gen, ".json")
        atomic_write_json(marker, {"serial": serial, "generation": gen, "pid": os.getpid(), "path": r.key})
        chunks = [Chunk(chunk_id=str(ChunkId(serial, i)), doc_id=doc_id, position=i, text=d.text,
                        page_start=d.page_start, page_end=d.page_end, heading_path=list(d.heading_path),
                        char_start=d.char_start, char_end=d.char_end, parent=d.parent, n_tokens=d.n_tokens)
                 for i, d in enumerate(r.drafts)]
        return _Plan(serial, gen, doc_id, old, marker, chunks)

    def _commit_one(self, r: "_Ready", pl: "_Plan", shared_s: float, progress: Progress | None) -> IndexResult:
        """One planned document whose Chroma rows are written: its other files, then its catalog commit.
        ``shared_s``: its share of the group's lock, markers and Chroma write."""
        t = time.perf_counter()
        made_from = content_key(pl.chunks, r.recipe["embedder"], r.recipe["chunk_strategy"])  # what derived data is keyed by
        self.token_cache.write(pl.serial, pl.gen, r.staged, key=made_from)
        crash_point("after_tokens")
        from .retrieve.search_index import write_part

        write_part(self.home / "index_parts", pl.serial, pl.gen, pl.chunks, r.vectors, made_from)  # search reads no Chroma
        if self.settings.NESTED and len(pl.chunks) >= self.settings.NESTED_MIN_CHUNKS:
            if progress:
                progress("tree", 0, 1)
            self.nested.build(pl.serial, pl.gen, pl.chunks, vecs=r.vectors, key=made_from)
            crash_point("after_tree")
        seconds = lambda: round(r.prepared_s + shared_s + time.perf_counter() - t, 3)  # noqa: E731 - its own work only
        record = DocumentRecord(
            serial=pl.serial, doc_id=pl.doc_id, name=r.name, path=r.key, content_hash=r.content_hash,
            kind=r.doc.kind, chunk_count=len(pl.chunks), pages=r.doc.pages, indexed_at=Catalog.now(),
            generation=pl.gen, chunk_strategy=r.recipe["chunk_strategy"], embedder=r.recipe["embedder"],
            seconds=seconds(), content_key=made_from, origin=self.catalog.origin,
            ocr_pages=list(getattr(r.doc, "ocr_pages", [])))
        self.catalog.commit(record)  # <- the commit point
        crash_point("after_commit")
        newer = self.catalog.get(pl.serial).generation if pl.serial in dict(self.catalog.committed()) else pl.gen
        if newer != pl.gen:  # a shared library: another machine committed a newer generation first
            self.store.delete_generation(pl.serial, pl.gen)
            self.token_cache.remove(pl.serial, pl.gen)
            self._remove_derived(pl.serial, gen=pl.gen)
            pl.marker.unlink(missing_ok=True)
            raise IngestError(r.shown, f"another machine committed a newer version of {pl.doc_id} (generation "
                              f"{newer}) meanwhile; that one stays")
        if pl.old:
            self._drop_older_rows(pl.serial, pl.gen)
            self._remove_stale_files(pl.serial, pl.gen)
        crash_point("after_cleanup")
        pl.marker.unlink(missing_ok=True)
        self.library.forget(pl.serial)
        timings = {**r.timings, "store_s": round(shared_s + time.perf_counter() - t, 3)}
        return IndexResult(path=r.shown, status="replaced" if pl.old else "indexed", doc_id=pl.doc_id,
                           chunks=len(pl.chunks), pages=r.doc.pages, seconds=seconds(), timings=timings,
                           warnings=list(getattr(r.doc, "warnings", [])))

    def _recipe(self) -> dict:
        s = self.settings
        from .ingest.loaders import LOADER_VERSION

        ocr = "" if s.OCR == "auto" else f":ocr-{s.OCR}"  # turning OCR on reads a scanned page it skipped
        return {"chunk_strategy": f"{s.CHUNK_STRATEGY}:{s.CHUNK_TOKENS}/{s.CHUNK_OVERLAP}:L{LOADER_VERSION}{ocr}",
                "embedder": s.EMBEDDER_MODEL}

    def _unchanged(self, path: str, content_hash: str, recipe: dict) -> DocumentRecord | None:
        """The committed record that makes indexing this file a no-op, if any."""
        same_recipe = lambda r: r.chunk_strategy == recipe["chunk_strategy"] and r.embedder == recipe["embedder"]  # noqa: E731
        rec = self.catalog.find_by_path(path)
        if rec is not None:
            if rec.content_hash != content_hash or not same_recipe(rec):
                return None
            intact = self.token_cache.exists(rec.serial, rec.generation, rec.content_key)  # a lost one is rebuilt by re-indexing
            return rec if intact and self.stored(rec, strict=False) else None  # so are lost chunks (a deleted chroma folder)
        dup = self.catalog.find_by_hash(content_hash)  # same bytes already indexed (by this data dir) from another path
        return dup if dup is not None and same_recipe(dup) else None  # (lost chunks of it: doctor --repair)

    def _moved(self, rec: DocumentRecord, key: str, name: str) -> DocumentRecord | None:
        """``rec`` has the bytes of the file at ``key``; if its own file is gone from a folder that is still there, the
        document moved: its record takes the new path and name (under the lock; nothing is embedded again) and is
        returned (also when another process moved it first). A copy beside a file that still exists, a file whose
        folder is gone or unreadable (an unmounted drive), a path of another machine (a shared library) and a key
        that is no path are left alone; so is a file moved and edited (its bytes are another document's no more)."""
        if rec.path == key or not self.catalog.own(rec) or not self._gone(rec.path):
            return None
        with self.write_lock():
            self.catalog.reload()
            now = self.catalog.find_by_path(key)
            if now is not None:  # another process moved it meanwhile
                return now if now.serial == rec.serial else None
            cur = self.catalog.find_by_path(rec.path)
            if cur is None or (cur.serial, cur.generation) != (rec.serial, rec.generation) or not self._gone(rec.path):
                return None
            new = dataclasses.replace(cur, path=key, name=name)
            self.catalog.commit(new, if_current=True)
        self.refresh()
        return new

    @staticmethod
    def _gone(path: str) -> bool:
        """A file path that no longer exists in a folder that does (and can be listed)."""
        p = Path(path)
        return p.is_absolute() and not os.path.lexists(p) and p.parent.is_dir() and os.access(p.parent, os.R_OK | os.X_OK)

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
            marker = self._pending_dir() / f"DELETE-DOC{serial}.json"  # recovery finishes a killed delete
            atomic_write_json(marker, {"serial": serial, "delete": True, "content_hash": rec.content_hash,
                                       "generation": rec.generation,
                                       "pid": os.getpid()})
            self.catalog.remove(serial)  # commit point: readers stop seeing it
            crash_point("delete_after_remove")
            self._purge_document(serial, rec.content_hash, upto=rec.generation)
            marker.unlink(missing_ok=True)
        return rec
