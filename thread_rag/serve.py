"""``thread-rag serve``: the HTTP door (the Grounded RAG design's REST API, mapped onto THREAD-RAG's tools).

Every route calls what the CLI calls (``tools``, ``quote_answer``, ``Agent.ask``) and answers with the same JSON as
the CLI's ``--json``; errors are ``{"error": one line}`` with a 4xx status. Full answers are written one at a time on
the model's thread, bounded: past ``max_waiting`` waiting or running, a full answer gets 503 with ``Retry-After``.
Quotes, searches and the catalog run on a reading thread beside a generation and are never refused as busy; uploads
and deletes wait for both and have the library alone. Safe by default: loopback only unless a token is set
(``THREAD_RAG_SERVE_TOKEN``, checked in constant time on every request), read-only unless ``allow_writes``; an upload
is saved under a name the server makes (no client string becomes a path) and indexed through the engine's
crash-safe path.
"""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from . import __version__, tools
from .engine import uploads_dir
from .errors import NotFoundError, ThreadRagError, one_line
from .records import page_range, to_dict
from .store.chunk_store import loopback_name

TOKEN_ENV = "THREAD_RAG_SERVE_TOKEN"
JSON_LIMIT = 64 * 1024               # bytes of a JSON body
UPLOAD_LIMIT = 100 * 1024 * 1024     # bytes of an uploaded file
_DOC = ("string", False, "a document id, e.g. DOC1")
_PAGES = ("string", False, 'a page range, "10-20" or "3"')
_HEADING = ("string", False, "text the chunk's heading path holds")
MODES = ("quote", "full")  # /query's modes: the quote alone (no model), or then the checked explanation
_QUERY = {"question": ("string", True, "the question"),
          "history": ("array", False, 'earlier turns, oldest first: [{"question": ..., "answer": ...}] (the last 10 '
                                      'are read)'),
          "doc": _DOC, "pages": _PAGES, "heading": _HEADING,
          "mode": (list(MODES), False, '"quote": the quoted lines, no model; "full" (default): then the checked '
                                            'explanation')}
# Each JSON endpoint's body: field -> (JSON type, or the allowed strings; required; what it is). The endpoints check
# their fields against it and /openapi.json describes it.
BODIES = {
    "/search": {"query": ("string", True, "what to search for"), "doc": _DOC,
                "k": ("integer", False, "hits, 1 to 50"), "pages": _PAGES, "heading": _HEADING},
    "/fetch": {"chunk_ids": ("array", True, 'chunk ids, e.g. ["DOC1_006"]'),
               "budget": ("integer", False, "tokens to read, a positive whole number")},
    "/nested": {"query": ("string", True, "what to search for"), "limit": ("integer", False, "passages, 1 to 50"),
                "doc": _DOC},
    "/compare": {"doc_a": ("string", True, "the older document's id"), "doc_b": ("string", True, "the newer one's"),
                 "topic": ("string", False, "only the region around this topic"),
                 "limit": ("integer", False, "changed or only-in rows listed, 1 to 1000"),
                 "explain": ("boolean", False, "a model sentence for each changed pair (queues as an answer)")},
    "/query": _QUERY,
    "/query-stream": _QUERY,
    "/clear": {"confirm": ("string", True, 'the words "delete every document"')},
    "/documents/{doc_id}/locate": {"lines": ("array", True, "the quoted lines to find on the pages"),
                                   "pages": _PAGES},
}
CLEAR_CONFIRM = "delete every document"
SECONDS_PER_ANSWER = 30              # the Retry-After estimate for one full answer ahead in the queue


class HttpError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}


