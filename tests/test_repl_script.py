"""The REPL through prompt-toolkit's pipe input, scripted sessions, and the Ollama backend against a
local stand-in server (a fake that speaks Ollama's HTTP API on loopback; not a real Ollama)."""
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from rich.console import Console

from conftest import REPO, machine_free_env, write
from fakes import ScriptedChatModel
from thread_rag.agent.loop import Agent
from thread_rag.agent.script import run_script
from thread_rag.repl import Repl


def fake_agent(engine):
    m = ScriptedChatModel(answer=lambda msgs: "Run thread-rag preheat to summarise every chunk.")
    m.calls = []
    m.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
    return Agent(engine, chat_model=m)


PIPE_REPL = """
import io, logging, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console
from conftest import DOCS, REPO
from test_repl_script import fake_agent
from thread_rag.engine import Engine
from thread_rag.repl import Repl
from thread_rag.settings import load_settings

home = sys.argv[2]
e = Engine(load_settings({"HOME": home + "/home", "CACHE_PATH": home + "/cache", "RERANKER": "none",
                          "MODEL_DIR": str(REPO / "local_rag_db" / "models")}, env={}, config_file=False))
assert all(r.status == "indexed" for r in e.index_paths([DOCS]))
buf = io.StringIO()
e._chat_model = fake_agent(e).model
with create_pipe_input() as inp:
    repl = Repl(e, console=Console(file=buf, width=120, force_terminal=False), agent=fake_agent(e), pt_input=inp,
                pt_output=DummyOutput())
    inp.send_text("how do I pre-heat summaries?\\n/docs\\n/fetch DOC1_000 DOC1_\\n/bogus\\nexit\\n")
    inp.close()  # no more input: an unexpected prompt ends instead of waiting
    rc = repl.run()
print(buf.getvalue())
print("RC", rc)
"""


def test_repl_pipe_input_question_command_exit(tmp_path):
    """The REPL through prompt-toolkit on piped input, in a fresh process: prompt-toolkit reads a pipe with
    select(), which fails for descriptors >= 1024, and the suite's own process holds ~1,000 by this point
    (every test's Chroma client stays open); in-process, that made the event loop log the same exception
    forever until CI's OOM kill. The REPL's real stdin is descriptor 0."""
    import subprocess
    import sys

    script = tmp_path / "pipe_repl.py"
    script.write_text(PIPE_REPL)
    r = subprocess.run([sys.executable, str(script), str(REPO), str(tmp_path)], capture_output=True, text=True,
                       timeout=300, env=machine_free_env())
    out = r.stdout
    assert r.returncode == 0 and "RC 0" in out, r.stderr[-2000:]
    assert "Run thread-rag preheat to summarise every chunk." in out and "sources:" in out
    assert "01-getting-started.md" in out
    assert "[start of document]" in out and "'DOC1_' is not a chunk id" in out
    assert "unknown command /bogus" in out and "bye" in out
    assert "Exception in callback" not in r.stderr and "Unhandled exception" not in r.stderr, r.stderr[-2000:]


def test_repl_first_run_offers_manual(make_engine):
    e = make_engine()
    buf = io.StringIO()
    answers = iter(["y", "/docs", None])
    repl = Repl(e, console=Console(file=buf, width=120), input_fn=lambda prompt: next(answers),
                agent=fake_agent(e))
    e._chat_model = repl._agent.model
    assert repl.run() == 0
    out = buf.getvalue()
    assert "No documents indexed yet" in out and "/index PATH" in out
    assert len(e.documents()) == 6 and "06-configuration-and-troubleshooting.md" in out


def test_script_runs_every_line_and_fails_at_end(manual_engine, tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join([
        json.dumps({"tool": "list_available_documents"}),
        json.dumps({"tool": "rag_search", "args": {"query": "pre-heat summaries"}}),
        "# a comment",
        json.dumps({"tool": "fetch_chunks_by_id", "args": {"chunk_ids": ["DOC4_001", "DOC2_002"]}}),
        json.dumps({"tool": "nope", "args": {}}),
        "{broken",
        json.dumps({"ask": "how do I pre-heat?"}),
        json.dumps({"tool": "list_available_documents", "ask": "what is indexed?"}),  # which one? neither ran
        json.dumps({"tool": "rag_search", "arg": {"query": "pre-heat"}}),               # a misspelt key
    ]))
    out = io.StringIO()
    rc = run_script(manual_engine, str(f), out=out, chat_model=fake_agent(manual_engine).model)
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    assert rc == 1 and len(rows) == 8
    assert [r["ok"] for r in rows] == [True, True, True, False, False, True, False, False]
    assert rows[6]["error"] == 'a line has "tool" (with "args") or "ask", not both'
    assert rows[7]["error"] == 'unknown key "arg": a line has "tool" (with "args") or "ask"'
    assert rows[1]["result"]["hits"][0]["doc_id"] == "DOC4"
    assert len(rows[2]["result"]["windows"]) == 2  # two documents compared side by side
    assert rows[5]["result"]["answer"] == "Run thread-rag preheat to summarise every chunk."


