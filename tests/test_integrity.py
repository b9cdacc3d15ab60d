"""Integrity of the store beyond SIGKILL trials (issue 13): in-process recovery after an aborted
write, leftover temporaries, the allowed-roots rule on every expanded file, and warnings that reach
the user (PDF pages without text, corrupt summary caches)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DATA, needs_shared, write
from thread_rag.records import to_dict


def guide(n: int, count: int) -> str:
    """A Markdown guide of ``count`` paragraphs; ``n`` makes each version's text distinct."""
    return f"# Guide\n\n## Part {n}\n" + "\n\n".join(
        f"Sentence {n}-{i} explains step {i} of the procedure in some detail." for i in range(count))


# -- 1. an aborted write followed by a re-index in the same process ----------------------------
def test_reindex_after_aborted_attempt_in_same_process_keeps_only_new_chunks(make_engine, tmp_path, monkeypatch):
    e = make_engine()
    f = write(tmp_path / "g.md", guide(1, 40))
    first = e.index_file(f)
    # an edit whose indexing is interrupted (Ctrl-C) after Chroma rows of the new generation were written
    write(f, guide(2, 200))
    real_write = e.token_cache.write

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(e.token_cache, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        e.index_file(f)
    rec = e.document(first.doc_id)
    assert len(e.store.load(rec.serial, rec.generation + 1)[0]) > first.chunks  # the aborted rows are there
    monkeypatch.setattr(e.token_cache, "write", real_write)

    write(f, guide(3, 20))  # shorter than the aborted attempt
    second = e.index_file(f)
    rec = e.document(second.doc_id)
    assert second.status == "replaced" and rec.generation == 2
    chunks, _ = e.store.load(rec.serial, rec.generation)
    oracle = make_engine(HOME=str(tmp_path / "oracle"))  # the same file indexed on a clean store
    expected = [c.text for c in oracle.thread(oracle.index_file(f).doc_id).chunks]
    assert len(chunks) == rec.chunk_count == second.chunks == len(expected)
    assert [c.text for c in chunks] == expected
    assert e.store.generations() == {(rec.serial, rec.generation)}
    assert e.check_consistency() == []
    assert not any((e.home / "pending").iterdir())


# -- 3. temporaries of killed writers -------------------------------------------------------------
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def live_pid():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def leftover(path: Path, is_dir: bool = False, age: float = 0.0) -> Path:
    if is_dir:
        path.mkdir(parents=True)
        (path / "part.npy").write_bytes(b"x" * 16)
    else:
        write(path, b"x" * 16)
    if age:
        old = time.time() - age
        os.utime(path, (old, old))
    return path


def test_recovery_removes_temporaries_of_dead_writers_and_keeps_live_ones(make_engine, tmp_path, live_pid):
    e = make_engine()
    home, dead = e.home, dead_pid()
    assert dead != live_pid
    gone = [
        leftover(home / "tokcache" / ".DOC3.g2.tmp", is_dir=True),            # TokenCache.write, under the lock
        leftover(home / "tokcache" / f".DOC3.g1.old-{dead}", is_dir=True),    # atomic_replace_dir
        leftover(home / f".index.{dead}.tmp", is_dir=True),                   # SearchIndex.build
        leftover(home / f".index.old-{dead}", is_dir=True),
        leftover(home / "index_parts" / f".DOC3.g2.{dead}.tmp", is_dir=True),
        leftover(home / ".catalog.json.k3j9x_2a.tmp"),                        # atomic_write_bytes, under the lock
        leftover(home / "pending" / ".DOC3.g2.json.q8w7e6r5.tmp"),
        leftover(home / "trees" / ".DOC3.g2.json.a1b2c3d4.tmp", age=3600),    # not under the lock: by age
        leftover(e.settings.cache_path / ".summaries-ab.json.z9y8x7w6.tmp", age=3600),
    ]
    kept = [
        leftover(home / f".index.{live_pid}.tmp", is_dir=True),               # its writer is still running
        leftover(home / "index_parts" / f".DOC3.g2.old-{live_pid}", is_dir=True),
        leftover(home / "trees" / ".DOC3.g2.npy.e5f6g7h8.tmp"),               # fresh: may be a live writer's
        leftover(e.settings.cache_path / ".summaries-ab.json.m1n2b3v4.tmp"),
        leftover(home / "trees" / "DOC3.g2.npy", age=3600),                   # not a temporary at all
    ]
    make_engine()  # a new process start runs recovery
    assert [p for p in gone if p.exists()] == []
    assert [p for p in kept if not p.exists()] == []


def test_a_live_writer_blocks_startup_cleanup(make_engine, tmp_path):
    e = make_engine()
    tmp = leftover(e.home / "tokcache" / ".DOC3.g2.tmp", is_dir=True)
    with e.write_lock():  # another writer at work: its temporaries are not leftovers
        e.recover()
        assert tmp.exists()
    e.recover()
    assert not tmp.exists()


def test_the_write_lock_is_taken_again_by_its_own_thread_only(make_engine):
    """A server takes the library's write lock before its readers' lock, and the store inside takes it again: the
    thread holding it passes, any other thread of the process waits (and times out) as another process would."""
    import threading

    e = make_engine()
    e.home.mkdir(parents=True)  # a library's folder (a fresh one is made by its first write)
    got = []

    def other():
        try:
            with e.write_lock(timeout=0.2):
                got.append("taken")
        except TimeoutError:
            got.append("timed out")
    with e.write_lock():
        with e.write_lock(timeout=0):  # this thread again: at once
            t = threading.Thread(target=other)
            t.start()
            t.join()
        assert e._writer == threading.get_ident()
    assert got == ["timed out"] and e._writer is None
    other()
    assert got == ["timed out", "taken"]


def test_model_join_removes_stale_parts_of_dead_joiners(tmp_path, monkeypatch, live_pid):
    import hashlib

    from thread_rag.llm import model_files

    parts = [write(tmp_path / "parts" / f"p{i}.bin", bytes([i]) * 1000) for i in range(3)]
    data = b"".join(p.read_bytes() for p in parts)
    model = model_files.PackagedModel("tiny", "tiny-part", 3, len(data), hashlib.sha256(data).hexdigest(), "tiny.gguf")
    monkeypatch.setattr(model_files, "part_files", lambda m: parts)
    d = tmp_path / "models"
    stale = leftover(d / f".tiny.gguf.{dead_pid()}.tmp")
    busy = leftover(d / f".tiny.gguf.{live_pid}.tmp")
    other = leftover(d / f".other.gguf.{dead_pid()}.tmp")  # another model's: not this join's business
    final = model_files.ensure_joined(model, d)
    assert final.read_bytes() == data
    assert not stale.exists() and busy.exists() and other.exists()


# -- 4. the allowed-roots rule holds for every file a folder expands to ---------------------------
def test_agent_door_indexes_nothing_outside_the_roots_nor_hidden(make_engine, tmp_path):
    from thread_rag.tools import index_new_document

    root, outside = tmp_path / "allowed", tmp_path / "outside"
    write(outside / "secret.md", "# Secret\n\nThe outside password is swordfish.")
    write(outside / "single.md", "# Single\n\nA lone outside file reached through a file link.")
    write(root / "docs" / "guide.md", guide(1, 10))
    write(root / "docs" / ".hidden" / "notes.md", "# Notes\n\nHidden notes that must stay private.")
    (root / "docs" / "linked").symlink_to(outside, target_is_directory=True)
    (root / "docs" / "file-link.md").symlink_to(outside / "single.md")
    e = make_engine(ALLOWED_ROOTS=[str(root)])
    out = index_new_document(e, str(root / "docs"), restrict=True)
    assert [d.name for d in e.documents()] == ["guide.md"]
    by_name = {Path(r["path"]).name: r for r in out["results"]}
    assert by_name["guide.md"]["status"] == "indexed"
    assert by_name["file-link.md"]["status"] == "failed" and "outside the allowed folders" in by_name["file-link.md"]["error"]
    assert set(by_name) == {"guide.md", "file-link.md"}


def test_folder_walk_skips_hidden_folders_and_links_leading_out(make_engine, tmp_path):
    top, outside = tmp_path / "top", tmp_path / "outside"
    write(outside / "o.md", "outside")
    write(top / "a.md", "a")
    write(top / "sub" / "b.md", "b")
    write(top / ".git" / "c.md", "c")
    (top / "out").symlink_to(outside, target_is_directory=True)
    (top / "again").symlink_to(top / "sub", target_is_directory=True)  # inside the walked folder: followed,
    files = make_engine().expand_paths([top])                            # and sub/ is then not walked twice
    assert sorted(f.relative_to(top).as_posix() for f in files) == ["a.md", "again/b.md"]


# -- 5. warnings that reach the user --------------------------------------------------------------
FOUR_PAGES = DATA / "docfixtures-pypdf-samples/004-pdflatex-4-pages/pdflatex-4-pages.pdf"


@needs_shared
def test_pdf_pages_whose_extraction_fails_are_named_in_the_result(make_engine, tmp_path, monkeypatch):
    from pypdf import PageObject

    real = PageObject.extract_text
    calls = []

    def flaky(page, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:  # the third page of the document
            raise ValueError("broken content stream")
        return real(page, *args, **kwargs)

    monkeypatch.setattr(PageObject, "extract_text", flaky)
    f = tmp_path / "four.pdf"
    f.write_bytes(FOUR_PAGES.read_bytes())
    r = make_engine().index_file(f)
    assert r.status == "indexed" and r.pages == 4
    assert len(r.warnings) == 1 and "page 3" in r.warnings[0] and "1 of 4 pages" in r.warnings[0]
    assert to_dict(r)["warnings"] == r.warnings


@needs_shared
def test_pdf_without_extraction_failures_has_no_warnings(make_engine, tmp_path):
    f = tmp_path / "four.pdf"
    f.write_bytes(FOUR_PAGES.read_bytes())
    assert make_engine().index_file(f).warnings == []


def test_doctor_names_a_corrupt_summary_cache_that_was_set_aside(settings_for):
    from thread_rag.doctor import summary_cache_check
    from thread_rag.threads.summary_cache import SummaryCache

    s = settings_for()
    cache = SummaryCache(s.cache_path)
    cache.put_many("ab" * 32, [("extractive", "chunk text", "DOC1_000", "a summary")])
    assert summary_cache_check(s)["ok"]
    cache.path_for("ab" * 32).write_text('{"entries": {"x": ')  # torn by hand
    check = summary_cache_check(s)
    assert not check["ok"] and cache.path_for("ab" * 32).name in check["detail"]
    assert cache.get("ab" * 32, "extractive", "chunk text") is None
    assert cache.warnings and "corrupt" in cache.warnings[0]
    aside = list(s.cache_path.glob("summaries-*.corrupt-*"))
    assert len(aside) == 1
    check = summary_cache_check(s)
    assert not check["ok"] and aside[0].name in check["detail"] and check["fix"]


def test_full_recovery_removes_orphan_trees(make_engine, tmp_path):
    e = make_engine(NESTED_MIN_CHUNKS=1)
    r = e.index_file(write(tmp_path / "g.md", guide(1, 40)))
    rec = e.document(r.doc_id)
    trees = e.home / "trees"
    assert {f.name for f in trees.iterdir()} == {f"DOC1.g{rec.generation}.json", f"DOC1.g{rec.generation}.npy"}
    for suffix in (".json", ".npy"):  # a generation the catalog never committed
        write(trees / f"DOC1.g{rec.generation + 1}{suffix}", b"{}")
    part = e.home / "index_parts" / f"DOC1.g{rec.generation + 2}"  # a search-index part of one, without a tree
    part.mkdir(parents=True)
    assert e.check_consistency() == [f"orphan tree DOC1@g{rec.generation + 1}",
                                     f"orphan index part DOC1@g{rec.generation + 2}"]
    e.recover(full=True)
    assert e.check_consistency() == [] and not part.exists()
    assert {f.name for f in trees.iterdir()} == {f"DOC1.g{rec.generation}.json", f"DOC1.g{rec.generation}.npy"}


def test_the_doctor_names_a_deleted_tree_and_the_repair_rebuilds_it(make_engine, tmp_path):
    """A document's nested tree deleted from disk went unreported by the plain doctor (a new user's trial)."""
    e = make_engine(NESTED_MIN_CHUNKS=1)
    rec = e.document(e.index_file(write(tmp_path / "g.md", guide(1, 40))).doc_id)
    e.nested.path(rec.serial, rec.generation).with_suffix(".npy").unlink()  # either of its two files
    assert e.check_consistency() == ["DOC1: nested tree missing (nested searches build it in memory; "
                                     "thread-rag doctor --repair rebuilds it)"]
    assert e.repair() == ["DOC1: nested tree rebuilt"] and e.check_consistency() == []
    e.nested.path(rec.serial, rec.generation).unlink()
    assert make_engine(NESTED_MIN_CHUNKS=10**6).check_consistency() == []  # a document too short for a tree: none due


def test_a_lost_catalog_never_restarts_the_ids_over_an_existing_store(make_engine, tmp_path):
    """Issue 13 item 3: a corrupt catalog is set aside; the next start must not begin an empty catalog over
    the chunks, vectors and index parts still keyed by the old (serial, generation)s."""
    from thread_rag.errors import CorruptFileError

    e = make_engine()
    e.index_file(write(tmp_path / "a.md", guide(1, 12)))
    cat = e.home / "catalog.json"
    cat.write_text('{"format": 1, "documents": {"1": ')  # torn
    with pytest.raises(CorruptFileError, match=r"corrupt .*; run `thread-rag doctor --repair`"):  # the way out at once
        make_engine()
    aside = list(e.home.glob("catalog.json.corrupt-*"))
    assert len(aside) == 1 and not cat.exists()
    with pytest.raises(CorruptFileError) as again:  # the second start refuses too, and says what to do
        make_engine()
    msg = str(again.value)
    assert aside[0].name in msg and "index again" in msg and "\n" not in msg
    # a catalog deleted by hand while the store still holds chunks: refused the same way
    aside[0].unlink()
    with pytest.raises(CorruptFileError, match="catalog.json is missing"):
        make_engine()
    # restoring a good catalog brings the library back unchanged
    cat.write_text(json.dumps({"format": 1, "next_serial": 2, "version": 1, "documents": {
        "1": {**e.document("DOC1").__dict__}}}))
    assert [d.doc_id for d in make_engine().documents()] == ["DOC1"]


def test_a_fresh_or_empty_store_starts_without_a_catalog(make_engine):
    e = make_engine()
    assert e.documents() == [] and e.store.count() == 0  # opens the (empty) store
    assert not (e.home / "catalog.json").exists()
    assert make_engine().documents() == []                # an empty store is not a lost library


def test_a_catalog_older_than_its_store_is_refused(make_engine, tmp_path):
    """Issue 13 item 3: a catalog restored from an older backup (what the lost-catalog message advises) would hand
    out DOC2 again over the DOC2 the store still holds, and re-index DOC1 as generation 2 over the stored
    generation 2: old and new rows would mix. The start refuses it and names what the store holds beyond it."""
    from thread_rag.errors import CorruptFileError

    e = make_engine()
    a = write(tmp_path / "a.md", guide(1, 12))
    e.index_file(a)
    files = ("catalog.json", "catalog.log")
    backup = {n: (e.home / n).read_bytes() for n in files if (e.home / n).exists()}
    e.index_file(write(tmp_path / "b.md", guide(2, 30)))
    e.index_file(write(a, guide(3, 12)))  # DOC1 generation 2
    assert make_engine().documents()  # the current catalog opens
    newest = {n: (e.home / n).read_bytes() for n in files if (e.home / n).exists()}
    for n in files:
        (e.home / n).unlink(missing_ok=True)
        if n in backup:
            (e.home / n).write_bytes(backup[n])
    with pytest.raises(CorruptFileError) as refused:
        make_engine()
    msg = str(refused.value)
    assert "older than" in msg and "DOC2" in msg and "DOC1 generation 2" in msg and "\n" not in msg
    for n in files:  # the newest catalog put back: the library opens as it was
        (e.home / n).unlink(missing_ok=True)
        if n in newest:
            (e.home / n).write_bytes(newest[n])
    assert [(d.doc_id, d.generation) for d in make_engine().documents()] == [("DOC1", 2), ("DOC2", 1)]


def test_a_writer_between_its_token_cache_and_its_commit_does_not_look_like_a_stale_catalog(make_engine, tmp_path):
    """The check above must not refuse a library that another process is writing: a generation whose pending
    marker exists is a write in progress, not a newer store."""
    from thread_rag.errors import CorruptFileError
    from thread_rag.ids import generation_name

    e = make_engine()
    e.index_file(write(tmp_path / "a.md", guide(1, 12)))
    (e.token_cache.root / generation_name(1, 2)).mkdir(parents=True)  # a live writer re-indexing DOC1, so far
    marker = e.home / "pending" / generation_name(1, 2, ".json")
    marker.parent.mkdir(exist_ok=True)
    marker.write_text(json.dumps({"serial": 1, "generation": 2, "pid": os.getpid(), "path": "x"}))
    with e.write_lock():  # the writer holds the lock: startup recovery leaves its files alone
        assert [(d.doc_id, d.generation) for d in make_engine().documents()] == [("DOC1", 1)]
    marker.unlink()  # without its marker the same folder is a store ahead of the catalog
    with pytest.raises(CorruptFileError, match="DOC1 generation 2"):
        make_engine()


def test_a_crashed_reindex_with_a_torn_marker_is_cleaned_not_refused(make_engine, tmp_path):
    """A pending marker whose content cannot be read (markers are written atomically, so this is disk damage or a
    hand edit, not a kill) beside its new generation's files: recovery removes those files by the marker's name
    (before: it dropped the marker and kept the files, and every later start took them for a store ahead of its
    catalog)."""
    from thread_rag.ids import generation_name

    e = make_engine()
    e.index_file(write(tmp_path / "a.md", guide(1, 12)))
    stray = e.token_cache.root / generation_name(1, 2)
    stray.mkdir(parents=True)
    (e.home / "pending").mkdir(exist_ok=True)
    (e.home / "pending" / generation_name(1, 2, ".json")).write_text('{"serial": 1, "gen')  # torn
    assert [(d.doc_id, d.generation) for d in make_engine().documents()] == [("DOC1", 1)]
    assert not stray.exists() and not list((e.home / "pending").iterdir())
    assert [(d.doc_id, d.generation) for d in make_engine().documents()] == [("DOC1", 1)]  # and starts again


def test_doctor_repair_rebuilds_lost_derived_data_from_the_store_and_removes_orphans(make_engine, tmp_path):
    """Issue 13 item 2 / issue 16: the store (Chroma) is the source of truth and what is derived from it can be
    rebuilt from it. A lost token cache, a lost nested tree and orphan chunks (a generation no catalog names)
    were reported by the doctor with the advice "index again", which removes no orphans and needs the source
    file. ``Engine.repair`` (``thread-rag doctor --repair``) fixes them from the stored chunks alone."""
    import shutil

    import numpy as np

    e = make_engine(NESTED_MIN_CHUNKS=4)
    f = write(tmp_path / "a.md", guide(1, 40))
    rec = e.index_file(f)
    serial = int(rec.doc_id[3:])
    before = [e.token_cache.get(serial, 1, i) for i in range(rec.chunks)]
    tree = e.nested.path(serial, 1)
    chunks, vecs = e.store.load(serial, 1, with_embeddings=True)
    e.store.add(chunks[:3], vecs[:3], 7)          # orphan rows of a generation no catalog names
    shutil.rmtree(e.token_cache.dir_for(serial, 1))
    tree.unlink()
    f.unlink()                                     # the source file is gone too: only the store is left
    e.close()
    e = make_engine(NESTED_MIN_CHUNKS=4)
    problems = e.check_consistency()
    assert any("orphan chunks" in p for p in problems) and any("token cache missing" in p for p in problems)
    notes = e.repair()
    assert any("orphan chunks" in n for n in notes) and any("token cache rebuilt" in n for n in notes)
    assert any("tree rebuilt" in n for n in notes)
    assert e.check_consistency() == [] and tree.is_file()
    after = [e.token_cache.get(serial, 1, i) for i in range(rec.chunks)]
    assert all(a.shape == b.shape and np.allclose(a, b, atol=0.02) for a, b in zip(before, after))
    assert e.repair() == []                        # nothing left to do
    assert e.retriever.search("step 7 of the procedure", k=3).stages_run[:2] == ["stage1", "stage2"]


def test_doctor_repair_is_one_command(make_engine, tmp_path):
    import shutil

    e = make_engine()
    rec = e.index_file(write(tmp_path / "a.md", guide(1, 12)))
    shutil.rmtree(e.token_cache.dir_for(int(rec.doc_id[3:]), 1))
    e.close()
    def doctor(*extra) -> dict:
        cp = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(e.home), "doctor", "--json",
                             *extra], capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[1])
        assert "Traceback" not in cp.stderr and cp.returncode in (0, 1), cp.stderr[-2000:]
        return {r["check"]: r for r in json.loads(cp.stdout)}

    looked = doctor()
    assert not looked["store consistency"]["ok"] and "doctor --repair" in looked["store consistency"]["fix"]
    assert "repair" not in looked                  # without --repair the doctor only looks
    fixed = doctor("--repair")
    assert "token cache rebuilt" in fixed["repair"]["detail"], fixed["repair"]
    assert fixed["store consistency"]["ok"], fixed["store consistency"]


