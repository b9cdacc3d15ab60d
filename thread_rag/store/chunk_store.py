"""Chunk texts, raw-text embeddings and metadata in ChromaDB: a local ``PersistentClient`` under
``<HOME>/chroma``, or a Chroma server (``chromadb.HttpClient``) when ``CHROMA_HOST`` is set.

Records are keyed ``DOC1_006@g2``: the generation suffix lets a re-index write the new chunks
beside the old ones and switch over atomically when the catalog commits. Chroma never embeds
anything itself (``embedding_function=None``) and never phones home (telemetry off).

On a server, a data dir's records live in the collection ``thread_rag_<library id>``; the id is a
random one made once and kept in ``<HOME>/chroma/library.json`` (or the id of an existing library the data dir
joins), so data dirs of different libraries on one server never share (or overwrite) each other's records.
The library's catalog is a change log in the collection ``thread_rag_<library id>_catalog``
(store/server_catalog.py), so data dirs that join one library (``CHROMA_LIBRARY``) share its documents; the
search indexes, token cache and trees stay in each data dir.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import uuid
from pathlib import Path

import numpy as np

from ..atomic import atomic_write_bytes
from ..errors import CorruptFileError, ModelUnavailableError, SettingsError
from ..ids import ChunkId
from ..records import Chunk

for _name in ("chromadb", "chromadb.telemetry", "chromadb.telemetry.product.posthog"):
    logging.getLogger(_name).setLevel(logging.ERROR)
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

LIBRARY_FILE = "library.json"  # in <HOME>/chroma: the server collection of a data dir whose chunks live on a server
_HOST = re.compile(r"(?:(?P<scheme>https?)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})/?")


def parse_chroma_host(value: str) -> tuple[str, int, bool]:
    """``host:port``, ``http://host:port`` or ``https://host:port`` -> (host, port, ssl); ValueError otherwise."""
    m = _HOST.fullmatch(value.strip())
    if not m or not 0 < int(m["port"]) < 65536:
        raise ValueError("expected host:port or http://host:port, e.g. 127.0.0.1:8000")
    return m["host"], int(m["port"]), m["scheme"] == "https"


def record_id(serial: int, position: int, generation: int) -> str:
    return f"{ChunkId(serial, position)}@g{generation}"


