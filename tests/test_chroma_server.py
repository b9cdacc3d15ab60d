"""CHROMA_HOST: chunks, vectors and metadata on a real Chroma server (``chroma run`` on loopback), the rest local."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, write
from thread_rag.errors import CorruptFileError, ModelUnavailableError, SettingsError, one_line

GUIDE = ("# Backup runbook\n\n## Snapshots\n"
         + " ".join(f"Step {i}: the nightly snapshot of volume {i} is copied to the vault with rsync." for i in range(25))
         + "\n\n## Restore\n"
         + " ".join(f"Step {i}: to restore volume {i}, mount the vault read-only and run restore-volume." for i in range(25)))
OTHER = "# Coffee\n\n" + " ".join(f"Grind {i} grams of beans for cup {i} and pour slowly." for i in range(20))


def _chroma_cli() -> str | None:
    beside = Path(sys.executable).with_name("chroma")
    return str(beside) if beside.is_file() else shutil.which("chroma")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``chroma run --path DIR --port P --host 127.0.0.1``, started and stopped by the test."""

    def __init__(self, path: Path, port: int):
        self.path, self.port, self.proc = path, port, None
        self.log = path.parent / f"chroma-{port}.log"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> "Server":
        cli = _chroma_cli()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([cli, "run", "--path", str(self.path), "--port", str(self.port),
                                          "--host", "127.0.0.1"], stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"chroma run exited with {self.proc.returncode}: {self.log.read_text()[-800:]}")
            try:
                with urllib.request.urlopen(f"http://{self.host}/api/v2/heartbeat", timeout=1) as r:
                    if b"nanosecond heartbeat" in r.read():
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        pytest.fail(f"chroma run gave no heartbeat within {timeout} s: {self.log.read_text()[-800:]}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: only what this test started
            self.proc.wait(timeout=5)


@pytest.fixture
def server(tmp_path):
    if _chroma_cli() is None:
        pytest.skip("the `chroma` CLI (chromadb's console script) is not installed")
    srv = Server(tmp_path / "server", _free_port()).start()
    yield srv
    srv.stop()


def _server_collections(host: str) -> dict:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.HttpClient(host=f"http://{host}", port=int(host.rsplit(":", 1)[1]),
                                 settings=ChromaSettings(anonymized_telemetry=False))
    return {c.name: c.count() for c in client.list_collections()}


def test_library_on_server_survives_restart(server, make_engine, tmp_path):
    e = make_engine(CHROMA_HOST=server.host)
    guide = e.index_file(write(tmp_path / "docs" / "runbook.md", GUIDE))
    other = e.index_file(write(tmp_path / "docs" / "coffee.md", OTHER))
    assert (guide.status, other.status) == ("indexed", "indexed") and guide.chunks >= 4

    home = e.settings.home
    assert not (home / "chroma" / "chroma.sqlite3").exists()  # no local Chroma store
    library = json.loads((home / "chroma" / "library.json").read_text())
    name = f"thread_rag_{library['library_id']}"
    assert e.store.collection_name == name
    assert _server_collections(server.host) == {name: guide.chunks + other.chunks}
    assert (home / "catalog.json").is_file() and e.token_cache.exists(1, 1)  # local parts stay local

    hits = e.retriever.search("how do I restore a volume from the vault?", k=3).hits
    assert hits and hits[0].doc_id == guide.doc_id and "restore" in hits[0].text
    fetched = e.windows.fetch([hits[0].chunk_id]).windows[0]
    assert hits[0].text in fetched.text or fetched.text in hits[0].text
    assert "snapshot" in e.chunk(f"{guide.doc_id}_000").text

    e.delete(other.doc_id)
    assert [d.doc_id for d in e.documents()] == [guide.doc_id]
    assert _server_collections(server.host) == {name: guide.chunks}
    texts = [c.text for c in e.thread(guide.doc_id).chunks]

    server.stop()
    with pytest.raises(ModelUnavailableError) as down:  # mid-session: one line naming the server
        e.store.count()
    assert "\n" not in str(down.value) and server.host in str(down.value) and "not reachable" in str(down.value)
    server.start()

    assert e.store.count() == guide.chunks  # the same engine carries on once the server is back
    e2 = make_engine(CHROMA_HOST=server.host)  # a fresh process on the same data dir
    assert [d.doc_id for d in e2.documents()] == [guide.doc_id]
    assert [c.text for c in e2.thread(guide.doc_id).chunks] == texts
    again = e2.retriever.search("how do I restore a volume from the vault?", k=3).hits
    assert [h.chunk_id for h in again] == [h.chunk_id for h in hits]
    assert e2.check_consistency() == []
    assert e2.index_file(tmp_path / "docs" / "runbook.md").status == "unchanged"

    # a second data dir on the same server: its own collection, none of the first one's documents
    e3 = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "home2"))
    assert e3.documents() == [] and e3.store.count() == 0 and e3.store.collection_name != name
    assert e3.index_file(write(tmp_path / "docs" / "coffee2.md", OTHER)).doc_id == "DOC1"
    assert e2.store.count() == guide.chunks and [c.text for c in e2.thread(guide.doc_id).chunks] == texts

    # a copy of the whole data dir (library.json with it) reads the same library from the server
    shutil.copytree(home, tmp_path / "copy")
    e4 = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "copy"))
    assert e4.store.collection_name == name and [c.text for c in e4.thread(guide.doc_id).chunks] == texts
    assert [h.chunk_id for h in e4.retriever.search("how do I restore a volume from the vault?", k=3).hits] == \
        [h.chunk_id for h in hits]

    # a lost catalog over a server collection that holds chunks is still refused (ids would be handed out again)
    (home / "catalog.json").rename(tmp_path / "catalog.json.moved")
    with pytest.raises(CorruptFileError, match="catalog.json is missing"):
        make_engine(CHROMA_HOST=server.host)