def test_repair_mends_a_damaged_or_mismatched_token_cache_and_names_what_it_cannot(make_engine, settings_for, tmp_path):
    """Damage the lost-cache test does not cover: a token cache whose files cannot be read, one written for another
    chunk count (a running reader holding the old files sees the repaired ones), a document indexed with another
    embedder (named, not repaired), and a repair while another process writes (one line, nothing done)."""
    import dataclasses
    import shutil

    import numpy as np

    from thread_rag.doctor import repair

    e = make_engine()
    ra = e.index_file(write(tmp_path / "a.md", guide(1, 30)))
    rb = e.index_file(write(tmp_path / "b.md", guide(2, 30)))
    a, b = int(ra.doc_id[3:]), int(rb.doc_id[3:])
    good = e.token_cache.get(b, 1, 0)
    (e.token_cache.dir_for(a, 1) / "codes.npy").unlink()                       # a: unreadable
    e.token_cache.write(b, 1, [np.ones((4, 384), np.float32)] * 2)             # b: two chunks, not ra.chunks
    held = e.token_cache.get(b, 1, 0)                                          # this reader maps the wrong one
    assert held.shape != good.shape
    problems = " ".join(e.check_consistency())
    assert "missing or unreadable" in problems and "different chunk count" in problems
    with e.write_lock():                                                       # another process writes
        row = repair(e.settings, timeout=0.1)
    assert not row["ok"] and "another thread-rag process is writing" in row["detail"] and "again" in row["fix"]
    notes = " ".join(e.repair())
    assert f"{ra.doc_id}: token cache rebuilt" in notes and f"{rb.doc_id}: token cache rebuilt" in notes
    assert np.allclose(e.token_cache.get(b, 1, 0), good, atol=0.02)            # the same reader, the new files
    assert e.check_consistency() == []
    with e.write_lock():                                                       # c: indexed with another embedder
        e.catalog.reload()
        e.catalog.commit(dataclasses.replace(e.document(ra.doc_id), embedder="some-other-model"))
    shutil.rmtree(e.token_cache.dir_for(a, 1))
    assert f"{ra.doc_id}: indexed with some-other-model" in " ".join(e.repair())
    assert not e.token_cache.exists(a, 1)


