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


def _client(host: str):
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    return chromadb.HttpClient(host=f"http://{host}", port=int(host.rsplit(":", 1)[1]),
                               settings=ChromaSettings(anonymized_telemetry=False))


def _server_collections(host: str) -> dict:
    return {c.name: c.count() for c in _client(host).list_collections()}


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
    assert _server_collections(server.host) == {name: guide.chunks + other.chunks, f"{name}_catalog": 4}
    assert not (home / "catalog.json").exists() and e.token_cache.exists(1, 1)  # the catalog is on the server too

    hits = e.retriever.search("how do I restore a volume from the vault?", k=3).hits
    assert hits and hits[0].doc_id == guide.doc_id and "restore" in hits[0].text
    fetched = e.windows.fetch([hits[0].chunk_id]).windows[0]
    assert hits[0].text in fetched.text or fetched.text in hits[0].text
    assert "snapshot" in e.chunk(f"{guide.doc_id}_000").text

    e.delete(other.doc_id)
    assert [d.doc_id for d in e.documents()] == [guide.doc_id]
    assert _server_collections(server.host)[name] == guide.chunks
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
    _client(server.host).delete_collection(f"{name}_catalog")
    with pytest.raises(CorruptFileError, match="catalog on the Chroma server is empty"):
        make_engine(CHROMA_HOST=server.host)


def test_server_down_is_one_line(make_engine, settings_for, tmp_path):
    port = _free_port()  # nothing listens there
    with pytest.raises(ModelUnavailableError) as err:  # the catalog is on the server: opening the library fails
        make_engine(CHROMA_HOST=f"http://127.0.0.1:{port}", HOME=str(tmp_path / "home"))
    write(tmp_path / "a.md", OTHER)
    msg = one_line(err.value)
    assert "\n" not in msg and f"127.0.0.1:{port}" in msg and "not reachable" in msg
    assert not (tmp_path / "home" / "chroma" / "library.json").exists()  # nothing recorded for a server never reached

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


# -- one library shared by several data dirs (machines, users) ---------------------------------------------
def test_server_catalog_claims_serials_and_generations_once(server, tmp_path):
    """Two writers on one server log: each serial and each generation is claimed by exactly one, a commit never
    moves a document back to an older generation, and both read the same catalog."""
    from thread_rag.records import DocumentRecord
    from thread_rag.store.server_catalog import ServerCatalog

    col = _client(server.host).get_or_create_collection("thread_rag_test_catalog", embedding_function=None)
    a, b = (ServerCatalog(tmp_path / f"{n}.json", lambda: col, origin=n) for n in ("a", "b"))
    serials = [a.allocate_serial(), b.allocate_serial(), a.allocate_serial()]
    # a writer whose view is stale adds a version another writer already holds: the server keeps the first, the
    # stale writer finds someone else's change there, reads the log again and takes the next version
    real_reload, stale = b.reload, {"once": True}
    b.reload = lambda: False if stale.pop("once", False) else real_reload()
    adds = []

    class Counting:
        def __getattr__(self, name):
            return getattr(col, name)

        def add(self, **kw):
            adds.append(kw["ids"][0])
            return col.add(**kw)

    b._collection = Counting()
    serials.append(b.allocate_serial())
    assert serials == [1, 2, 3, 4] and len(adds) == 2 and adds[0] < adds[1]  # the first add lost its version
    b.reload, b._collection = real_reload, col

    def rec(serial, gen):
        return DocumentRecord(serial=serial, doc_id=f"DOC{serial}", name="x", path=f"/x{serial}", content_hash="h",
                              kind="text", chunk_count=1, pages=None, indexed_at="t", generation=gen)

    a.commit(rec(1, 1))
    ga, gb = a.next_generation(1), b.next_generation(1)  # both re-index DOC1 at once
    assert sorted([ga, gb]) == [2, 3]
    assert b.in_flight() == {(1, 2), (1, 3)} | {(s, 1) for s in (2, 3, 4)}  # reserved, not committed
    b.commit(rec(1, max(ga, gb)))
    a.commit(rec(1, min(ga, gb)))  # the older one, committed later: a no-op
    a.reload(), b.reload()
    for cat in (a, b):
        assert cat.get(1).generation == 3 and cat.version == 9 and cat.next_serial == 5
    assert (1, 2) not in a.in_flight() and (1, 3) not in a.in_flight()
    a.remove(1)
    b.reload()
    assert [d.doc_id for d in b.documents()] == []
    b.commit(rec(1, 3), if_current=True)  # a change to the record it had (a re-key) does not bring it back
    a.reload()
    assert a.documents() == []
    assert a.next_generation(1) == 4  # a removed document's generations are never handed out again
    with pytest.raises(CorruptFileError, match="already has a catalog"):  # an import only begins a log
        b.import_local({"documents": {}, "next_serial": 1})


