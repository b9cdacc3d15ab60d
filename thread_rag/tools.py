"""The six tool functions: plain Python, JSON-able results, one thin call into the Engine each.

Every front door (REPL, agent, scripted sessions, CLI) goes through these, so behaviour is the
same everywhere. Errors raise :class:`~thread_rag.errors.ThreadRagError` with one-line messages.
"""
from __future__ import annotations

from pathlib import Path

from .errors import ThreadRagError
from .records import to_dict


def list_available_documents(engine) -> dict:
    docs = engine.documents()
    return {"documents": [
        {"doc_id": d.doc_id, "name": d.name, "chunks": d.chunk_count, "pages": d.pages, "kind": d.kind,
         "first_chunk": f"{d.doc_id}_000", "last_chunk": f"{d.doc_id}_{d.chunk_count - 1:03d}",
         "indexed_at": d.indexed_at} for d in docs]}


def check_allowed(engine, file_path: str) -> Path:
    """Resolve symlinks and '..' first, then require the file to sit under an allowed root."""
    s = engine.settings
    roots = [Path(r).expanduser().resolve() for r in (s.ALLOWED_ROOTS or [str(Path.cwd()), str(s.home)])]
    target = Path(file_path).expanduser().resolve()
    if not any(target == r or r in target.parents for r in roots):
        raise ThreadRagError(f"{file_path}: outside the allowed folders ({', '.join(str(r) for r in roots)}); "
                             f"set ALLOWED_ROOTS to allow it")
    return target


def index_new_document(engine, file_path: str, *, restrict: bool = False, progress=None) -> dict:
    """Index one file or directory. ``restrict`` applies the allowed-roots rule (the agent's door)."""
    if not isinstance(file_path, str) or not file_path.strip():
        raise ThreadRagError("index_new_document needs a file_path")
    check = None
    if restrict:  # every file a folder expands to must resolve under an allowed root, not only the folder
        check_allowed(engine, file_path)
        check = lambda f: check_allowed(engine, str(f))  # noqa: E731
    results = engine.index_paths([file_path], progress=progress, check=check)
    if not results:
        raise ThreadRagError(f"{file_path}: no supported files found")
    return {"results": [to_dict(r) for r in results]}


def rag_search(engine, query: str, doc_id: str | None = None, k: int | None = None, **filters) -> dict:
    return to_dict(engine.retriever.search(query, doc_id=doc_id, k=k, **filters))


def fetch_chunks_by_id(engine, chunk_ids: list[str], token_budget: int | None = None, query: str | None = None) -> dict:
    return to_dict(engine.windows.fetch(chunk_ids, token_budget=token_budget, query=query))


def pre_heat_summaries(engine, serial_id: str | None = None, progress=None) -> dict:
    from .threads.preheat import preheat

    return to_dict(preheat(engine, serial_id, progress=progress))


def nested_retrieve(engine, query: str, limit: int = 5, doc_id: str | None = None, offset: int = 0) -> dict:
    return to_dict(engine.nested.retrieve(query, limit=limit, doc_id=doc_id, offset=offset))
