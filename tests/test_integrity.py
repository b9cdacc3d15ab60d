"""Integrity of the store beyond SIGKILL trials (issue 13): in-process recovery after an aborted
write, leftover temporaries, the allowed-roots rule on every expanded file, and warnings that reach
the user (PDF pages without text, corrupt summary caches)."""
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
