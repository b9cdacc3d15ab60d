"""``thread-rag watch``: the pure parts (change batch -> actions, debouncing), the loop with a stand-in engine and a
``stop_event``, and a real watcher process editing files under it (create, edit, burst, bad files, delete, SIGTERM)."""
from __future__ import annotations

import hashlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, machine_free_env, write
from thread_rag.watch import ADDED, DELETED, MODIFIED, Action, Debouncer, Watcher, ignored, plan, run_watch

ROOT = "/w"


def _plan(changes, library=(), files=(), dirs=()):
    """plan() against an imaginary tree: ``files``/``dirs`` exist now (relative to ROOT)."""
    files = {f"{ROOT}/{f}" for f in files}
    dirs = {f"{ROOT}/{d}" for d in dirs} | {ROOT}
    return plan([(k, f"{ROOT}/{p}") for k, p in changes], [ROOT], [f"{ROOT}/{p}" for p in library],
                exists=lambda p: p in files or p in dirs, isdir=lambda p: p in dirs, realpath=lambda p: p)


# -- pure parts ------------------------------------------------------------------------------------
def test_plan_collapses_a_path_and_puts_removals_first():
    acts = _plan([(ADDED, "a.md"), (MODIFIED, "a.md"), (MODIFIED, "a.md"),
                  (DELETED, "old.md"), (ADDED, "new.md"),        # a rename: removal first, then the new name
                  (DELETED, "b.md"), (ADDED, "b.md")],           # an editor's delete + write: b.md exists now
                 library=["old.md", "b.md"], files=["a.md", "new.md", "b.md"])
    assert acts == [Action("remove", f"{ROOT}/old.md"), Action("index", f"{ROOT}/a.md"),
                    Action("index", f"{ROOT}/b.md"), Action("index", f"{ROOT}/new.md")]


def test_plan_ignores_hidden_names_editor_temporaries_and_unsupported_files():
    names = [".#notes.md", "notes.md~", ".notes.md.swp", "#notes.md#", "~$report.docx", ".hidden.md",
             ".git/config.md", "sub/.cache/x.md", "notes.md.tmp", "photo.png", "archive.zip", "Makefile", "4913"]
    assert _plan([(ADDED, n) for n in names] + [(MODIFIED, n) for n in names], files=names) == []
    assert _plan([(ADDED, "/elsewhere/x.md")]) == []  # outside every watched folder
    # every supported suffix, in any case, is kept
    kept = ["a.pdf", "b.DOCX", "c.txt", "d.md", "e.Markdown", "f.rst", "sub/g.md"]
    assert [a.path for a in _plan([(ADDED, n) for n in kept], files=kept)] == sorted(f"{ROOT}/{n}" for n in kept)


def test_plan_ignored_is_relative_to_the_watched_folder():
    assert not ignored("/home/u/.notes/a.md", ["/home/u/.notes"])  # a hidden watched folder still works
    assert ignored("/home/u/.notes/.a.md", ["/home/u/.notes"])
    assert not ignored("/w/v1.2/a.md", ["/w"])


def test_plan_removes_only_what_the_library_holds():
    assert _plan([(DELETED, "gone.md"), (DELETED, "never-indexed.md"), (DELETED, "x.png")], library=["gone.md"]) \
        == [Action("remove", f"{ROOT}/gone.md")]
    # a folder deleted or moved away (one event for the folder only): everything under it goes
    assert _plan([(DELETED, "sub")], library=["sub/a.md", "sub/deep/b.md", "subway.md"]) \
        == [Action("remove", f"{ROOT}/sub")]
    assert _plan([(DELETED, "other")], library=["sub/a.md"]) == []


def test_plan_scans_a_folder_that_appears_and_skips_files_inside_it():
    acts = _plan([(ADDED, "sub"), (ADDED, "sub/a.md"), (ADDED, "sub/in/b.md"), (ADDED, "sub/in"), (ADDED, "c.md")],
                 files=["sub/a.md", "sub/in/b.md", "c.md"], dirs=["sub", "sub/in"])
    assert acts == [Action("scan", f"{ROOT}/sub"), Action("index", f"{ROOT}/c.md")]
    assert _plan([(MODIFIED, "sub")], dirs=["sub"]) == []  # a folder's own metadata changing is not a change


