"""Indexing into the durable store: ids, re-index, replace, delete, consistency, CLI."""
import json

import pytest

from conftest import DEBIAN_PDF, DOCS, needs_shared, write
from thread_rag.errors import IngestError, UnknownDocumentError
from thread_rag.ids import ChunkId

PROC = "# Guide\n\n## Part {n}\n" + " ".join(f"Sentence {{n}}-{i} explains step {i} of the procedure." for i in range(60))


def test_index_docs_folder_and_thread_ids(manual_engine):
    docs = manual_engine.documents()
    assert [d.doc_id for d in docs] == [f"DOC{i}" for i in range(1, len(docs) + 1)]
    for d in docs:
        chunks = manual_engine.thread(d.doc_id).chunks
        assert [c.chunk_id for c in chunks] == [str(ChunkId(d.serial, i)) for i in range(d.chunk_count)]
        assert all(c.heading_path for c in chunks)
    assert manual_engine.check_consistency() == []


def test_reindex_unchanged_is_noop(make_engine, tmp_path):
    e = make_engine()
    f = write(tmp_path / "g.md", PROC.format(n=1))
    r1 = e.index_file(f)
    v = e.catalog.version
    r2 = e.index_file(f)
    assert r1.status == "indexed" and r2.status == "unchanged" and r2.doc_id == r1.doc_id
    assert e.catalog.version == v
    reads = []  # the store is checked once per catalog version (a count), not read per unchanged file
    e.store.get_chunks = lambda keys: reads.append(keys) or {}
    assert [e.index_file(f).status for _ in range(3)] == ["unchanged"] * 3 and reads == []


def test_edited_file_keeps_serial_and_replaces_all_chunks(make_engine, tmp_path):
    e = make_engine()
    f = write(tmp_path / "g.md", PROC.format(n=1))
    first = e.index_file(f)
    old_gen = e.document(first.doc_id).generation
    write(f, PROC.format(n=2) + "\nA brand new closing paragraph about rollback.")
    second = e.index_file(f)
    assert second.status == "replaced" and second.doc_id == first.doc_id
    rec = e.document(first.doc_id)
    assert rec.generation == old_gen + 1
    texts = " ".join(c.text for c in e.thread(rec.doc_id).chunks)
    assert "Sentence 2-" in texts and "Sentence 1-" not in texts and "rollback" in texts
    assert e.store.generations() == {(rec.serial, rec.generation)}
    assert e.check_consistency() == []


def test_delete_and_serials_never_reused(make_engine, tmp_path):
    e = make_engine()
    a = e.index_file(write(tmp_path / "a.md", PROC.format(n=1)))
    b = e.index_file(write(tmp_path / "b.md", PROC.format(n=2)))
    e.delete(b.doc_id)
    with pytest.raises(UnknownDocumentError):
        e.document(b.doc_id)
    c = e.index_file(write(tmp_path / "c.md", PROC.format(n=3)))
    assert (a.doc_id, b.doc_id, c.doc_id) == ("DOC1", "DOC2", "DOC3")
    assert e.check_consistency() == []
    with pytest.raises(UnknownDocumentError):
        e.delete("DOC2")


def test_directory_continues_past_bad_files(make_engine, tmp_path):
    e = make_engine()
    write(tmp_path / "d/good.md", PROC.format(n=1))
    write(tmp_path / "d/empty.txt", "")
    write(tmp_path / "d/bin.txt", bytes(range(256)) * 10)
    write(tmp_path / "d/sub/also.txt", PROC.format(n=4))
    before = e.catalog.version
    results = e.index_paths([tmp_path / "d"])
    status = {r.path.split("/")[-1]: r.status for r in results}
    assert status == {"good.md": "indexed", "empty.txt": "failed", "bin.txt": "failed", "also.txt": "indexed"}
    assert e.catalog.version > before and len(e.documents()) == 2


def test_bad_file_leaves_store_unchanged(make_engine, tmp_path):
    e = make_engine()
    e.index_file(write(tmp_path / "ok.md", PROC.format(n=1)))
    snap = (tmp_path / "home/catalog.json").read_bytes()
    for name, data in [("e.txt", b""), ("x.pdf", b"garbage"), ("b.txt", bytes(range(256)) * 10)]:
        with pytest.raises(IngestError):
            e.index_file(write(tmp_path / name, data))
    assert (tmp_path / "home/catalog.json").read_bytes() == snap
    assert e.check_consistency() == []