class ReadWriteLock:
    """Many readers or one writer; a waiting writer holds new readers back (an upload is not starved by quotes)."""

    def __init__(self):
        self.cond = threading.Condition()
        self.readers = self.writers_waiting = 0
        self.writing = False

    @contextlib.contextmanager
    def reading(self):
        with self.cond:
            self.cond.wait_for(lambda: not self.writing and not self.writers_waiting)
            self.readers += 1
        try:
            yield
        finally:
            with self.cond:
                self.readers -= 1
                self.cond.notify_all()

    @contextlib.contextmanager
    def writing_(self):
        with self.cond:
            self.writers_waiting += 1
            self.cond.wait_for(lambda: not self.writing and not self.readers)
            self.writers_waiting -= 1
            self.writing = True
        try:
            yield
        finally:
            with self.cond:
                self.writing = False
                self.cond.notify_all()


class Door:
    """What the routes share: the engine, its threads, the queue bound and the write switch. Three worker threads:
    one writes answers with the model (full answers, one at a time, the model being one per process), one reads
    (quotes, searches, fetches, the catalog) so these never wait for a generation, and one writes the library
    (uploads, deletes). Reads and answers share the library; a write waits until they are done and has it alone
    (an upload only while it stores: it is loaded and embedded beside the reads)."""

    def __init__(self, engine, *, allow_writes: bool, token: str | None, max_waiting: int, chat_model=None):
        self.engine, self.allow_writes, self.token = engine, allow_writes, token
        self.max_waiting, self.chat_model = max_waiting, chat_model
        self.readers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="thread-rag-serve-read")
        self.model = ThreadPoolExecutor(max_workers=1, thread_name_prefix="thread-rag-serve-model")
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="thread-rag-serve-write")
        self.library = ReadWriteLock()
        self.waiting = 0  # full answers queued or running
        self.writing = 0  # changes to the library under way or waiting (health says so, without waiting for them)
        self.documents = len(engine.documents())  # the count as last read (health answers with it at once)
        self.indexing: dict = {}  # upload id -> its file, step and share done (health lists them)
        self.lock = threading.Lock()

    async def run(self, fn, *args, **kw):
        """``fn`` on the reading thread, sharing the library with other readers and the answer being written."""
        return await self._on(self.readers, self.library.reading, fn, *args, **kw)

    async def answer(self, fn, *args, **kw):
        """``fn`` (a full answer) on the model's thread."""
        return await self._on(self.model, self.library.reading, fn, *args, **kw)

    async def write(self, fn, *args, **kw):
        """``fn`` (a change to the library) on the writing thread, with the library to itself."""
        return await self._change(self.changing, fn, *args, **kw)

    async def index(self, fn, *args, on_hold: Callable[[str], None] = lambda step: None, **kw):
        """``fn`` (indexing, called with ``storing=``) on the writing thread, holding the library to itself only while
        it stores: reads go on while a file is loaded and embedded. ``on_hold`` hears "waiting to store" before it
        takes the library (a full answer reading it holds the store back until it ends) and "store" once it has it."""
        @contextlib.contextmanager
        def storing():
            on_hold("waiting to store")
            with self.changing():
                on_hold("store")
                yield
        return await self._change(contextlib.nullcontext, fn, *args, storing=storing, **kw)

    @contextlib.contextmanager
    def changing(self):
        """The library to this server's change alone: first the library's file lock (another process may be
        writing; this server's reads go on meanwhile), then this server's readers' lock."""
        with self.engine.write_lock(), self.library.writing_():
            yield

    async def _change(self, hold, fn, *args, **kw):
        def change():
            try:
                return fn(*args, **kw)
            finally:
                with contextlib.suppress(Exception):  # the change's own error is what the client gets
                    self.documents = len(self.engine.documents())
        with self.lock:
            self.writing += 1
        try:
            return await self._on(self.writer, hold, change)
        finally:
            with self.lock:
                self.writing -= 1

    async def _on(self, pool, hold, fn, *args, **kw):
        def call():
            with hold():
                return fn(*args, **kw)
        return await asyncio.get_running_loop().run_in_executor(pool, call)

    def submit(self, pool, fn) -> None:
        """``fn`` on ``pool`` with the library shared (a stream's work, whose results go out as events)."""
        def call():
            with self.library.reading():
                fn()
        pool.submit(call)

    def shutdown(self) -> None:
        for pool in (self.readers, self.model, self.writer):
            pool.shutdown(wait=True)

    def uploads(self) -> list[dict]:
        """The uploads being indexed, as health shows them (the writer thread changes the table)."""
        with self.lock:
            return list(self.indexing.values())

    def indexed(self, key: str, state: dict | None) -> None:
        """An upload's progress (None: it is done)."""
        with self.lock:
            if state is None:
                self.indexing.pop(key, None)
            else:
                self.indexing[key] = state

    def take_slot(self) -> None:
        with self.lock:
            if self.waiting >= self.max_waiting:
                wait = SECONDS_PER_ANSWER * self.waiting
                raise HttpError(503, f"busy: {self.waiting} answers are being written; retry in {wait} s "
                                     "(a quote-only request, mode \"quote\", is never refused as busy)",
                                {"Retry-After": str(wait)})
            self.waiting += 1

    def free_slot(self) -> None:
        with self.lock:
            self.waiting -= 1

    def agent(self, history: list, on_event=None):
        from .agent.loop import Agent

        agent = Agent(self.engine, chat_model=self.chat_model, on_event=on_event)
        agent.history = list(history)
        return agent


