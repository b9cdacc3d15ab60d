"""The catalog's snapshot + log (issue 16): a commit appends one line instead of rewriting every record;
crashes at each step of a compaction or mid-append lose and double nothing."""
from __future__ import annotations

import json

import pytest

from thread_rag.errors import CorruptFileError, ThreadRagError
from thread_rag.records import DocumentRecord
from thread_rag.store import catalog as catalog_module
from thread_rag.store.catalog import Catalog


def rec(serial: int, gen: int = 1) -> DocumentRecord:
    return DocumentRecord(serial=serial, doc_id=f"DOC{serial}", name=f"f{serial}.md", path=f"/d/f{serial}.md",
                          content_hash=f"h{serial}.{gen}", kind="markdown", chunk_count=3, pages=None,
                          indexed_at="2026-11-30T00:00:00+0000", generation=gen, chunk_strategy="s", embedder="e")


def add(cat: Catalog, n: int) -> None:
    for _ in range(n):
        cat.commit(rec(cat.allocate_serial()))


def test_a_commit_appends_one_line_and_the_snapshot_stays(tmp_path):
    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 1)
    snap = (tmp_path / "catalog.json").read_bytes()
    log_before = cat.log_path.stat().st_size
    add(cat, 200)
    assert (tmp_path / "catalog.json").read_bytes() == snap  # never rewritten between compactions
    lines = cat.log_path.read_bytes().splitlines()
    assert len(lines) == 1 + 400 and cat.log_path.stat().st_size - log_before < 200 * 2 * 400  # short lines
    other = Catalog(tmp_path / "catalog.json")
    assert [d.serial for d in other.documents()] == list(range(1, 202)) and other.version == cat.version
    cat.remove(5)
    cat.commit(rec(7, gen=2))
    assert other.reload() and 5 not in {d.serial for d in other.documents()} and other.get(7).generation == 2


def test_compaction_folds_the_log_into_the_snapshot(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog_module, "COMPACT_LINES", 10)
    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 30)
    assert len(cat.log_path.read_bytes().splitlines()) < 10
    snapshot = json.loads((tmp_path / "catalog.json").read_text())
    assert len(snapshot["documents"]) >= 25
    fresh = Catalog(tmp_path / "catalog.json")
    assert len(fresh.documents()) == 30 and fresh._data["next_serial"] == 31


def test_killed_between_snapshot_and_emptied_log_doubles_nothing(tmp_path):
    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 3)
    cat.remove(2)
    old_log = cat.log_path.read_bytes()
    # a compaction that wrote the new snapshot, then died before emptying the log
    from thread_rag.atomic import atomic_write_json

    atomic_write_json(cat.path, cat._data)
    assert cat.log_path.read_bytes() == old_log
    again = Catalog(tmp_path / "catalog.json")
    assert [d.serial for d in again.documents()] == [1, 3] and again._data["next_serial"] == 4
    assert again.version == cat.version


def test_a_torn_last_line_is_not_committed_and_the_next_writer_cuts_it(tmp_path):
    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 2)
    with open(cat.log_path, "ab") as fh:  # a writer killed mid-append
        fh.write(b'{"op": "commit", "record": {"serial": 9')
    reader = Catalog(tmp_path / "catalog.json")
    assert [d.serial for d in reader.documents()] == [1, 2]
    writer = Catalog(tmp_path / "catalog.json")
    add(writer, 1)
    assert all(json.loads(line) for line in writer.log_path.read_bytes().splitlines())
    assert reader.reload() and [d.serial for d in reader.documents()] == [1, 2, 3]


def test_a_corrupt_line_inside_the_log_is_one_clear_error(tmp_path):
    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 2)
    data = cat.log_path.read_bytes().splitlines()
    cat.log_path.write_bytes(b"\n".join([data[0], b"garbage", *data[1:]]) + b"\n")
    with pytest.raises(CorruptFileError, match="catalog.log: line 2"):
        Catalog(tmp_path / "catalog.json")


def test_a_torn_line_longer_than_the_tail_read_is_cut_whole(tmp_path):
    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 2)
    with open(cat.log_path, "ab") as fh:  # a writer killed mid-append of a very long line
        fh.write(b'{"op": "commit", "record": {"name": "' + b"x" * 200_000)
    writer = Catalog(tmp_path / "catalog.json")
    add(writer, 1)
    assert all(json.loads(line) for line in writer.log_path.read_bytes().splitlines())
    assert [d.serial for d in Catalog(tmp_path / "catalog.json").documents()] == [1, 2, 3]