def test_a_lost_chroma_store_is_named_and_index_or_repair_brings_the_documents_back(make_engine, tmp_path):
    """chroma.sqlite3 deleted (or the chroma folder lost) under a good catalog: a search said "the library changed
    during the search; try again" (it had not), the doctor's advice "index the documents again" answered
    "unchanged" and did nothing, and `doctor --repair` only named the documents. Now the search names the damage,
    indexing a file whose chunks are gone indexes it again, and the repair re-indexes every document whose file
    is still there (naming the one whose file is gone)."""
    import shutil

    from thread_rag.errors import CorruptFileError

    e = make_engine()
    fa, fb, fc = (write(tmp_path / f"{n}.md", guide(i, 30)) for i, n in enumerate("abc", 1))
    ra, rb, rc = (e.index_file(f) for f in (fa, fb, fc))
    e.close()
    shutil.rmtree(e.home / "chroma")
    fc.unlink()
    e = make_engine()
    with pytest.raises(CorruptFileError) as err:
        e.retriever.search("step 7 of the procedure", k=3)
    msg = str(err.value)
    assert "changed during the search" not in msg and "missing from the store" in msg and "doctor" in msg, msg
    with pytest.raises(CorruptFileError, match=f"{rb.doc_id}: chunks missing"):  # it said "out of range (.._-01)"
        e.chunk(f"{rb.doc_id}_000")
    assert f"{rc.doc_id}: its chunks are missing from the store (thread-rag doctor --repair" in e.check_consistency()[2]
    e.close()
    for derived in ("index", "index_parts"):      # nothing to rank with but the (empty) store: it said ValueError
        shutil.rmtree(e.home / derived, ignore_errors=True)
    e = make_engine()
    with pytest.raises(CorruptFileError, match="missing from the store"):
        e.retriever.search("step 7 of the procedure", k=3)
    again = e.index_file(fa)
    assert again.status == "replaced" and again.doc_id == ra.doc_id, again
    notes = " ".join(e.repair())
    assert f"{rb.doc_id}: its chunks were missing from the store; indexed again from {fb.resolve()}" in notes, notes
    assert f"{rc.doc_id}: its chunks were missing from the store and its file is gone" in notes, notes
    assert f"{ra.doc_id}:" not in notes, notes      # already back
    with pytest.raises(CorruptFileError, match=f"{rc.doc_id}: chunks missing"):  # named until it is dealt with
        e.retriever.search("step 7 of the procedure", k=3)
    e.delete(rc.doc_id)
    hits = e.retriever.search("Sentence 2-7 explains step 7", k=3, doc_id=rb.doc_id).hits
    assert hits and "2-7" in hits[0].text
    assert e.check_consistency() == []


