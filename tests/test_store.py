"""Indexing into the durable store: ids, re-index, replace, delete, consistency, CLI."""
import json
import subprocess
import sys

import pytest

from conftest import DEBIAN_PDF, DOCS, REPO, needs_shared, write
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


def test_cli_index_docs_delete_json(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    import os

    env = {**os.environ, **env}
    run = lambda *a: subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path / "h"), *a],  # noqa: E731
                                    capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    r = run("index", str(DOCS / "02-indexing.md"), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["status"] == "indexed"
    r = run("docs", "--json")
    d = json.loads(r.stdout)["documents"]
    assert d[0]["doc_id"] == "DOC1" and d[0]["chunks"] > 0
    r = run("index", str(tmp_path / "missing.pdf"))
    assert r.returncode == 1 and r.stderr.strip().startswith("error:") and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = run("delete", "DOC1", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["deleted"] == "DOC1"
    r = run("delete", "DOC1")
    assert r.returncode == 1 and "unknown document DOC1" in r.stderr


@needs_shared
@pytest.mark.slow
def test_debian_guide_pdf_end_to_end(make_engine):
    e = make_engine()
    r = e.index_file(DEBIAN_PDF)
    assert r.status == "indexed" and r.pages == 113 and r.chunks > 300
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