# --- request bodies ------------------------------------------------------------------------------------------------
async def bounded_body(request: Request, limit: int) -> bytes:
    """The body, read only up to ``limit`` bytes (a chunked body has no length to check first)."""
    if int(request.headers.get("content-length") or 0) > limit:
        raise HttpError(413, f"request body over {limit} bytes")
    raw = bytearray()
    async for piece in request.stream():
        raw += piece
        if len(raw) > limit:
            raise HttpError(413, f"request body over {limit} bytes")
    return bytes(raw)


async def json_body(request: Request, allowed: Iterable[str]) -> dict:
    raw = await bounded_body(request, JSON_LIMIT)
    if raw and request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise HttpError(415, "send the body as JSON (Content-Type: application/json)")
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise HttpError(400, "the body is not JSON") from None
    if not isinstance(body, dict):
        raise HttpError(400, "the body must be a JSON object")
    extra = sorted(set(body) - set(allowed))
    if extra:
        raise HttpError(400, f"unknown field(s) {', '.join(extra)}; this endpoint takes {', '.join(allowed)}")
    return body


def text_field(body: dict, name: str, required: bool = True) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise HttpError(400, f"{name} must be a non-empty string")
    return value


def history_of(body: dict) -> list[tuple[str, str]]:
    """``history``: earlier turns, ``[{"question": ..., "answer": ...}, ...]`` (oldest first)."""
    turns = body.get("history") or []
    if not isinstance(turns, list) or not all(
            isinstance(t, dict) and isinstance(t.get("question"), str) and isinstance(t.get("answer"), str)
            for t in turns):
        raise HttpError(400, 'history must be a list of {"question": "...", "answer": "..."}')
    return [(t["question"], t["answer"]) for t in turns[-10:]]


def whole_number(value, lo: int, hi: int | None = None) -> bool:
    """``value`` is a JSON whole number (not a boolean) from ``lo`` to ``hi``."""
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value and (hi is None or value <= hi)


def scope_of(body: dict) -> dict:
    """The ``pages`` ("10-20" or "3", as ``--pages``) and ``heading`` filters of a request, those it gives."""
    scope = {}
    if body.get("pages") is not None:
        scope["pages"] = page_range(text_field(body, "pages"), "pages")
    if body.get("heading") is not None:
        scope["heading"] = text_field(body, "heading")
    return scope


def mode_of(body: dict) -> str:
    mode = body.get("mode", "full")
    if mode not in MODES:
        raise HttpError(400, f'mode must be "quote" or "full", not {mode!r}')
    return mode