def test_missing_rows_are_damage_only_while_their_generation_is_committed(make_engine, tmp_path):
    """A generation replaced by another process is a change (the search ranks again), not damage; rows missing from
    the committed generation are damage, also when only some are gone (a search building its index from the store
    named nothing and would have ranked a part made from the rows that were left)."""
    import shutil

    from thread_rag.errors import CorruptFileError, LibraryChangedError

    e = make_engine()
    f = write(tmp_path / "a.md", guide(1, 60))
    first = e.index_file(f)
    serial = int(first.doc_id[3:])
    write(f, guide(2, 60))
    assert e.index_file(f).status == "replaced"     # generation 2 committed, generation 1's rows deleted
    assert isinstance(e.library.missing({(serial, 1)}), LibraryChangedError)
    assert not isinstance(e.library.missing({(serial, 1)}), CorruptFileError)
    assert isinstance(e.library.missing({(serial, 2)}), CorruptFileError)
    from thread_rag.store.chunk_store import record_id

    assert e.document(first.doc_id).chunk_count >= 3
    e.store._col.delete(ids=[record_id(serial, 1, 2)])  # one row of the committed generation lost
    e.close()
    for derived in ("index", "index_parts"):
        shutil.rmtree(e.home / derived, ignore_errors=True)
    e = make_engine()
    with pytest.raises(CorruptFileError, match=f"{first.doc_id}: chunks missing from the store"):
        e.retriever.search("step 7 of the procedure", k=3)


