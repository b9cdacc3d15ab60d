"""The agent with a deterministic fake chat model: follow-ups, the relevance floor, a question scoped to one
document, long messages, the tool layer's validation. The answer path's reading and quoting: test_fast_path.py."""

import pytest

from fakes import agent_with
from thread_rag.agent.answer import parse_json_lenient
from thread_rag.agent.tools import call_tool, make_tools
from thread_rag.errors import ThreadRagError
from bench.baselines import topk


def test_followup_condensed_into_standalone_query(manual_engine):
    agent, model = agent_with(manual_engine, standalone="How do I delete a document in THREAD-RAG?")
    agent.ask("How do I index a folder?")
    ans = agent.ask("and how do I remove one?")
    assert ans.standalone_question == "How do I delete a document in THREAD-RAG?"
    assert ans.tool_trace[0]["args"]["query"] == "How do I delete a document in THREAD-RAG?"


@pytest.mark.parametrize("second, condensed", [
    ("and how do I remove one?", True), ("What about PDFs?", True), ("How do I delete it?", True),
    ("Why?", True), ("Which file formats can I index?", False),
    ("How do I pre-heat summaries for a whole document?", False)])
def test_only_a_followup_costs_a_condensation_call(manual_engine, second, condensed):
    """In a running chat every question used to cost a rewrite call first (~1-2 s here, and it evicts the
    answer prompt's evaluated head); a question that stands on its own is searched as written."""
    from thread_rag.agent.loop import CONDENSE_SCHEMA

    agent, model = agent_with(manual_engine, standalone="How do I delete a document in THREAD-RAG?")
    agent.ask("How do I index a folder?")
    model.calls.clear()
    ans = agent.ask(second)
    assert any(c["format"] == CONDENSE_SCHEMA for c in model.calls) == condensed
    assert (ans.standalone_question == "How do I delete a document in THREAD-RAG?") == condensed


def test_lenient_json():
    assert parse_json_lenient('```json\n{"tool": "answer"}\n```') == {"tool": "answer"}
    assert parse_json_lenient('{{"tool": "answer"}}') == {"tool": "answer"}
    with pytest.raises(ValueError):
        parse_json_lenient("no")


def test_call_tool_validation(manual_engine, tmp_path):
    tools = make_tools(manual_engine)
    assert call_tool(tools, "rag_search", {"query": "x", "extra": 1}).error.startswith("rag_search: bad arguments")
    # an argument the tool does not take is named with the ones it does
    assert call_tool(tools, "rag_search", {"query": "x", "top": 3}).error == (
        "rag_search: bad arguments (top: not an argument of rag_search; it takes query, doc_id, k)")
    # scripts and MCP clients set what the CLI's flags set (a trial's script sent rag_search "k")
    assert len(call_tool(tools, "rag_search", {"query": "pre-heat summaries", "k": 2}).result["hits"]) == 2
    assert call_tool(tools, "rag_search", {"query": "x", "k": 0}).error == (
        "rag_search: bad arguments (k: Input should be greater than or equal to 1)")
    small = call_tool(tools, "fetch_chunks_by_id", {"chunk_ids": ["DOC1_000"], "token_budget": 40}).result
    assert small["windows"] and small["windows"][0]["tokens"] <= 40 + 10, small["windows"][0]
    two = call_tool(tools, "nested_retrieve", {"query": "pre-heat summaries", "limit": 2}).result["hits"]
    assert call_tool(tools, "nested_retrieve", {"query": "pre-heat summaries", "limit": 1, "offset": 1}).result[
        "hits"][0]["node_id"] == two[1]["node_id"]
    assert call_tool(tools, "list_available_documents", {"k": 3}).error == (
        "list_available_documents: bad arguments (k: not an argument of list_available_documents; it takes none)")
    assert not call_tool(tools, "rag_search", {"query": 5}).ok
    for tool, args in (("rag_search", {"query": "x", "k": True}), ("nested_retrieve", {"query": "x", "limit": True}),
                       ("fetch_chunks_by_id", {"chunk_ids": ["DOC1_000"], "token_budget": False})):
        assert "bad arguments" in (call_tool(tools, tool, args).error or ""), (tool, args)  # true was taken as 1
    assert not call_tool(tools, "rag_search", None).ok
    assert not call_tool(tools, "rag_search", "query").ok
    assert not call_tool(tools, "nested_retrieve", {"query": "x", "limit": "many"}).ok
    # the tool's name once (the error said "nested_retrieve: nested_retrieve: query is empty")
    assert call_tool(tools, "nested_retrieve", {"query": "  "}).error == "nested_retrieve: query is empty"
    # every door takes the same limits as the CLI (the tool schema stopped at 20, the CLI at 50)
    from thread_rag.agent.tools import NestedArgs
    from thread_rag.nested.tree import MAX_LIMIT

    assert NestedArgs.model_validate({"query": "x", "limit": MAX_LIMIT}).limit == MAX_LIMIT
    assert "less than or equal to 50" in call_tool(tools, "nested_retrieve", {"query": "x", "limit": 51}).error
    assert call_tool(tools, "list_available_documents", {}).ok
    r = call_tool(tools, "fetch_chunks_by_id", {"chunk_ids": ["DOC1_000", "nonsense"]})
    assert r.ok and r.result["errors"][0]["chunk_id"] == "nonsense"
    outside = call_tool(tools, "index_new_document", {"file_path": "/etc/passwd"})
    assert not outside.ok and "outside the allowed folders" in outside.error
    sneaky = call_tool(tools, "index_new_document", {"file_path": str(tmp_path / ".." / ".." / "etc" / "hosts")})
    assert not sneaky.ok and "outside" in sneaky.error