# --- the routes ----------------------------------------------------------------------------------------------------
def build_app(engine, *, allow_writes: bool = False, token: str | None = None, max_waiting: int = 2,
              chat_model=None) -> Starlette:
    """The ASGI app over ``engine``. ``chat_model``: a model object to answer with (tests); else the engine's."""
    door = Door(engine, allow_writes=allow_writes and not engine.read_only, token=token, max_waiting=max_waiting,
                chat_model=chat_model)  # a library on a read-only mount is served read-only, whatever was asked

    def route(fn, write: bool = False, public: bool = False):
        """``fn`` as an endpoint: the token, the host and the origin checked (``public``: no token, for the page
        itself, which holds no data and asks for the token), writes refused on a read-only server, errors as one
        line."""
        async def endpoint(request: Request) -> Response:
            try:
                if not public:
                    check_token(request)
                check_origin(request)
                if write and not door.allow_writes:
                    raise HttpError(403, "this library is on a read-only file system" if engine.read_only else
                                    "this server is read-only: start it with `thread-rag serve --allow-writes`")
                return await fn(request)
            except HttpError as e:
                return JSONResponse({"error": str(e)}, status_code=e.status, headers=e.headers)
            except ThreadRagError as e:
                return JSONResponse({"error": one_line(e)}, status_code=404 if isinstance(e, NotFoundError) else 400)
            except Exception as e:  # noqa: BLE001 - a bug of ours: one line, never a traceback to the client
                return JSONResponse({"error": f"internal error: {one_line(e)}"}, status_code=500)
        return endpoint

    def check_origin(request: Request) -> None:
        """Without a token the server trusts only this machine: a request must name a loopback host (a page whose
        name a hostile DNS points at 127.0.0.1 names its own), and a browser's request must come from the server's
        own page (another site's form or script sends its own Origin)."""
        host = request.headers.get("host", "")
        if door.token is None and not loopback_name(urlsplit(f"//{host}").hostname or ""):
            raise HttpError(403, f"host {host[:60]!r} is not this machine: without a token only loopback names "
                                 "are served")
        origin = request.headers.get("origin")
        if origin and origin != "null" and urlsplit(origin).netloc != host:
            raise HttpError(403, "a request from another site's page is refused (Origin differs from Host)")
        if origin == "null":
            raise HttpError(403, "a request from a page without an origin is refused")

    def check_token(request: Request) -> None:
        if door.token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {door.token}".encode()):
            raise HttpError(401, "missing or wrong token (Authorization: Bearer ...)")

    async def health(request):
        s = engine.settings
        return JSONResponse({"status": "ok", "version": __version__, "documents": door.documents,  # as last read
                             "writing": door.writing > 0,  # health never waits for a change or a queued read
                             "store": s.CHROMA_HOST or str(engine.home), "model": s.MAIN_MODEL, "backend": s.CHAT_BACKEND,
                             "writes": door.allow_writes, "answers_waiting": door.waiting,
                             "indexing": door.uploads()})

    async def stats(request):
        return JSONResponse(await door.run(tools.library_stats, engine))

    async def documents(request):
        def listed():
            out = tools.list_available_documents(engine)
            door.documents = len(out["documents"])  # under the read lock; another process may have changed it
            return out
        return JSONResponse(await door.run(listed))

    async def metadata_values(request):
        docs = await door.run(engine.documents)
        return JSONResponse({"sources": sorted({d.name for d in docs}), "file_types": sorted({d.kind for d in docs})})

    async def search(request):
        body = await json_body(request, BODIES["/search"])
        k = body.get("k")
        if k is not None and not whole_number(k, 1, 50):
            raise HttpError(400, "k must be a whole number from 1 to 50")
        return JSONResponse(await door.run(tools.rag_search, engine, text_field(body, "query"),
                                           doc_id=text_field(body, "doc", False), k=k, **scope_of(body)))

    async def fetch(request):
        body = await json_body(request, BODIES["/fetch"])
        ids = body.get("chunk_ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise HttpError(400, 'chunk_ids must be a list of chunk ids such as ["DOC1_006"]')
        budget = body.get("budget")
        if budget is not None and not whole_number(budget, 1):
            raise HttpError(400, "budget must be a positive whole number of tokens")
        return JSONResponse(await door.run(tools.fetch_chunks_by_id, engine, ids, token_budget=budget))

    async def nested(request):
        body = await json_body(request, BODIES["/nested"])
        limit = body.get("limit", 5)
        if not whole_number(limit, 1, 50):
            raise HttpError(400, "limit must be a whole number from 1 to 50")
        return JSONResponse(await door.run(tools.nested_retrieve, engine, text_field(body, "query"), limit=limit,
                                           doc_id=text_field(body, "doc", False)))

    async def compare(request):
        """Two documents aligned step by step (``compare_documents``): same, changed, only in one."""
        body = await json_body(request, BODIES["/compare"])
        limit, explain = body.get("limit"), body.get("explain", False)
        if limit is not None and not whole_number(limit, 1, 1000):
            raise HttpError(400, "limit must be a whole number from 1 to 1000")
        if not isinstance(explain, bool):
            raise HttpError(400, "explain must be true or false")
        args = dict(doc_a=text_field(body, "doc_a"), doc_b=text_field(body, "doc_b"),
                    topic=text_field(body, "topic", False), limit=limit, explain=explain,
                    explain_limit=min(10, limit or 10), explain_within=limit)  # only rows it returns, as the CLI
        if not explain:  # no model: beside the answers being written
            return JSONResponse(await door.run(tools.compare_documents, engine, **args))
        door.take_slot()
        try:
            return JSONResponse(await door.answer(tools.compare_documents, engine, **args))
        finally:
            door.free_slot()

    async def query(request):
        body = await json_body(request, _QUERY)
        question, doc, history = text_field(body, "question"), text_field(body, "doc", False), history_of(body)
        scope = scope_of(body)
        if mode_of(body) == "quote":
            from .agent.loop import quote_answer

            return JSONResponse(await door.run(quote_answer, engine, question, doc_id=doc, **scope))
        from .cli import _answer_json

        gone = threading.Event()

        def ask():
            if gone.is_set():  # the client left while the answer waited for the model: no search, no quote
                raise HttpError(400, "the client went away before its answer began")
            agent = door.agent(history)
            agent.stop = gone.is_set  # the model stops at its next piece once the client has gone
            return agent.ask(question, doc_id=doc, changes=False, **scope)
        door.take_slot()
        watch = asyncio.create_task(until_gone(request, gone))
        try:
            ans = await door.answer(ask)
        finally:
            watch.cancel()
            door.free_slot()
        return JSONResponse(_answer_json(ans))

    async def query_stream(request):
        body = await json_body(request, _QUERY)
        question, doc, history = text_field(body, "question"), text_field(body, "doc", False), history_of(body)
        mode, scope = mode_of(body), scope_of(body)
        if mode == "full":
            door.take_slot()
        return answer_events(door, question, doc, history, mode, scope)

    async def upload(request):
        return JSONResponse(await receive_upload(door, request))

    async def clear(request):
        body = await json_body(request, BODIES["/clear"])
        if body.get("confirm") != CLEAR_CONFIRM:
            raise HttpError(400, f'deleting every document needs {{"confirm": "{CLEAR_CONFIRM}"}}')

        def delete_all():
            return [tools.remove_document(engine, d.doc_id)["removed"] for d in engine.documents()]
        return JSONResponse({"deleted": await door.write(delete_all)})

    async def remove(request):
        doc_id = request.path_params["doc_id"]
        return JSONResponse({"deleted": await door.write(lambda: tools.remove_document(engine, doc_id))})

    async def page_image(request):
        """A PDF page as a PNG image."""
        from . import page_view

        def render():
            rec = pdf_record(request)
            return page_view.render_page(page_view.checked_file(rec.path, rec.content_hash), request.path_params["n"])
        png = await door.run(render)
        return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})

    async def locate(request):
        """Where quoted lines stand on a PDF's pages: boxes as fractions of the page, from the top left."""
        from . import page_view

        body = await json_body(request, BODIES["/documents/{doc_id}/locate"])
        lines = body.get("lines")
        if not isinstance(lines, list) or not 1 <= len(lines) <= 50 or not all(
                isinstance(x, str) and len(x) <= 1000 for x in lines):
            raise HttpError(400, "lines must be a list of 1 to 50 strings of at most 1000 characters (quoted lines)")
        pages = page_range(text_field(body, "pages"), "pages") if body.get("pages") is not None else None

        def find():
            rec = pdf_record(request)
            lo, hi = pages or (1, rec.pages or 1)
            found, missing = page_view.locate(page_view.checked_file(rec.path, rec.content_hash), lines,
                                              range(lo, min(hi, lo + 49) + 1))
            return {"doc_id": rec.doc_id, "found": [to_dict(f) for f in found], "missing": missing}
        return JSONResponse(await door.run(find))

    def pdf_record(request):
        rec = engine.document(request.path_params["doc_id"])  # an unknown or malformed id: its one line
        if rec.kind != "pdf":
            raise HttpError(400, f"{rec.doc_id} is {rec.kind}: only a PDF has pages to show (fetch its chunks instead)")
        return rec

    async def openapi(request):
        return JSONResponse(openapi_of(routes))

    async def page(request):
        return HTMLResponse(PAGE)

    routes = [Route("/", route(page, public=True)), Route("/health", route(health)), Route("/stats", route(stats)),
              Route("/documents", route(documents)), Route("/metadata-values", route(metadata_values)),
              Route("/search", route(search), methods=["POST"]), Route("/fetch", route(fetch), methods=["POST"]),
              Route("/nested", route(nested), methods=["POST"]), Route("/query", route(query), methods=["POST"]),
              Route("/compare", route(compare), methods=["POST"]),
              Route("/query-stream", route(query_stream), methods=["POST"]),
              Route("/upload", route(upload, write=True), methods=["POST"]),
              Route("/clear", route(clear, write=True), methods=["DELETE"]),
              Route("/documents/{doc_id}", route(remove, write=True), methods=["DELETE"]),
              Route("/documents/{doc_id}/pages/{n:int}", route(page_image)),
              Route("/documents/{doc_id}/locate", route(locate), methods=["POST"]),
              Route("/openapi.json", route(openapi))]
    app = Starlette(routes=routes, exception_handlers={404: _not_found, 405: _not_allowed})
    app.state.door = door
    return app


