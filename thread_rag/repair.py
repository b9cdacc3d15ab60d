"""The doctor's side of a library (``thread-rag doctor``, ``--repair``): what is out of line between the catalog, the
store and what is derived from it (token caches, nested trees, search-index parts), and how it is mended from the
stored chunks, or by indexing a lost document's file again. Works on an :class:`~thread_rag.engine.Engine` it is
given (``Engine.check_consistency`` and ``Engine.repair`` call these), under the engine's write lock.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from .errors import ThreadRagError, UnknownDocumentError
from .ingest import text_for_embedding
from .records import DocumentRecord, content_key
from .store.catalog import kept_logs
from .store.library import store_place
from .ids import format_doc_id


def _store_differs(rec: DocumentRecord) -> str:
    return f"{rec.doc_id}: the stored chunks are not the ones its catalog record committed (index {rec.path} again)"


def consistency_problems(engine) -> list[str]:
    """Problems between catalog, Chroma and token cache (empty list = consistent)."""
    in_store = engine.store.generations()  # listed first (see Engine.recover_locked)
    engine.catalog.reload()
    problems = []
    committed = set(engine.catalog.committed())
    for serial, gen in sorted(in_store - committed - engine.catalog.in_flight()):
        problems.append(f"orphan chunks {format_doc_id(serial)}@g{gen}")
    for rec in engine.catalog.documents():
        chunks, _ = engine.store.load(rec.serial, rec.generation)
        if not chunks and rec.chunk_count:  # one line with the way out, not one per derived file
            problems.append(f"{rec.doc_id}: its chunks are missing from the store (thread-rag doctor --repair "
                            f"indexes {rec.path} again; if that file is gone: thread-rag delete {rec.doc_id})")
            continue
        if len(chunks) != rec.chunk_count:
            problems.append(f"{rec.doc_id}: catalog says {rec.chunk_count} chunks, store has {len(chunks)}")
        if [c.position for c in chunks] != list(range(len(chunks))):
            problems.append(f"{rec.doc_id}: chunk positions are not 0..n-1")
        elif rec.content_key and content_key(chunks, rec.embedder, rec.chunk_strategy) != rec.content_key:
            problems.append(_store_differs(rec))
        n_tokens = engine.token_cache.readable_chunks(rec.serial, rec.generation)
        if n_tokens is None:
            problems.append(f"{rec.doc_id}: token cache missing or unreadable (searches recompute it in memory; "
                            f"thread-rag doctor --repair rebuilds it)")
        elif n_tokens != rec.chunk_count:
            problems.append(f"{rec.doc_id}: token cache has a different chunk count")
        if _has_tree(engine, rec) and engine.nested.state(rec) == "missing":
            problems.append(f"{rec.doc_id}: nested tree missing (nested searches build it in memory; "
                            f"thread-rag doctor --repair rebuilds it)")
        problems.extend(f"{rec.doc_id}: {what}" for what in _derived_from_other_content(engine, rec))
    for serial, gen in sorted(engine.token_cache.present() - committed):
        problems.append(f"orphan token cache {format_doc_id(serial)}@g{gen}")
    for serial, gen in sorted(engine.tree_generations() - committed):
        problems.append(f"orphan tree {format_doc_id(serial)}@g{gen}")
    for serial, gen in sorted(engine.part_generations() - committed):
        problems.append(f"orphan index part {format_doc_id(serial)}@g{gen}")
    return problems


def repair(engine, timeout: float = 60, reindex: bool = True) -> list[str]:
    """Bring the store and what is derived from it back in line with the catalog (``thread-rag doctor
    --repair``): finish or undo interrupted writes and remove orphans (full recovery), rebuild each committed
    document's lost or mismatched token cache (its stored chunk texts embedded again by the indexing model),
    nested tree and index part from the stored chunks (no source file needed); a document whose chunks the
    store lost (a deleted chroma folder) is indexed again from its file, after the lock (indexing takes it).
    What cannot be repaired is named with the way out. One note per change. ``reindex=False`` names the lost
    documents instead (after a mended catalog log one of them may be a document that had been deleted)."""
    lost: list[DocumentRecord] = []
    kept = kept_logs(engine.home)
    reindex = reindex and not kept  # while a mended log is kept, a lost one may have been deleted
    with engine.write_lock(timeout=timeout):
        notes = engine.recover_locked(full=True)
        engine.catalog.reload()
        for rec in engine.catalog.documents():
            try:
                notes.extend(_repair_document(engine, rec, lost))
            except (ThreadRagError, OSError, ValueError) as exc:  # one document's trouble does not stop the rest
                notes.append(f"{rec.doc_id}: not repaired ({str(exc) or type(exc).__name__}); index {rec.path} again")
    engine.library.clear()
    engine.drop_parts()  # their caches may hold what was repaired
    for rec in lost:
        if not reindex:
            why = f" (a line of {kept[-1].name} that did not read may have deleted it)" if kept else ""
            notes.append(f"{rec.doc_id}: its chunks are missing from the store{why}; index {rec.path} again, "
                         f"or `thread-rag delete {rec.doc_id}` if it had been deleted")
            continue
        try:
            notes.append(_index_lost(engine, rec))
        except (ThreadRagError, OSError, ValueError, TimeoutError) as exc:
            notes.append(f"{rec.doc_id}: its chunks were missing from the store; indexing {rec.path} again "
                         f"failed ({str(exc) or type(exc).__name__})")
    return notes


def _index_lost(engine, rec: DocumentRecord) -> str:
    """A document whose chunks the store lost, indexed again from its file (the record read again first:
    another process may have deleted or re-indexed it since the lock was let go)."""
    lost = f"{rec.doc_id}: its chunks were missing from the store"
    engine.refresh()
    try:
        if engine.catalog.get(rec.serial).generation != rec.generation:
            return f"{lost}; it has been indexed again since"
    except UnknownDocumentError:
        return f"{lost}; it has been deleted since"
    if not engine.catalog.own(rec):
        return f"{lost}; another data dir indexed it ({rec.path}): index it again there"
    src = Path(rec.path)
    if not src.is_absolute() or not src.is_file():
        return (f"{lost} and its file is gone ({rec.path}); restore {store_place(engine.shared)}, or `thread-rag "
                f"delete {rec.doc_id}` and index a copy of the file")
    res = engine.index_file(src)
    if res.status == "failed":
        return f"{lost}; indexing {rec.path} again failed: {res.error}"
    if res.status == "unchanged":  # the store looked whole to the cheap check: not mended
        return f"{lost}; indexing {rec.path} again found it unchanged: `thread-rag delete {rec.doc_id}` and index it"
    new = engine.document(rec.doc_id) if res.doc_id == rec.doc_id else None
    if new is None:
        return f"{lost}; {rec.path} was indexed as {res.doc_id}"
    changed = [what for what, old, cur in (("the file", rec.content_hash, new.content_hash),
                                           ("the chunking", rec.chunk_strategy, new.chunk_strategy),
                                           ("the embedder", rec.embedder, new.embedder)) if old != cur]
    since = f" ({', '.join(changed)} changed since it was indexed)" if changed else ""
    return f"{lost}; indexed again from {rec.path}{since}"


def _derived_from_other_content(engine, rec: DocumentRecord) -> list[str]:
    """Which of a document's derived files were made from other content than its record committed (a token
    cache, a nested tree, a search-index part under its name), or that it was committed before content keys."""
    if not rec.content_key:
        return ["committed before content keys: its derived data cannot be checked (thread-rag doctor --repair "
                "keys it)"]
    from .retrieve.search_index import part_key

    found = []
    if engine.token_cache.key_of(rec.serial, rec.generation) not in (None, rec.content_key):
        found.append("token cache made from other content (thread-rag doctor --repair rebuilds it)")
    if engine.nested.state(rec) == "other":
        found.append("nested tree made from other content (thread-rag doctor --repair rebuilds it)")
    if part_key(engine.home / "index_parts", rec.serial, rec.generation) not in (None, rec.content_key):
        found.append("search-index part made from other content (thread-rag doctor --repair rebuilds it)")
    return found


def _has_tree(engine, rec: DocumentRecord) -> bool:
    """Whether the document is due a nested tree under these settings."""
    return engine.settings.NESTED and rec.chunk_count >= engine.settings.NESTED_MIN_CHUNKS


def _repair_document(engine, rec: DocumentRecord, lost: list[DocumentRecord]) -> list[str]:
    """Notes of what was mended; a document the store lost is added to ``lost`` (indexed again after the lock)."""
    if not engine.stored(rec):
        engine.catalog.reload()  # another machine may have replaced it meanwhile (a shared library)
        if (rec.serial, rec.generation) in engine.catalog.committed() and not engine.stored(rec):
            lost.append(rec)
        return []
    from .retrieve.search_index import part_key, write_part

    parts = engine.home / "index_parts"
    tokens_ok = (engine.token_cache.readable_chunks(rec.serial, rec.generation) == rec.chunk_count
                 and engine.token_cache.key_of(rec.serial, rec.generation) == rec.content_key)
    tree = _has_tree(engine, rec)
    tree_ok = not tree or engine.nested.state(rec) == "ok"
    part_ok = part_key(parts, rec.serial, rec.generation) in (None, rec.content_key)  # None: merged, or rebuilt on need
    if tokens_ok and tree_ok and part_ok and rec.content_key:
        stored, _ = engine.store.load(rec.serial, rec.generation)  # the derived data is fine; is the store?
        return [] if content_key(stored, rec.embedder, rec.chunk_strategy) == rec.content_key else [_store_differs(rec)]
    if rec.embedder != engine.settings.EMBEDDER_MODEL:
        return [f"{rec.doc_id}: indexed with {rec.embedder}, not {engine.settings.EMBEDDER_MODEL}; index {rec.path} again"]
    chunks, vecs = engine.store.load(rec.serial, rec.generation, with_embeddings=True)
    if [c.position for c in chunks] != list(range(rec.chunk_count)):
        return [f"{rec.doc_id}: the store does not hold its {rec.chunk_count} chunks in order ({len(chunks)} "
                f"found); index {rec.path} again"]
    key, notes, rekey = content_key(chunks, rec.embedder, rec.chunk_strategy), [], not rec.content_key
    if not rekey and key != rec.content_key:
        return [_store_differs(rec)]
    if rekey:  # committed before keys: what was derived from it cannot be checked, so all of it is made again
        tokens_ok = tree_ok = part_ok = False
        notes.append(f"{rec.doc_id}: keyed by the content of its {len(chunks)} stored chunks")
    if not tokens_ok:
        staged = engine.token_cache.stage()
        try:
            engine.embed_tokens([text_for_embedding(c.text) for c in chunks], staged)  # as indexing does
            engine.token_cache.write(rec.serial, rec.generation, staged, key=key)
        finally:
            staged.discard()
        notes.append(f"{rec.doc_id}: token cache rebuilt from its {len(chunks)} stored chunks")
    if not tree_ok and tree:
        engine.nested.build(rec.serial, rec.generation, chunks, vecs=vecs, key=key)
        notes.append(f"{rec.doc_id}: nested tree rebuilt")
    if not part_ok:
        write_part(parts, rec.serial, rec.generation, chunks, vecs, key)
        notes.append(f"{rec.doc_id}: search-index part rebuilt")
    if rekey:  # last: the derived data of the key first, then the record that names it
        engine.catalog.commit(dataclasses.replace(rec, content_key=key), if_current=True)  # not if removed meanwhile
    return notes

