"""Bounded resources (issue 16): a closed engine releases its file descriptors; per-document caches keep at
most CACHE_DOCUMENTS documents."""
from __future__ import annotations

import os

import pytest

from conftest import write
from thread_rag.lru import LRU


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_closed_engines_release_their_file_descriptors(settings_for, embedder, tmp_path):
    from thread_rag.engine import Engine

    settings = settings_for()
    doc = write(tmp_path / "in" / "a.md", "# Oxen\n\nAn ox pulls the plough through the field.")
    with Engine(settings, embedder=embedder) as e:
        e.index_file(doc)
        e.retriever.search("plough", k=1)
    before = _fds()
    for _ in range(12):
        with Engine(settings, embedder=embedder) as e:
            assert e.retriever.search("plough", k=1).hits
    assert _fds() - before < 6  # an unclosed engine keeps ~6 (sqlite, segment files, tokio) each: 70+


def test_an_engine_reopens_what_it_closed(make_engine, tmp_path):
    e = make_engine()
    e.index_file(write(tmp_path / "in" / "a.md", "# Oxen\n\nAn ox pulls the plough through the field."))
    first = e.retriever.search("plough", k=1).hits[0].chunk_id
    e.close()
    assert e.retriever.search("plough", k=1).hits[0].chunk_id == first and e.documents()


def test_per_document_caches_are_bounded(make_engine, tmp_path):
    e = make_engine(CACHE_DOCUMENTS=2)
    for i, word in enumerate(["oxen", "zebras", "llamas", "camels"]):
        e.index_file(write(tmp_path / "in" / f"{i}.md", f"# {word}\n\nAll about {word} and how {word} are fed."
                                                         f"\n\n## More\n\nThe {word} sleep at night."))
    for d in e.documents():
        e.thread(d.doc_id)
        e.retriever.search(d.name, doc_id=d.doc_id, k=2)  # reads that document's token file
        e.nested.load(d)
    assert len(e.library._threads) == 2 and len(e.token_cache._open) == 2 and len(e.nested._loaded) == 2
    last = e.documents()[-1]
    assert e.thread(last.doc_id).chunks[0].chunk_id == f"{last.doc_id}_000"  # still served, from the cache


def test_lru_drops_the_least_recently_used():
    c = LRU(2)
    c["a"], c["b"] = 1, 2
    assert c.get("a") == 1  # "a" is now the most recent
    c["c"] = 3
    assert "b" not in c and list(c) == ["a", "c"] and c["a"] == 1
    with pytest.raises(ValueError):
        LRU(0)