def test_a_lost_reindex_line_is_mended_but_nothing_on_disk_is_taken_for_committed(make_engine, settings_for, tmp_path):
    """The worst line for the log to lose is a re-index's commit: the new generation's files are on disk, the old
    generation's rows are gone. The mend cannot tell that from a catalog restored from an older backup (whose newer
    files recovery would delete), so it takes nothing on disk for committed: the library is still refused as older
    than its store, with the way out, and nothing is deleted."""
    import json as _json

    from thread_rag.doctor import repair
    from thread_rag.errors import CorruptFileError

    e = make_engine()
    f = write(tmp_path / "a.md", guide(1, 60))
    first = e.index_file(f)
    serial = int(first.doc_id[3:])
    write(f, guide(2, 60))
    assert e.index_file(f).status == "replaced"
    e.close()
    log = e.home / "catalog.log"
    lines = log.read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if _json.loads(line).get("op") == "commit"
              and _json.loads(line)["record"]["generation"] == 2)
    lines[at] = b'{"op": "commit", "rec\xff\xfe garbage'
    log.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CorruptFileError, match="doctor --repair"):
        make_engine()
    row = repair(settings_for())
    assert not row["ok"] and "older than the store" in row["detail"], row
    with pytest.raises(CorruptFileError, match="older than the store"):
        make_engine()
    assert e.token_cache.exists(serial, 2) and (e.home / "index_parts" / f"DOC{serial}.g2").is_dir()  # kept