def test_symlink_loop_directory(make_engine, tmp_path):
    e = make_engine()
    write(tmp_path / "loop/doc.md", PROC.format(n=1))
    (tmp_path / "loop/self").symlink_to(tmp_path / "loop")
    files = e.expand_paths([tmp_path / "loop"])
    assert len(files) >= 1  # terminates; each real folder is walked once
    assert len(set(p.resolve() for p in files)) == 1


def test_cli_index_docs_delete_json(tmp_path, monkeypatch, capfd, no_env):
    """The CLI in-process (a process per command took 9 s; the doors' tests run it in fresh processes); capfd also
    sees what native code writes to descriptors 1 and 2."""
    from thread_rag import cli

    monkeypatch.chdir(tmp_path)

    def run(*a):
        capfd.readouterr()
        rc = cli.main(["--data-dir", str(tmp_path / "h"), *a])
        out, err = capfd.readouterr()
        return rc, out, err

    rc, out, err = run("index", str(DOCS / "02-indexing.md"), "--json")
    assert rc == 0, err
    assert json.loads(out)["results"][0]["status"] == "indexed"
    d = json.loads(run("docs", "--json")[1])["documents"]
    assert d[0]["doc_id"] == "DOC1" and d[0]["chunks"] > 0
    rc, out, err = run("index", str(tmp_path / "missing.pdf"))
    assert rc == 1 and err.strip().startswith("error:") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    rc, out, err = run("delete", "DOC1", "--json")
    assert rc == 0 and json.loads(out)["deleted"] == "DOC1"
    rc, out, err = run("delete", "DOC1")
    assert rc == 1 and "unknown document DOC1" in err


@needs_shared
@pytest.mark.slow
def test_debian_guide_pdf_end_to_end(debian_library, embedder):
    from thread_rag.engine import Engine

    settings, r = debian_library  # indexed once per session; other tests may have searched and asked it since
    assert r.status == "indexed" and r.pages == 113 and r.chunks > 300
    with Engine(settings, embedder=embedder) as e:
        assert all(c.page_start for c in e.thread(r.doc_id).chunks)
        assert e.index_file(DEBIAN_PDF).status == "unchanged"
        assert e.check_consistency() == []


def test_a_folder_indexes_on_one_bar_that_only_moves_forward(make_engine, tmp_path):
    e = make_engine()
    for i in range(3):
        write(tmp_path / "d" / f"f{i}.md", PROC.format(n=i) * (i + 1))
    seen = []
    e.index_paths([tmp_path / "d"], progress=lambda label, done, total: seen.append((label, done, total)))
    totals = {t for _, _, t in seen}
    done = [d for _, d, _ in seen]
    assert len(totals) == 1 and done == sorted(done) and done[-1] == totals.pop()  # one bar, forward, to the end
    assert seen[0][0].startswith("[1/3] f0.md: ") and seen[-1][0].startswith("[3/3] f2.md: done")


def test_a_copy_inside_a_folder_group_keeps_the_bar_moving_forward_and_is_not_embedded(make_engine, tmp_path):
    e = make_engine()
    write(tmp_path / "d" / "f0.md", PROC.format(n=0))
    write(tmp_path / "d" / "f1.md", PROC.format(n=0))  # f0's bytes: stores f0 first, then is "unchanged"
    write(tmp_path / "d" / "f2.md", PROC.format(n=2) * 2)
    seen = []
    got = e.index_paths([tmp_path / "d"], progress=lambda label, done, total: seen.append((label, done, total)))
    assert [r.status for r in got] == ["indexed", "unchanged", "indexed"]
    done = [d for _, d, _ in seen]
    assert done == sorted(done) and seen[-1][0].startswith("[3/3] f2.md: done")
    assert not any(label.startswith("[2/3]") for label, _, _ in seen)  # checked by its hash before loading


def _count_upserts(monkeypatch, engine) -> list:
    calls = []
    cls = type(engine.store._col)
    real = cls.upsert

    def upsert(self, *a, **kw):
        calls.append(len(kw.get("ids") or a[0]))
        return real(self, *a, **kw)

    monkeypatch.setattr(cls, "upsert", upsert)
    return calls