def test_server_down_is_one_line(make_engine, settings_for, tmp_path):
    port = _free_port()  # nothing listens there
    e = make_engine(CHROMA_HOST=f"http://127.0.0.1:{port}")
    with pytest.raises(ModelUnavailableError) as err:
        e.index_file(write(tmp_path / "a.md", OTHER))
    msg = one_line(err.value)
    assert "\n" not in msg and f"127.0.0.1:{port}" in msg and "not reachable" in msg
    assert not (e.settings.home / "chroma" / "library.json").exists()  # nothing recorded for a server never reached

    # the command line: `error: ...`, exit 1, no traceback
    env = {**os.environ, "THREAD_RAG_CHROMA_HOST": f"127.0.0.1:{port}", "THREAD_RAG_CONFIG": str(tmp_path / "none.py")}
    write(tmp_path / "none.py", "")
    cp = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path / "cli"), "index",
                         str(tmp_path / "a.md")], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    errors = [line for line in cp.stderr.splitlines() if line.startswith("error:")]
    assert cp.returncode == 1 and "Traceback" not in cp.stderr, cp.stderr[-2000:]
    assert len(errors) == 1 and "Chroma server" in errors[0] and f"127.0.0.1:{port}" in errors[0], cp.stderr[-2000:]


def test_bad_host_and_switching_modes(settings_for, tmp_path):
    for bad in ("localhost", "http://127.0.0.1", "ftp://h:8000", "h:99999", "h:80/path"):
        with pytest.raises(SettingsError) as err:
            settings_for(CHROMA_HOST=bad)
        assert str(err.value).startswith("invalid setting CHROMA_HOST=") and "\n" not in str(err.value)
    from thread_rag.store.chunk_store import ChunkStore

    remote = write(tmp_path / "r" / "chroma" / "library.json",
                   json.dumps({"library_id": "0" * 32, "server": "http://127.0.0.1:1"}))
    with pytest.raises(SettingsError, match="set CHROMA_HOST"):  # a server library opened without the server
        ChunkStore(remote.parent)
    ChunkStore(tmp_path / "l" / "chroma").count()  # a local store ...
    with pytest.raises(SettingsError, match="holds a local Chroma store"):  # ... never silently swapped for a server
        ChunkStore(tmp_path / "l" / "chroma", host=f"127.0.0.1:{_free_port()}")
