"""Quote first, then the checked explanation, at every door, with a deterministic fake model over the project's own
manual: what the user sees (the quoted lines, their order before the model's text, the marks, the refusal)."""
import io
import json

from rich.console import Console

from fakes import ScriptedChatModel, agent_with
from thread_rag.agent.answer import EXPLAIN_PROMPT

QUESTION = "how do I pre-heat summaries?"


def _quoted(ans) -> str:
    return "\n".join(x["text"] for x in ans.quote)


def test_the_quote_comes_before_any_llm_call_and_the_explanation_reads_only_the_quote(manual_engine):
    events, prompts = [], []
    agent, model = agent_with(manual_engine, events,
                              answer=lambda m: prompts.append(m[-1].content) or "Run thread-rag preheat [1].")
    ans = agent.ask(QUESTION)
    kinds = [k for k, _ in events]
    assert kinds.index("quote") < kinds.index("answer_start")  # on screen before the model is called
    assert ans.quote and "preheat" in _quoted(ans).lower().replace("pre-heat", "preheat")
    read = "\n".join(s["text"] for s in ans.sources)
    for line in ans.quote:  # verbatim: every quoted line is text the walk read
        assert line["text"] in read and line["chunk_id"] in {c for s in ans.sources for c in s["chunk_ids"]}
    prompt = prompts[0]
    assert prompt.startswith(EXPLAIN_PROMPT.split("\n")[0]) and len(model.calls) == 1 and ans.llm_calls == 1
    assert all(line["text"].split("\n")[0] in prompt for line in ans.quote)
    assert ans.tokens["sources"] < sum(s["tokens"] for s in ans.sources)  # the quote, not every source
    assert ans.timings["quote_s"] <= ans.timings["first_token_s"]
    assert ans.citations and ans.citations[0].chunk_id in {x["chunk_id"] for x in ans.quote}


def test_quote_mode_answers_without_a_model(manual_engine):
    events = []
    agent, model = agent_with(manual_engine, events)
    agent.settings = agent.settings.replace(ANSWER_MODE="quote")
    ans = agent.ask(QUESTION)
    assert model.calls == [] and ans.llm_calls == 0 and not ans.refused
    assert ans.answer == "\n".join(x["text"] for x in ans.quote).strip() or ans.answer.startswith(ans.quote[0]["text"][:20])
    assert [k for k, _ in events if k in ("quote", "answer_start")] == ["quote"]


def test_what_the_explanation_adds_is_marked_listed_or_left_out(manual_engine):
    invented = "Run `thread-rag preheat --all-docs` to warm every summary [1].\nThen it is done."
    agent, _ = agent_with(manual_engine, answer=lambda m: invented)
    ans = agent.ask(QUESTION)
    assert [x["missing"] for x in ans.unsupported] == [["--all-docs"]] and ans.checked >= 1
    assert ans.answer == invented.strip() and not ans.dropped
    from thread_rag.render import answer_notes

    assert "(not in the sources: `--all-docs`; marked [?]: check them before you use them)" in answer_notes(
        ans, agent.settings)
    shown = []
    agent.ask(QUESTION, on_token=shown.append)
    assert "".join(shown).startswith("Run `thread-rag preheat --all-docs` [?] to warm")
    agent.settings = agent.settings.replace(UNSUPPORTED="drop")
    strict = agent.ask(QUESTION)
    assert strict.answer == "Then it is done." and strict.dropped[0]["missing"] == ["--all-docs"]


def test_no_line_that_answers_is_a_refusal_with_related_lines_and_no_llm_call(manual_engine):
    events = []
    agent, model = agent_with(manual_engine, events)
    agent.settings = agent.settings.replace(QUOTE_MIN=50.0)  # no cross-encoder logit reaches it
    ans = agent.ask(QUESTION)
    said = "The documents do not say how to pre-heat summaries."  # what they do not say, named
    assert ans.refused and ans.related and ans.answer == said and model.calls == [] and ans.llm_calls == 0
    assert ans.outcome["kind"] == "not_answered" and ans.outcome["line"] == said
    assert [k for k, _ in events][-1] == "related" and ans.quote
    from thread_rag.repl import Repl

    buf = io.StringIO()
    repl = Repl(manual_engine, console=Console(file=buf, width=200), agent=agent, preload=False)
    agent.on_event = repl._event  # the chat's own printing of events
    repl.answer(QUESTION)
    out = buf.getvalue()
    assert out.index(said) < out.index("related passages, not an answer:"), out


