"""``thread-rag mcp``: the product's tools served over stdio with the official MCP Python SDK (low-level ``Server``).

Every call goes through :func:`thread_rag.agent.tools.call_tool`, the door the agent and scripted sessions use:
the same argument schemas, the same validation, the same ``ALLOWED_ROOTS`` rule for indexing, and the same
one-line errors, which come back as ``isError`` tool results, never as a crash. Read-only by default:
``index_new_document``, ``remove_document`` and ``pre_heat_summaries`` are offered only with ``allow_writes`` (``--allow-writes``).
Nothing but the protocol goes to stdout (the SDK points fd 1 at stderr while it serves); logs go to stderr.
No language model is loaded: the embedder is warmed in the background once the server is up.
"""
from __future__ import annotations

import asyncio
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from . import __version__
from .agent.loop import all_tools
from .agent.tools import DESCRIPTIONS, SCHEMAS, call_tool, result_errors
from .errors import ThreadRagError, counted

READ_TOOLS = ("list_available_documents", "rag_search", "fetch_chunks_by_id", "nested_retrieve", "compare_documents",
              "quote_answer")
WRITE_TOOLS = ("index_new_document", "remove_document", "pre_heat_summaries")


def _log(msg: str) -> None:
    print(f"thread-rag mcp: {msg}", file=sys.stderr, flush=True)


def _tool(name: str) -> types.Tool:
    write = name in WRITE_TOOLS
    return types.Tool(name=name, description=DESCRIPTIONS[name], input_schema=SCHEMAS[name].model_json_schema(),
                      annotations=types.ToolAnnotations(read_only_hint=not write,
                                                        destructive_hint=name == "remove_document",
                                                        idempotent_hint=True, open_world_hint=False))


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=" ".join(text.split()))], is_error=True)  # one line


def _nothing_done(name: str, r: dict) -> str | None:
    """A result that only carries errors (nothing else came back) is a tool error here; partial failures stay in
    the result for the client to read."""
    errors = result_errors(name, r)
    nothing = (name == "fetch_chunks_by_id" and not r["windows"]) or (
        name == "index_new_document" and len(errors) == len(r["results"])) or (
        name == "pre_heat_summaries" and not r["made"] and not r["cached"])
    return f"{name}: " + "; ".join(errors) if errors and nothing else None


def build_server(engine, *, allow_writes: bool = False, worker: ThreadPoolExecutor | None = None) -> Server:
    """The MCP server for ``engine``. Tool calls run one at a time on ``worker`` (one thread: the engine is used
    from a single thread, and the event loop keeps answering while a long call runs)."""
    offered = READ_TOOLS + (WRITE_TOOLS if allow_writes else ())
    every = all_tools(engine)  # the agent's StructuredTools (indexing restricted to ALLOWED_ROOTS)
    tools = {name: every[name] for name in offered}
    listing = [_tool(name) for name in offered]
    worker = worker or ThreadPoolExecutor(max_workers=1, thread_name_prefix="thread-rag-mcp")

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name in WRITE_TOOLS and not allow_writes:
            return _error(f"{params.name} changes the store and is offered only when the server is started with "
                          f"`thread-rag mcp --allow-writes`")
        loop = asyncio.get_running_loop()
        outcome = await loop.run_in_executor(worker, call_tool, tools, params.name, params.arguments or {})
        error = outcome.error if not outcome.ok else _nothing_done(params.name, outcome.result)
        if error is not None:
            _log(error)
            return _error(error)
        text = json.dumps(outcome.result, ensure_ascii=False, default=str)
        structured = outcome.result if isinstance(outcome.result, dict) else None
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)

    return Server("thread-rag", version=__version__, title="THREAD-RAG",
                  instructions="Search long procedural documents: rag_search jumps to entry chunks (ids such as "
                               "DOC1_006); fetch_chunks_by_id walks to their neighbours inside context windows; "
                               "cite chunk ids and pages.",
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def _warm(engine, stopping: threading.Event) -> None:
    """Load the embedder and the retriever ahead of the first search (never the LLM); failures are only logged
    (the call that needs them reports the error itself), and not at all once the client has gone."""
    try:
        engine.retriever  # noqa: B018 - builds lazily
        engine.query_embedder.embed_queries(["warm up"])
        _log("embedder ready")
    except Exception as exc:  # noqa: BLE001
        from .errors import one_line

        if not stopping.is_set():
            _log(f"warm-up failed: {one_line(exc)}")


def _answered_before_the_end(tg, read_stream, write_stream):
    """Streams for the server that hold the end of input back until every request read so far is answered: a
    client that writes its requests and closes stdin (a shell pipe) gets every answer, not "Connection closed"."""
    to_server, from_client = anyio.create_memory_object_stream(0)
    to_client, from_server = anyio.create_memory_object_stream(0)
    pending: set = set()

    async def pump_in() -> None:
        async with to_server, read_stream:
            async for item in read_stream:
                message = getattr(item, "message", None)
                if isinstance(message, types.JSONRPCRequest):
                    pending.add(message.id)
                elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
                    pending.discard((message.params or {}).get("requestId"))  # a cancelled request gets no answer
                await to_server.send(item)
            while pending:  # the client has finished writing; its answers are still to come
                await anyio.sleep(0.05)

    async def pump_out() -> None:
        async with from_server, write_stream:  # stdout's writer ends when this closes
            async for item in from_server:
                if isinstance(item.message, (types.JSONRPCResponse, types.JSONRPCError)):
                    pending.discard(item.message.id)
                await write_stream.send(item)

    tg.start_soon(pump_in)
    tg.start_soon(pump_out)
    return from_client, to_client


def serve(engine, *, allow_writes: bool = False, warm: bool = True) -> int:
    """Serve ``engine`` over stdin/stdout until the client closes stdin."""
    roots = engine.settings.ALLOWED_ROOTS
    if allow_writes and not roots:  # unset means "the current folder", which an MCP client picks (often ~ or /)
        raise ThreadRagError("mcp --allow-writes needs ALLOWED_ROOTS (e.g. THREAD_RAG_ALLOWED_ROOTS=/path/to/docs): "
                             "the folders a client may index from")
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="thread-rag-mcp")
    server = build_server(engine, allow_writes=allow_writes, worker=worker)
    mode = "read-write (index_new_document, remove_document, pre_heat_summaries offered)" if allow_writes else "read-only"
    _log(f"serving {counted(len(engine.documents()), 'document')} from {engine.home} over stdio, {mode}")
    if allow_writes:
        _log(f"indexing limited to ALLOWED_ROOTS: {', '.join(roots)}")

    stopping = threading.Event()

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tg:
            if warm:
                worker.submit(_warm, engine, stopping)  # queued first, so a call waits for it rather than racing it
            inner_read, inner_write = _answered_before_the_end(tg, read_stream, write_stream)
            async with inner_write:  # closed after the server stops: the relay to stdout ends with it
                await server.run(inner_read, inner_write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        stopping.set()
        worker.shutdown(wait=False, cancel_futures=True)
    return 0
