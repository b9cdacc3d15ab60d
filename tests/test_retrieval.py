"""Three-stage retrieval: RRF math, int8 token cache, MaxSim, schema, filters, persistence, index kinds."""
import numpy as np
import pytest

from thread_rag.errors import ThreadRagError, UnknownDocumentError
from thread_rag.retrieve.fusion import rrf
from thread_rag.retrieve.maxsim import maxsim, maxsim_many
from thread_rag.retrieve.search_index import SearchIndex
from thread_rag.store.token_cache import TokenCache, dequantize, quantize
from conftest import DOCS


def test_rrf_math_hand_computed():
    fused = rrf([[10, 20, 30], [20, 40]], k=60)
    assert fused[20] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[10] == pytest.approx(1 / 61)
    assert fused[40] == pytest.approx(1 / 62)
    assert max(fused, key=fused.get) == 20
    w = rrf([[1, 2], [2, 1]], weights=[2.0, 1.0], k=1)
    assert w[1] == pytest.approx(2 / 2 + 1 / 3) and w[2] == pytest.approx(2 / 3 + 1 / 2)
    assert rrf([[1], [2]], weights=[0.0, 1.0]) == {2: pytest.approx(1 / 61)}
    with pytest.raises(ValueError):
        rrf([[1]], k=0)