def test_empty_store_and_empty_question(make_engine):
    agent, _ = agent_with(make_engine())
    with pytest.raises(ThreadRagError, match="no documents"):
        agent.ask("how do I pre-heat summaries?")
    with pytest.raises(ThreadRagError):
        agent.ask("   ")


def test_a_message_over_the_limit_is_answered_from_its_last_question_and_says_so(manual_engine):
    """Issue 62: padding followed by a real question was cut to its first 4,000 characters without a word, and the
    padding alone was then refused as not in the documents. Now the last question is answered and the answer says
    what was read; a message with no question short enough to read is refused in one line."""
    from thread_rag.agent.loop import over_the_limit

    agent, model = agent_with(manual_engine)
    ans = agent.ask("la " * 1450 + "How do I pre-heat summaries?" + " " * 10 + "x" * 150)
    assert ans.question == "How do I pre-heat summaries?" and not ans.refused, ans.question
    assert "4,529 characters" in ans.note and "only its last question was answered" in ans.note, ans.note
    assert over_the_limit("Context. " * 600 + "The cache is full. Why is the summary stale? Thanks")[0] == \
        "Why is the summary stale?"
    with pytest.raises(ThreadRagError, match=r"5,004 characters.*no question") as err:
        agent.ask("why " + "x" * 5000)
    assert "\n" not in str(err.value)


def test_relevance_floor_refuses_off_topic_without_asking_the_model(manual_engine):
    agent, model = agent_with(manual_engine)
    ans = agent.ask("What is the boiling point of tungsten?")
    assert ans.refused and ans.relevance < manual_engine.settings.RELEVANCE_MIN and not model.calls
    ok = agent_with(manual_engine)[0].ask("how do I pre-heat summaries?")
    assert not ok.refused and ok.relevance >= manual_engine.settings.RELEVANCE_MIN


def test_question_scoped_to_one_document(manual_engine):
    docs = manual_engine.documents()
    assert len(docs) > 1
    target = docs[-1].doc_id
    agent, model = agent_with(manual_engine)
    ans = agent.ask("how do I pre-heat summaries?", doc_id=target.lower())
    first = ans.tool_trace[0]
    assert first["tool"] == "rag_search" and first["args"]["doc_id"] == target
    assert all(h.split(" ")[0].startswith(target + "_") for h in first["result"])
    assert all(c.chunk_id.startswith(target + "_") for c in ans.citations)
    with pytest.raises(ThreadRagError, match="DOC99"):
        agent.ask("how do I pre-heat summaries?", doc_id="DOC99")


def test_an_index_asked_for_in_a_message_is_described_as_the_cli_and_chat_do():
    """The chat's "index ./copy.md" read as if the copy were DOC1's own file, and a name with a line break split its
    line: /index and the CLI said `same content as` and quoted the name."""
    from thread_rag.agent.tools import ToolOutcome, describe_outcome

    r = {"results": [{"path": "copy\n.md", "status": "unchanged", "doc_id": "DOC1", "chunks": 3, "same_as": "/d/a.md",
                      "warnings": [], "error": None}]}
    text = describe_outcome(ToolOutcome("index_new_document", {}, True, r, None, 0.0))
    assert text == 'unchanged DOC1 (3 chunks) "copy\\n.md" (same content as /d/a.md)', text


def test_a_true_or_false_argument_is_taken_where_the_field_is_a_flag():
    """The refusal of true/false for numbers must not refuse a flag, optional or not."""
    from typing import Optional

    from thread_rag.agent.tools import _Args

    class Flags(_Args):
        a: bool = False
        b: Optional[bool] = None
        c: bool | None = None
        n: Optional[int] = None

    assert Flags(a=True, b=True, c=False).c is False
    with pytest.raises(ValueError, match="not true/false"):
        Flags(n=True)


def test_sources_of_two_documents_with_one_name_are_told_apart(make_engine, tmp_path):
    """New-user trial: the amd64 and arm64 guides' TXT editions were both cited as "install.en.txt", so nobody
    could tell which guide an answer's numbers came from. The sources say the folder too where names repeat."""
    for arch, ram in (("amd64", "780MB"), ("arm64", "260MB")):
        (tmp_path / arch).mkdir()
        (tmp_path / arch / "install.en.txt").write_text(
            f"Memory requirements.\n\nYou must have at least {ram} of memory for the {arch} installer.\n")
    engine = make_engine()
    engine.index_paths([str(tmp_path / "amd64"), str(tmp_path / "arm64")])
    agent, _ = agent_with(engine)
    agent.readers["topk"] = topk
    question = "How much memory does the installer need?"
    hits = engine.retriever.search(question, k=2).hits
    qvec = engine.query_embedder.embed_queries([question])[0]
    names = sorted(s.doc_name for s in agent.read("topk", question, hits, qvec, k=2))
    assert names == ["install.en.txt (amd64)", "install.en.txt (arm64)"], names


def test_the_last_question_of_a_long_message_keeps_its_dots_and_its_lower_case():
    """Review: "version 2.5?" was read as "5?", "./pump.md" as "md", "e.g." ended a sentence, and a lowercase
    question after padding was refused."""
    from thread_rag.agent.loop import over_the_limit

    pad = "la " * 1700
    for question in ("What changed in version 2.5?", "What does e.g. mean here?", "what is the torque?",
                     "How do I index ./pump.md?"):
        assert over_the_limit(pad + question)[0] == question, question