def test_debouncer_turns_a_burst_into_one_change():
    d = Debouncer(quiet=1.0, longest=30)
    for t in (0.0, 0.2, 0.4, 0.6):  # four writes to one file, 0.2 s apart
        d.add({(MODIFIED, f"{ROOT}/a.md")}, t)
    d.add({(ADDED, f"{ROOT}/b.md")}, 0.1)
    assert d.ready(1.0) == set()  # b.md: 0.9 s quiet; a.md: 0.4 s
    assert d.ready(1.1) == {(ADDED, f"{ROOT}/b.md")}
    assert d.ready(1.5) == set() and len(d) == 1
    settled = d.ready(1.6)
    assert settled == {(MODIFIED, f"{ROOT}/a.md")} and len(d) == 0
    assert _plan([(k, p[len(ROOT) + 1:]) for k, p in settled], files=["a.md"]) \
        == [Action("index", f"{ROOT}/a.md")]  # one re-index


def test_debouncer_lets_a_file_out_that_never_stops_changing():
    d = Debouncer(quiet=1.0, longest=5.0)
    t = 0.0
    while t < 4.9:
        d.add({(MODIFIED, "/w/log.md")}, t)
        assert d.ready(t) == set()
        t += 0.5
    d.add({(MODIFIED, "/w/log.md")}, 5.0)
    assert d.ready(5.0) == {(MODIFIED, "/w/log.md")}


# -- the loop, in-process, with a stand-in engine ----------------------------------------------------
class FakeEngine:
    """Engine's duck type for the watcher: path-keyed, hash-idempotent, one chunk per line, empty files fail."""

    from thread_rag.engine import Engine as _E

    supported = _E.supported
    expand_paths = _E.expand_paths

    def writable(self):  # a writable library
        pass

    def __init__(self):
        from thread_rag.records import DocumentRecord

        self._rec = DocumentRecord
        self.docs: dict[str, object] = {}
        self.serial = 0
        self.calls: list[str] = []

    def documents(self):
        return list(self.docs.values())

    own_documents = documents

    def index_file(self, path):
        from thread_rag.errors import IngestError
        from thread_rag.records import IndexResult

        real = os.path.realpath(path)
        self.calls.append(real)
        raw = Path(real).read_bytes()
        if not raw:
            raise IngestError(real, "empty file (0 bytes)")
        h = hashlib.sha256(raw).hexdigest()
        old = next((d for d in self.docs.values() if d.path == real), None)
        dup = next((d for d in self.docs.values() if d.content_hash == h), None)
        if (old and old.content_hash == h) or (old is None and dup is not None):
            same = old or dup
            return IndexResult(path=str(path), status="unchanged", doc_id=same.doc_id, chunks=same.chunk_count)
        if old is None:
            self.serial += 1
        serial = old.serial if old else self.serial
        n = len(raw.decode().splitlines())
        self.docs[f"DOC{serial}"] = self._rec(serial=serial, doc_id=f"DOC{serial}", name=Path(real).name, path=real,
                                              content_hash=h, kind="markdown", chunk_count=n, pages=None,
                                              indexed_at="now", generation=1)
        return IndexResult(path=str(path), status="replaced" if old else "indexed", doc_id=f"DOC{serial}", chunks=n)

    def delete(self, doc_id):
        return self.docs.pop(doc_id)


