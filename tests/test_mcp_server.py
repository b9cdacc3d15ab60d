"""``thread-rag mcp`` end to end: the official MCP SDK's own client talks over stdio to a real server subprocess
(``python -m thread_rag.cli mcp``) serving the project's user manual (docs/), indexed once for this module."""
from __future__ import annotations

import re
import sys

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from conftest import DOCS, REPO, machine_free_env, write  # noqa: E402

READ_ONLY = {"list_available_documents", "rag_search", "fetch_chunks_by_id", "nested_retrieve", "compare_documents",
             "quote_answer"}
WRITES = {"index_new_document", "remove_document", "pre_heat_summaries"}


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder):
    """docs/ indexed with the session's embedder, with the settings conftest's ``settings_for`` uses."""
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    root = tmp_path_factory.mktemp("mcp")
    over = {"HOME": str(root / "home"), "CACHE_PATH": str(root / "cache"),
            "MODEL_DIR": str(REPO / "local_rag_db" / "models"), "RERANKER": "none"}
    engine = Engine(load_settings(over, env={}, config_file=False), embedder=embedder)
    results = engine.index_paths([DOCS])
    assert results and all(r.status == "indexed" for r in results), results
    return root, over


def _session(tmp_path, over: dict, *extra: str, **env_extra: str):
    """A stdio transport to ``thread-rag --data-dir HOME mcp EXTRA...`` run from an empty folder (no config.py)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    env = machine_free_env()
    env.update({"PYTHONPATH": str(REPO), "THREAD_RAG_CACHE_PATH": over["CACHE_PATH"],
                "THREAD_RAG_MODEL_DIR": over["MODEL_DIR"], "THREAD_RAG_RERANKER": over["RERANKER"], **env_extra})
    params = StdioServerParameters(command=sys.executable, cwd=str(cwd), env=env,
                                   args=["-m", "thread_rag.cli", "--data-dir", over["HOME"], "mcp", *extra])
    errlog = open(tmp_path / "server-stderr.txt", "w", encoding="utf-8")  # noqa: SIM115 - closed by the caller
    return stdio_client(params, errlog=errlog), errlog


def _run(tmp_path, over, body, *extra, mode="auto", **env_extra):
    """Run ``body(client)`` against a fresh server; returns what it returns. Any line on the server's stdout that is
    not the protocol reaches the client's message_handler as an exception: there must be none."""
    transport, errlog = _session(tmp_path, over, *extra, **env_extra)
    faults = []

    async def on_message(msg):
        if isinstance(msg, Exception):
            faults.append(msg)

    async def main():
        async with Client(transport, message_handler=on_message, mode=mode, read_timeout_seconds=120) as client:
            return await body(client)

    try:
        out = anyio.run(main)
    finally:
        errlog.close()
    stderr = (tmp_path / "server-stderr.txt").read_text(encoding="utf-8")
    assert not faults, (faults, stderr)
    assert "Traceback" not in stderr, stderr
    return out, stderr


def _text(result) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