def test_orphan_rows_do_not_hide_a_document_the_store_lost(make_engine, tmp_path):
    """The re-index's cheap check counts the store once: surplus rows (an older chroma folder restored: orphans)
    must not make up for a document's lost rows."""
    from thread_rag.store.chunk_store import record_id

    e = make_engine()
    fa, fb = write(tmp_path / "a.md", guide(1, 60)), write(tmp_path / "b.md", guide(2, 60))
    ra, rb = e.index_file(fa), e.index_file(fb)
    a, b = int(ra.doc_id[3:]), int(rb.doc_id[3:])
    chunks, vecs = e.store.load(a, 1, with_embeddings=True)
    e.store.add(chunks, vecs, 7)                                  # orphan rows: more than b's
    e.store.add(chunks[:1], vecs[:1], 8)
    e.store._col.delete(ids=[record_id(b, i, 1) for i in range(rb.chunks)])
    assert e.store.count() > ra.chunks + rb.chunks               # the surplus more than covers the loss
    assert e.index_file(fb).status == "replaced"


def test_repair_keeps_what_a_dropped_catalog_line_committed(make_engine, settings_for, tmp_path):
    """A new document's commit line lost to a disk error: the mend drops the line, and the same repair's full
    recovery then deleted the document's intact rows as orphans (a new user found it). While the damaged log is
    kept beside the catalog, what no record names is kept and named; once the user has indexed again and deleted
    the damaged log, the next repair removes the leftovers."""
    import json as _json

    from thread_rag.doctor import repair

    e = make_engine()
    fa, fb = write(tmp_path / "a.md", guide(1, 60)), write(tmp_path / "b.md", guide(2, 60))
    e.index_file(fa)
    rb = e.index_file(fb)
    b = int(rb.doc_id[3:])
    e.close()
    log = e.home / "catalog.log"
    lines = log.read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if _json.loads(line).get("op") == "commit"
              and _json.loads(line)["record"]["serial"] == b)
    lines[at] = lines[at][:40] + b"\x00\x00\x00"
    log.write_bytes(b"\n".join(lines) + b"\n")
    row = repair(settings_for())
    assert f"kept {rb.doc_id} generation 1" in row["detail"] and "removed orphan" not in row["detail"], row
    e = make_engine()
    assert len(e.store.load(b, 1)[0]) == rb.chunks                # the rows are still there
    again = e.index_file(fb)
    assert again.status == "indexed" and again.doc_id != rb.doc_id
    e.close()
    for kept in e.home.glob("catalog.log.corrupt-*"):
        kept.unlink()
    assert f"removed orphan chunks {rb.doc_id} generation 1" in repair(settings_for())["detail"]