class OllamaStandIn(BaseHTTPRequestHandler):
    """A stand-in for an Ollama server (loopback only), recording requests."""

    requests: list = []
    models = ["qwen2.5-coder:1.5b"]
    FIELDS = {"model", "messages", "tools", "stream", "think", "format", "options", "keep_alive", "logprobs",
              "top_logprobs"}
    OPTIONS = {"num_ctx", "num_predict", "temperature", "seed", "top_k", "top_p", "stop", "num_thread",
               "repeat_penalty", "mirostat"}

    REPLIES = {"sources": [1], "action": "question", "tool": "answer", "answerable": True,
               "question": "How do I pre-heat summaries?", "steps": ["Which command pre-heats?", "How do I run #1?"]}

    @classmethod
    def reply_for(cls, fmt) -> str:
        """A reply that fits the requested JSON schema (by its first required key), else plain text."""
        if fmt is None:
            return "Pre-heat with thread-rag preheat."
        key = ((fmt.get("required") if isinstance(fmt, dict) else None) or ["answerable"])[0]
        return json.dumps({key: cls.REPLIES.get(key, True)})

    def log_message(self, *a):
        pass

    def _json(self, obj, code=200):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/api/tags":
            return self._json({"models": [{"name": m} for m in self.models]})
        self._json({"error": "not found"}, 404)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        OllamaStandIn.requests.append((self.path, body))
        if self.path != "/api/chat":
            return self._json({"error": "not found"}, 404)
        if body.get("model") not in self.models:
            return self._json({"error": f"model '{body.get('model')}' not found"}, 404)
        unknown = set(body) - self.FIELDS or set(body.get("options") or {}) - self.OPTIONS
        if unknown:  # strict about what the client may send (the real client refuses unknown keywords)
            return self._json({"error": f"unknown fields {sorted(unknown)}"}, 400)
        reply = self.reply_for(body.get("format"))
        if body.get("stream") is False:
            return self._json({"model": body["model"], "created_at": "2026-11-30T00:00:00Z",
                               "message": {"role": "assistant", "content": reply}, "done": True,
                               "done_reason": "stop", "prompt_eval_count": 12, "eval_count": 6})
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        for word in reply.split(" "):
            self.wfile.write((json.dumps({"model": body["model"], "created_at": "2026-11-30T00:00:00Z",
                                          "message": {"role": "assistant", "content": word + " "},
                                          "done": False}) + "\n").encode())
        self.wfile.write((json.dumps({"model": body["model"], "created_at": "2026-11-30T00:00:00Z",
                                      "message": {"role": "assistant", "content": ""}, "done": True,
                                      "done_reason": "stop", "prompt_eval_count": 12, "eval_count": 6}) + "\n").encode())


@pytest.fixture
def standin():
    OllamaStandIn.requests = []
    srv = HTTPServer(("127.0.0.1", 0), OllamaStandIn)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_ollama_backend_against_standin(settings_for, standin):
    from langchain_core.messages import HumanMessage

    from thread_rag.llm.backends import describe, make_chat_model

    s = settings_for(CHAT_BACKEND="ollama", OLLAMA_HOST=standin, OLLAMA_NUM_CTX=4096)
    m = make_chat_model(s)
    assert "Ollama at http://127.0.0.1" in describe(m)
    assert m.invoke([HumanMessage("hi")]).content.strip() == "Pre-heat with thread-rag preheat."
    path, body = OllamaStandIn.requests[-1]
    assert path == "/api/chat" and body["options"]["num_ctx"] == 4096  # never silently truncated
    assert json.loads(m.invoke([HumanMessage("x")], format={"type": "object"}).content) == {"answerable": True}
    assert OllamaStandIn.requests[-1][1]["format"] == {"type": "object"}