def _wait(pred, timeout=10.0, what=""):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_loop_catches_up_watches_and_stops_on_the_event(tmp_path):
    d = tmp_path / "notes"
    engine = FakeEngine()
    write(d / "gone.md", "one\n")
    write(d / "kept.md", "kept\n")
    engine.index_file(d / "gone.md")                      # DOC1, its file deleted while nobody watched
    engine.index_file(d / "kept.md")                      # DOC2, unchanged
    (d / "gone.md").unlink()
    write(d / "new.md", "new\nfile\n")                    # added while nobody watched
    out, err, stop = io.StringIO(), io.StringIO(), threading.Event()
    rc = []
    t = threading.Thread(target=lambda: rc.append(run_watch(engine, [d], stop_event=stop, quiet=0.2, out=out,
                                                            err=err)), daemon=True)
    t.start()
    lines = lambda: out.getvalue().splitlines()  # noqa: E731
    _wait(lambda: "watching" in err.getvalue(), what="the catch-up pass")
    assert lines() == [f"removed DOC1 {d}/gone.md", f"indexed DOC3 (2 chunks) {d}/new.md"]
    assert "1 up to date, 1 indexed, 0 updated, 1 removed, 0 failed" in err.getvalue()

    write(d / "copy.md", "kept\n")                        # same bytes as kept.md: kept as DOC2
    write(d / ".#new.md", "lock")                         # ignored
    _wait(lambda: len(lines()) == 3, what="the duplicate line")
    assert lines()[2].startswith(f"duplicate DOC2 {d}/copy.md")
    (d / "kept.md").unlink()                               # DOC2 goes; its copy becomes a document of its own
    _wait(lambda: len(lines()) == 5, what="removal + re-index of the copy")
    assert lines()[3:] == [f"removed DOC2 {d}/kept.md", f"indexed DOC4 (1 chunk) {d}/copy.md"]
    (d / "sub").mkdir()
    write(d / "sub/deep.md", "a\nb\nc\n")
    write(d / "empty.md", "")
    _wait(lambda: len(lines()) == 7, what="the new folder and the empty file")
    assert sorted(lines()[5:]) == [f"failed {d}/empty.md: empty file (0 bytes)",
                                   f"indexed DOC5 (3 chunks) {d}/sub/deep.md"]
    assert not any(".#new.md" in c for c in engine.calls)

    stop.set()
    t.join(timeout=5)
    assert not t.is_alive() and rc == [0]
    assert err.getvalue().rstrip().endswith("stopped watching")


def test_loop_refuses_a_missing_folder(tmp_path):
    """A missing folder, and a link to one, were "not a folder" like a file."""
    import re

    from thread_rag.errors import ThreadRagError

    (tmp_path / "gone").symlink_to(tmp_path / "missing")
    (tmp_path / "round").symlink_to(tmp_path / "round")
    write(tmp_path / "f.md", "# F\n")
    for given, why in [("missing", "no such folder"), ("round", "a loop of links that never reaches a folder"),
                       ("gone", f"a link to {tmp_path / 'missing'}, which does not exist"),
                       ("f.md", "not a folder (watch takes folders)")]:
        with pytest.raises(ThreadRagError, match=f"^{re.escape(str(tmp_path / given))}: {re.escape(why)}$"):
            run_watch(FakeEngine(), [tmp_path / given], stop_event=threading.Event())


