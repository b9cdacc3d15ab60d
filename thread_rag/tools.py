"""The one tool layer: plain functions with JSON-able results, one thin call into the Engine each (list, index,
remove, search, fetch, pre-heat, nested, compare, the library's statistics).

Every front door (the chat, the CLI, scripts, MCP, HTTP) goes through these, so behaviour is the same everywhere;
``agent/tools.py`` gives them their argument schemas and one-line errors for the doors that take JSON arguments.
Errors raise :class:`~thread_rag.errors.ThreadRagError` with one-line messages.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from .errors import ThreadRagError
from .records import distinct_names, to_dict


def list_available_documents(engine) -> dict:
    """The documents; ``label`` is the name a person is shown (with folders where two share a name)."""
    docs = engine.documents()
    labels = distinct_names(docs)
    return {"documents": [
        {"doc_id": d.doc_id, "name": d.name, "label": labels[d.doc_id], "chunks": d.chunk_count,
         "pages": d.pages, "kind": d.kind,
         "first_chunk": f"{d.doc_id}_000", "last_chunk": f"{d.doc_id}_{d.chunk_count - 1:03d}",
         "indexed_at": d.indexed_at} for d in docs]}


def library_stats(engine) -> dict:
    """How many documents and chunks the library holds, and where it lives (``thread-rag stats``, ``/stats``, the
    chat's "how many chunks are indexed?")."""
    docs = engine.documents()
    return {"documents": len(docs), "chunks": sum(d.chunk_count for d in docs), "home": str(engine.home)}


def check_allowed(engine, file_path: str) -> Path:
    """Resolve symlinks and '..' first, then require the file to sit under an allowed root."""
    s = engine.settings
    roots = [Path(r).expanduser().resolve() for r in (s.ALLOWED_ROOTS or [str(Path.cwd()), str(s.home)])]
    target = Path(file_path).expanduser().resolve()
    if not any(target == r or r in target.parents for r in roots):
        raise ThreadRagError(f"{file_path}: outside the allowed folders ({', '.join(str(r) for r in roots)}); "
                             f"set ALLOWED_ROOTS to allow it")
    return target


def index_new_document(engine, file_path: str, *, restrict: bool = False, progress=None,
                       storing=contextlib.nullcontext) -> dict:
    """Index one file or directory. ``restrict`` applies the allowed-roots rule (the agent's door); ``storing()`` is
    held around each store (``Indexer.index_each``)."""
    if not isinstance(file_path, str) or not file_path.strip():
        raise ThreadRagError("file_path is empty: name a file or folder to index")
    check = None
    if restrict:  # every file a folder expands to must resolve under an allowed root, not only the folder
        check_allowed(engine, file_path)
        check = lambda f: check_allowed(engine, str(f))  # noqa: E731
    results = engine.index_paths([file_path], progress=progress, check=check, storing=storing)
    if not results:
        raise ThreadRagError(f"{file_path}: no supported files found")
    return {"results": [to_dict(r) for r in results]}


def searchable(query) -> str:
    """``query`` as a door takes it: refused in one line when it is longer than a search reads (never cut: what is
    left of it may be padding, and the words that matter lost)."""
    from .retrieve.pipeline import MAX_QUERY_CHARS

    if isinstance(query, str) and len(query) > MAX_QUERY_CHARS:
        raise ThreadRagError(f"the query is {len(query):,} characters; at most {MAX_QUERY_CHARS:,} are searched: "
                             "shorten it to what you are looking for")
    return query


def rag_search(engine, query: str, doc_id: str | None = None, k: int | None = None, **filters) -> dict:
    return to_dict(engine.retriever.search(searchable(query), doc_id=doc_id, k=k, **filters))


def fetch_chunks_by_id(engine, chunk_ids: list[str], token_budget: int | None = None, query: str | None = None) -> dict:
    return to_dict(engine.windows.fetch(chunk_ids, token_budget=token_budget, query=query))


def budget_option(value: int | None) -> int | None:
    """A typed ``--budget`` (CLI, chat), refused in the option's own name (the tool's says token_budget)."""
    if value is not None and value < 1:
        raise ThreadRagError(f"--budget {value}: must be a positive number of tokens")
    return value


def pre_heat_summaries(engine, serial_id: str | None = None, progress=None) -> dict:
    from .threads.preheat import preheat

    engine.writable()
    engine.writable(engine.settings.cache_path)
    return to_dict(preheat(engine.library, lambda: engine.summarizer, engine.settings.cache_path, serial_id, progress=progress))


def remove_document(engine, doc_id: str) -> dict:
    """Remove one document (its chunks, vectors and catalog entry) in one transaction: the chat (after the person
    said yes), MCP with writes allowed, the HTTP API and ``thread-rag delete`` all remove through here."""
    from .engine import uploads_dir

    rec = engine.delete(doc_id)
    folder = Path(rec.path).parent  # a file the HTTP door uploaded goes with it (a user's own file stays)
    if folder.parent == uploads_dir(engine.home).resolve():
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return {"removed": rec.doc_id, "name": rec.name, "path": rec.path, "chunks": rec.chunk_count}


def nested_retrieve(engine, query: str, limit: int = 5, doc_id: str | None = None, offset: int = 0) -> dict:
    return to_dict(engine.nested.retrieve(searchable(query), limit=limit, doc_id=doc_id, offset=offset))


def compare_documents(engine, doc_a: str, doc_b: str, topic: str | None = None, explain: bool = False,
                      explain_limit: int = 10, explain_within: int | None = None, limit: int | None = None) -> dict:
    """Align two documents' chunk threads step by step and label each pair same / changed / only-in-A /
    only-in-B (``thread_rag.compare``). ``topic`` keeps the aligned region around that topic's best search hit
    in each document (a document none of whose entry hits reaches ``RELEVANCE_MIN`` or names every word of the
    topic is named in
    ``topic_missing`` and ``note`` instead of lending an unrelated region; neither document: an error); ``explain`` adds one LLM
    sentence to each of the first ``explain_limit`` changed pairs (cached), only among the first
    ``explain_within`` changed-or-only rows when given (the rows a view limited to that many shows); without
    it no model is called. ``limit`` lists only the first that many changed / only-in rows (``rows_not_listed``
    counts the rest, same rows included). Both documents must have been indexed with the same embedder."""
    import time

    from .compare.run import Side, compare_sides
    from .ids import format_doc_id, parse_doc_id

    for name, value in (("doc_a", doc_a), ("doc_b", doc_b)):
        if not isinstance(value, str) or not value.strip():
            raise ThreadRagError(f"compare_documents needs {name}, a document id such as DOC1")
    serial_a, serial_b = parse_doc_id(doc_a), parse_doc_id(doc_b)  # malformed ids: one clear line
    if serial_a == serial_b:
        raise ThreadRagError(f"{format_doc_id(serial_a)} was given twice: compare two different documents "
                             f"(e.g. DOC1 DOC2)")
    if topic is not None and (not isinstance(topic, str) or not topic.strip()):
        raise ThreadRagError("the topic is empty: leave it out to compare whole documents")
    if topic is not None:
        from .retrieve.pipeline import plain_query

        topic = plain_query(topic)
    t0 = time.perf_counter()
    recs = [engine.document(serial) for serial in (serial_a, serial_b)]  # unknown ids: one clear line
    _same_embedder(*recs, engine.settings.EMBEDDER_MODEL)
    sides, labels = [], distinct_names(recs)  # two editions of one file name: told apart by their folders
    for rec in recs:
        chunks, vectors = engine.library.vectors(rec.serial, rec.generation)  # a store that lost them: named
        sides.append(Side(rec.doc_id, rec.name, chunks, vectors, rec.content_hash, label=labels[rec.doc_id]))
    t_load = time.perf_counter() - t0
    focus, missing = None, []
    t_search = 0.0
    if topic is not None:
        t = time.perf_counter()
        focus = _topic_focus(engine, topic, sides)
        t_search = time.perf_counter() - t
        missing = [side.doc_id for side, pos in zip(sides, focus) if pos is None]
        if focus == (None, None):
            raise ThreadRagError(f"nothing about {topic!r} in {sides[0].doc_id} or {sides[1].doc_id}")
    explainer = None
    if explain:
        from .compare.explain import ChangeExplainer

        explainer = ChangeExplainer(engine.chat_model, engine.settings.cache_path)
    res = compare_sides(sides[0], sides[1], focus=focus, topic=topic,
                        explain=None if explainer is None else explainer.for_docs(sides[0], sides[1]),
                        explain_limit=explain_limit, explain_within=explain_within)
    res.timings_ms["load_ms"] = round(t_load * 1000, 1)
    if topic is not None:
        res.timings_ms["search_ms"] = round(t_search * 1000, 1)
    res.timings_ms["total_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    out = to_dict(res)
    if topic is not None:
        out["topic_missing"] = missing
        if missing:
            out["note"] = f"nothing about {topic!r} in {' or '.join(missing)}"
    if limit is not None:  # a tool door's reply of a manageable size
        listed = [r for r in out["rows"] if r["label"] != "same"][:limit]
        out["rows"], out["rows_not_listed"] = listed, len(out["rows"]) - len(listed)
    return out


def _same_embedder(rec_a, rec_b, configured: str) -> None:
    """Vectors from two embedders live in different spaces: aligning them would pair chunks at random. The
    message names both documents and embedders, and how to re-index the one that differs from EMBEDDER_MODEL
    (both when neither matches it)."""
    from .embedder import stored_embedder
    from .errors import EmbedderMismatchError

    emb_a, emb_b = stored_embedder(rec_a), stored_embedder(rec_b)
    if emb_a == emb_b:
        return
    stale = [r for r, e in ((rec_a, emb_a), (rec_b, emb_b)) if e != configured] or [rec_a, rec_b]
    raise EmbedderMismatchError(
        f"{rec_a.doc_id} ({rec_a.name}) was indexed with {emb_a} and {rec_b.doc_id} ({rec_b.name}) with {emb_b}: "
        f"their vectors cannot be aligned; re-index with one embedder (EMBEDDER_MODEL is {configured}): "
        + " and ".join(f"thread-rag index {r.path}" for r in stale))


def _topic_focus(engine, topic: str, sides) -> tuple:
    """Each document's best hit for the topic (its position), or None where there is none or where none of its
    entry hits (``READ_K``, as the agent reads) reaches the relevance floor (``RELEVANCE_MIN``: the cosine the
    agent needs to answer from the documents at all) or names every word of the topic (a short topic such as
    "pgbouncer" stays under the floor against a whole chunk that names it)."""
    from .agent.reading import best_similarity
    from .ids import ChunkId
    from .retrieve.search_index import bm25_tokenize

    s = engine.settings
    qvec = engine.query_embedder.embed_queries([topic])[0]
    words = set(bm25_tokenize([topic])[0])
    out = []
    for side in sides:
        hits = engine.retriever.search(topic, doc_id=side.doc_id, k=max(s.READ_K, 1)).hits
        ids = [h.chunk_id for h in hits]
        if ids and best_similarity(engine.retriever.index, qvec, ids) >= s.RELEVANCE_MIN:
            out.append(ChunkId.parse(ids[0]).position)
            continue
        naming = [h for h in hits if words and words <= set(bm25_tokenize([h.text])[0])]
        out.append(ChunkId.parse(naming[0].chunk_id).position if naming else None)  # centred on the naming hit
    return tuple(out)