async def _not_found(request, exc):
    return JSONResponse({"error": f"no such endpoint: {request.url.path}"}, status_code=404)


async def _not_allowed(request, exc):
    return JSONResponse({"error": f"{request.method} is not allowed on {request.url.path}"}, status_code=405)


# --- streaming ------------------------------------------------------------------------------------------------------
async def until_gone(request: Request, gone: threading.Event) -> None:
    """Sets ``gone`` when the client of ``request`` (its body read) disconnects."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    gone.set()


def answer_events(door: Door, question: str, doc: str | None, history: list, mode: str, scope: dict | None = None):
    """Server-Sent Events: ``quote`` (or ``related``), ``outcome``, ``token``... (the explanation), ``checked``, a later
    ``outcome`` when the check lowered it (or the first, for a question refused before any quote), ``sources``,
    ``done`` (the whole answer as ``/query`` gives it: an action's reply is its ``answer``); ``error`` with one line
    if it fails."""
    from sse_starlette.sse import EventSourceResponse

    loop = asyncio.get_running_loop()
    events: asyncio.Queue = asyncio.Queue()
    gone = threading.Event()

    def put(kind: str | None, data) -> None:
        loop.call_soon_threadsafe(events.put_nowait, (kind, to_dict(data)))

    told = {"outcome": None, "explaining": False}

    def on_event(kind: str, data: dict) -> None:
        if kind in ("quote", "related", "outcome"):
            put(kind, data)
        if kind == "outcome":
            told["outcome"] = to_dict(data)
        told["explaining"] = told["explaining"] or kind == "answer_start"

    def on_token(text: str) -> None:
        if told["explaining"]:  # the explanation's pieces; a refusal's or an action's line comes in outcome / done
            put("token", {"text": text})

    def work() -> None:
        from .cli import _answer_json

        try:
            if mode == "quote":
                from .agent.loop import quote_answer

                d = quote_answer(door.engine, question, doc_id=doc, **(scope or {}))
                put("related" if d["refused"] or d["related"] else "quote", {"lines": d["quote"]})
                put("outcome", d["outcome"])
            else:
                agent = door.agent(history, on_event)
                agent.stop = gone.is_set  # the model's stream stops at its next piece once the client has gone
                ans = agent.ask(question, on_token=on_token, doc_id=doc, changes=False, **(scope or {}))
                d = _answer_json(ans)
                put("checked", {"unsupported": d.get("unsupported", []), "dropped": d.get("dropped", [])})
                if d.get("outcome") and d["outcome"] != told["outcome"]:  # first told, or lowered by the check
                    put("outcome", d["outcome"])
                put("sources", {"citations": d.get("citations", [])})
            put("done", d)
        except Exception as e:  # noqa: BLE001 - ours or a bug: one line to the client, never a dropped stream
            put("error", {"error": one_line(e)})
        finally:
            if mode == "full":
                door.free_slot()
            put(None, None)

    door.submit(door.readers if mode == "quote" else door.model, work)

    async def generate():
        try:
            while True:
                kind, data = await events.get()
                if kind is None:
                    return
                yield {"event": kind, "data": json.dumps(data, ensure_ascii=False, default=str)}
        finally:
            gone.set()  # the client went away (or the stream ended): a generation still running stops

    return EventSourceResponse(generate(), ping=15)


# --- uploads -------------------------------------------------------------------------------------------------------
async def receive_upload(door: Door, request: Request) -> dict:
    from .ingest import SUPPORTED_SUFFIXES

    if not request.headers.get("content-length", "").isdigit():  # the multipart parser bounds no file: the length does
        raise HttpError(411, "send the upload with a Content-Length")
    length = int(request.headers["content-length"])
    if length > UPLOAD_LIMIT:
        raise HttpError(413, f"upload over {UPLOAD_LIMIT // (1024 * 1024)} MiB")
    try:
        form = await request.form(max_files=1, max_fields=2, max_part_size=UPLOAD_LIMIT)
    except Exception as e:  # noqa: BLE001 - a malformed multipart body
        raise HttpError(400, f"the body is not a multipart form with a file: {one_line(e)}") from None
    item = form.get("file")
    if item is None or not hasattr(item, "read"):
        raise HttpError(400, 'send the document as the multipart field "file"')
    suffix = Path(item.filename or "").suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise HttpError(415, f"{suffix or 'a file without a suffix'}: not a supported type "
                             f"({', '.join(sorted(SUPPORTED_SUFFIXES))})")
    data = await item.read()
    if not data:
        raise HttpError(400, "the uploaded file is empty")
    folder = uploads_dir(door.engine.home) / uuid.uuid4().hex[:12]  # the server's folder, one per upload
    folder.mkdir(parents=True)
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(item.filename).stem).strip(".")[:60]
    target = folder / f"{stem or 'upload'}{suffix}"  # the name shown in the catalog; no client string as a path
    tmp = target.with_suffix(target.suffix + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    stored = f"{folder.name}/{target.name}"

    share = [0.0]

    def progress(step: str, done: int, total: int) -> None:  # ("[1/1] name: embed 120/384", KiB done, KiB in all)
        share[0] = round(min(done / total, 1.0), 3) if total else share[0]
        door.indexed(folder.name, {"file": item.filename, "step": step.split(": ", 1)[-1], "share": share[0]})
    progress("waiting", 0, 0)  # another upload or deletion under way finishes first
    try:
        (result,) = (await door.index(tools.index_new_document, door.engine, str(target), progress=progress,
                                      on_hold=lambda step: progress(step, 0, 0)))["results"]
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        door.indexed(folder.name, None)
    if result["status"] == "failed":  # unreadable, encrypted, no text: nothing was added, and the file goes too
        shutil.rmtree(folder, ignore_errors=True)
        raise HttpError(400, f"{item.filename}: {result['error']}")
    if result["status"] == "unchanged" and not result.get("moved_from"):  # indexed from another file: keep no copy
        shutil.rmtree(folder, ignore_errors=True)
        return {**result, "stored_as": None}
    return {**result, "stored_as": stored}


# --- OpenAPI and the page ----------------------------------------------------------------------------------------
ERROR = {"description": "one line: what was wrong", "content": {"application/json": {"schema": {
    "type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}}}}


def body_schema(fields: dict) -> dict:
    """A ``BODIES`` entry as a JSON Schema object."""
    def one(kind, what):
        return {"type": "string", "enum": kind, "description": what} if isinstance(kind, list) else \
            {"type": kind, "description": what}
    return {"type": "object", "properties": {k: one(kind, what) for k, (kind, _, what) in fields.items()},
            "required": [k for k, (_, req, _) in fields.items() if req], "additionalProperties": False}


def openapi_of(routes: list) -> dict:
    paths = {}
    for r in routes:
        for method in sorted(set(r.methods or ["GET"]) - {"HEAD"}):
            doc = (r.endpoint.__doc__ or "").strip()
            op = {"summary": doc or r.path, "responses": {"200": {"description": "JSON"}, "400": ERROR}}
            if method in ("POST", "DELETE") and r.path in BODIES:
                op["requestBody"] = {"required": True, "content": {"application/json": {
                    "schema": body_schema(BODIES[r.path])}}}
            elif r.path == "/upload":
                op["requestBody"] = {"required": True, "content": {"multipart/form-data": {"schema": {
                    "type": "object", "properties": {"file": {"type": "string", "format": "binary"}},
                    "required": ["file"]}}}}
            paths.setdefault(r.path, {})[method.lower()] = op
    return {"openapi": "3.1.0", "info": {"title": "THREAD-RAG", "version": __version__}, "paths": paths}


PAGE = (Path(__file__).parent / "serve_page.html").read_text(encoding="utf-8")  # no CDN: the page is all here


def _warm(engine) -> None:
    """The embedder and the retriever loaded ahead of the first question (never the LLM)."""
    with contextlib.suppress(Exception):  # the request that needs them reports the error itself
        engine.retriever  # noqa: B018 - builds lazily
        engine.query_embedder.embed_queries(["warm up"])


def serve(engine, *, host: str = "127.0.0.1", port: int = 8765, allow_writes: bool = False) -> int:
    """Serve until Ctrl-C. A bind other than loopback needs ``THREAD_RAG_SERVE_TOKEN``."""
    import uvicorn

    token = os.environ.get(TOKEN_ENV) or None
    if not loopback_name(host) and not token:
        raise ThreadRagError(f"serve --host {host}: other machines could reach it; set {TOKEN_ENV} (clients send "
                             "'Authorization: Bearer <token>'), or bind 127.0.0.1")
    app = build_app(engine, allow_writes=allow_writes, token=token)
    door = app.state.door
    door.submit(door.readers, lambda: _warm(engine))  # first in the reading queue: a first search waits, never races
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0
