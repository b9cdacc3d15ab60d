"""The REPL (``python runner.py`` / ``thread-rag chat``): prompt-toolkit input, rich output.

Persistent history, completion of slash commands and doc ids, answers streamed token by token,
tool calls shown as compact lines, Ctrl-C stops the current answer (not the session), ``exit``,
``/exit`` and Ctrl-D leave.
"""
from __future__ import annotations

import re
import shlex
import sys
import threading
from pathlib import Path

from rich.console import Console

from . import tools
from .errors import ThreadRagError, counted, one_line, shown
from .records import PAGES_EXPECTED, page_range
from .render import (answer_notes, index_line, make_console, marked_text, preheat_notes, progress_bar, quote_block,
                     render_nested, render_search, render_windows, sources_line, stats_line, styled)

COMMANDS = {
    "/docs": "list indexed documents",
    "/index": "/index PATH  index a file or folder",
    "/search": "/search QUERY [--doc DOC1] [--k 5] [--pages 10-20]  three-stage search",
    "/fetch": "/fetch DOC1_004 [DOC1_005 ...] [--budget 3000]  read chunks in their windows",
    "/nested": "/nested QUERY [--doc DOC1] [--limit 5] [--offset 0]  non-overlapping passages from the document tree",
    "/compare": "/compare DOC1 DOC2 [TOPIC] [--limit 20] [--all] [--explain]  two versions side by side",
    "/preheat": "/preheat [DOC1]  summarise chunks ahead of time",
    "/delete": "/delete DOC1  remove a document",
    "/stats": "store statistics",
    "/anyway": "explain the last question the documents do not answer, all the same (shown as such)",
    "/clear": "forget the conversation",
    "/help": "this list",
    "/exit": "leave (also: exit, Ctrl-D)",
}

DEMO_DIR = Path(__file__).resolve().parents[1] / "docs"


_NUMBER, _DOC, _PAGES = r"[0-9]+", r"(?i)doc[0-9]+", r"[0-9]+(-[0-9]+)?"
_EXPECTED = {"--budget": "a number of tokens", "--doc": "a document id such as DOC1",
             "--pages": PAGES_EXPECTED}  # the rest take a whole number, 0 or more


def _options(text: str, known: dict[str, str], query: str | None = "query") -> tuple[str, dict]:
    """A slash command's query and the CLI options it takes (``{"--k": _NUMBER}``: each with the pattern its value
    must match): ``--k 3`` or ``--k=3``. An option of the command without a value that fits is refused in one line,
    as the CLI refuses it; other words, and every word after ``--``, are the query ("what does --force do")."""
    words, rest, opts = text.split(), [], {}
    cut = words.index("--") if "--" in words else len(words)
    i = 0
    while i < cut:
        name, eq, value = words[i].partition("=")
        if name not in known:
            rest.append(words[i])
            i += 1
            continue
        if not eq:
            value = words[i + 1] if i + 1 < cut else ""
        if not re.fullmatch(known[name], value):
            given = words[i] if eq or not value else f"{name} {value}"
            hint = f" (put -- before words that are part of the {query})" if query else ""
            raise ThreadRagError(f"{given}: expected {_EXPECTED.get(name, 'a whole number, 0 or more')}{hint}")
        opts[name] = value
        i += 1 if eq else 2
    return " ".join(rest + words[cut + 1:]), opts


def _int(opts: dict, name: str, default: int | None = None) -> int | None:
    return int(opts[name]) if name in opts else default