def test_a_document_a_dropped_remove_line_brings_back_is_not_indexed_again_while_the_damaged_log_is_kept(
        make_engine, settings_for, tmp_path):
    """A deleted document's "remove" line lost to a disk error: the mend brings its record back without its rows.
    The repair that mended names it instead of indexing its file again, but a second `doctor --repair` indexed
    it again (the deleted document came back). While the damaged log is kept, every repair only names it."""
    import json as _json

    from thread_rag.doctor import repair

    e = make_engine()
    fa, fb = write(tmp_path / "a.md", guide(1, 60)), write(tmp_path / "b.md", guide(2, 60))
    e.index_file(fa)
    b = e.index_file(fb).doc_id
    e.delete(b)
    e.close()
    log = e.home / "catalog.log"
    lines = log.read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if _json.loads(line).get("op") == "remove")
    lines[at] = lines[at][:20] + b"\xff\xfe"
    log.write_bytes(b"\n".join(lines) + b"\n")
    for attempt in range(2):
        row = repair(settings_for())
        assert ("the damaged log is kept as" in row["detail"]) == (attempt == 0), row  # the first repair mended it
        kept = next(e.home.glob("catalog.log.corrupt-*")).name
        assert (f"{b}: its chunks are missing from the store (a line of {kept} that did not read may have deleted "
                f"it); index {fb} again, or `thread-rag delete {b}` if it had been deleted") in row["detail"], row
        assert "indexed again" not in row["detail"], row
        assert b in [d.doc_id for d in make_engine().documents()]  # named, its rows not written back
        assert make_engine().store.load(int(b[3:]), 1)[0] == []
    from thread_rag.doctor import checks

    row = next(r for r in checks(settings_for()) if r["check"] == "catalog")  # the doctor names the kept log
    assert not row["ok"] and kept in row["detail"] and f"delete {kept}" in row["fix"], row
    for kept in e.home.glob("catalog.log.corrupt-*"):
        kept.unlink()  # the user read the note and keeps the document: the next repair indexes it again
    assert f"{b}: its chunks were missing from the store; indexed again" in repair(settings_for())["detail"]
    rec = make_engine().document(b)
    assert len(make_engine().store.load(rec.serial, rec.generation)[0]) == rec.chunk_count > 0


