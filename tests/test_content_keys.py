"""Derived data is keyed by the content it was made from (issue 13 item 3, issue 16).

Token caches, search-index parts and the merged base, and nested trees are named by (serial, generation), and
each carries the content key of the chunks it was derived from (``records.content_key``: a hash of the
chunk texts, places and the recipe); the catalog record carries the key of what it committed. A derived file
made from other content under the same name (a reused serial after a lost catalog, a copied or restored
folder) is never used: readers treat it as missing, doctor names it, ``doctor --repair`` rebuilds it."""
from __future__ import annotations

import shutil

import pytest

from conftest import DOCS


def _setup(make_engine, tmp_path, name):
    return make_engine(HOME=str(tmp_path / name), CHUNK_TOKENS=40, CHUNK_OVERLAP=0, CHUNK_MIN_TOKENS=0,
                       NESTED_MIN_CHUNKS=2)


def _hits(engine, query):
    return [(h.chunk_id, h.text) for h in engine.retriever.search(query, k=5).hits]


def test_derived_data_made_from_other_content_is_never_used(make_engine, tmp_path):
    small = tmp_path / "small.md"
    small.write_text((DOCS / "01-getting-started.md").read_text())
    large = tmp_path / "large.md"
    large.write_text((DOCS / "02-indexing.md").read_text() + "\n\n" + (DOCS / "03-searching.md").read_text())
    a, b = _setup(make_engine, tmp_path, "a"), _setup(make_engine, tmp_path, "b")
    a.index_file(small)
    b.index_file(large)  # also DOC1 generation 1, other content
    assert b.document("DOC1").chunk_count > a.document("DOC1").chunk_count
    query = "how do I index a folder of files"
    want = _hits(a, query)
    a.close()
    # b's derived files under a's names: what a reused (serial, generation) or a restored folder meets
    for sub in ("tokcache/DOC1.g1", "index_parts/DOC1.g1"):
        shutil.rmtree(a.home / sub, ignore_errors=True)
        shutil.copytree(b.home / sub, a.home / sub)
    for suffix in (".json", ".npy"):
        shutil.copy(b.home / "trees" / f"DOC1.g1{suffix}", a.home / "trees" / f"DOC1.g1{suffix}")
    shutil.rmtree(a.home / "index")  # the merged base held a's own rows: the part is read instead
    again = _setup(make_engine, tmp_path, "a")
    assert _hits(again, query) == want  # b's vectors, BM25 rows and token vectors are not used
    small_texts = {c.text for c in again.thread("DOC1").chunks}
    nested = again.nested.retrieve(query, limit=3)
    assert nested.hits and all(set(h.chunk_ids) <= {c.chunk_id for c in again.thread("DOC1").chunks}
                                   for h in nested.hits)
    assert all(h.text for h in nested.hits) and small_texts
    shutil.rmtree(again.home / "index_parts" / "DOC1.g1", ignore_errors=True)  # the search wrote its own part:
    shutil.copytree(b.home / "index_parts" / "DOC1.g1", again.home / "index_parts" / "DOC1.g1")  # b's again
    problems = again.check_consistency()
    assert any("token cache" in p and "other content" in p for p in problems), problems
    assert any("tree" in p and "other content" in p for p in problems), problems
    assert any("search-index part" in p and "other content" in p for p in problems), problems
    notes = again.repair()
    assert all(any(what in n for n in notes) for what in ("token cache rebuilt", "tree rebuilt", "part rebuilt")), notes
    assert again.check_consistency() == []
    again.close()
    assert _hits(_setup(make_engine, tmp_path, "a"), query) == want


def test_the_content_key_follows_texts_places_and_recipe():
    from thread_rag.records import Chunk, content_key

    def chunk(i, text, page=1):
        return Chunk(chunk_id=f"DOC1_{i:03d}", doc_id="DOC1", position=i, text=text, page_start=page, page_end=page,
                     heading_path=["A"], char_start=0, char_end=len(text))

    base = [chunk(0, "alpha"), chunk(1, "beta")]
    k = content_key(base, "m1", "sentence:200/0")
    assert len(k) == 64 and k == content_key([chunk(0, "alpha"), chunk(1, "beta")], "m1", "sentence:200/0")
    assert k != content_key([chunk(0, "alpha"), chunk(1, "beta!")], "m1", "sentence:200/0")
    assert k != content_key([chunk(0, "alpha"), chunk(1, "beta", page=2)], "m1", "sentence:200/0")
    assert k != content_key([chunk(0, "alphabeta")], "m1", "sentence:200/0")
    assert k != content_key(base, "m2", "sentence:200/0")
    assert k != content_key(base, "m1", "sentence:100/0")


def test_a_library_from_before_content_keys_works_and_repair_keys_it(make_engine, tmp_path):
    """Records and derived files written before content keys (no key anywhere) are still read; doctor says
    they cannot be checked, and ``doctor --repair`` keys them (derived data made again from the store)."""
    import dataclasses
    import json

    e = _setup(make_engine, tmp_path, "old")
    e.index_file(DOCS / "02-indexing.md")
    query = "how do I index a folder of files"
    want = _hits(e, query)
    rec = e.document("DOC1")
    with e.write_lock():
        e.catalog.commit(dataclasses.replace(rec, content_key=""))  # as an older version committed it
    e.close()
    (e.home / "tokcache" / "DOC1.g1" / "key").unlink()
    tree = e.home / "trees" / "DOC1.g1.json"
    data = json.loads(tree.read_text())
    del data["key"]
    tree.write_text(json.dumps(data))
    manifest = json.loads((e.home / "index" / "manifest.json").read_text())  # a base merged before keys (format 2)
    manifest.update(format=2, keys=[k[:4] for k in manifest["keys"]])
    (e.home / "index" / "manifest.json").write_text(json.dumps(manifest))
    old = _setup(make_engine, tmp_path, "old")
    real_load = old.store.load
    old.store.load = lambda *a, **kw: pytest.fail("an old base is read as it is, not rebuilt from the store")
    assert _hits(old, query) == want
    old.store.load = real_load
    assert old.nested.retrieve(query, limit=2).hits
    assert any("before content keys" in p for p in old.check_consistency())
    notes = old.repair()
    assert any("keyed by the content" in n for n in notes), notes
    assert old.document("DOC1").content_key == rec.content_key  # the key indexing would have given it
    assert old.check_consistency() == [] and old.repair() == []
    assert (old.home / "tokcache" / "DOC1.g1" / "key").read_text() == rec.content_key
    assert _hits(old, query) == want