class ChunkStore:
    COLLECTION = "chunks"  # the local store's collection; on a server: collection_name(library id)

    def __init__(self, path: Path, host: str | None = None, join: str | None = None, token: str | None = None):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.host = host or None
        self.headers = auth_headers(token)  # CHROMA_TOKEN: for the proxy in front of the server
        self.join = join or None  # a library id to join (CHROMA_LIBRARY), server only
        library = self.path / LIBRARY_FILE
        if self.host is None:
            if library.exists():
                raise SettingsError(f"{self.path.parent} keeps its chunks on a Chroma server "
                                    f"({_describe(library)}); set CHROMA_HOST (THREAD_RAG_CHROMA_HOST) to that server")
            self._open_local()
        else:
            self._open_remote(library)
        try:
            self._batch = max(100, min(2000, int(self._client.get_max_batch_size())))
        except Exception:  # noqa: BLE001
            self._batch = 1000

    def _open_local(self) -> None:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        self.url = None
        self._client = chromadb.PersistentClient(
            path=str(self.path), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False))
        self._col = self._client.get_or_create_collection(
            self.COLLECTION, embedding_function=None, metadata={"hnsw:space": "ip"})

    def _open_remote(self, library: Path) -> None:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        try:
            host, port, ssl = parse_chroma_host(self.host)
        except ValueError as exc:
            raise SettingsError(f"invalid setting CHROMA_HOST={self.host!r}: {exc}") from None
        self.url = f"{'https' if ssl else 'http'}://{host}:{port}"
        if not library.exists() and (self.path / "chroma.sqlite3").exists():
            raise SettingsError(f"CHROMA_HOST is set but {self.path.parent} holds a local Chroma store; its documents "
                                f"would not be on the server. Unset CHROMA_HOST for this data dir, or use a new "
                                f"--data-dir for the server library")
        _heartbeat(self.url, headers=self.headers)
        with _server_errors(self.url):
            # the full URL as host: chromadb reads any host starting with "http" as a URL (a host named
            # "httpd" would otherwise lose its port)
            self._client = chromadb.HttpClient(host=self.url, port=port, ssl=ssl, headers=self.headers or None,
                                               settings=ChromaSettings(anonymized_telemetry=False))
            if self.join and not library.exists():  # joining: the library must exist (a typo makes no new one)
                names = {getattr(c, "name", c) for c in self._client.list_collections()}
                if f"{collection_name(self.join)}_catalog" not in names:
                    raise SettingsError(f"CHROMA_LIBRARY={self.join}: no such library on {self.url} "
                                        f"(thread-rag doctor on a data dir of the library shows its id)")
        self.library_id = _library_id(library, self.url, self.join)
        self.collection_name = collection_name(self.library_id)
        with _server_errors(self.url):
            col = self._client.get_or_create_collection(
                self.collection_name, embedding_function=None, metadata={"hnsw:space": "ip"})
        self._col = _Guarded(col, self.url)

    def catalog_collection(self):
        """The server collection holding this library's catalog log (server libraries only)."""
        with _server_errors(self.url):
            col = self._client.get_or_create_collection(f"{self.collection_name}_catalog", embedding_function=None)
        return _Guarded(col, self.url)

    def close(self) -> None:
        """Release the Chroma client (sqlite and segment files, its threads); idempotent."""
        client, self._client = getattr(self, "_client", None), None
        if client is not None and hasattr(client, "close"):
            client.close()

    # -- writes ----------------------------------------------------------------------------
    def add(self, chunks: list[Chunk], embeddings: np.ndarray, generation: int) -> None:
        self.add_many([(chunks, embeddings, generation)])

    def add_many(self, docs: list[tuple[list[Chunk], np.ndarray, int]]) -> None:
        """The rows of several documents' generations ``(chunks, embeddings, generation)`` in as few calls as
        Chroma takes (a call costs ~7 ms on top of its rows, so small documents share them)."""
        rows = [(c, v, gen) for chunks, vecs, gen in docs for c, v in zip(chunks, vecs, strict=True)]
        for i in range(0, len(rows), self._batch):
            part = rows[i:i + self._batch]
            serials = [ChunkId.parse(c.chunk_id).serial for c, _, _ in part]
            self._col.upsert(
                ids=[record_id(s, c.position, gen) for s, (c, _, gen) in zip(serials, part)],
                embeddings=np.asarray([v for _, v, _ in part], np.float32),
                documents=[c.text for c, _, _ in part],
                metadatas=[_meta(c, s, gen) for s, (c, _, gen) in zip(serials, part)],
            )

    def delete_generation(self, serial: int, generation: int) -> None:
        self._col.delete(where={"$and": [{"serial": serial}, {"generation": generation}]})

    def delete_older(self, serial: int, generation: int) -> None:
        """Rows of the document's generations before ``generation``."""
        self._col.delete(where={"$and": [{"serial": serial}, {"generation": {"$lt": generation}}]})

    def delete_document(self, serial: int, keep_generation: int | None = None) -> None:
        if keep_generation is None:
            self._col.delete(where={"serial": serial})
        else:
            self._col.delete(where={"$and": [{"serial": serial}, {"generation": {"$ne": keep_generation}}]})

    # -- reads -----------------------------------------------------------------------------
    def count(self) -> int:
        return self._col.count()

    def rows(self) -> list[tuple[str, str, dict]]:
        """Every record as (id, text, metadata), sorted by id, committed or not (for checks and tests)."""
        got = self._col.get(include=["documents", "metadatas"])
        return sorted(zip(got["ids"], got["documents"], got["metadatas"]), key=lambda r: r[0])

    def generations(self) -> set[tuple[int, int]]:
        """Every (serial, generation) present, committed or not (for recovery)."""
        got = self._col.get(include=["metadatas"])
        return {(int(m["serial"]), int(m["generation"])) for m in got["metadatas"] or []}

    def load(self, serial: int, generation: int, with_embeddings: bool = False) -> tuple[list[Chunk], np.ndarray | None]:
        include = ["documents", "metadatas"] + (["embeddings"] if with_embeddings else [])
        got = self._col.get(where={"$and": [{"serial": serial}, {"generation": generation}]}, include=include)
        rows = sorted(range(len(got["ids"])), key=lambda i: got["metadatas"][i]["position"])
        chunks = [_chunk(got["documents"][i], got["metadatas"][i]) for i in rows]
        emb = None
        if with_embeddings:
            raw = got["embeddings"]
            emb = np.asarray([raw[i] for i in rows], dtype=np.float32).reshape(len(rows), -1 if rows else 0)
        return chunks, emb

    def get_chunks(self, keys: list[tuple[int, int, int]]) -> dict[tuple[int, int, int], Chunk]:
        """Chunks by (serial, position, generation) in one lookup by record id (a search needs a handful, not
        their whole documents); keys not stored are absent from the result."""
        if not keys:
            return {}
        got = self._col.get(ids=[record_id(s, p, g) for s, p, g in keys], include=["documents", "metadatas"])
        return {(int(m["serial"]), int(m["position"]), int(m["generation"])): _chunk(text, m)
                for text, m in zip(got["documents"], got["metadatas"])}