def test_a_new_process_starts_from_the_snapshot_and_reads_only_the_changes_after_it(server, tmp_path, monkeypatch):
    from thread_rag.store import server_catalog as sc

    monkeypatch.setattr(sc, "SNAPSHOT_EVERY", 5)
    col = _client(server.host).get_or_create_collection("thread_rag_snap_catalog", embedding_function=None)
    a = sc.ServerCatalog(tmp_path / "a.json", lambda: col, origin="a")
    serials = [a.allocate_serial() for _ in range(12)]  # 12 changes: snapshots at versions 5 and 10
    assert serials == list(range(1, 13))
    assert col.get(ids=["snapshot"], include=["metadatas"])["metadatas"] == [{"snapshot_of": 10}]
    seen = []
    real_get = col.get

    class Watching:
        def __getattr__(self, name):
            return getattr(col, name)

        def get(self, **kw):
            out = real_get(**kw)
            seen.extend(out["ids"])
            return out

    b = sc.ServerCatalog(tmp_path / "b.json", Watching, origin="b")
    assert b.version == 12 and b.next_serial == 13 and b._data == a._data
    assert sorted(i for i in seen if not i.startswith("probe-")) == ["snapshot", "v000000000011", "v000000000012"]
    # (not the 10 changes before it; the probe is the once-a-process check that the server keeps the first add)
    col.upsert(ids=["snapshot"], documents=['{"version": 3, "documents": {}, "next_serial": 4}'],
               metadatas=[{"snapshot_of": 3}], embeddings=[[0.0]])  # an older snapshot written late
    c = sc.ServerCatalog(tmp_path / "c.json", lambda: col, origin="c")
    assert c.version == 12 and c.next_serial == 13  # a longer replay, the same catalog


def test_two_data_dirs_share_one_library(server, make_engine, tmp_path):
    a = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "a"))
    guide = a.index_file(write(tmp_path / "docs" / "runbook.md", GUIDE))
    library_id = json.loads((a.home / "chroma" / "library.json").read_text())["library_id"]
    b = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "b"), CHROMA_LIBRARY=library_id)
    assert [d.doc_id for d in b.documents()] == [guide.doc_id]
    question = "how do I restore a volume from the vault?"
    want = [h.chunk_id for h in a.retriever.search(question, k=3).hits]
    assert [h.chunk_id for h in b.retriever.search(question, k=3).hits] == want  # its index built from the store
    coffee = b.index_file(write(tmp_path / "docs" / "coffee.md", OTHER))
    assert coffee.doc_id == "DOC2"  # the serial comes from the shared catalog
    assert [d.doc_id for d in a.documents()] == ["DOC1", "DOC2"]
    assert a.retriever.search("how many grams of beans?", k=1).hits[0].doc_id == "DOC2"
    # b derives what it lacks (token cache, tree) from the stored chunks: one command
    assert any("DOC1: token cache" in p for p in b.check_consistency())
    assert any("DOC1: token cache rebuilt" in n for n in b.repair())
    assert b.check_consistency() == [] and [h.chunk_id for h in b.retriever.search(question, k=3).hits] == want
    # a re-index on one machine is what the other reads; a delete on the other is gone on the first
    edited = a.index_file(write(tmp_path / "docs" / "runbook.md", GUIDE.replace("vault", "strongroom")))
    assert edited.status == "replaced"
    assert b.document("DOC1").generation == 2 and "strongroom" in " ".join(c.text for c in b.thread("DOC1").chunks)
    b.delete("DOC2")
    assert [d.doc_id for d in a.documents()] == ["DOC1"]
    # paths and files are each data dir's own: b indexing the file a indexed makes b's own document
    mine = b.index_file(write(tmp_path / "docs" / "runbook.md", GUIDE.replace("vault", "cellar")))
    assert (mine.status, mine.doc_id) == ("indexed", "DOC3") and a.document("DOC1").generation == 2
    # a generation another data dir has claimed and is writing is not an orphan to this one's repair
    chunks, vecs = a.store.load(3, 1, with_embeddings=True)
    gen = b.catalog.next_generation(3)
    b.store.add(chunks, vecs, gen)
    assert (3, gen) in a.store.generations() and not any("orphan chunks" in p for p in a.check_consistency())
    assert (a.home / "index_parts" / "DOC2.g1").is_dir()  # a's part of the document b removed ...
    make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "a")).close()
    assert not (a.home / "index_parts" / "DOC2.g1").exists()  # ... goes at a's next start
    a.repair()
    assert (3, gen) in a.store.generations()
    # a data dir of another library cannot join this one; a bad id is one line
    with pytest.raises(SettingsError, match="already belongs to library"):
        make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "a"), CHROMA_LIBRARY="f" * 32)
    with pytest.raises(SettingsError, match="no such library"):  # a mistyped id makes no new library
        make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "typo"), CHROMA_LIBRARY="e" * 32)
    assert not (tmp_path / "typo" / "chroma" / "library.json").exists()
    with pytest.raises(SettingsError, match="32 hex digits"):
        make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "c"), CHROMA_LIBRARY="nope")
    server.stop()
    server.start()
    c = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "c"), CHROMA_LIBRARY=library_id)
    assert [(d.doc_id, d.generation) for d in c.documents()] == [("DOC1", 2), ("DOC3", 1)]  # nothing lost in the restart
    assert c.thread("DOC1").chunks and c.check_consistency() == [  # c's own derived files are still to be made
        f"{d}: {what} (" + how + "; thread-rag doctor --repair rebuilds it)" for d in ("DOC1", "DOC3")
        for what, how in (("token cache missing or unreadable", "searches recompute it in memory"),
                          ("nested tree missing", "nested searches build it in memory"))]