def test_a_folder_of_small_files_shares_chroma_writes_and_stores_what_one_by_one_does(make_engine, tmp_path,
                                                                                     monkeypatch):
    folder = tmp_path / "d"
    for i in range(6):
        write(folder / f"f{i}.md", PROC.format(n=i))
    write(folder / "z-copy.md", PROC.format(n=0))  # f0's bytes: "unchanged", and never in f0's group
    grouped, single = make_engine(HOME=str(tmp_path / "a")), make_engine(HOME=str(tmp_path / "b"),
                                                                          STORE_GROUP_CHUNKS=1)
    calls = _count_upserts(monkeypatch, grouped)
    got = grouped.index_paths([folder])
    n_grouped = len(calls)
    want = single.index_paths([folder])
    assert [(r.path, r.status, r.doc_id, r.chunks) for r in got] == [(r.path, r.status, r.doc_id, r.chunks) for r in want]
    assert [r.status for r in got] == ["indexed"] * 6 + ["unchanged"]
    assert n_grouped == 1 and len(calls) - n_grouped == 6  # one Chroma write for the six files, against six
    for a, b in zip(grouped.documents(), single.documents()):
        assert (a.doc_id, a.path, a.content_key) == (b.doc_id, b.path, b.content_key)
        assert [c.text for c in grouped.thread(a.doc_id).chunks] == [c.text for c in single.thread(b.doc_id).chunks]
    for q in ("step 3 of the procedure", "Sentence 4-17"):
        ha = grouped.retriever.search(q, k=8, pipeline="stage1_2").hits
        hb = single.retriever.search(q, k=8, pipeline="stage1_2").hits
        assert [(h.chunk_id, h.score) for h in ha] == [(h.chunk_id, h.score) for h in hb]
    for e, home, results in ((grouped, tmp_path / "a", got), (single, tmp_path / "b", want)):
        assert e.check_consistency() == []
        assert not any((home / "pending").iterdir()) and not list(home.rglob(".stage-*"))
        assert all(r.timings["store_s"] > 0 for r in results if r.status == "indexed")


def test_a_folder_group_replaces_edited_files_like_one_by_one(make_engine, tmp_path, monkeypatch):
    folder = tmp_path / "d"
    for i in range(4):
        write(folder / f"f{i}.md", PROC.format(n=i))
    e = make_engine()
    first = e.index_paths([folder])
    for i in (1, 2):
        write(folder / f"f{i}.md", PROC.format(n=10 + i))
    calls = _count_upserts(monkeypatch, e)
    again = e.index_paths([folder])
    assert [r.status for r in again] == ["unchanged", "replaced", "replaced", "unchanged"] and len(calls) == 1
    assert [r.doc_id for r in again] == [r.doc_id for r in first]
    assert {(s, g) for s, g in e.store.generations()} == {(1, 1), (2, 2), (3, 2), (4, 1)}  # old rows gone
    assert "Sentence 11-3" in " ".join(c.text for c in e.thread("DOC2").chunks)
    assert e.check_consistency() == [] and not any((e.home / "pending").iterdir())


def test_a_failed_group_write_is_retried_file_by_file(make_engine, tmp_path, monkeypatch):
    from thread_rag.errors import ThreadRagError

    folder = tmp_path / "d"
    for i in range(4):
        write(folder / f"f{i}.md", PROC.format(n=i))
    e = make_engine(STORE_GROUP_CHUNKS=8)  # two files a group
    real, calls = e.store.add_many, []

    def add_many(docs):  # a write holding f1's rows fails after writing them (a bad file)
        calls.append(len(docs))
        real(docs)
        if any("Sentence 1-0" in c.text for chunks, _, _ in docs for c in chunks):
            raise ThreadRagError("disk full (simulated)")

    monkeypatch.setattr(e.store, "add_many", add_many)
    got = e.index_paths([folder])
    assert calls == [2, 1, 1, 2]  # the group, then each of its files alone, then the next group
    assert [r.status for r in got] == ["indexed", "failed", "indexed", "indexed"]
    assert got[1].error == "disk full (simulated)" and got[1].path.endswith("f1.md")
    assert [d.path.rsplit("/", 1)[-1] for d in e.documents()] == ["f0.md", "f2.md", "f3.md"]
    e.recover(full=False)  # the failed attempts' rows went with their markers
    assert e.store.generations() == set(e.catalog.committed()) and e.check_consistency() == []
    monkeypatch.setattr(e.store, "add_many", real)
    again = e.index_paths([folder])
    assert [r.status for r in again] == ["unchanged", "indexed", "unchanged", "unchanged"]
    assert e.check_consistency() == [] and not any((e.home / "pending").iterdir())
    assert not list(e.home.rglob(".stage-*"))