# -- a real watcher process ------------------------------------------------------------------------
class Proc:
    """``thread-rag --data-dir HOME watch DIR`` with its stdout and stderr read line by line in threads."""

    def __init__(self, tmp_path: Path, home: Path, *args: str):
        env = machine_free_env()
        env.update({"PYTHONPATH": str(REPO), "THREAD_RAG_CACHE_PATH": str(tmp_path / "cache"),
                    "THREAD_RAG_MODEL_DIR": str(REPO / "local_rag_db" / "models"), "THREAD_RAG_RERANKER": "none",
                    "THREAD_RAG_EMBEDDER_MODEL": "packaged:bge-small-en-v1.5", "THREAD_RAG_TORCH_THREADS": "1",
                    "PYTHONUNBUFFERED": "1"})
        cwd = tmp_path / "cwd"
        cwd.mkdir(exist_ok=True)  # no config.py here
        self.p = subprocess.Popen([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(home), "watch", *args],
                                  cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [threading.Thread(target=lambda s=stream, k=sink: [k.append(line.rstrip("\n")) for line in s],
                                         daemon=True) for stream, sink in ((self.p.stdout, self.out),
                                                                           (self.p.stderr, self.err))]
        for t in self.readers:
            t.start()

    def drained(self, timeout: float = 30.0) -> None:
        """Once the process has exited: every line it wrote has been read (its pipes reached their end)."""
        for t in self.readers:
            t.join(timeout)

    def wait_for(self, text: str, timeout: float = 20.0, stream: str = "out", count: int = 1) -> str:
        sink = self.out if stream == "out" else self.err
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            hits = [line for line in list(sink) if text in line]
            if len(hits) >= count:
                return hits[count - 1]
            if self.p.poll() is not None:
                self.drained()
                hits = [line for line in sink if text in line]
                if len(hits) >= count:
                    return hits[count - 1]
                break
            time.sleep(0.05)
        raise AssertionError(f"no {stream} line with {text!r} within {timeout} s; stdout={self.out} "
                             f"stderr={self.err[-20:]} rc={self.p.poll()}")

    def stop(self, sig=signal.SIGTERM, timeout: float = 15.0) -> int:
        self.p.send_signal(sig)
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise


def _reader(home: Path, tmp_path: Path):
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    over = {"HOME": str(home), "CACHE_PATH": str(tmp_path / "cache"), "MODEL_DIR": str(REPO / "local_rag_db" / "models"),
            "RERANKER": "none", "EMBEDDER_MODEL": "packaged:bge-small-en-v1.5", "TORCH_THREADS": 1}
    return Engine(load_settings(over, env={}, config_file=False))


PUMP = "# Quaxel pump\n\nThe quaxel pump is primed in three steps. Open the bleed valve, fill the housing, close it.\n"
FAN = "# Zorbit fan\n\nThe zorbit fan is balanced with {n} brass weights clipped to the blades.\n"


def test_real_watcher_indexes_updates_removes_and_survives_bad_files(tmp_path):
    docs, home = tmp_path / "docs", tmp_path / "home"
    write(docs / "pump.md", PUMP)  # there before the start: the catch-up pass indexes it
    w = Proc(tmp_path, home, str(docs), "--debounce", "0.6")
    try:
        assert w.wait_for("indexed DOC1", timeout=60).endswith(f"{docs}/pump.md")
        w.wait_for("watching", stream="err")

        write(docs / "fan.md", FAN.format(n=3))
        line = w.wait_for("fan.md")
        assert re.match(r"indexed DOC2 \(\d+ chunks?\) ", line), line
        reader = _reader(home, tmp_path)
        assert {(d.doc_id, d.name) for d in reader.documents()} == {("DOC1", "pump.md"), ("DOC2", "fan.md")}

        # an edit as a burst of writes (an editor saving in pieces): one re-index, same id, new text
        path = docs / "fan.md"
        path.write_text(FAN.format(n=7), encoding="utf-8")
        for part in (" Tighten each clip", " by hand.", " Spin it up", " and listen.\n"):
            time.sleep(0.1)
            with path.open("a", encoding="utf-8") as f:
                f.write(part)
        assert w.wait_for("updated").startswith("updated DOC2 (")
        assert "7 brass weights" in reader.thread("DOC2").chunks[0].text

        from thread_rag import tools

        hits = tools.rag_search(reader, "how many brass weights balance the zorbit fan", k=1)["hits"]
        assert hits and hits[0]["chunk_id"].startswith("DOC2_") and "7 brass weights" in hits[0]["text"]

        # bad files: one line each, and the watcher goes on
        write(docs / "broken.pdf", b"%PDF-1.4 this is not a PDF")
        write(docs / "empty.md", "")
        write(docs / ".#fan.md", "emacs lock")      # editor temporaries: nothing
        write(docs / "fan.md~", "backup")
        assert w.wait_for("broken.pdf").startswith(f"failed {docs}/broken.pdf: corrupt PDF")
        assert w.wait_for("empty.md") == f"failed {docs}/empty.md: empty file (0 bytes)"
        write(docs / "later.md", "# Later\n\nA file written after the failures is still indexed.\n")
        assert w.wait_for("later.md").startswith("indexed DOC3 (")
        # a name that is not UTF-8 ended watchfiles' stream ("Unable to decode path"): the watcher arms again
        with open(os.path.join(os.fsencode(docs), b"caf\xe9.md"), "wb") as f:
            f.write(b"The purple knob.\n")
        time.sleep(1.0)
        write(docs / "after.md", "# After\n\nA file written after the odd name is still indexed.\n")
        assert w.wait_for("after.md").startswith("indexed DOC4 (")
        assert f"failed {docs}/caf\\xe9.md: the file name is not valid UTF-8 (rename the file)" in w.out, w.out

        (docs / "fan.md").unlink()
        assert w.wait_for("removed") == f"removed DOC2 {docs}/fan.md"
        assert {d.doc_id for d in reader.documents()} == {"DOC1", "DOC3", "DOC4"}

        assert w.stop(signal.SIGTERM) == 0
    finally:
        if w.p.poll() is None:
            w.p.kill()
            w.p.wait()
    w.drained()
    assert w.err[-1] == "stopped watching" and not any("Traceback" in e for e in w.err), w.err
    assert len([line for line in w.out if line.startswith("updated")]) == 1, w.out  # the burst was one re-index
    assert not any("fan.md~" in line or ".#fan.md" in line for line in w.out), w.out
    assert len(w.out) == 9, w.out  # one line per change, nothing else on stdout


def test_real_watcher_catches_up_and_ctrl_c_exits_0(tmp_path):
    """A restart after a file was deleted and another added while nobody watched; then Ctrl-C."""
    docs, home = tmp_path / "docs", tmp_path / "home"
    write(docs / "pump.md", PUMP)
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(home), "watch", str(docs / "nope")],
                       env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.strip() == f"error: {docs}/nope: no such folder"
    reader = _reader(home, tmp_path)
    assert reader.index_file(docs / "pump.md").doc_id == "DOC1"
    (docs / "pump.md").unlink()
    write(docs / "sub" / "fan.md", FAN.format(n=2))
    w = Proc(tmp_path, home, str(docs))
    try:
        w.wait_for("watching", stream="err", timeout=60)
        w.wait_for("sub/fan.md")  # stdout has its own reader: its lines may come in after stderr's "watching"
        assert len(w.out) == 2 and w.out[0] == f"removed DOC1 {docs}/pump.md", w.out
        assert re.fullmatch(rf"indexed DOC2 \(\d+ chunks?\) {re.escape(str(docs))}/sub/fan.md", w.out[1]), w.out
        assert w.stop(signal.SIGINT) == 0
    finally:
        if w.p.poll() is None:
            w.p.kill()
            w.p.wait()
    assert [d.doc_id for d in reader.documents()] == ["DOC2"]