def test_repair_drops_a_corrupt_log_line_keeps_a_copy_and_never_hands_out_a_serial_again(tmp_path):
    """A garbage line inside catalog.log (a disk error) locked the library for good: every command refused it and
    the only advice was a backup. ``mend_log`` (run by ``doctor --repair``) folds every line that still reads into
    a new snapshot, keeps the damaged log beside it, and says what the dropped line cost; a lost serial line
    cannot make a later document reuse a serial the log's other lines committed."""
    from thread_rag.store.catalog import mend_log

    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 3)
    lines = cat.log_path.read_bytes().splitlines()
    serial_of_3 = next(i for i, line in enumerate(lines) if json.loads(line) == {"op": "serial", "next": 4,
                                                                                  "v": json.loads(line)["v"]})
    lines[serial_of_3] = b'{"op": "serial", "ne\x00garbage'                # DOC3's serial line destroyed
    cat.log_path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CorruptFileError, match="doctor --repair"):
        Catalog(tmp_path / "catalog.json")
    notes = mend_log(tmp_path / "catalog.json")
    assert any("line" in n and "dropped" in n for n in notes), notes
    assert list(tmp_path.glob("catalog.log.corrupt-*"))                    # the damaged log is kept
    mended = Catalog(tmp_path / "catalog.json")
    assert [d.serial for d in mended.documents()] == [1, 2, 3]
    assert mended.allocate_serial() == 4                                   # not 3 again
    assert mend_log(tmp_path / "catalog.json") == []                       # nothing left to mend


def test_mending_never_builds_a_catalog_from_the_log_alone(tmp_path):
    """A log without its snapshot is never read (Catalog.reload): mending one would hand every serial out again."""
    from thread_rag.store.catalog import mend_log

    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 3)
    cat.log_path.write_bytes(cat.log_path.read_bytes() + b"garbage\n")
    (tmp_path / "catalog.json").unlink()
    assert mend_log(tmp_path / "catalog.json") == [] and not (tmp_path / "catalog.json").exists()


def test_a_change_that_cannot_be_written_does_not_stay_in_memory(tmp_path, monkeypatch):
    """A commit applied itself in memory before its line was written; when the write failed (a full disk), this
    process went on as if it were committed (its recovery then removed the generation that really was)."""
    import errno

    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 2)

    def full(fh):  # the append fails before its line lands (a full disk)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(catalog_module.Catalog, "_cut_torn_tail", staticmethod(full))
    with pytest.raises(OSError):
        cat.commit(rec(1, gen=2))
    monkeypatch.undo()
    assert cat.get(1).generation == 1 and cat.committed() == [(1, 1), (2, 1)]
    assert Catalog(tmp_path / "catalog.json").committed() == [(1, 1), (2, 1)]  # and on disk
    cat.commit(rec(1, gen=2))                                                   # the disk has room again
    assert Catalog(tmp_path / "catalog.json").get(1).generation == 2


def test_a_log_without_the_whole_history_rebuilds_nothing(tmp_path, monkeypatch):
    """After a compaction the log holds only the changes since the snapshot: rebuilding from it would lose the
    snapshot's documents and hand their serials out again, so the library stays refused."""
    from thread_rag.store.catalog import rebuild_from_log

    monkeypatch.setattr(catalog_module, "COMPACT_LINES", 3)
    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 4)
    assert cat.log_path.read_bytes()                      # changes after the compaction
    (tmp_path / "catalog.json").write_bytes(b"{")
    notes = rebuild_from_log(tmp_path / "catalog.json")
    assert len(notes) == 1 and "does not hold the catalog's whole history" in notes[0], notes
    assert (tmp_path / "catalog.json").read_bytes() == b"{"  # left as it was: nothing replaces it


def test_a_writer_whose_snapshot_went_away_does_not_empty_the_log(tmp_path):
    """A long-running writer found the snapshot gone (damaged and set aside by another process) and wrote one from
    its memory, emptying a log that held other processes' commits and the repair's material."""
    a = Catalog(tmp_path / "catalog.json")
    add(a, 1)
    b = Catalog(tmp_path / "catalog.json")
    add(b, 2)                                             # commits a does not know yet
    log = a.log_path.read_bytes()
    (tmp_path / "catalog.json").unlink()
    with pytest.raises(CorruptFileError, match="doctor --repair"):
        a.commit(rec(1, gen=2))
    assert a.log_path.read_bytes() == log


@pytest.mark.parametrize("snapshot", ['{"format": 1, "next_serial": 3, "version": 2, "documents": []}',
                                      '{"format": 1, "next_serial": "x", "version": 2, "documents": {}}', "[]"])