def collection_name(library_id: str) -> str:
    return f"thread_rag_{library_id}"


def _library_id(library: Path, url: str, join: str | None = None) -> str:
    """This data dir's library id: read from ``library.json``, or made (``join``: the id of a library another
    data dir made, to share it) and written once (exclusively: two processes starting at once on a fresh data
    dir end up with the same id)."""
    if join is not None and not re.fullmatch(r"[0-9a-f]{32}", join):
        raise SettingsError(f"invalid setting CHROMA_LIBRARY={join!r}: a library id is 32 hex digits "
                            f"(thread-rag doctor shows a library's id)")
    if not library.exists():
        body = json.dumps({"library_id": join or uuid.uuid4().hex, "server": url}, indent=1).encode()
        atomic_write_bytes(library, body, exclusive=True)  # another process made it first: theirs wins
    try:
        lid = json.loads(library.read_text(encoding="utf-8"))["library_id"]
        if not re.fullmatch(r"[0-9a-f]{32}", lid):
            raise ValueError(lid)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorruptFileError(f"{library} cannot be read ({type(exc).__name__}); it names the server collection "
                               f"that holds this data dir's chunks: restore it") from None
    if join is not None and lid != join:
        raise SettingsError(f"CHROMA_LIBRARY={join} but {library.parent.parent} already belongs to library {lid}; "
                            f"use a new --data-dir to join another library")
    return lid


def _describe(library: Path) -> str:
    try:
        info = json.loads(library.read_text(encoding="utf-8"))
        return f"collection {collection_name(info['library_id'])} on {info.get('server', '?')}"
    except (OSError, ValueError, KeyError, TypeError):
        return str(library)


def _unreachable(url: str, exc: BaseException) -> ModelUnavailableError:
    first = (str(exc).splitlines() or [""])[0][:160]
    return ModelUnavailableError(f"the Chroma server at {url} (CHROMA_HOST) is not reachable "
                                 f"({type(exc).__name__}{': ' + first if first else ''}); is it running?")


def auth_headers(token: str | None) -> dict:
    """The header a token goes in: ``Authorization: Bearer <token>`` (what a reverse proxy checks; chromadb's own
    server ignores it)."""
    return {"Authorization": f"Bearer {token.strip()}"} if token and token.strip() else {}


def is_loopback(host: str) -> bool:
    """``CHROMA_HOST`` names this machine (reached by no one else: a server there, or an SSH tunnel's end): the name
    ``localhost`` or a loopback address (127.0.0.0/8, ::1), compared whole (``localhost.example.org`` is not)."""
    return loopback_name(parse_chroma_host(host)[0])