def test_json_lines_one_object_per_change():
    import json

    from thread_rag.watch import Watcher

    out = io.StringIO()
    w = Watcher(FakeEngine(), ["/w"], as_json=True, out=out, err=io.StringIO())
    w.emit("indexed", "/w/a.md", doc_id="DOC1", chunks=4)
    w.emit("failed", "/w/b.pdf", reason="corrupt PDF (x)")
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"event": "indexed", "path": "/w/a.md", "doc_id": "DOC1", "chunks": 4},
        {"event": "failed", "path": "/w/b.pdf", "error": "corrupt PDF (x)"}]


def test_links_out_of_the_watched_folder_are_not_followed_and_a_failed_removal_is_one_line(tmp_path):
    from thread_rag.watch import Watcher

    root, outside = tmp_path / "notes", tmp_path / "private"
    write(outside / "secret.md", "secret\n")
    write(root / "mine.md", "mine\n")
    (root / "link.md").symlink_to(outside / "secret.md")
    engine, out = FakeEngine(), io.StringIO()
    w = Watcher(engine, [str(root.resolve())], out=out, err=io.StringIO())
    w.catch_up()
    assert [d.name for d in engine.documents()] == ["mine.md"]
    assert "failed" in out.getvalue() and "outside the watched folders" in out.getvalue()

    def broken(doc_id):
        raise OSError("disk gone")

    engine.delete = broken
    (root / "mine.md").unlink()
    w.remove(str((root / "mine.md").resolve()))  # must not raise: one line, the next catch-up retries
    assert "not removed: " in out.getvalue().splitlines()[-1]


def test_plan_removes_a_document_whose_file_became_a_folder():
    """A file replaced by a folder of the same name kept its document for good (review finding, ninth session)."""
    acts = _plan([(DELETED, "fast.md"), (ADDED, "fast.md"), (ADDED, "fast.md/inner.md")],
                 library=["fast.md", "other.md"], files=["fast.md/inner.md"], dirs=["fast.md"])
    assert acts == [Action("forget", f"{ROOT}/fast.md"), Action("scan", f"{ROOT}/fast.md")]