def test_two_machines_index_into_one_library_at_once(server, tmp_path):
    """Two processes on two data dirs of one library index different files at the same time: every document gets
    its own serial, no chunk of one lands in another, both see all of them."""
    from thread_rag.settings import load_settings
    from thread_rag.engine import Engine

    files = {side: [write(tmp_path / side / f"{side}{i}.md", f"# {side} {i}\n\n" + " ".join(
        f"Machine {side} document {i} sentence {j} about the {side}{i} subject." for j in range(40)))
        for i in range(3)] for side in ("left", "right")}
    first = subprocess.run([sys.executable, "-c", "print()"], capture_output=True)  # warm the interpreter cache
    assert first.returncode == 0
    base = {"HOME": str(tmp_path / "left-home"), "CHROMA_HOST": server.host, "RERANKER": "none"}
    Engine(load_settings(base, env={}, config_file=False)).close()  # the library, made by the left data dir
    library_id = json.loads((tmp_path / "left-home" / "chroma" / "library.json").read_text())["library_id"]
    procs = []
    for side in ("left", "right"):
        env = {**os.environ, "THREAD_RAG_CHROMA_HOST": server.host, "THREAD_RAG_CHROMA_LIBRARY": library_id,
               "THREAD_RAG_CONFIG": str(write(tmp_path / "none.py", "")), "THREAD_RAG_RERANKER": "none"}
        procs.append(subprocess.Popen([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path / f"{side}-home"),
                                       "index", *map(str, files[side])], env=env, cwd=REPO, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for p in procs:
        out, err = p.communicate(timeout=400)
        assert p.returncode == 0, err[-2000:]
    with Engine(load_settings(base, env={}, config_file=False)) as e:
        docs = e.documents()
        assert sorted(d.doc_id for d in docs) == [f"DOC{i}" for i in range(1, 7)]
        for d in docs:
            side, i = d.name[:-4].rstrip("012"), d.name[-4]
            texts = [c.text for c in e.thread(d.doc_id).chunks]
            assert texts and all(f"{side}{i} subject" in t for t in texts), (d.doc_id, d.name, texts[:1])
        assert e.store.count() == sum(d.chunk_count for d in docs)


def test_a_server_data_dir_from_before_shared_catalogs_hands_its_catalog_over(server, make_engine, tmp_path):
    from thread_rag.doctor import store_checks

    e = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "old"))
    e.index_file(write(tmp_path / "docs" / "runbook.md", GUIDE))
    data = dict(e.catalog._data)
    e.close()
    # as the previous version left it: the catalog in the data dir, none on the server
    _client(server.host).delete_collection(f"{e.store.collection_name}_catalog")
    write(e.home / "catalog.json", json.dumps(data))
    rows = {r["check"]: r for r in store_checks(e.settings)}  # doctor looks, moves nothing
    assert "moves to the server" in rows["catalog"]["detail"] and (e.home / "catalog.json").exists()
    assert e.store.library_id in rows["chroma"]["detail"]
    again = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "old"))
    assert [d.doc_id for d in again.documents()] == ["DOC1"] and not (again.home / "catalog.json").exists()
    assert list(again.home.glob("catalog.json.imported-*"))
    assert again.index_file(write(tmp_path / "docs" / "coffee.md", OTHER)).doc_id == "DOC2"