class Repl:
    def __init__(self, engine, console: Console | None = None, input_fn=None, agent=None, pt_input=None,
                 pt_output=None, preload: bool = True):
        self.engine = engine
        self._pt = (pt_input, pt_output)
        self.console = console or make_console()
        self._agent = agent
        self._last_question = ""  # what /anyway explains: the last question, when the documents did not answer it
        self._input_fn = input_fn
        self._preload = preload
        self._loader: threading.Thread | None = None
        self._ask = input_fn  # how a line is read (``run`` sets it): a removal's confirmation is read with it too

    # -- the LLM loads while the user types ------------------------------------------------
    def start_model_load(self) -> None:
        """Load the chat model's weights in a background thread (``run`` starts it after the banner), so the first
        answer does not wait the whole load when the user takes a few seconds to type; then the answer prompt's fixed
        head is evaluated (``warm_prefix``). Only the embedded llama.cpp model has weights to load
        (``EmbeddedChatModel.llama``); other backends cost nothing here. A failed load
        is silent: the first real call loads again and reports the error in one line."""
        if self._loader is not None or not self._preload:
            return

        def load() -> None:
            from .agent.answer import warm_prefix

            try:
                model = self.engine.chat_model
                getattr(model, "llama", None)
                warm_prefix(model, self.engine.settings.EXPLAIN_FROM)  # the answer prompt's fixed head
            except Exception:  # noqa: BLE001 - silent by design; the real call reports it
                pass

        self._loader = threading.Thread(target=load, name="thread-rag-llm-load", daemon=True)
        self._loader.start()

    def wait_for_model(self) -> None:
        """Before any use of the chat model: join the background load, so the model is never loaded twice."""
        if self._loader is not None:
            self._loader.join()

    @property
    def agent(self):
        if self._agent is None:
            from .agent.loop import Agent

            self._agent = Agent(self.engine, on_event=self._event, before_model=self.wait_for_model)
            self._agent.confirm = self.confirm
        return self._agent

    def confirm(self, prompt: str) -> bool:
        """Yes only to a "y" or "yes" typed at ``prompt`` (a removal the chat was asked for). Piped input is never
        asked (its next line is the next message, not an answer): no."""
        if self._ask is None or self._ask is _read_line:
            return False
        try:
            reply = self._ask(prompt)
        except (EOFError, KeyboardInterrupt):
            return False
        return (reply or "").strip().lower() in ("y", "yes")

    def _event(self, kind: str, data: dict) -> None:
        c = self.console
        if kind == "tool" and data.get("tool") == "question_steps":  # each lookup with the answer it found
            steps = [f"{q} -> {a or '?'}" for q, a in zip(data.get("searched") or [], data.get("answers") or [])]
            c.print(styled(("  question_steps " + ("; ".join(steps) or data.get("error") or "one lookup: nothing added"),
                            "dim")))
        elif kind == "tool":
            args = data.get("args") or {}
            arg = args.get("query") or ", ".join(args.get("chunk_ids", [])) or args.get("file_path") or ""
            res = data.get("result")
            res_s = ", ".join(res[:3]) if isinstance(res, list) else ""
            mark = ("→", "green") if data.get("ok") else ("✗", "red")
            c.print(styled((f"  {data.get('tool')} {arg!r:.60} " if arg else f"  {data.get('tool')} ", "dim"), mark,
                           (f" {res_s or data.get('error') or ''}", "dim")))
        elif kind in ("quote", "related"):
            for line in quote_block(data["lines"], related=kind == "related"):
                c.print(line)
            if data.get("note"):
                c.print(styled((f"  ({data['note']})", "dim yellow")))
            if data.get("cut"):
                c.print(styled((f"  ({data['cut']})", "dim yellow")))
        elif kind == "outcome" and data.get("line"):
            c.print(styled((data["line"], "bold yellow")))
        elif kind == "answer_start":
            c.print(styled(("explanation:" if not data.get("anyway") else
                            "explanation (asked anyway: the documents do not answer this):", "bold")))

    # ------------------------------------------------------------------------------------
    def make_session(self):
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import Completer, Completion
        from prompt_toolkit.history import FileHistory

        engine = self.engine

        class SlashCompleter(Completer):
            def get_completions(self, document, complete_event):
                text = document.text_before_cursor
                word = document.get_word_before_cursor(WORD=True)
                if text.startswith("/") and " " not in text:
                    for cmd in COMMANDS:
                        if cmd.startswith(text):
                            yield Completion(cmd, start_position=-len(text))
                elif word.upper().startswith("DOC"):
                    for d in engine.documents():
                        if d.doc_id.startswith(word.upper()):
                            yield Completion(d.doc_id, start_position=-len(word))

        class LibraryHistory(FileHistory):
            """Lines go to the data dir's chat_history.txt once it holds a library; until then (a chat that
            indexes nothing writes nothing there), and in a read-only library, they are recalled in this session
            only."""

            def store_string(self, string: str) -> None:
                if not engine.fresh and not engine.read_only:
                    super().store_string(string)

        inp, outp = self._pt
        return PromptSession(history=LibraryHistory(str(engine.home / "chat_history.txt")), completer=SlashCompleter(),
                             complete_while_typing=False, input=inp, output=outp)

    def banner(self) -> None:
        c = self.console
        c.print(styled(("THREAD-RAG", "bold"), ": ask about your documents. /help for commands, /exit to leave."))
        try:
            from .llm.backends import describe

            c.print(styled((f"LLM: {describe(self.engine.chat_model)}", "dim")))
        except ThreadRagError as exc:
            c.print(styled((f"LLM unavailable: {exc}", "yellow")))
        c.print(styled((f"Embedder: {self.engine.settings.EMBEDDER_MODEL} · data: {self.engine.home}", "dim")))

    def first_run(self, ask, offer: bool = True) -> None:
        """On an empty store: say how to index, offer the user manual as a demo corpus (``offer``)."""
        if self.engine.documents():
            return
        c = self.console
        c.print(styled("No documents indexed yet. Index yours with ", ("/index PATH", "bold"), " (a PDF, DOCX, TXT, "
                       "Markdown or HTML file, or a folder), or run ", ("thread-rag index PATH", "bold"), " in a shell."))
        if offer and DEMO_DIR.is_dir():
            reply = ask(f"Index the THREAD-RAG user manual ({DEMO_DIR}) as a demo corpus? [Y/n] ")
            if reply is None or reply.strip().lower() in ("", "y", "yes"):
                self.do_index(str(DEMO_DIR))
                c.print(styled("Try: ", ("how do I pre-heat summaries?", "italic")))

    def do_index(self, path: str) -> None:
        with progress_bar(self.console) as bar:
            res = tools.index_new_document(self.engine, path, progress=bar)
        for r in res["results"]:
            self.console.print(styled((index_line(r), "red" if r["status"] == "failed" else "")))
            for w in r.get("warnings") or []:
                self.console.print(styled((f"  warning: {w}", "yellow")))

    def handle(self, line: str) -> bool:
        """Run one input line; False means leave."""
        line = line.strip()
        if not line:
            return True
        if line in ("exit", "quit", "/exit", "/quit"):
            return False
        c = self.console
        try:
            if line.startswith("/"):
                return self.command(line)
            self.answer(line)
        except Exception as exc:  # noqa: BLE001 - one line, and the session goes on
            c.print(styled((f"\nerror: {one_line(exc)}", "red")))
            from .errors import debugging, trace

            if debugging():
                c.print(styled((trace(exc), "dim")))
        return True

    def command(self, line: str) -> bool:
        c = self.console
        try:
            parts = shlex.split(line)
        except ValueError:
            parts = line.split()
        cmd, args = parts[0].lower(), parts[1:]
        rest = line[len(parts[0]):].strip()
        if cmd == "/help":
            from .agent.actions import help_text

            c.print(styled(help_text(footer="")))
            c.print(styled("Slash commands:"))
            for k, v in COMMANDS.items():
                c.print(styled((f"  {k:9}", "bold"), f" {v}"))
        elif cmd == "/docs":
            docs = tools.list_available_documents(self.engine)["documents"]
            if not docs:
                c.print(styled("no documents indexed"))
            for d in docs:
                c.print(styled(f"  {d['doc_id']:6} {shown(d['label'])}  {counted(d['chunks'], 'chunk')}  {d['first_chunk']}..{d['last_chunk']}"))
        elif cmd == "/index":
            if not args:
                raise ThreadRagError("usage: /index PATH")
            quoted = len(args) == 1 and rest[:1] in "\"'" and rest[-1:] == rest[:1]
            self.do_index(args[0] if quoted else rest)  # unquoted, a path with spaces is the rest of the line
        elif cmd == "/search":
            query, opts = _options(rest, {"--doc": _DOC, "--k": _NUMBER, "--pages": _PAGES})
            if not query:
                raise ThreadRagError("usage: /search QUERY [--doc DOC1] [--k 5] [--pages 10-20]")
            pages = {"pages": page_range(opts["--pages"])} if "--pages" in opts else {}
            render_search(c, tools.rag_search(self.engine, query, doc_id=opts.get("--doc"), k=_int(opts, "--k"), **pages))
        elif cmd == "/fetch":
            ids, opts = _options(rest, {"--budget": _NUMBER}, query=None)
            if not ids:
                raise ThreadRagError("usage: /fetch DOC1_004 [DOC1_005 ...] [--budget 3000]")
            budget = tools.budget_option(_int(opts, "--budget"))
            render_windows(c, tools.fetch_chunks_by_id(self.engine, ids.split(), token_budget=budget))
        elif cmd == "/nested":
            query, opts = _options(rest, {"--doc": _DOC, "--limit": _NUMBER, "--offset": _NUMBER})
            if not query:
                raise ThreadRagError("usage: /nested QUERY [--doc DOC1] [--limit 5] [--offset 0]")
            render_nested(c, tools.nested_retrieve(self.engine, query, limit=_int(opts, "--limit", 5),
                                                   doc_id=opts.get("--doc"), offset=_int(opts, "--offset", 0)))
        elif cmd == "/compare":
            self.do_compare(args)
        elif cmd == "/preheat":
            if len(args) > 1:
                raise ThreadRagError("usage: /preheat DOC1 (one document)")
            with progress_bar(c) as bar:
                r = tools.pre_heat_summaries(self.engine, args[0] if args else None, progress=bar)
            c.print(styled(f"summaries made {r['made']}, cached {r['cached']}, failed {r['failed']}, {r['seconds']:.1f} s"))
            for line in preheat_notes(r):
                c.print(styled((line, "yellow")))
        elif cmd == "/delete":
            if len(args) != 1:
                raise ThreadRagError("usage: /delete DOC1 (one document)")
            r = tools.remove_document(self.engine, args[0])
            c.print(styled(f"deleted {r['removed']} ({shown(r['name'])})"))
        elif cmd == "/stats":
            c.print(styled(stats_line(tools.library_stats(self.engine))))
        elif cmd == "/anyway":
            if not self._last_question:
                raise ThreadRagError("/anyway explains the last question when the documents did not answer it; "
                                     "the last one was answered, or none was asked")
            self.answer(self._last_question, anyway=True)
        elif cmd == "/clear":
            if self._agent is not None:
                self._agent.clear()
            c.print(styled("conversation cleared"))
        elif cmd in ("/exit", "/quit"):
            return False
        else:
            raise ThreadRagError(f"unknown command {cmd}; /help lists commands")
        return True

    COMPARE_ROWS = 20  # changed/only rows shown in the chat (the CLI pages the whole comparison)

    def do_compare(self, args: list[str]) -> None:
        cut = args.index("--") if "--" in args else len(args)  # after it, every word is the topic's
        flags = {a for a in args[:cut] if a in ("--explain", "--all")}
        text, opts = _options(" ".join([a for a in args[:cut] if a not in flags] + args[cut:]), {"--limit": _NUMBER},
                              query="topic")
        words = text.split()
        if len(words) < 2:
            raise ThreadRagError(f"usage: {COMMANDS['/compare'].split('  ')[0]}")
        limit = _int(opts, "--limit")
        if limit is not None and limit < 1:
            raise ThreadRagError(f"--limit {limit}: must be 1 or more")
        explain_limit, limit = limit or 10, limit or self.COMPARE_ROWS  # the CLI's: 10 explained unless --limit
        if "--explain" in flags:
            self.wait_for_model()
        topic = " ".join(words[2:]) or None
        if topic and topic.lower().startswith("about "):
            topic = topic[6:].strip() or None
        res = tools.compare_documents(self.engine, words[0], words[1], topic=topic, explain="--explain" in flags,
                                      explain_limit=explain_limit, explain_within=limit)
        from .compare.view import render_comparison

        render_comparison(self.console, res, limit=limit, show_same="--all" in flags, more="--limit N")

    def answer(self, question: str, anyway: bool = False) -> None:
        c = self.console
        ans = self.agent.ask(question, on_token=lambda t: c.print(marked_text(t), end="", soft_wrap=True), anyway=anyway)
        not_answered = (ans.outcome or {}).get("kind") == "not_answered" and not anyway
        self._last_question = ans.standalone_question if not_answered else ""
        c.out("")
        if ans.interrupted:
            c.print(styled(("(stopped)", "yellow")))
        for note in answer_notes(ans, self.engine.settings):
            c.print(styled((note, "yellow")))
        if ans.citations and not ans.refused:
            c.print(styled((f"sources: {sources_line(ans)}", "dim")))
        c.print(styled((f"answered in {ans.timings['total_s']:.1f} s", "dim")))

    def run(self) -> int:
        session, offer = None, True
        if self._input_fn is None and self._pt == (None, None) and not sys.stdin.isatty():
            # piped or redirected: line by line (prompt-toolkit dropped lines that arrived together, and read none
            # of a redirected file); no demo offer, which would take the first line as its answer
            ask, offer = _read_line, False
        elif self._input_fn is None:
            session = self.make_session()

            def ask(prompt):
                # prompt-toolkit's own handler answers a stray event-loop exception with "Press ENTER to
                # continue", which never ends on piped input; asyncio's handler logs one line instead.
                return session.prompt(prompt, set_exception_handler=False)
        else:
            ask = self._input_fn
        self._ask = ask
        self.banner()
        self.start_model_load()
        try:
            self.first_run(ask, offer)
        except (EOFError, KeyboardInterrupt):
            return 0
        except ThreadRagError as exc:
            self.console.print(styled((f"error: {exc}", "red")))
        while True:
            try:
                line = ask("› ")
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt clears the line
            except EOFError:
                break
            if line is None:
                break
            try:
                if not self.handle(line):
                    break
            except KeyboardInterrupt:
                self.console.print(styled(("(stopped)", "yellow")))
        self.console.print("bye")
        return 0


def _read_line(prompt: str) -> str:
    """One line of a non-interactive stdin (no prompt shown), bytes that are not UTF-8 replaced (one bad byte must
    not end the session); EOFError at its end."""
    buffer = getattr(sys.stdin, "buffer", None)
    line = buffer.readline().decode("utf-8", errors="replace") if buffer is not None else sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\r\n")


def run_repl(engine) -> int:
    return Repl(engine).run()