def _one_line_error(result, *needles: str) -> str:
    text = _text(result)
    assert result.is_error, text
    assert "\n" not in text and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[`*#>|]", " ", text).split()).lower()


def test_read_only_server_serves_real_content_and_clean_errors(store, tmp_path):
    _, over = store
    manual = _norm(" ".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))))

    async def body(client):
        listed = await client.list_tools()
        names = {t.name for t in listed.tools}
        assert names == READ_ONLY  # the two write tools are hidden by default
        search_tool = next(t for t in listed.tools if t.name == "rag_search")
        assert search_tool.input_schema["required"] == ["query"] and search_tool.annotations.read_only_hint

        docs = (await client.call_tool("list_available_documents", {})).structured_content["documents"]
        assert [d["name"] for d in docs] == sorted(p.name for p in DOCS.glob("*.md"))

        res = await client.call_tool("rag_search", {"query": "how do I pre-heat the summaries?"})
        assert not res.is_error, _text(res)
        hits = res.structured_content["hits"]
        assert hits and all(re.fullmatch(r"DOC\d+_\d{3}", h["chunk_id"]) for h in hits)
        assert any("pre-heat" in h["text"].lower() for h in hits[:3]), hits[:3]
        assert '"hits"' in _text(res)  # the same result as JSON text, for clients that read only text
        top = hits[0]

        res = await client.call_tool("fetch_chunks_by_id", {"chunk_ids": [top["chunk_id"]]})
        assert not res.is_error, _text(res)
        (window,) = res.structured_content["windows"]
        assert window["chunk_ids"] == [top["chunk_id"]] and window["doc_name"].endswith(".md")
        sentences = [s for s in re.split(r"(?<=[.:])\s", window["text"]) if len(s) > 40]
        assert sentences and any(_norm(s) in manual for s in sentences), window["text"]  # the manual's own words
        assert window["rendered"] and window["text"][:40] in window["rendered"]

        res = await client.call_tool("quote_answer", {"question": "how do I pre-heat the summaries?"})
        assert not res.is_error and not res.structured_content["refused"], _text(res)
        quoted = res.structured_content["quote"]
        assert quoted and all(_norm(x["text"]) in manual for x in quoted), quoted  # verbatim, no model
        assert all(re.fullmatch(r"DOC\d+_\d{3}", x["chunk_id"]) for x in quoted)

        res = await client.call_tool("nested_retrieve", {"query": "context windows and summaries", "limit": 2})
        assert not res.is_error and 1 <= len(res.structured_content["hits"]) <= 2, _text(res)

        errors = [
            (await client.call_tool("fetch_chunks_by_id", {"chunk_ids": ["DOC1_"]}), ("'DOC1_' is not a chunk id",)),
            (await client.call_tool("fetch_chunks_by_id", {"chunk_ids": ["DOC99_000"]}), ("DOC99",)),
            (await client.call_tool("fetch_chunks_by_id", {"chunk_ids": "DOC1_000"}), ("bad arguments", "chunk_ids")),
            (await client.call_tool("rag_search", {}), ("bad arguments", "query")),
            (await client.call_tool("rag_search", {"query": ""}), ("bad arguments", "query")),
            (await client.call_tool("rag_search", {"query": "booting", "doc_id": "DOC99"}), ("unknown document DOC99",)),
            (await client.call_tool("rag_search", {"query": "booting", "colour": "red"}), ("bad arguments", "colour")),
            (await client.call_tool("nested_retrieve", {"query": "booting", "limit": 0}), ("bad arguments", "limit")),
            (await client.call_tool("compare_documents", {"doc_a": "DOC1", "doc_b": "DOC1"}), ("given twice",)),
            (await client.call_tool("no_such_tool", {}), ("unknown tool",)),
            (await client.call_tool("index_new_document", {"file_path": str(DOCS)}), ("--allow-writes",)),
            (await client.call_tool("pre_heat_summaries", {}), ("--allow-writes",)),
        ]
        for result, needles in errors:
            _one_line_error(result, *needles)
        # the server is still up and answering after all of that
        again = await client.call_tool("list_available_documents", {})
        return again.structured_content["documents"]

    docs, stderr = _run(tmp_path, over, body)
    assert len(docs) == 6
    assert "read-only" in stderr  # the start line goes to stderr, never stdout


def test_allow_writes_offers_indexing_inside_allowed_roots_only(tmp_path):
    # an empty store of its own, on the packaged ONNX embedder (no torch: a quick start); the default MiniLM is
    # what the read-only test serves
    over = {"HOME": str(tmp_path / "home"), "CACHE_PATH": str(tmp_path / "cache"),
            "MODEL_DIR": str(REPO / "local_rag_db" / "models"), "RERANKER": "none"}
    allowed = tmp_path / "allowed"
    note = write(allowed / "runbook.md", "# Rotating the frobnicator keys\n\nTo rotate the frobnicator keys, stop "
                                          "the quaxel daemon first, then run the key rotation twice and restart it.\n")
    broken = write(allowed / "broken.pdf", b"%PDF-1.4 this is not really a PDF")
    second = write(allowed / "second.md", "# Second\n\nA note to remove again.\n")
    outside = write(tmp_path / "elsewhere" / "secret.md", "# Secret\n\nNot for indexing by a remote agent.\n")

    async def body(client):
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == READ_ONLY | WRITES
        assert (await client.call_tool("list_available_documents", {})).structured_content == {"documents": []}

        _one_line_error(await client.call_tool("index_new_document", {"file_path": str(outside)}),
                        "outside the allowed folders")
        _one_line_error(await client.call_tool("index_new_document", {"file_path": str(allowed / ".." / "elsewhere")}),
                        "outside the allowed folders")
        _one_line_error(await client.call_tool("index_new_document", {}), "bad arguments", "file_path")
        _one_line_error(await client.call_tool("pre_heat_summaries", {"serial_id": "DOC99"}), "DOC99")
        _one_line_error(await client.call_tool("index_new_document", {"file_path": str(broken)}), "broken.pdf")

        res = await client.call_tool("index_new_document", {"file_path": str(note)})
        assert not res.is_error, _text(res)
        (indexed,) = res.structured_content["results"]
        assert indexed["status"] == "indexed" and indexed["doc_id"] == "DOC1", indexed

        res = await client.call_tool("rag_search", {"query": "rotate the frobnicator keys", "doc_id": "DOC1"})
        assert not res.is_error and "quaxel daemon" in res.structured_content["hits"][0]["text"], _text(res)

        res = await client.call_tool("pre_heat_summaries", {"serial_id": "DOC1"})
        assert not res.is_error and res.structured_content["failed"] == 0, _text(res)
        # removal: the same tool the chat and the HTTP API remove through, marked destructive
        tool = next(t for t in (await client.list_tools()).tools if t.name == "remove_document")
        assert tool.annotations.destructive_hint and not tool.annotations.read_only_hint
        _one_line_error(await client.call_tool("remove_document", {"doc_id": "DOC9"}), "DOC9")
        _one_line_error(await client.call_tool("remove_document", {"doc_id": "DOC1_000"}), "bad arguments")
        assert not (await client.call_tool("index_new_document", {"file_path": str(second)})).is_error
        res = await client.call_tool("remove_document", {"doc_id": "DOC2"})
        assert not res.is_error and res.structured_content["removed"] == "DOC2", _text(res)
        docs = (await client.call_tool("list_available_documents", {})).structured_content["documents"]
        return [(d["doc_id"], d["name"]) for d in docs]

    # the handshake-era protocol (what most desktop clients speak today); the other test negotiates the newest
    docs, stderr = _run(tmp_path, over, body, "--allow-writes", mode="legacy",
                        THREAD_RAG_ALLOWED_ROOTS=str(allowed), THREAD_RAG_EMBEDDER_MODEL="packaged:bge-small-en-v1.5")
    assert docs == [("DOC1", "runbook.md")]
    assert "read-write" in stderr and f"indexing limited to ALLOWED_ROOTS: {allowed}" in stderr


def test_allow_writes_without_allowed_roots_refuses_to_start(tmp_path):
    """Unset ALLOWED_ROOTS means "the current folder", and an MCP client picks that folder (often ~ or /)."""
    import subprocess

    env = machine_free_env()
    env["PYTHONPATH"] = str(REPO)
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path / "home"), "mcp",
                        "--allow-writes"], cwd=tmp_path, env=env, input="", capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "ALLOWED_ROOTS" in lines[0], r.stderr


@pytest.mark.door  # the quick tier's MCP test (every MCP test starts a server: over 2 s each)
def test_requests_piped_in_whole_are_answered_before_the_server_stops(store, tmp_path):
    """`printf '<initialize>\\n<initialized>\\n<tools/call>\\n' | thread-rag mcp` answered initialize only: the end of
    input stopped the server, and each tool call came back as "Connection closed"."""
    import json
    import subprocess

    _, over = store
    env = machine_free_env()
    env.update({"PYTHONPATH": str(REPO), "THREAD_RAG_CACHE_PATH": over["CACHE_PATH"],
                "THREAD_RAG_MODEL_DIR": over["MODEL_DIR"], "THREAD_RAG_RERANKER": over["RERANKER"]})
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                 "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sh", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_available_documents",
                                                                            "arguments": {}}},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "rag_search",
                                                                            "arguments": {"query": "pre-heat"}}}]
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", over["HOME"], "mcp"], env=env,
                       input="".join(json.dumps(x) + "\n" for x in lines), capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    replies = {x["id"]: x for x in map(json.loads, r.stdout.splitlines())}
    assert set(replies) == {1, 2, 3}, r.stdout + r.stderr[-2000:]
    assert all("error" not in x and not x["result"].get("isError") for x in replies.values()), r.stdout
    assert "DOC" in replies[3]["result"]["content"][0]["text"]