def test_a_writer_killed_mid_reindex_on_a_shared_library(server, make_engine, tmp_path):
    """SIGKILL after the new generation's chunks reached the server, before the commit: the other data dir keeps
    reading the old version, the killed data dir's next start removes the uncommitted rows, and the re-index then
    writes a generation above the abandoned claim."""
    a = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "a"))
    f = write(tmp_path / "docs" / "runbook.md", GUIDE)
    a.index_file(f)
    library_id = a.store.library_id
    a.close()
    b = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "b"), CHROMA_LIBRARY=library_id)
    write(f, OTHER)
    env = {**os.environ, "THREAD_RAG_CHROMA_HOST": server.host, "THREAD_RAG_CRASH_AT": "after_chroma",
           "THREAD_RAG_CONFIG": str(write(tmp_path / "none.py", "")), "THREAD_RAG_RERANKER": "none"}
    cp = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path / "a"), "index", str(f)],
                        env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert cp.returncode == -signal.SIGKILL, cp.stderr[-2000:]
    assert (1, 2) in b.store.generations()  # the killed writer's rows are on the server ...
    assert "vault" in " ".join(c.text for c in b.thread("DOC1").chunks)  # ... and b reads the old version
    assert not any("orphan chunks" in p for p in b.check_consistency())  # claimed by a: not b's to remove
    a = make_engine(CHROMA_HOST=server.host, HOME=str(tmp_path / "a"))  # a's start recovers its own write
    assert (1, 2) not in a.store.generations() and a.document("DOC1").generation == 1
    again = a.index_file(f)
    assert again.status == "replaced" and a.document("DOC1").generation == 3  # above the abandoned claim
    assert "Grind" in " ".join(c.text for c in b.thread("DOC1").chunks)
    assert a.check_consistency() == [] and a.store.generations() == {(1, 3)}


class TokenProxy:
    """A reverse proxy on loopback that forwards to ``target`` only requests with ``Authorization: Bearer <token>``
    (what an nginx or Caddy in front of a Chroma server would do); 401 otherwise."""

    def __init__(self, target: str, token: str):
        import http.client
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self):
                if self.headers.get("Authorization") != f"Bearer {token}":
                    proxy.refused += 1
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                conn = http.client.HTTPConnection(target, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                proxy.forwarded += 1

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        self.refused = self.forwarded = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.httpd.server_address[1]}"
        import threading

        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_server_on_another_machine_needs_a_token_and_one_behind_a_token_proxy_works(server, tmp_path):
    """Issue 47: README suggested `chroma run --host 0.0.0.0`, whose server checks no one. A CHROMA_HOST on another
    machine with no token is refused at start (unless CHROMA_INSECURE), and a token is sent to the proxy in front of
    the server: indexed and searched through a real token-checking proxy; a wrong token is one line."""
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    base = {"RERANKER": "none"}
    with pytest.raises(SettingsError, match="CHROMA_HOST=10.1.2.3:8000 is another machine"):
        load_settings({**base, "CHROMA_HOST": "10.1.2.3:8000"}, env={}, config_file=False)
    for ok in ({"CHROMA_TOKEN": "s3cret"}, {"CHROMA_INSECURE": True}):  # neither connects at start
        load_settings({**base, "CHROMA_HOST": "https://chroma.example.org:443", **ok}, env={}, config_file=False)
    load_settings({**base, "CHROMA_HOST": "localhost:8000"}, env={}, config_file=False)  # loopback: a tunnel's end

    proxy = TokenProxy(server.host, "s3cret")
    try:
        home = tmp_path / "home"
        settings = load_settings({**base, "HOME": str(home), "CACHE_PATH": str(tmp_path / "cache"),
                                  "CHROMA_HOST": proxy.host, "CHROMA_TOKEN": "s3cret"}, env={}, config_file=False)
        with Engine(settings) as e:
            e.index_file(write(tmp_path / "guide.md", GUIDE))
            hits = e.retriever.search("how do I restore a volume?", k=2).hits
        assert hits and proxy.forwarded > 0 and proxy.refused == 0
        wrong = settings.replace(CHROMA_TOKEN="guess")
        with pytest.raises(ModelUnavailableError, match="refused the request .HTTP 401.: CHROMA_TOKEN is not the token"):
            Engine(wrong).documents()
        from thread_rag.doctor import checks

        access = next(c for c in checks(settings) if c["check"] == "chroma access")
        assert access["ok"] and "a token is sent" not in access["detail"]  # loopback proxy
    finally:
        proxy.close()


def test_only_this_machine_counts_as_loopback():
    """is_loopback matched by prefix: CHROMA_HOST=localhost.example.org:8000 (another machine) or [::10]:8000 passed as
    this machine, so a server there was reached with no token and no refusal."""
    from thread_rag.settings import load_settings
    from thread_rag.store.chunk_store import is_loopback

    for host in ("127.0.0.1:8000", "127.3.4.5:8000", "localhost:8000", "LOCALHOST:8000", "http://[::1]:8000"):
        assert is_loopback(host), host
    for host in ("localhost.example.org:8000", "localhostile.net:8000", "[::10]:8000", "10.0.0.1:8000",
                 "127.example.org:8000", "chroma.example.org:443"):
        assert not is_loopback(host), host
    with pytest.raises(SettingsError, match="is another machine"):
        load_settings({"RERANKER": "none", "CHROMA_HOST": "localhost.example.org:8000"}, env={}, config_file=False)
