"""The chat in a real terminal (a pseudo-terminal, ``python runner.py`` as a user starts it): a request in plain
words, a removal answered "n" that removes nothing, Ctrl-C while an explanation streams, and /exit. The model is
the Ollama stand-in on loopback, streaming slowly so that Ctrl-C lands mid-answer."""
from __future__ import annotations

import os
import re
import select
import signal
import sys
import threading
import time
from http.server import HTTPServer

import pytest

from conftest import REPO, machine_free_env
from test_repl_script import OllamaStandIn

pty = pytest.importorskip("pty")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]|\r")


class SlowStandIn(OllamaStandIn):
    """Streams a long explanation, a word every 0.25 s."""

    @classmethod
    def reply_for(cls, fmt) -> str:
        if fmt is None:
            return " ".join(["Run widgetctl reset --all and wait for the prompt to come back."] * 8)
        return super().reply_for(fmt)

    def setup(self):
        super().setup()
        self.wfile = _SlowWriter(self.wfile)


class _SlowWriter:
    """A response stream that waits 0.25 s before each streamed piece."""

    def __init__(self, raw):
        self.raw = raw

    def write(self, data):
        if b'"done": false' in data:
            time.sleep(0.25)
        n = self.raw.write(data)
        self.raw.flush()
        return n

    def __getattr__(self, name):
        return getattr(self.raw, name)


class Terminal:
    """The child's terminal: what it printed (escape codes removed), what is typed into it; cursor-position queries
    (prompt-toolkit asks) are answered as a terminal would."""

    def __init__(self, fd: int):
        self.fd, self.seen = fd, ""

    def expect(self, text: str, timeout: float = 120) -> str:
        end = time.monotonic() + timeout
        while text not in self.seen:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"waited {timeout} s for {text!r}; the terminal shows:\n{self.seen[-3000:]}")
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                data = self._read()
                if not data:
                    raise AssertionError(f"the chat ended before {text!r}:\n{self.seen[-3000:]}")
                self.seen += ANSI.sub("", data.decode("utf-8", errors="replace"))
        at = self.seen.index(text) + len(text)
        shown, self.seen = self.seen[:at], self.seen[at:]
        return shown

    def settle(self, quiet: float = 0.7) -> None:
        """Read until the terminal has been quiet for ``quiet`` seconds (the prompt redraws itself), then forget it."""
        while select.select([self.fd], [], [], quiet)[0] and self._read():
            pass
        self.seen = ""

    def _read(self) -> bytes:
        """What the chat wrote (b"" once it has gone), a cursor-position query answered as a terminal would."""
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            return b""
        if b"\x1b[6n" in data:
            os.write(self.fd, b"\x1b[1;1R")
        return data

    def type(self, text: str) -> None:
        self.settle()
        os.write(self.fd, text.encode())


def test_a_chat_session_in_a_real_terminal(tmp_path, embedder):
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    over = {"HOME": str(tmp_path / "home"), "CACHE_PATH": str(tmp_path / "cache"),
            "MODEL_DIR": str(REPO / "local_rag_db" / "models")}
    with Engine(load_settings(over, env={}, config_file=False), embedder=embedder) as e:
        assert [r.status for r in e.index_paths([REPO / "tests" / "data" / "widget-manual.md"])] == ["indexed"]

    SlowStandIn.requests = []
    srv = HTTPServer(("127.0.0.1", 0), SlowStandIn)
    srv.handle_error = lambda request, address: None  # the stream Ctrl-C cut short: a broken pipe, expected
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    env = {**machine_free_env(), "TERM": "xterm", "THREAD_RAG_HOME": over["HOME"],
           "THREAD_RAG_CACHE_PATH": over["CACHE_PATH"], "THREAD_RAG_MODEL_DIR": over["MODEL_DIR"],
           "THREAD_RAG_CHAT_BACKEND": "ollama", "THREAD_RAG_MAIN_MODEL": "qwen2.5-coder:1.5b",
           "THREAD_RAG_OLLAMA_HOST": f"http://127.0.0.1:{srv.server_address[1]}"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the chat, as a user starts it
        # with Ctrl-C live: a suite started in the background (`pytest &`) has SIGINT ignored, which exec keeps, and
        # Python then installs no KeyboardInterrupt handler (the stream went on under the "^C")
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.chdir(tmp_path)
        os.execve(sys.executable, [sys.executable, str(REPO / "runner.py")], env)
    term = Terminal(fd)
    try:
        term.expect("›", timeout=180)
        term.type("list my documents\r")
        term.expect("widget-manual.md")
        term.type("remove the widget manual\r")
        assert "DOC1 (widget-manual.md" in term.expect("[y/N]")
        term.type("n\r")
        term.expect("Not removed: DOC1 stays")
        term.type("How do I reset the database?\r")
        term.expect("explanation:")
        term.expect("widgetctl")  # the explanation is streaming
        os.write(fd, b"\x03")  # Ctrl-C
        term.expect("(stopped)", timeout=60)
        term.type("/exit\r")
        term.expect("bye", timeout=60)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        pid = 0
    finally:
        srv.shutdown()
        if pid:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)
    with Engine(load_settings(over, env={}, config_file=False), embedder=embedder) as e:
        assert [d.name for d in e.documents()] == ["widget-manual.md"]  # "n" removed nothing