def test_full_agent_ask_on_ollama_standin(manual_engine, standin):
    """A whole Agent.ask over Ollama's HTTP API: the output cap travels as options.num_predict (a max_tokens
    keyword is a TypeError in ollama.Client.chat), every request is one the strict stand-in accepts."""
    from thread_rag.agent.loop import Agent
    from thread_rag.llm.backends import make_chat_model

    s = manual_engine.settings.replace(CHAT_BACKEND="ollama", OLLAMA_HOST=standin)
    manual_engine.settings = s
    ans = Agent(manual_engine, chat_model=make_chat_model(s)).ask("how do I pre-heat summaries?")
    assert not ans.refused and "thread-rag preheat" in ans.answer and ans.mode.startswith("fast")
    chats = [b for p, b in OllamaStandIn.requests if p == "/api/chat"]
    assert chats and all(b["options"]["num_ctx"] == s.OLLAMA_NUM_CTX for b in chats)
    assert all("num_predict" in b["options"] for b in chats)
    # the answer cites nothing: one constrained follow-up named the source
    assert ans.citations and ans.citations[0].how == "sources_call" and len(chats) == 2


def test_question_steps_over_ollama_end_each_answer_at_a_newline(manual_engine, standin):
    """ChatOllama drops its ``stop`` when ``options`` are given (the output cap travels there): the lookups' answers
    must carry ``options.stop``, or on Ollama they ran on for their whole token cap."""
    from thread_rag.agent.loop import Agent
    from thread_rag.agent.steps import LOOKUP_SYSTEM, SPLIT_SYSTEM
    from thread_rag.llm.backends import make_chat_model

    s = manual_engine.settings.replace(CHAT_BACKEND="ollama", OLLAMA_HOST=standin, QUESTION_STEPS=4)
    manual_engine.settings = s
    OllamaStandIn.requests.clear()
    ans = Agent(manual_engine, chat_model=make_chat_model(s)).ask("how do I pre-heat summaries?")
    step = next(t for t in ans.tool_trace if t["tool"] == "question_steps")
    assert step["ok"] and step["lookups"] == ["Which command pre-heats?", "How do I run #1?"], step
    chats = [b for p, b in OllamaStandIn.requests if p == "/api/chat"]
    split = [b for b in chats if b["messages"][0]["content"] == SPLIT_SYSTEM]
    answers = [b for b in chats if b["messages"][0]["content"] == LOOKUP_SYSTEM]
    assert len(split) == 1 and split[0]["format"]["properties"]["steps"]["maxItems"] == 4
    assert len(answers) == 2 and all(b["options"]["stop"] == ["\n"] and b["options"]["num_predict"] == 16
                                     for b in answers), answers
    assert step["answers"] == ["Pre-heat with thread-rag preheat", "Pre-heat with thread-rag preheat"]


def test_ollama_missing_model_and_server_down(settings_for, standin, monkeypatch):
    from thread_rag.errors import ModelUnavailableError
    from thread_rag.llm.backends import describe, make_chat_model

    with pytest.raises(ModelUnavailableError, match="ollama pull llama9"):
        make_chat_model(settings_for(CHAT_BACKEND="ollama", OLLAMA_HOST=standin, MAIN_MODEL="llama9"))
    with pytest.raises(ModelUnavailableError, match="not reachable"):
        make_chat_model(settings_for(CHAT_BACKEND="ollama", OLLAMA_HOST="http://127.0.0.1:9"))
    auto = make_chat_model(settings_for(CHAT_BACKEND="auto", OLLAMA_HOST="http://127.0.0.1:9"))
    assert "embedded" in describe(auto)  # detected, not assumed
    # and the banner says why the Ollama it was pointed at was passed over (it fell back silently)
    assert describe(auto).startswith("embedded llama.cpp (Ollama at http://127.0.0.1:9 not reachable)"), describe(auto)
    auto = make_chat_model(settings_for(CHAT_BACKEND="auto", OLLAMA_HOST=standin, MAIN_MODEL="llama9"))
    assert describe(auto).startswith(f"embedded llama.cpp (Ollama at {standin} has no model 'llama9')"), describe(auto)
    # a fresh `ollama serve` with nothing pulled was taken as having the model (the first question then failed)
    monkeypatch.setattr(OllamaStandIn, "models", [])
    auto = make_chat_model(settings_for(CHAT_BACKEND="auto", OLLAMA_HOST=standin))
    assert describe(auto).startswith(f"embedded llama.cpp (Ollama at {standin} has no model"), describe(auto)
    with pytest.raises(ModelUnavailableError, match="ollama pull qwen2.5-coder:1.5b"):
        make_chat_model(settings_for(CHAT_BACKEND="ollama", OLLAMA_HOST=standin))


def test_ollama_summarizer_against_standin(settings_for, standin):
    from thread_rag.threads.summarizers import make_summarizer

    s = make_summarizer(settings_for(SUMMARY_BACKEND="ollama", OLLAMA_HOST=standin, SUMMARY_MODEL="qwen2.5-coder:1.5b"))
    assert s.summarize("Run the preheat command to fill the cache.", "Pre-heat") == "Pre-heat with thread-rag preheat."
    body = OllamaStandIn.requests[-1][1]
    assert body["options"]["num_ctx"] == s.num_ctx and "Run the preheat command" in body["messages"][-1]["content"]


