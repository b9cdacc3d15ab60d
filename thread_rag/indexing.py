"""Indexing: a file (or an already loaded document) loaded, chunked, embedded and stored, crash-safe.

The expensive work (load, chunk, embed) happens outside the write lock; under the lock a pending marker is written,
the new generation's chunks and token cache are stored beside the old ones, and the catalog commit switches readers
over. A process killed at any point leaves either the old document or the new one; recovery removes the leftovers.
A folder's small files are stored in groups (one Chroma write for the group's rows, then each file's own files and
catalog commit), so a kill leaves each file committed or pending, never half.

The :class:`Indexer` works on the engine it is given (``Engine.index_paths``, ``index_file``, ``index_loaded`` ...
call it): it uses some fifteen of its parts (settings, home, catalog, store, token cache, library, the embedders,
the nested index, the write lock, recovery and removal), so it receives the engine rather than each part, and uses
only the public attributes and methods that :class:`IndexingEngine` lists. The lazy parts (store, embedders, nested
index) are read from the engine at each use, as before. This module does not import :mod:`thread_rag.engine`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol

from .atomic import atomic_write_json
from .errors import IngestError, ThreadRagError, printable, why_missing
from .faults import crash_point
from .ids import ChunkId, format_doc_id, generation_name
from .ingest import SUPPORTED_SUFFIXES, load_document, make_chunker, text_for_embedding
from .ingest.loaders import FOLDER_SUFFIXES
from .records import Chunk, DocumentRecord, IndexResult, content_key
from .settings import Settings
from .store import Catalog, Library, TokenCache

Progress = Callable[[str, int, int], None]  # (stage, done, total)
Storing = Callable[[], contextlib.AbstractContextManager]  # held around each store (a server's write lock)


class IndexingEngine(Protocol):
    """What the Indexer uses of the engine it is given (:class:`thread_rag.engine.Engine`)."""

    settings: Settings
    home: Path
    catalog: Catalog  # or a ServerCatalog on a shared library
    token_cache: TokenCache
    library: Library

    @property
    def store(self): ...  # the ChunkStore (opened on first use)

    @property
    def embedder(self): ...  # the indexing model (loaded on first use)

    @property
    def query_embedder(self): ...

    @property
    def nested(self): ...  # the nested-tree index

    def writable(self) -> None: ...

    def write_lock(self, timeout: float | None = None) -> contextlib.AbstractContextManager: ...

    def recover_locked(self, full: bool = False, sweep: bool = True) -> list[str]: ...

    def stored(self, rec: DocumentRecord, strict: bool = True) -> bool: ...

    def refresh(self) -> bool: ...

    def pending_dir(self) -> Path: ...

    def drop_generation(self, serial: int, gen: int) -> None: ...

    def drop_older(self, serial: int, gen: int) -> None: ...


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


def supported(path: Path) -> bool:
    """Whether a file of this kind can be indexed (its suffix; ``Engine.supported``)."""
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
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


def _gone(path: str) -> bool:
    """A file path that no longer exists in a folder that does (and can be listed)."""
    p = Path(path)
    return p.is_absolute() and not os.path.lexists(p) and p.parent.is_dir() and os.access(p.parent, os.R_OK | os.X_OK)


class Indexer:
    """The indexing pipeline (load, chunk, embed, group, plan, commit) of one engine."""

    def __init__(self, engine: IndexingEngine):
        self.engine = engine

    def index_paths(self, paths: Iterable[str | Path], progress: Progress | None = None,
                    check: Callable[[Path], object] | None = None, storing: Storing = nullcontext) -> list[IndexResult]:
        """Every file's result (``index_each``, all of them)."""
        return list(self.index_each(paths, progress, check, storing))

    def index_each(self, paths: Iterable[str | Path], progress: Progress | None = None,
                   check: Callable[[Path], object] | None = None,
                   storing: Storing = nullcontext) -> Iterator[IndexResult]:
        """Index every file; a bad file becomes a ``failed`` result and the rest go on.
        ``check(file)`` may refuse a file by raising ThreadRagError (the agent's allowed-roots rule).
        Files are stored in groups (``_in_groups``): one Chroma write for several small files, each file still
        its own catalog commit, each group inside ``storing()`` (a server's write lock: its readers wait for the
        stores only, not for loading and embedding). Progress: one bar for all files (done and total in KiB of file
        size, so the ETA covers the folder); its label names the file ([i/N] name), the stage and that stage's own
        count."""
        self.engine.writable()
        files = expand_paths(paths)
        kib = [max(1, _size(f) // 1024) for f in files]
        total_kib = sum(kib)

        def items():
            before = 0
            for i, f in enumerate(files):  # one bar for the whole folder, its ETA by file size (KiB)
                labelled = None if progress is None else _folder_progress(
                    progress, f"[{i + 1}/{len(files)}] {f.name}", before, kib[i], total_kib)
                before += kib[i]
                yield self._pending_file(f, labelled, check, single=len(files) == 1, storing=storing)

        for r in self._in_groups(items(), storing=storing):  # each as its group commits: a Ctrl-C leaves what was said true
            yield dataclasses.replace(r, error=r.error + self._kept_version(r.path)) if r.status == "failed" else r

    def index_file(self, path: str | Path, progress: Progress | None = None) -> IndexResult:
        self.engine.writable()
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
            rec = self.engine.catalog.find_by_path(str(Path(path).expanduser().resolve()))
        except (OSError, RuntimeError):  # a path that cannot be resolved names no document
            return ""
        return f"; {rec.doc_id} keeps the version indexed {rec.indexed_at}" if rec else ""

    def _pending_file(self, f: Path, progress: Progress | None, check=None, single: bool = False,
                      storing: Storing = nullcontext) -> "_Pending | IndexResult":
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
                                                   progress, single, storing))

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
        if not supported(resolved):
            raise IngestError(p, f"unsupported file type '{resolved.suffix or '(none)'}' "
                              f"(supported: {', '.join(sorted(SUPPORTED_SUFFIXES))})")
        try:
            raw = resolved.read_bytes()
        except OSError as exc:
            raise IngestError(p, f"cannot read ({exc.strerror})") from None
        return p, resolved, hashlib.sha256(raw).hexdigest(), t0

    def _prepare_file(self, p: Path, resolved: Path, content_hash: str, t0: float, progress: Progress | None,
                      single: bool = False, storing: Storing = nullcontext) -> "IndexResult | _Ready":
        """The file loaded, chunked and embedded, or its ``unchanged`` result (checked before loading)."""
        self.engine.refresh()
        same = self._unchanged(str(resolved), content_hash, self._recipe())
        if same is not None:
            moved = self._moved(same, str(resolved), resolved.name, storing)
            result = _unchanged_result(str(p), moved or same, time.perf_counter() - t0, str(resolved))
            return dataclasses.replace(result, moved_from=same.path) if moved else result
        if progress:
            progress("load", 0, 1)
        t_load = time.perf_counter()
        doc = load_document(resolved, shown=p, ocr=self.engine.settings.OCR != "off", progress=progress)
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
        chunker = make_chunker(self.engine.settings, self.engine.embedder.count_tokens,
                               embed=(self.engine.embedder.embed
                                      if self.engine.settings.CHUNK_STRATEGY == "semantic" else None))
        drafts = chunker.chunk(doc)
        texts = [text_for_embedding(d.text) for d in drafts]
        timings = {"chunk_s": round(time.perf_counter() - t_chunk, 3)}
        staged = self.engine.token_cache.stage()  # token vectors go to disk per batch, never all in memory
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

        embedder = self._indexing_embedder(len(texts)) if single else self.engine.embedder
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
        emb = self.engine.embedder
        if (chunks > self.engine.settings.SMALL_INDEX_CHUNKS or not getattr(emb, "from_settings", False)
                or getattr(emb, "_model", None) is not None):
            return emb
        from .embedder import OnnxMiniLMQueryEmbedder

        query = self.engine.query_embedder
        return query if isinstance(query, OnnxMiniLMQueryEmbedder) else emb

    # -- storing: groups of prepared documents, each its own transaction --------------------------
    def _store_one(self, ready: "_Ready") -> IndexResult:
        out = self._store_group([ready])[0]
        if isinstance(out, ThreadRagError):
            raise out
        return out

    def _in_groups(self, items: Iterable, group_chunks: int | None = None,
                   storing: Storing = nullcontext) -> Iterator[IndexResult]:
        """Results for ``items`` (``_Pending`` documents, or results already final), in order. Prepared documents
        wait until about ``group_chunks`` (``STORE_GROUP_CHUNKS``) chunks do, then are stored together, so small
        files share one Chroma write (a call costs ~7 ms on top of its rows); a document with the path or bytes of
        a waiting one first has those stored (its "unchanged" check must see them committed). A waiting group is
        at most ``group_chunks`` chunks of embedding: what a kill loses. On an error from one document's loading
        (not a ThreadRagError, which is its failed result) the waiting ones are stored before the error goes on,
        as indexing one file at a time would have (their results are not given); on Ctrl-C they are dropped."""
        limit = self.engine.settings.STORE_GROUP_CHUNKS if group_chunks is None else group_chunks
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
                        yield from self._flush(flushing, storing)
                    item = _make(item) if isinstance(item, _Pending) else item
                except Exception:  # a bug reading or loading one document: what waits is stored, then it surfaces
                    flushing, slots = slots, []
                    for _ in self._flush(flushing, storing):
                        pass
                    raise
                slots.append(item)
                if isinstance(item, _Ready):
                    keys.add(item.key)
                    hashes.add(item.content_hash)
                    waiting += len(item.drafts)
                if waiting >= limit:
                    flushing, slots, keys, hashes, waiting = slots, [], set(), set(), 0
                    yield from self._flush(flushing, storing)
            flushing, slots = slots, []
            yield from self._flush(flushing, storing)
        finally:  # abandoned part-way (Ctrl-C, or the caller stopped reading): nothing staged stays behind
            for s in slots:
                if isinstance(s, _Ready):
                    s.staged.discard()

    def _flush(self, slots: list, storing: Storing = nullcontext) -> Iterator[IndexResult]:
        """Store the prepared documents among ``slots`` (inside ``storing()``), then give every slot's result in
        order."""
        group = [s for s in slots if isinstance(s, _Ready)]
        if group and slots[-1] is not group[-1]:  # a later file (failed or unchanged) moved the bar on already
            group[-1].progress = None
        stored = iter([])
        if group:
            with storing():
                stored = iter(self._store_group(group))
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
        with self.engine.write_lock():
            self.engine.recover_locked(sweep=False)  # an attempt aborted in this process (Ctrl-C) left a pending marker
            self.engine.catalog.reload()
            plans = [self._plan(r) for r in group]
            crash_point("after_marker")
            todo = [(r, pl) for r, pl in zip(group, plans) if isinstance(pl, _Plan)]
            shown = group[-1].progress  # the bar is past the others already: only the last one reports
            if shown and todo:
                shown("store", 0, 1)
            self.engine.store.add_many([(pl.chunks, r.vectors, pl.gen) for r, pl in todo])
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
            old = self.engine.catalog.find_by_path(r.key)
            serial = old.serial if old else self.engine.catalog.allocate_serial()
            gen = self.engine.catalog.next_generation(serial) if old else 1  # on a server: reserved there first
        except ThreadRagError as exc:
            return exc
        doc_id = format_doc_id(serial)
        marker = self.engine.pending_dir() / generation_name(serial, gen, ".json")
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
        self.engine.token_cache.write(pl.serial, pl.gen, r.staged, key=made_from)
        crash_point("after_tokens")
        from .retrieve.search_index import write_part

        write_part(self.engine.home / "index_parts", pl.serial, pl.gen, pl.chunks, r.vectors, made_from)  # search reads no Chroma
        if self.engine.settings.NESTED and len(pl.chunks) >= self.engine.settings.NESTED_MIN_CHUNKS:
            if progress:
                progress("tree", 0, 1)
            self.engine.nested.build(pl.serial, pl.gen, pl.chunks, vecs=r.vectors, key=made_from)
            crash_point("after_tree")
        seconds = lambda: round(r.prepared_s + shared_s + time.perf_counter() - t, 3)  # noqa: E731 - its own work only
        record = DocumentRecord(
            serial=pl.serial, doc_id=pl.doc_id, name=r.name, path=r.key, content_hash=r.content_hash,
            kind=r.doc.kind, chunk_count=len(pl.chunks), pages=r.doc.pages, indexed_at=Catalog.now(),
            generation=pl.gen, chunk_strategy=r.recipe["chunk_strategy"], embedder=r.recipe["embedder"],
            seconds=seconds(), content_key=made_from, origin=self.engine.catalog.origin,
            ocr_pages=list(getattr(r.doc, "ocr_pages", [])))
        self.engine.catalog.commit(record)  # <- the commit point
        crash_point("after_commit")
        committed = dict(self.engine.catalog.committed())
        newer = self.engine.catalog.get(pl.serial).generation if pl.serial in committed else pl.gen
        if newer != pl.gen:  # a shared library: another machine committed a newer generation first
            self.engine.drop_generation(pl.serial, pl.gen)
            pl.marker.unlink(missing_ok=True)
            raise IngestError(r.shown, f"another machine committed a newer version of {pl.doc_id} (generation "
                              f"{newer}) meanwhile; that one stays")
        if pl.old:
            self.engine.drop_older(pl.serial, pl.gen)
        crash_point("after_cleanup")
        pl.marker.unlink(missing_ok=True)
        self.engine.library.forget(pl.serial)
        timings = {**r.timings, "store_s": round(shared_s + time.perf_counter() - t, 3)}
        return IndexResult(path=r.shown, status="replaced" if pl.old else "indexed", doc_id=pl.doc_id,
                           chunks=len(pl.chunks), pages=r.doc.pages, seconds=seconds(), timings=timings,
                           warnings=list(getattr(r.doc, "warnings", [])))

    def _recipe(self) -> dict:
        s = self.engine.settings
        from .ingest.loaders import LOADER_VERSION

        ocr = "" if s.OCR == "auto" else f":ocr-{s.OCR}"  # turning OCR on reads a scanned page it skipped
        return {"chunk_strategy": f"{s.CHUNK_STRATEGY}:{s.CHUNK_TOKENS}/{s.CHUNK_OVERLAP}:L{LOADER_VERSION}{ocr}",
                "embedder": s.EMBEDDER_MODEL}

    def _unchanged(self, path: str, content_hash: str, recipe: dict) -> DocumentRecord | None:
        """The committed record that makes indexing this file a no-op, if any."""
        same_recipe = lambda r: r.chunk_strategy == recipe["chunk_strategy"] and r.embedder == recipe["embedder"]  # noqa: E731
        rec = self.engine.catalog.find_by_path(path)
        if rec is not None:
            if rec.content_hash != content_hash or not same_recipe(rec):
                return None
            intact = self.engine.token_cache.exists(rec.serial, rec.generation, rec.content_key)  # a lost one is rebuilt by re-indexing
            return rec if intact and self.engine.stored(rec, strict=False) else None  # so are lost chunks (a deleted chroma folder)
        dup = self.engine.catalog.find_by_hash(content_hash)  # same bytes already indexed (by this data dir) from another path
        return dup if dup is not None and same_recipe(dup) else None  # (lost chunks of it: doctor --repair)

    def _moved(self, rec: DocumentRecord, key: str, name: str,
               storing: Storing = nullcontext) -> DocumentRecord | None:
        """``rec`` has the bytes of the file at ``key``; if its own file is gone from a folder that is still there, the
        document moved: its record takes the new path and name (under the lock; nothing is embedded again) and is
        returned (also when another process moved it first). A copy beside a file that still exists, a file whose
        folder is gone or unreadable (an unmounted drive), a path of another machine (a shared library) and a key
        that is no path are left alone; so is a file moved and edited (its bytes are another document's no more)."""
        if rec.path == key or not self.engine.catalog.own(rec) or not _gone(rec.path):
            return None
        with storing(), self.engine.write_lock():
            self.engine.catalog.reload()
            now = self.engine.catalog.find_by_path(key)
            if now is not None:  # another process moved it meanwhile
                return now if now.serial == rec.serial else None
            cur = self.engine.catalog.find_by_path(rec.path)
            if cur is None or (cur.serial, cur.generation) != (rec.serial, rec.generation) or not _gone(rec.path):
                return None
            new = dataclasses.replace(cur, path=key, name=name)
            self.engine.catalog.commit(new, if_current=True)
        self.engine.refresh()
        return new
