"""The segmented search index (issue 16): BM25 against bm25s as the reference, and an index updated in place
(add, replace, delete, compaction) giving exactly the results of one built from scratch."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import DOCS, write
from thread_rag.retrieve import search_index as si
from thread_rag.retrieve.lexical import Postings, score

QUERIES = ["how do I delete a document", "install the requirements", "zebra feeding schedule",
           "which formats can be indexed", "pre-heat summaries offline", "partition the disk", "the the the"]


def _corpus() -> list[str]:
    texts = []
    for f in sorted(DOCS.glob("*.md")):
        texts += [p for p in f.read_text().split("\n\n") if p.strip()]
    return texts + ["", "the and of", "zebra zebra zebra hay"]  # an all-stopword chunk and an empty one


def test_bm25_scores_equal_bm25s_reference():
    import bm25s

    tokens = si.bm25_tokenize(_corpus())
    ref = bm25s.BM25()  # lucene, k1=1.5, b=0.75: the variant the index used before it was segmented
    ref.index([t if t else ["_empty_"] for t in tokens], show_progress=False)
    mine = Postings.from_tokens(tokens)
    for q in QUERIES:
        terms = si.bm25_tokenize([q])[0]
        got = score([(mine, 0, None)], terms, len(tokens))
        known = [t for t in terms if t in ref.vocab_dict]
        want = ref.get_scores(known) if known else np.zeros(len(tokens))
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), q
        assert got.max() > 0 or not known


def test_bm25_over_segments_with_dead_rows_equals_one_index_of_the_live_rows():
    tokens = si.bm25_tokenize(_corpus())
    cuts = [0, 7, 30, len(tokens)]
    segs = [Postings.from_tokens(tokens[a:b]) for a, b in zip(cuts, cuts[1:])]
    rng = np.random.default_rng(0)
    masks = [rng.random(len(s)) > 0.3 for s in segs]
    live_tokens = [t for (a, b), m in zip(zip(cuts, cuts[1:]), masks) for t, keep in zip(tokens[a:b], m) if keep]
    whole = Postings.from_tokens(live_tokens)
    merged = Postings.merge(list(zip(segs, masks)))
    offsets = np.cumsum([0] + [len(s) for s in segs])
    live = np.concatenate(masks)
    for q in QUERIES:
        terms = si.bm25_tokenize([q])[0]
        seg_scores = score([(s, int(o), m) for s, o, m in zip(segs, offsets, masks)], terms, len(tokens))
        assert np.all(seg_scores[~live] == 0)
        assert seg_scores[live] == pytest.approx(score([(whole, 0, None)], terms, len(whole)), rel=1e-12)
        assert np.array_equal(score([(merged, 0, None)], terms, len(merged)), seg_scores[live])


def _keyed(index, qvec, query, k=8):
    out = []
    for rows, scores in (index.dense(qvec, k, None), index.lexical(query, k, None)):
        out.append([(int(index.meta.serial[r]), int(index.meta.position[r]), round(float(s), 5))
                    for r, s in zip(rows, scores)])
    doc = min(index.doc_rows) if index.doc_rows else None
    rows = index.allowed_rows(doc)
    for rr, ss in (index.dense(qvec, 3, rows), index.lexical(query, 3, rows)):
        out.append([(int(index.meta.serial[r]), int(index.meta.position[r])) for r in rr])
    return out


def _full_rebuild(engine, tmp_path):
    """An index built from scratch from the store (its own parts folder), for comparison."""
    committed = engine.catalog.committed_keys()
    load = lambda s, g: engine.store.load(s, g, with_embeddings=True)  # noqa: E731
    parts = [si.load_part(tmp_path / "fresh_parts", s, g, k, load) for s, g, k in committed]
    base = si.merge([(p, np.ones(len(p), bool)) for p in parts])
    return si.SearchIndex(committed, base, [])


def _same_as_rebuild(engine, tmp_path):
    index = engine.retriever.index
    fresh = _full_rebuild(engine, tmp_path)
    assert len(index) == len(fresh) == sum(d.chunk_count for d in engine.documents())
    for q in QUERIES:
        qvec = engine.query_embedder.embed_queries([q])[0]
        assert _keyed(index, qvec, q) == _keyed(fresh, qvec, q), q
    return index


def test_add_replace_delete_update_in_place_and_match_a_full_rebuild(make_engine, tmp_path, monkeypatch):
    engine = make_engine()
    engine.index_paths([DOCS])
    base_index = _same_as_rebuild(engine, tmp_path)
    assert base_index.base is not None and not base_index.parts  # the first open merges everything

    loads = []
    real_load = engine.store.load
    monkeypatch.setattr(engine.store, "load", lambda s, g, **kw: loads.append(s) or real_load(s, g, **kw))
    zebra = write(tmp_path / "in" / "zebra.md", "# Zebra care\n\nFeed the zebra twice a day with hay.\n\n"
                                                "## Stripes\n\nEvery zebra has its own stripes.")
    engine.index_file(zebra)
    loads.clear()
    updated = engine.retriever.index
    assert loads == []  # indexing left the new document's part: no store read, and no other part re-read
    index = _same_as_rebuild(engine, tmp_path)
    assert index is updated and index.base is base_index.base and len(index.parts) == 1

    write(zebra, "# Zebra care\n\nFeed the zebra three times a day with fresh hay and water.")
    replaced = engine.index_file(zebra)
    assert replaced.status == "replaced"
    index = _same_as_rebuild(engine, tmp_path)
    assert index.base is base_index.base and len(index.parts) == 1 and not (index.live[: len(index.base)] == 0).any()

    victim = engine.documents()[0]
    engine.delete(victim.doc_id)
    index = _same_as_rebuild(engine, tmp_path)
    assert index.base is base_index.base and int((~index.live).sum()) == victim.chunk_count  # masked, not re-read
    assert victim.serial not in index.doc_rows

    # now any row outside the base is too many: merged (not tied to how large the manual's pages happen to be)
    monkeypatch.setattr(si, "COMPACT_MIN", 0)
    monkeypatch.setattr(si, "COMPACT_RATIO", 0.0)
    engine.index_file(write(tmp_path / "in" / "ox.md", "# Oxen\n\nAn ox pulls the plough."))
    index = _same_as_rebuild(engine, tmp_path)
    assert index.base is not base_index.base and not index.parts and index.live.all()
    assert not list((engine.home / "index_parts").glob("DOC*")), list((engine.home / "index_parts").iterdir())
    reopened = si.SearchIndex.open(engine.home / "index", engine.home / "index_parts", engine.catalog.committed_keys(),
                                   lambda s, g: pytest.fail("a current base must not read the store"),
                                   engine.settings.HNSW_THRESHOLD)
    q = "feed the zebra"
    qv = engine.query_embedder.embed_queries([q])[0]
    assert _keyed(reopened, qv, q) == _keyed(index, qv, q)


def test_another_process_sees_parts_without_a_rebuild(make_engine, tmp_path):
    from thread_rag.engine import Engine

    engine = make_engine()
    engine.index_paths([DOCS])
    engine.retriever.search("install", k=3)
    engine.index_file(write(tmp_path / "in" / "zebra.md", "# Zebra care\n\nFeed the zebra twice a day."))
    other = Engine(engine.settings, embedder=engine.embedder)  # a fresh process opens base + the new part
    hits = other.retriever.search("feed the zebra", k=1, pipeline="stage1_rrf").hits
    assert "zebra" in hits[0].text.lower()
    assert other.retriever.index.parts and other.retriever.index.base is not None


def test_an_index_updates_from_the_base_another_process_merged(make_engine, tmp_path, monkeypatch):
    """Found by the two-readers-and-a-writer trial (issue 13): process A merges the new parts into a new base and
    removes them; process B, updating its older index, must read A's base, not rebuild the removed parts from the
    store (a reader writing, and reading another process's fresh Chroma rows, which failed there)."""
    from thread_rag.engine import Engine

    engine = make_engine()
    engine.index_paths([DOCS])
    other = Engine(engine.settings, embedder=engine.embedder)  # process B: opened before the change
    old = other.retriever.index
    engine.index_file(write(tmp_path / "in" / "zebra.md", "# Zebra care\n\nFeed the zebra twice a day with hay."))
    monkeypatch.setattr(si, "COMPACT_MIN", 0)
    monkeypatch.setattr(si, "COMPACT_RATIO", 0.0)  # any part outgrows the base
    merged = engine.retriever.index  # process A merges: the zebra part is in its new base and gone from disk
    assert not merged.parts and not list((engine.home / "index_parts").glob("DOC*"))
    monkeypatch.setattr(other.store, "load", lambda *a, **kw: pytest.fail("read the store for a merged part"))
    index = other.retriever.index
    assert index is not old and index.stamp == merged.stamp and len(index) == len(merged)
    q = "feed the zebra"
    qv = engine.query_embedder.embed_queries([q])[0]
    assert _keyed(index, qv, q) == _keyed(merged, qv, q)


def test_a_token_cache_removed_between_its_check_and_its_read_ranks_again(make_engine, tmp_path, monkeypatch):
    """Found by the thousand-searches trial: a reader checked that a document's token cache was there, another process
    replaced the document (removing that generation's cache) before the reader read it, and the search failed with
    "No such file or directory". A search reads the cache once it has opened it, or ranks again."""
    from thread_rag.engine import Engine

    old_text = "# Zebra care\n\nFeed the zebra twice a day with hay.\n"
    new_text = "# Zebra care\n\nFeed the zebra three times a day with hay and water.\n"
    f = write(tmp_path / "in" / "zebra.md", old_text)
    writer = make_engine()
    assert writer.index_file(f).status == "indexed"
    reader = Engine(writer.settings, embedder=writer.embedder)
    cache = reader.retriever.token_cache
    real = type(cache)._held
    replaced = []

    def opened_then_replaced(self, serial, generation):
        held = real(self, serial, generation)
        if not replaced:  # the writer's replace lands right after the reader's first look at the cache
            write(f, new_text)
            replaced.append(writer.index_file(f).status)
        return held

    monkeypatch.setattr(type(cache), "_held", opened_then_replaced)
    hits = reader.retriever.search("how often do I feed the zebra", k=1, pipeline="stage1_2").hits
    assert replaced == ["replaced"] and hits
    assert ("twice" in hits[0].text) != ("three times" in hits[0].text)  # one version, whole