def test_a_snapshot_of_the_wrong_shape_is_named(tmp_path, snapshot):
    """Valid JSON of the wrong shape gave "unexpected AttributeError", blamed catalog.log's line 1, or (`[]`) read as
    an empty catalog that would hand every serial out again (a new user's trial)."""
    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 2)
    (tmp_path / "catalog.json").write_text(snapshot)
    with pytest.raises(CorruptFileError, match=r"catalog\.json: not a catalog"):
        Catalog(tmp_path / "catalog.json")
    from thread_rag.doctor import store_checks
    from thread_rag.settings import Settings

    (tmp_path / "chroma").mkdir()
    row = next(r for r in store_checks(Settings(HOME=str(tmp_path))) if r["check"] == "catalog")
    assert "catalog.json: not a catalog" in row["detail"] and "doctor --repair" in row["fix"], row
    from thread_rag.store.catalog import rebuild_from_log

    assert "rebuilt from catalog.log" in rebuild_from_log(tmp_path / "catalog.json")[0]  # the log holds it all
    assert [d.serial for d in Catalog(tmp_path / "catalog.json").documents()] == [1, 2]


def test_a_newer_format_is_named_and_never_set_aside(tmp_path):
    """An older thread-rag's repair must not take a newer version's catalog for damage and move it away."""
    from thread_rag.store.catalog import rebuild_from_log

    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 2)
    snap = json.loads((tmp_path / "catalog.json").read_text())
    (tmp_path / "catalog.json").write_text(json.dumps({**snap, "format": 99}))
    with pytest.raises(CorruptFileError, match="newer thread-rag"):
        Catalog(tmp_path / "catalog.json")
    assert "newer thread-rag" in rebuild_from_log(tmp_path / "catalog.json")[0]
    assert json.loads((tmp_path / "catalog.json").read_text())["format"] == 99


def test_repair_meeting_a_torn_snapshot_does_not_send_the_user_to_repair(tmp_path):
    """A reader meeting a torn catalog.json names `doctor --repair`; the repair itself meeting it said the same
    (run the repair you are running)."""
    from thread_rag.store.catalog import mend_log

    cat = Catalog(tmp_path / "catalog.json")
    add(cat, 2)
    cat.log_path.write_bytes(b"garbage\n" + cat.log_path.read_bytes())
    (tmp_path / "catalog.json").write_bytes((tmp_path / "catalog.json").read_bytes()[:20])
    with pytest.raises(CorruptFileError) as e:
        mend_log(tmp_path / "catalog.json")
    assert "is corrupt" in str(e.value) and "doctor --repair" not in str(e.value)


class _LogCollection:
    """An in-memory stand-in for the catalog's server collection: ``first_wins`` as the Chroma server behaves, or a
    server that replaces a record added twice."""

    name = "thread_rag_test_catalog"

    def __init__(self, first_wins: bool = True):
        self.rows, self.first_wins = {}, first_wins

    def add(self, ids, documents, metadatas, embeddings=None):
        for i, d, m in zip(ids, documents, metadatas):
            if i not in self.rows or not self.first_wins:
                self.rows[i] = (d, m)

    def upsert(self, ids, documents, metadatas, embeddings=None):
        for i, d, m in zip(ids, documents, metadatas):
            self.rows[i] = (d, m)

    def delete(self, ids):
        for i in ids:
            self.rows.pop(i, None)

    def get(self, ids=None, where=None, include=()):
        if ids is not None:
            keys = [i for i in ids if i in self.rows]
        else:
            floor = where["v"]["$gt"]
            keys = [i for i, (_, m) in self.rows.items() if m.get("v", -1) > floor]
        return {"ids": keys, "documents": [self.rows[k][0] for k in keys], "metadatas": [self.rows[k][1] for k in keys]}


def test_a_server_that_replaces_a_record_added_twice_is_refused(tmp_path):
    """Issue 47: the shared catalog orders writers by the server keeping the first add of an id; that is checked
    once per process, and a server that overwrites is one line, not a log two writers silently overwrite."""
    from thread_rag.store.server_catalog import ServerCatalog

    good = _LogCollection()
    cat = ServerCatalog(tmp_path / "a.json", lambda: good, origin="a")
    assert cat.allocate_serial() == 1 and not any(k.startswith("probe-") for k in good.rows)  # the probe is gone
    with pytest.raises(ThreadRagError, match="replaces a record added twice under one id"):
        ServerCatalog(tmp_path / "b.json", lambda: _LogCollection(first_wins=False), origin="b")


def test_a_change_another_writer_replaced_is_named_not_merged(tmp_path):
    """A writer whose appended change was later replaced on the server (a writer that upserts, or a server that
    stopped keeping the first add) finds out at its next change: one line naming both writers' nonces."""
    from thread_rag.store.server_catalog import ServerCatalog, _vid

    col = _LogCollection()
    cat = ServerCatalog(tmp_path / "a.json", lambda: col, origin="a")
    assert cat.allocate_serial() == 1
    body, meta = col.rows[_vid(1)]
    col.upsert(ids=[_vid(1)], documents=[body.replace(cat.nonce_prefix, "intruder")], metadatas=[meta])
    with pytest.raises(CorruptFileError, match=r"change 1 of the catalog on the server .* was replaced by another "
                                               r"writer's \(nonce intruder"):
        cat.allocate_serial()