def test_the_cli_prints_the_quote_then_the_explanation_and_json_gives_the_quote_first(manual_engine, monkeypatch,
                                                                                      capsys, no_env):
    from thread_rag import cli
    from thread_rag.engine import Engine

    model = ScriptedChatModel(answer=lambda m: "Use `thread-rag preheat` [1] or `thread-rag warm` [1].")
    model.calls = []
    model.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
    monkeypatch.setattr(Engine, "chat_model", property(lambda self: model))
    home = str(manual_engine.home)
    manual_engine.close()
    assert cli.main(["--data-dir", home, "ask", QUESTION]) == 0
    out = capsys.readouterr().out
    assert out.startswith("from the manual (quoted):\n[1] DOC")
    assert out.index("explanation:") < out.index("Use `thread-rag preheat` [1] or `thread-rag warm` [?] [1].")
    assert "(not in the sources: `warm`;" in out  # the word of the command the sources do not hold
    calls = len(model.calls)
    assert cli.main(["--data-dir", home, "ask", "--quote", QUESTION]) == 0
    out = capsys.readouterr().out
    assert "explanation:" not in out and out.startswith("from the manual (quoted):") and len(model.calls) == calls
    assert cli.main(["--data-dir", home, "ask", "--json", QUESTION]) == 0
    d = json.loads(capsys.readouterr().out)
    assert list(d)[:4] == ["question", "outcome", "quote", "quote_best"] and d["quote"][0]["chunk_id"].startswith("DOC")
    assert d["outcome"]["kind"] == "answered" and abs(d["outcome"]["evidence"]["quote_best"] - d["quote_best"]) < 1e-3
    assert d["timings"]["quote_s"] <= d["timings"]["total_s"] and d["unsupported"][0]["missing"] == ["warm"]


def test_the_quote_tool_serves_scripts_and_mcp_without_a_model(manual_engine):
    from thread_rag.agent.loop import all_tools
    from thread_rag.agent.tools import call_tool

    tools = all_tools(manual_engine)
    out = call_tool(tools, "quote_answer", {"question": QUESTION})
    assert out.ok and out.result["quote"] and not out.result["refused"], out.error
    bad = call_tool(tools, "quote_answer", {"question": ""})
    assert not bad.ok and "question" in bad.error


def test_a_failed_explanation_keeps_the_quote_and_an_unquotable_reading_is_a_refusal(manual_engine, monkeypatch):
    """Review: with the model down after the quote, `ask --json` printed nothing (the quote was lost); in quote mode a
    reading with nothing to quote (no cross-encoder) answered "" as if that were an answer."""
    from thread_rag.errors import ModelUnavailableError

    def down(messages):
        raise ModelUnavailableError("Ollama is not reachable at http://127.0.0.1:9")

    agent, _ = agent_with(manual_engine, answer=down)
    ans = agent.ask(QUESTION)
    assert not ans.refused and ans.quote and ans.answer.startswith(ans.quote[0]["text"].split("\n")[0][:30])
    assert ans.note == "no explanation: Ollama is not reachable at http://127.0.0.1:9"

    def no_cross_encoder(self):
        raise ModelUnavailableError("packaged model ms-marco-MiniLM-L-12-v2 not installed")

    from thread_rag.retrieve.pipeline import Retriever

    monkeypatch.setattr(Retriever, "cross_encoder", property(no_cross_encoder))
    agent, model = agent_with(manual_engine)
    agent.settings = agent.settings.replace(ANSWER_MODE="quote")
    ans = agent.ask(QUESTION)
    assert ans.refused and ans.quote == [] and model.calls == []  # the reason, not "the documents do not say"
    assert ans.answer == "Nothing could be quoted: packaged model ms-marco-MiniLM-L-12-v2 not installed."
    assert ans.note == "no quote: packaged model ms-marco-MiniLM-L-12-v2 not installed"
    assert ans.outcome["kind"] == "not_answered" and ans.outcome["line"] == ans.answer


def test_the_chat_shows_the_quote_then_the_explanation_with_its_marks(manual_engine):
    from thread_rag.repl import Repl

    buf = io.StringIO()
    repl = Repl(manual_engine, console=Console(file=buf, width=200), preload=False)
    model = ScriptedChatModel(answer=lambda m: "Run `thread-rag preheat` [1], then `thread-rag warm` [1].")
    model.calls, model.metadata = [], {"backend": "fake", "model": "scripted", "ctx": 0}
    repl.agent.model = model
    repl.answer(QUESTION)
    out = buf.getvalue()
    assert out.index("from the manual (quoted):") < out.index("explanation:") < out.index("Run `thread-rag preheat` [1], then")
    assert "then `thread-rag warm` [?] [1]." in out and "(not in the sources: `warm`;" in out
    assert out.index("(not in the sources") < out.index("sources: [1]")


def test_the_ollama_question_is_answered_by_the_manual_s_own_settings(manual_engine):
    """Issue 43: asked how to make the chat use Ollama, the model once invented `--ollama-host ... --chat-backend`
    flags; the quote, with no model, holds the three settings the manual names."""
    agent, model = agent_with(manual_engine)
    agent.settings = agent.settings.replace(ANSWER_MODE="quote")
    ans = agent.ask("how do I make the chat use an Ollama model instead?")
    quoted = _quoted(ans)
    assert model.calls == [] and not ans.refused
    assert all(name in quoted for name in ("OLLAMA_HOST", "MAIN_MODEL", "CHAT_BACKEND")), quoted
    assert "--ollama-host" not in quoted