def test_doctor_reports_each_check(settings_for, tmp_path):
    from thread_rag.doctor import checks

    res = {r["check"]: r for r in checks(settings_for(OLLAMA_HOST="http://127.0.0.1:9"))}
    assert res["embedder files"]["ok"] and res["chroma"]["ok"] and res["store consistency"]["ok"]
    assert not res["ollama"]["ok"] and "ollama serve" in res["ollama"]["fix"]


def test_repl_keeps_the_session_after_an_unexpected_error(manual_engine):
    """A failure that is not a ThreadRagError (here the model raising OSError mid-answer, as a full disk or a
    dropped model server would) is one line, and the next question is still answered."""
    buf = io.StringIO()
    calls = {"n": 0}

    def flaky(msgs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(28, "No space left on device")
        return "Run thread-rag preheat [1]."

    m = ScriptedChatModel(answer=flaky)
    m.calls, m.metadata = [], {"backend": "fake", "model": "scripted", "ctx": 0}
    lines = iter(["how do I pre-heat summaries?", "how do I pre-heat summaries?", None])
    repl = Repl(manual_engine, console=Console(file=buf, width=200), input_fn=lambda p: next(lines),
                agent=Agent(manual_engine, chat_model=m))
    manual_engine._chat_model = m
    assert repl.run() == 0
    out = buf.getvalue()
    assert "error: the disk is full (No space left on device); free some space and try again" in out and "Traceback" not in out
    assert "Run thread-rag preheat [1]." in out and "bye" in out


def test_one_line_errors():
    from thread_rag.errors import ThreadRagError, one_line

    assert one_line(ThreadRagError("bad  id\n DOC9")) == "bad id DOC9"
    assert one_line(PermissionError(13, "Permission denied", "/data/x")) == "file system error (/data/x): Permission denied"
    assert "raise LLM_CTX" in one_line(ValueError("Requested tokens (9000) exceed context window of 8192"))
    assert "ollama serve" in one_line(type("ConnectError", (Exception,), {})("refused"))
    line = one_line(RuntimeError("boom\nsecond line"))
    assert line == "unexpected RuntimeError: boom (run again with --debug, or THREAD_RAG_DEBUG=1, for where it happened)"


def test_cli_prints_one_line_for_unexpected_errors(monkeypatch, capsys, tmp_path):
    from thread_rag import cli

    def boom(args):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(cli, "_dispatch", boom)
    monkeypatch.setenv("THREAD_RAG_DEBUG", "0")  # recorded, so that what --debug sets below is undone
    assert cli.main(["--data-dir", str(tmp_path), "docs"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "error: file system error: Input/output error"
    # issue 46: --debug (or THREAD_RAG_DEBUG=1) adds where it happened, for a bug report
    assert cli.main(["--debug", "--data-dir", str(tmp_path), "docs"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "error: file system error: Input/output error"
    assert lines[1] == "Traceback (most recent call last):" and "in boom" in "\n".join(lines) and lines[-1].startswith("OSError")


def test_repl_loads_the_llm_in_the_background(manual_engine, monkeypatch, capsys):
    """``Repl.run`` starts loading the model's weights in a thread after the banner; a question asked at once waits
    for (joins) that load instead of loading a second time. A failed background load prints nothing; the real call
    loads again and reports the error in one line, and the session goes on."""
    import time

    from thread_rag.errors import ModelUnavailableError

    state = {"made": 0, "loads": [], "fail": False, "loaded": False}

    class SlowModel(ScriptedChatModel):
        @property
        def llama(self):  # like EmbeddedChatModel.llama: the weights load on first use, then stay
            if not state["loaded"]:
                state["loads"].append(threading.current_thread().name)
                time.sleep(0.5)
                if state["fail"]:
                    raise ModelUnavailableError("cannot load qwen2.5-coder-1.5b: file is truncated")
                state["loaded"] = True
            return "weights"

    def factory(settings):  # stands in for make_chat_model (engine.chat_model calls it on first use)
        state["made"] += 1
        time.sleep(0.1)
        m = SlowModel(answer=lambda msgs: (m.llama, "Run thread-rag preheat [1].")[1])  # a real call needs the weights
        m.calls, m.metadata = [], {"backend": "fake", "model": "slow", "ctx": 0}
        return m

    monkeypatch.setattr("thread_rag.llm.backends.make_chat_model", factory)
    for fail in (False, True):
        state.update(made=0, loads=[], fail=fail, loaded=False)
        manual_engine._chat_model = None
        buf = io.StringIO()
        lines = iter(["how do I pre-heat summaries?", "/docs", None])  # asked at once: no time to type
        repl = Repl(manual_engine, console=Console(file=buf, width=200), input_fn=lambda p: next(lines))
        assert repl.run() == 0
        out = buf.getvalue()
        assert state["made"] == 1 and "bye" in out and "Traceback" not in out
        if not fail:
            assert state["loads"] == ["thread-rag-llm-load"]  # loaded once, in the background thread
            assert "Run thread-rag preheat [1]." in out
        else:
            assert state["loads"] == ["thread-rag-llm-load", "MainThread"]  # failed quietly, then the real call
            # the quote stays; the explanation says in one line why it is missing
            assert out.count("cannot load qwen2.5-coder-1.5b: file is truncated") == 1, out
            assert "from the manual (quoted):" in out
            assert "01-getting-started.md" in out  # the next command still ran
    captured = capsys.readouterr()
    assert "Exception in thread" not in captured.err and "Traceback" not in captured.err


def test_chat_history_is_kept_in_memory_until_the_data_dir_holds_a_library(make_engine, tmp_path):
    """On a data dir that did not exist yet (a first run's default), every line typed in the chat printed
    prompt-toolkit's FileNotFoundError for chat_history.txt: the chat no longer makes the folder until it indexes."""
    e = make_engine()
    assert not e.home.exists()
    history = Repl(e, console=Console(file=io.StringIO()), preload=False).make_session().history
    history.append_string("/help")
    assert not e.home.exists() and list(history.get_strings()) == ["/help"]  # recalled within the session
    e.index_file(write(tmp_path / "a.md", "# A\n\nSome words to index here.\n"))
    history.append_string("/docs")
    assert "/docs" in (e.home / "chat_history.txt").read_text()


def test_a_tool_line_without_an_argument_shows_none(make_engine):
    """The walk's line read `read:walk '' →`."""
    buf = io.StringIO()
    repl = Repl(make_engine(), console=Console(file=buf, width=100), preload=False)
    repl._event("tool", {"tool": "read:walk", "args": {}, "ok": True})
    repl._event("tool", {"tool": "rag_search", "args": {"query": "pumps"}, "ok": True})
    assert [x.rstrip() for x in buf.getvalue().splitlines()] == ["  read:walk →", "  rag_search 'pumps' →"]


def test_ollama_gone_after_the_model_was_made_leaves_the_quote_and_one_line(manual_engine):
    """Ollama stops after the chat model was made (a restart, a crash): the client's own error (httpx's ConnectError)
    escaped the answer path as 'unexpected ConnectError' and the quote was lost. The model's failure is one line
    naming Ollama, and the quote stands; an optional call (a follow-up's rewrite) falls back as before."""
    from thread_rag.agent.loop import Agent
    from thread_rag.errors import ThreadRagError
    from thread_rag.llm.backends import make_chat_model

    OllamaStandIn.requests = []
    srv = HTTPServer(("127.0.0.1", 0), OllamaStandIn)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    host = f"http://127.0.0.1:{srv.server_address[1]}"
    s = manual_engine.settings.replace(CHAT_BACKEND="ollama", OLLAMA_HOST=host)
    manual_engine.settings = s
    model = make_chat_model(s)
    srv.shutdown()
    srv.server_close()
    agent = Agent(manual_engine, chat_model=model)
    ans = agent.ask("how do I pre-heat summaries?")
    assert ans.quote and not ans.refused and "thread-rag preheat" in ans.answer   # the manual's own lines stand
    assert ans.note.startswith("no explanation: ") and f"Ollama request failed at {host}" in ans.note, ans.note
    with pytest.raises(ThreadRagError, match="Ollama"):
        model.invoke([__import__("langchain_core.messages", fromlist=["HumanMessage"]).HumanMessage("hi")])


def test_a_bug_of_ours_in_an_ollama_call_is_not_called_a_server_failure(settings_for, standin):
    """The model's door turns only the client's own errors into 'Ollama request failed': a keyword the client does not
    take (a bug on our side) stays a TypeError, not a message that sends the user to the server (review finding)."""
    from langchain_core.messages import HumanMessage

    from thread_rag.llm.backends import make_chat_model

    m = make_chat_model(settings_for(CHAT_BACKEND="ollama", OLLAMA_HOST=standin))
    with pytest.raises(TypeError):
        m.invoke([HumanMessage("hi")], max_tokens=5)