def test_copy_becomes_its_own_document_when_the_original_changes(tmp_path):
    """A copy kept as a duplicate of a.md stayed in no document once a.md was edited (review finding)."""
    from thread_rag.watch import Watcher

    d = tmp_path / "w"
    engine, out = FakeEngine(), io.StringIO()
    w = Watcher(engine, [str(d)], out=out, err=io.StringIO())
    w.index(str(write(d / "a.md", "one\n")))
    w.index(str(write(d / "b.md", "one\n")))           # same bytes: a duplicate of DOC1
    w.index(str(write(d / "a.md", "one\ntwo\n")))      # the original changes: b.md is no longer the same
    assert out.getvalue().splitlines() == [f"indexed DOC1 (1 chunk) {d}/a.md",
                                           f"duplicate DOC1 {d}/b.md (same content as {d}/a.md)",
                                           f"updated DOC1 (2 chunks) {d}/a.md", f"indexed DOC2 (1 chunk) {d}/b.md"]


def test_catch_up_removes_a_document_whose_path_is_now_a_folder(tmp_path):
    from thread_rag.watch import Watcher

    d = tmp_path / "w"
    engine = FakeEngine()
    engine.index_file(write(d / "fast.md", "old\n"))
    (d / "fast.md").unlink()
    write(d / "fast.md" / "inner.md", "new\n")
    counts = Watcher(engine, [str(d)], out=io.StringIO(), err=io.StringIO()).catch_up()
    assert counts["removed"] == 1 and [x.path for x in engine.documents()] == [str(d / "fast.md" / "inner.md")]


def test_debounce_that_is_not_a_number_is_one_line(tmp_path):
    from thread_rag.errors import ThreadRagError

    for bad in (float("nan"), float("inf")):
        with pytest.raises(ThreadRagError, match="must be 0 or more seconds"):
            run_watch(FakeEngine(), [tmp_path], quiet=bad)


def test_a_file_turned_folder_takes_only_its_own_document(tmp_path):
    """The first mend removed every document under the new folder too: one indexed inside it lost its id (review
    finding); a stored file replaced by a link goes as well (the link indexes as its target)."""
    from thread_rag.watch import Watcher

    d = tmp_path / "w"
    engine = FakeEngine()
    engine.index_file(write(d / "fast.md", "old\n"))                       # DOC1, stale once fast.md is a folder
    (d / "fast.md").unlink()
    engine.index_file(write(d / "fast.md" / "inner.md", "inner\n"))        # DOC2, already indexed inside it
    engine.index_file(write(d / "linked.md", "was a file\n"))              # DOC3, its path becomes a link
    write(d / "target.md", "the target\n")
    (d / "linked.md").unlink()
    (d / "linked.md").symlink_to(d / "target.md")
    w = Watcher(engine, [str(d)], out=io.StringIO(), err=io.StringIO())
    counts = w.catch_up()
    assert counts["removed"] == 2
    docs = {x.doc_id: x.path for x in engine.documents()}
    assert docs["DOC2"] == str(d / "fast.md" / "inner.md") and "DOC1" not in docs and "DOC3" not in docs
    live = plan([(ADDED, str(d / "fast.md"))], [str(d)], [str(d / "fast.md"), str(d / "fast.md" / "inner.md")],
                exists=lambda p: True, isdir=lambda p: p == str(d / "fast.md"), realpath=lambda p: p)
    assert live == [Action("forget", str(d / "fast.md")), Action("scan", str(d / "fast.md"))]
    w.remove(str(d / "fast.md"), exact=True)                                # nothing stored at exactly that path
    assert "DOC2" in {x.doc_id for x in engine.documents()}


def test_a_file_name_with_a_line_break_stays_on_one_line(tmp_path):
    """`new\nline.md` split its "indexed" line in two (the JSON lines escaped it already); a failed file's reason
    repeated its path with the line break squeezed to a space."""
    from thread_rag.watch import Watcher

    out = io.StringIO()
    w = Watcher(FakeEngine(), [str(tmp_path)], out=out)
    write(tmp_path / "new\nline.md", "# A\nx\n")
    write(tmp_path / "tab\there.md", "")
    write(tmp_path / "two  spaces.md", "")
    write(tmp_path / "plain ü.md", "# A\nx\n")  # the same bytes as new\nline.md
    for name in ("new\nline.md", "tab\there.md", "two  spaces.md", "plain ü.md"):
        w.index(str(tmp_path / name))
    assert out.getvalue().splitlines() == [
        f'indexed DOC1 (2 chunks) "{tmp_path}/new\\nline.md"',
        f'failed "{tmp_path}/tab\\there.md": empty file (0 bytes)',
        f"failed {tmp_path}/two  spaces.md: empty file (0 bytes)",
        f'duplicate DOC1 {tmp_path}/plain ü.md (same content as "{tmp_path}/new\\nline.md")']