def test_repair_rebuilds_a_lost_catalog_snapshot_from_a_log_that_holds_its_history(make_engine, settings_for, tmp_path):
    """catalog.json truncated (a disk error) while catalog.log held every record: every command refused the library
    and the advice meant indexing everything again (a new user's trial); the repair now folds the log into a new
    snapshot when the log holds the catalog's whole history."""
    from thread_rag.doctor import repair, store_checks
    from thread_rag.errors import CorruptFileError

    e = make_engine()
    ra, rb = (e.index_file(write(tmp_path / f"{n}.md", guide(i, 40))) for i, n in enumerate("ab", 1))
    e.close()
    (e.home / "catalog.json").write_bytes(b"")
    assert "doctor --repair" in next(r for r in store_checks(settings_for()) if r["check"] == "catalog")["fix"]
    with pytest.raises(CorruptFileError):
        make_engine()
    row = repair(settings_for())
    assert row["ok"] and "rebuilt from catalog.log" in row["detail"], row
    e = make_engine()
    assert [d.doc_id for d in e.documents()] == [ra.doc_id, rb.doc_id] and e.check_consistency() == []
    assert e.catalog.next_serial == 3


def test_a_search_overtaken_by_commits_twice_in_a_row_still_answers(manual_engine, monkeypatch):
    """Issue 47: in 1,000 searches beside a writer indexing, replacing and deleting every second or two, one search
    failed ("the library changed during the search; try again"): it was ranked again once, and that was overtaken too.
    It is now ranked again (on the new index) up to SEARCH_ATTEMPTS times."""
    from thread_rag.errors import LibraryChangedError
    from thread_rag.retrieve import pipeline

    r = manual_engine.retriever
    real, calls = r._search, []

    def overtaken(*args, **kwargs):
        calls.append(1)
        if len(calls) <= pipeline.SEARCH_ATTEMPTS - 1:
            raise LibraryChangedError(generations={(1, 1)})
        return real(*args, **kwargs)

    monkeypatch.setattr(r, "_search", overtaken)
    assert r.search("how do I pre-heat summaries?").hits and len(calls) == pipeline.SEARCH_ATTEMPTS
    calls.clear()

    def always(*args, **kwargs):
        calls.append(1)
        raise LibraryChangedError(generations={(1, 99)})  # a generation the catalog does not commit: changed, not lost

    monkeypatch.setattr(r, "_search", always)  # overtaken every time: one line, not a crash
    with pytest.raises(LibraryChangedError, match="try again"):
        r.search("how do I pre-heat summaries?")
    assert len(calls) == pipeline.SEARCH_ATTEMPTS
