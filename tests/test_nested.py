"""Nested tree invariants, exclusion, persistence, filters."""
import numpy as np
import pytest

from thread_rag.errors import ThreadRagError, UnknownDocumentError
from thread_rag.nested.tree import build_tree, node_vectors


def _check_tree(nodes, n):
    root = nodes[0]
    assert (root["first"], root["last"]) == (0, n - 1)
    for node in nodes:
        kids = [nodes[c] for c in node["children"]]
        if kids:
            assert kids[0]["first"] == node["first"] and kids[-1]["last"] == node["last"]
            for a, b in zip(kids, kids[1:]):
                assert a["last"] + 1 == b["first"]  # children cover the parent exactly, in order
            assert all(k["level"] == node["level"] + 1 for k in kids)


@pytest.mark.parametrize("n,parts,depth", [(1, 2, 6), (2, 2, 6), (37, 2, 6), (100, 3, 4), (500, 2, 6)])
def test_tree_invariants(n, parts, depth):
    rng = np.random.default_rng(n)
    v = rng.normal(size=(n, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    nodes = build_tree(v, [100] * n, parts, depth, 40)
    _check_tree(nodes, n)
    assert max(x["level"] for x in nodes) <= depth
    nv = node_vectors(v, nodes)
    assert np.allclose(np.linalg.norm(nv, axis=1), 1, atol=1e-5)


def test_split_lands_on_topic_change():
    a = np.tile([1.0, 0, 0], (6, 1))
    b = np.tile([0, 1.0, 0], (4, 1))
    nodes = build_tree(np.vstack([a, b]).astype(np.float32), [100] * 10, 2, 1, 10)
    assert [(x["first"], x["last"]) for x in nodes[1:]] == [(0, 5), (6, 9)]


def test_exclusion_never_returns_overlapping_spans(manual_engine):
    res = manual_engine.nested.retrieve("how to index documents and search them", limit=8)
    spans = {}
    for h in res.hits:
        a, b = int(h.first_chunk.split("_")[1]), int(h.last_chunk.split("_")[1])
        for x, y in spans.get(h.doc_id, []):
            assert b < x or a > y, "overlapping picks"
        spans.setdefault(h.doc_id, []).append((a, b))
        assert h.chunk_ids[0] == h.first_chunk and h.chunk_ids[-1] == h.last_chunk
    assert len(res.hits) == 8


def test_offset_and_doc_filter_and_bad_input(manual_engine):
    d = manual_engine.documents()[3]
    r = manual_engine.nested.retrieve("summaries", limit=2, doc_id=d.doc_id)
    assert r.hits and all(h.doc_id == d.doc_id for h in r.hits)
    all5 = manual_engine.nested.retrieve("summaries", limit=5)
    off = manual_engine.nested.retrieve("summaries", limit=3, offset=2)
    assert [h.node_id for h in off.hits] == [h.node_id for h in all5.hits[2:5]]
    for kw in ({"query": ""}, {"query": "x", "limit": 0}, {"query": "x", "limit": 10_000}, {"query": "x", "offset": -1}):
        with pytest.raises(ThreadRagError):
            manual_engine.nested.retrieve(**kw)
    with pytest.raises(UnknownDocumentError):
        manual_engine.nested.retrieve("x", doc_id="DOC42")


def test_persistence_round_trip(manual_engine):
    from thread_rag.nested.tree import NestedIndex

    d = max(manual_engine.documents(), key=lambda x: x.chunk_count)
    assert manual_engine.nested.path(d.serial, d.generation).is_file()
    fresh = NestedIndex(manual_engine.library, manual_engine.settings, manual_engine.home / "trees",
                        query_embedder=lambda: manual_engine.query_embedder)
    nodes, nv = fresh.load(d)
    old_nodes, old_nv = manual_engine.nested.load(d)
    assert nodes == old_nodes and np.allclose(nv, old_nv)
    stats = fresh.stats(d.doc_id)
    assert stats["nodes"] == len(nodes) and stats["depth"] >= 1


def test_a_reader_builds_a_missing_tree_in_memory_and_writes_nothing(make_engine, tmp_path):
    from conftest import write

    e = make_engine(NESTED_MIN_CHUNKS=10_000)  # no tree at index time
    e.index_file(write(tmp_path / "g.md", "# Boot\n\n" + "Install grub to the disk. " * 80 + "\n\n# Net\n\n" +
                       "Configure the network with a static address. " * 80))
    trees = e.home / "trees"
    before = sorted(trees.iterdir()) if trees.exists() else []
    res = e.nested.retrieve("static network address", limit=2)
    assert res.hits and "static" in res.hits[0].text.lower()
    assert (sorted(trees.iterdir()) if trees.exists() else []) == before == []