def loopback_name(name: str) -> bool:
    """A host name without its port names this machine: ``localhost`` or a loopback address (``[::1]`` too)."""
    import ipaddress

    name = name.lower().strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_remote(host: str, token: str, insecure: bool) -> None:
    """SettingsError for a Chroma server on another machine reached with no token: the server has no authentication
    of its own (chromadb 1.x's auth hook does nothing), so anyone who reaches its port reads, rewrites or deletes
    every library on it."""
    if host.strip() and not is_loopback(host) and not token.strip() and not insecure:
        raise SettingsError(f"CHROMA_HOST={host.strip()} is another machine, and a Chroma server checks no one: anyone "
                            f"who reaches that port reads, changes or deletes every library on it. Put it behind a "
                            f"proxy that checks a token and set CHROMA_TOKEN, reach it through an SSH tunnel "
                            f"(ssh -L 8000:127.0.0.1:8000 host; CHROMA_HOST=127.0.0.1:8000), or set "
                            f"CHROMA_INSECURE=true on a network you trust")


def _heartbeat(url: str, timeout: float = 5.0, headers: dict | None = None) -> None:
    """One bounded request before the client (whose own requests never time out)."""
    import httpx

    try:
        resp = httpx.get(f"{url}/api/v2/heartbeat", timeout=timeout, headers=headers or None)
    except httpx.HTTPError as exc:
        raise _unreachable(url, exc) from None
    if resp.status_code in (401, 403):
        raise ModelUnavailableError(f"{url} (CHROMA_HOST) refused the request (HTTP {resp.status_code}): "
                                    f"{'CHROMA_TOKEN is not the token it expects' if headers else 'set CHROMA_TOKEN'}")
    if resp.status_code != 200 or "nanosecond heartbeat" not in resp.text:
        raise ModelUnavailableError(f"{url} (CHROMA_HOST) does not answer as a Chroma server "
                                    f"(GET /api/v2/heartbeat: HTTP {resp.status_code}); it needs chromadb 1.x")


@contextlib.contextmanager
def _server_errors(url: str):
    """Transport failures and server-side errors as one line naming the server."""
    import httpx
    from chromadb.errors import ChromaError

    try:
        yield
    except httpx.TransportError as exc:
        raise _unreachable(url, exc) from None
    except ChromaError as exc:
        raise ModelUnavailableError(f"the Chroma server at {url} (CHROMA_HOST) refused a request: "
                                    f"{type(exc).__name__}: {exc}") from None
    except ValueError as exc:
        if "connect" not in str(exc).lower():  # the client reports a refused connection as ValueError
            raise
        raise _unreachable(url, exc) from None


class _Guarded:
    """A server collection whose calls fail with one line (see :func:`_server_errors`)."""

    def __init__(self, col, url: str):
        self._col, self._url = col, url

    def __getattr__(self, name):
        attr = getattr(self._col, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            with _server_errors(self._url):
                return attr(*args, **kwargs)

        return call


def _meta(c: Chunk, serial: int, generation: int) -> dict:
    return {
        "serial": serial, "generation": generation, "position": c.position, "doc_id": c.doc_id,
        "page_start": -1 if c.page_start is None else int(c.page_start),
        "page_end": -1 if c.page_end is None else int(c.page_end),
        "heading": " > ".join(c.heading_path), "char_start": int(c.char_start), "char_end": int(c.char_end),
        "parent": -1 if c.parent is None else int(c.parent), "n_tokens": int(c.n_tokens),
    }


def _chunk(text: str, m: dict) -> Chunk:
    return Chunk(
        chunk_id=str(ChunkId(int(m["serial"]), int(m["position"]))), doc_id=m["doc_id"], position=int(m["position"]),
        text=text, page_start=None if m["page_start"] < 0 else int(m["page_start"]),
        page_end=None if m["page_end"] < 0 else int(m["page_end"]),
        heading_path=[h for h in m.get("heading", "").split(" > ") if h], char_start=int(m["char_start"]),
        char_end=int(m["char_end"]), parent=None if m.get("parent", -1) < 0 else int(m["parent"]),
        n_tokens=int(m.get("n_tokens", 0)))