def test_a_fault_that_stays_is_tried_once_more_per_group_not_once_per_file(make_engine, tmp_path, monkeypatch):
    from thread_rag.errors import ThreadRagError

    for i in range(6):
        write(tmp_path / "d" / f"f{i}.md", PROC.format(n=i))
    e = make_engine(STORE_GROUP_CHUNKS=12)  # three files a group
    calls = []

    def add_many(docs):
        calls.append(len(docs))
        raise ThreadRagError("Chroma server unreachable (simulated)")

    monkeypatch.setattr(e.store, "add_many", add_many)
    got = e.index_paths([tmp_path / "d"])
    assert calls == [3, 1, 3, 1] and {r.status for r in got} == {"failed"}
    assert {r.error for r in got} == {"Chroma server unreachable (simulated)"}
    assert e.documents() == [] and not list(e.home.rglob(".stage-*"))


def test_index_loaded_many_yields_each_result_in_order_once_its_group_committed(make_engine, monkeypatch):
    from thread_rag.ingest.text import parse_text

    e = make_engine(STORE_GROUP_CHUNKS=12)
    calls = _count_upserts(monkeypatch, e)
    docs = [(parse_text(PROC.format(n=i), f"mem://{i}", markdown=True), f"mem://{i}", f"doc {i}", f"hash{i}")
            for i in range(5)]
    seen = []
    for r in e.index_loaded_many(iter(docs)):
        assert r.status == "indexed" and r.path in {d.path for d in e.documents()}  # committed before it is yielded
        seen.append(r.path)
    assert seen == [f"mem://{i}" for i in range(5)]
    assert 1 < len(calls) < 5  # grouped, and more than one group


def test_a_reader_that_stops_mid_folder_keeps_what_was_yielded_and_leaves_nothing_staged(make_engine):
    from thread_rag.ingest.text import parse_text

    e = make_engine(STORE_GROUP_CHUNKS=10_000)
    doc = lambda i: (parse_text(PROC.format(n=i), f"mem://{i}", markdown=True), f"mem://{i}", "d", f"h{i}")  # noqa: E731
    docs = [doc(0), doc(1), (doc(0)[0], "mem://copy", "d", "h0"), doc(3)]  # the copy makes 0 and 1 store first
    results = e.index_loaded_many(iter(docs))
    assert next(results).path == "mem://0"
    results.close()
    assert [d.path for d in e.documents()] == ["mem://0", "mem://1"]
    assert not list(e.home.rglob(".stage-*")) and not any((e.home / "pending").iterdir())


def test_a_group_abandoned_before_its_write_leaves_nothing_behind(make_engine):
    from thread_rag.ingest.text import parse_text

    e = make_engine(STORE_GROUP_CHUNKS=10_000)

    def docs():
        for i in range(2):
            yield parse_text(PROC.format(n=i), f"mem://{i}", markdown=True), f"mem://{i}", f"doc {i}", f"hash{i}"
        raise KeyboardInterrupt  # Ctrl-C while the third file loads: two embedded documents wait, unwritten

    with pytest.raises(KeyboardInterrupt):
        list(e.index_loaded_many(docs()))
    assert e.documents() == [] and not list(e.home.rglob(".stage-*"))
    assert not (e.home / "pending").exists() or not any((e.home / "pending").iterdir())


def test_a_loader_bug_stores_the_waiting_files_before_it_surfaces(make_engine):
    from thread_rag.ingest.text import parse_text

    e = make_engine(STORE_GROUP_CHUNKS=10_000)

    def docs():
        yield parse_text(PROC.format(n=0), "mem://0", markdown=True), "mem://0", "doc 0", "hash0"
        raise ValueError("a loader bug")

    with pytest.raises(ValueError):
        list(e.index_loaded_many(docs()))
    assert [d.path for d in e.documents()] == ["mem://0"]  # as one file at a time would have left it
    assert not list(e.home.rglob(".stage-*"))


def test_the_same_bytes_under_two_keys_are_stored_once(make_engine, monkeypatch):
    from thread_rag.ingest.text import parse_text

    e = make_engine()
    doc = parse_text(PROC.format(n=0), "mem://a", markdown=True)
    embedded = []
    real = e.embedder.embed_with_tokens
    monkeypatch.setattr(e.embedder, "embed_with_tokens", lambda texts: embedded.append(len(texts)) or real(texts))
    got = list(e.index_loaded_many([(doc, "mem://a", "a", "h0"), (doc, "mem://b", "b", "h0")]))
    assert [(r.status, r.doc_id) for r in got] == [("indexed", "DOC1"), ("unchanged", "DOC1")]
    assert len(embedded) == 1 and len(e.documents()) == 1  # the copy is checked before it is embedded
