"""Integrity of the store beyond SIGKILL trials (issue 13): in-process recovery after an aborted
write, leftover temporaries, the allowed-roots rule on every expanded file, and warnings that reach
the user (PDF pages without text, corrupt summary caches)."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write


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
        leftover(home / "tokcache" / "DOC3.g2", is_dir=True),                 # not a temporary at all
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