def test_int8_round_trip_error_bound(tmp_path):
    rng = np.random.default_rng(0)
    v = rng.normal(size=(500, 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    codes, scales = quantize(v)
    back = dequantize(codes, scales)
    assert codes.dtype == np.int8
    assert np.all(np.abs(back - v) <= scales[:, None] / 254 + 1e-7)
    cache = TokenCache(tmp_path)
    cache.write(3, 1, [v[:100], v[100:101], v[101:500]])
    assert cache.n_chunks(3, 1) == 3
    got = cache.get(3, 1, 2)
    assert got.shape == (399, 384) and np.abs(got - v[101:500]).max() < 0.01
    assert isinstance(np.load(tmp_path / "DOC3.g1/codes.npy", mmap_mode="r"), np.memmap)


def test_maxsim_matches_brute_force():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(7, 16))
    docs = [rng.normal(size=(n, 16)) for n in (1, 5, 30, 0)]
    brute = [np.mean([max(float(qi @ dj) for dj in d) for qi in q]) if len(d) else 0.0 for d in docs]
    assert maxsim_many(q, docs) == pytest.approx(brute, rel=1e-5)
    assert maxsim(q, docs[2]) == pytest.approx(brute[2], rel=1e-6)


def test_search_schema_and_stages(manual_engine):
    r = manual_engine.retriever.search("how do I pre-heat summaries?", k=3)
    assert r.stages_run[:2] == ["stage1", "stage2"] and len(r.hits) == 3
    h = r.hits[0]
    assert set(h.scores) == {"dense", "bm25", "rrf", "maxsim", "rerank", "hop"} and h.scores["rerank"] is None
    assert "04-windows" in manual_engine.document(h.doc_id).name
    assert isinstance(r.early_exit, bool) and "stage1_ms" in r.timings_ms and "stage2_ms" in r.timings_ms
    r1 = manual_engine.retriever.search("pre-heat summaries", k=3, pipeline="stage1_rrf")
    assert r1.stages_run == ["stage1"] and r1.hits[0].scores["maxsim"] is None and r1.early_exit is False


def test_doc_and_metadata_filters(manual_engine):
    d = manual_engine.documents()[2]
    r = manual_engine.retriever.search("install requirements", doc_id=d.doc_id, k=5)
    assert r.hits and all(h.doc_id == d.doc_id for h in r.hits)
    r = manual_engine.retriever.search("summaries", heading="Slash commands", k=5)
    assert all("Slash commands" in " > ".join(h.heading_path) for h in r.hits)
    with pytest.raises(UnknownDocumentError):
        manual_engine.retriever.search("x", doc_id="DOC99")
    for bad in ({"query": ""}, {"query": "x", "k": 0}, {"query": "x", "k": 1000}, {"query": "x", "pages": (5, 2)}):
        with pytest.raises(ThreadRagError):
            manual_engine.retriever.search(**bad)
    long = manual_engine.retriever.search("pre-heat " * 3000, k=2)
    assert len(long.query) <= 2000


def test_persistence_round_trip_without_reencoding(manual_engine, make_engine):
    first = manual_engine.retriever.search("delete a document", k=5)
    from thread_rag.engine import Engine

    class NoEncode:
        """Wraps the real embedder; fails if chunks are re-encoded (queries are fine)."""

        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def embed_with_tokens(self, texts):
            assert len(texts) == 1, "chunks were re-encoded"
            return self.inner.embed_with_tokens(texts)

    e2 = Engine(manual_engine.settings, embedder=NoEncode(manual_engine.embedder))
    second = e2.retriever.search("delete a document", k=5)
    assert [h.chunk_id for h in first.hits] == [h.chunk_id for h in second.hits]
    assert e2.retriever.index.kind == "flat"


def test_hnsw_switch_gives_same_top_hits(manual_engine):
    from thread_rag.engine import Engine

    e2 = Engine(manual_engine.settings.replace(HNSW_THRESHOLD=1), embedder=manual_engine.embedder)
    assert e2.retriever.index.kind == "hnsw"
    q = "which formats can be indexed"
    a = [h.chunk_id for h in manual_engine.retriever.search(q, k=3, pipeline="dense_only").hits]
    b = [h.chunk_id for h in e2.retriever.search(q, k=3, pipeline="dense_only").hits]
    assert a == b


def test_index_follows_catalog_changes(manual_engine, tmp_path):
    from conftest import write

    before = len(manual_engine.retriever.index)
    manual_engine.index_file(write(tmp_path / "new.md", "# Zebra care\n\nFeed the zebra twice a day with hay."))
    r = manual_engine.retriever.search("feed the zebra", k=1)
    assert "zebra" in r.hits[0].text.lower() and len(manual_engine.retriever.index) > before
    manual_engine.delete(r.hits[0].doc_id)
    assert "zebra" not in manual_engine.retriever.search("feed the zebra", k=1).hits[0].text.lower()


def test_token_cache_miss_is_recomputed_in_memory_and_never_written_by_a_reader(manual_engine, monkeypatch):
    # the model itself for the recompute (all chunks in one call), not the session's remembered vectors
    monkeypatch.setattr(manual_engine, "_embedder", getattr(manual_engine.embedder, "_real", manual_engine.embedder))
    d = manual_engine.documents()[0]
    with_cache = manual_engine.retriever.search("getting started install", doc_id=d.doc_id, k=3)
    manual_engine.token_cache.remove(d.serial, d.generation)
    r = manual_engine.retriever.search("getting started install", doc_id=d.doc_id, k=3)
    assert r.hits and "stage2" in r.stages_run
    assert [h.chunk_id for h in r.hits] == [h.chunk_id for h in with_cache.hits]
    assert [h.scores["maxsim"] for h in r.hits] == pytest.approx([h.scores["maxsim"] for h in with_cache.hits],
                                                                 abs=1e-4)  # same int8 vectors as the file
    assert not manual_engine.token_cache.exists(d.serial, d.generation)  # readers read; only indexing writes
    assert any("token cache missing" in p for p in manual_engine.check_consistency())  # doctor names it
    again = {r.path: r.status for r in manual_engine.index_paths([DOCS])}  # indexing again rebuilds it
    assert again[d.path] == "replaced" and set(again.values()) <= {"replaced", "unchanged"}
    rec = manual_engine.document(d.doc_id)
    assert manual_engine.token_cache.exists(rec.serial, rec.generation) and not manual_engine.check_consistency()


def test_search_index_allowed_rows_pages(manual_engine):
    idx = manual_engine.retriever.index
    assert isinstance(idx, SearchIndex)
    rows = idx.allowed_rows(pages=(1, 3))
    assert len(rows) == 0  # Markdown has no pages: a page filter matches nothing


def test_a_derived_index_rebuild_waits_for_the_process_already_rebuilding(manual_engine):
    """Two readers never race on the index directory: a rebuild takes ``index.lock`` and re-checks the manifest."""
    import threading
    import time

    from thread_rag.atomic import file_lock
    from thread_rag.engine import Engine

    manual_engine.retriever.index
    (manual_engine.home / "index" / "manifest.json").unlink()  # stale: the next reader must rebuild
    reader = Engine(manual_engine.settings, embedder=manual_engine.embedder)
    got = {}
    with file_lock(manual_engine.home / "index.lock"):  # another process is rebuilding
        t = threading.Thread(target=lambda: got.setdefault("n", len(reader.retriever.index)))
        t.start()
        time.sleep(1.0)
        assert t.is_alive() and "n" not in got  # waiting, not building beside it
    t.join(timeout=120)
    assert got["n"] == len(manual_engine.retriever.index) > 0


@pytest.mark.parametrize("warm", [True, False])
def test_hits_come_from_the_snapshot_the_index_ranked(make_engine, embedder, tmp_path, warm):
    """Issue 13 item 5: another process re-indexes a document between the moment a search takes its index
    and the moment it reads the hits' texts. Every hit must be the text at its chunk id in one generation
    (the ranked one, or a retried search on the new one), never a mix, never an IndexError."""
    from thread_rag.engine import Engine

    f = tmp_path / "guide.md"
    f.write_text("# Guide\n\n" + "\n\n".join(f"## Step {i}\n\nConfigure the widget bolt number {i} with the torque "
                                             f"wrench before the widget sealing stage {i}." for i in range(30)))
    reader = make_engine()
    reader.index_file(f)
    q = "widget bolt torque wrench"
    old = {c.chunk_id: c.text for c in reader.thread("DOC1").chunks}
    if warm:  # the reader holds the old generation's chunks in memory
        assert reader.retriever.search(q, k=5).hits
    else:     # it holds only the index; the old generation's chunks are gone from the store when it reads them
        reader = make_engine()
        assert len(reader.retriever.index) == len(old)
    writer = Engine(reader.settings, embedder=embedder)             # "another process" on the same store
    real = reader.embedder.embed_queries
    state = {"done": False}

    def embed_then_reindex(texts):
        if not state["done"]:
            state["done"] = True
            f.write_text("# Guide\n\n## Only step\n\nThe widget bolt is fastened by hand; no torque wrench.")
            writer.index_file(f)                                   # commits a 1-chunk generation
        return real(texts)

    reader.embedder.embed_queries = embed_then_reindex
    try:
        res = reader.retriever.search(q, k=5)
    finally:
        reader.embedder.embed_queries = real
    assert state["done"] and res.hits
    new = {c.chunk_id: c.text for c in reader.thread("DOC1").chunks}
    got = {h.chunk_id: h.text for h in res.hits}
    assert got.items() <= old.items() or got.items() <= new.items()  # one generation's texts, whichever it was