def test_watch_json_names_and_outside_links_said_once(tmp_path):
    """--json printed a name that is not UTF-8 raw (a strict stdout raised on it and the watcher ended); the line
    for a link leading out of the watched folders came again with every catch-up."""
    import json as _json

    from thread_rag.watch import Watcher

    out = io.StringIO()
    w = Watcher(FakeEngine(), [str(tmp_path / "in")], as_json=True, out=out)
    w.emit("failed", os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\xe9.md")), reason="x")
    assert _json.loads(out.getvalue())["path"] == f"{tmp_path}/caf\\xe9.md"
    out = io.StringIO()
    write(tmp_path / "outside.md", "# O\nx\n")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "link.md").symlink_to(tmp_path / "outside.md")
    w = Watcher(FakeEngine(), [str(tmp_path / "in")], out=out)
    w.catch_up()
    w.catch_up()
    assert out.getvalue().splitlines() == [f"failed {tmp_path}/in/link.md: links to a file outside the watched "
                                           f"folders (not followed)"]


def test_the_watcher_is_armed_again_after_a_stop_and_gives_up_after_five_in_a_row(tmp_path, monkeypatch):
    import threading

    import watchfiles
    from watchfiles._rust_notify import WatchfilesRustInternalError

    from thread_rag.errors import ThreadRagError

    class NoWait(threading.Event):
        def wait(self, timeout=None):
            return self.is_set()

    calls = []

    def stopping(*roots, **kw):
        calls.append(1)
        raise WatchfilesRustInternalError('Unable to decode path "x" to string')
        yield  # pragma: no cover

    monkeypatch.setattr(watchfiles, "watch", stopping)
    err = io.StringIO()
    with pytest.raises(ThreadRagError, match="stopped 6 times in a row"):
        run_watch(FakeEngine(), [tmp_path], stop_event=NoWait(), out=io.StringIO(), err=err)
    assert len(calls) == 6 and err.getvalue().count("watching again") == 5


def test_catch_up_counts_each_file_once(tmp_path):
    """Overlapping folders (`watch src src/sub`) and a link beside its file made one document count twice
    ("1 up to date, 1 indexed" for one new file)."""
    from thread_rag.watch import Watcher

    d = tmp_path / "src"
    write(d / "sub" / "a.md", "# A\nx\n")
    (d / "sub" / "link.md").symlink_to(d / "sub" / "a.md")
    engine = FakeEngine()
    counts = Watcher(engine, [str(d), str(d / "sub")], out=io.StringIO()).catch_up()
    assert (counts["indexed"], counts["unchanged"]) == (1, 0) and len(engine.calls) == 1, counts
    again = Watcher(engine, [str(d), str(d / "sub")], out=io.StringIO()).catch_up()
    assert (again["indexed"], again["unchanged"]) == (0, 1), again


def test_a_move_seen_from_its_new_name_first_keeps_the_document(tmp_path, make_engine):
    """A rename whose new name's event came before the old name's removal went through the move rule of `index`
    (the record follows the file) and the watcher printed nothing at all (a review finding)."""
    from thread_rag.watch import Watcher

    d = (tmp_path / "w").resolve()
    engine = make_engine()
    old = write(d / "pump.md", "# Pump\n\nPrime the pump before starting it.\n")
    engine.index_file(old)
    new = d / "pump-v2.md"
    old.rename(new)
    out = io.StringIO()
    w = Watcher(engine, [str(d)], out=out, err=io.StringIO())
    assert w.index(str(new)) == "unchanged"
    assert out.getvalue().splitlines() == [f"moved DOC1 {new} (from {old})"]
    w.remove(str(old))  # the removal's event, late: nothing under that path any more
    assert out.getvalue().splitlines() == [f"moved DOC1 {new} (from {old})"]
    assert [(x.doc_id, x.path) for x in engine.documents()] == [("DOC1", str(new))]


def test_an_emptied_or_unmounted_folder_keeps_its_documents_unless_pruned(tmp_path):
    """Issue 47: two indexed files moved out of the watched folder, then `watch` on it: `2 removed` (an unmounted
    share or USB disk looks the same). Now: none removed, one warning; --prune removes them."""
    d = tmp_path / "share"
    engine = FakeEngine()
    for name in ("a.md", "b.md"):
        engine.index_file(write(d / name, f"{name}\n"))
        (d / name).unlink()
    err = io.StringIO()
    w = Watcher(engine, [str(d)], out=io.StringIO(), err=err)
    counts = w.catch_up()
    assert counts["removed"] == 0 and counts["kept"] == 2 and len(engine.documents()) == 2
    assert "the files of 2 documents are missing (it holds no supported file any more" in err.getvalue()
    assert Watcher(engine, [str(d)], out=io.StringIO(), err=io.StringIO(), prune=True).catch_up()["removed"] == 2
    assert engine.documents() == []


def test_many_files_gone_at_once_are_held_back_a_few_are_removed(tmp_path):
    d = tmp_path / "docs"
    engine = FakeEngine()
    paths = [write(d / f"f{i}.md", f"file {i}\n") for i in range(10)]
    for p in paths:
        engine.index_file(p)
    out, err = io.StringIO(), io.StringIO()
    w = Watcher(engine, [str(d)], out=out, err=err)
    for p in paths[:7]:  # 7 of 10 at once: more than PRUNE_MAX and more than half
        p.unlink()
    w.apply(plan([(DELETED, str(p)) for p in paths[:7]], [str(d)], w.library()))
    assert len(engine.documents()) == 10 and "7 of its 10 documents went at once" in err.getvalue()
    w.apply(plan([(DELETED, str(paths[0]))], [str(d)], w.library()))  # one at a time: a deletion
    assert len(engine.documents()) == 9 and out.getvalue().splitlines() == [f"removed DOC1 {paths[0]}"]


def test_names_starting_with_hash_or_tilde_are_watched():
    """`#1 install.md` and `~draft.md` were ignored as editor temporaries; Emacs' `#x#` and Office's `~$x` still are."""
    assert not ignored(f"{ROOT}/#1 install.md", [ROOT]) and not ignored(f"{ROOT}/~draft.md", [ROOT])
    assert ignored(f"{ROOT}/#notes.md#", [ROOT]) and ignored(f"{ROOT}/~$report.docx", [ROOT])


def test_the_last_file_deleted_goes_and_prune_does_not_disarm_the_live_guard(tmp_path):
    """Review: deleting a folder's only file kept its document forever ("no supported file any more"), and --prune
    turned the guard off while watching too (an unmount then wiped the library)."""
    d = tmp_path / "one"
    engine = FakeEngine()
    only = write(d / "only.md", "the only file\n")
    engine.index_file(only)
    w = Watcher(engine, [str(d)], out=io.StringIO(), err=io.StringIO(), prune=True)
    only.unlink()
    w.apply(plan([(DELETED, str(only))], [str(d)], w.library()))
    assert engine.documents() == []
    e = tmp_path / "many"
    paths = [write(e / f"f{i}.md", f"file {i}\n") for i in range(8)]
    for p in paths:
        engine.index_file(p)
    w = Watcher(engine, [str(e)], out=io.StringIO(), err=io.StringIO(), prune=True)
    for p in paths:
        p.unlink()
    w.apply(plan([(DELETED, str(p)) for p in paths], [str(e)], w.library()))
    assert len(engine.documents()) == 8  # while watching, --prune does not remove a whole folder's documents


def test_doctor_says_when_every_indexed_file_is_missing(make_engine, tmp_path):
    """Issue 47: doctor reports a library whose files are all missing (an unmounted drive) and changes nothing."""
    from thread_rag.doctor import checks

    engine = make_engine()
    files = [write(tmp_path / "share" / f"{n}.md", f"# {n}\n\nThe {n} valve opens first.\n") for n in ("a", "b")]
    for f in files:
        engine.index_file(f)
    row = lambda: next(c for c in checks(engine.settings) if c["check"] == "source files")  # noqa: E731
    assert row()["ok"] and row()["detail"] == "2 indexed files in place"
    files[0].unlink()
    assert row()["detail"] == f"1 of 2 indexed files are missing ({tmp_path / 'share'})"
    files[1].unlink()
    got = row()
    assert not got["ok"] and got["detail"].startswith("all 2 indexed files are missing") and "unmounted" in got["detail"]
    assert len(engine.documents()) == 2
