"""Question steps (``QUESTION_STEPS``): the LLM's lookups are searched and answered in order, "#n" filled with earlier
answers, and the question + those answers is searched and interleaved with the question's own hits; any failure
leaves the question's own hits as they were. A deterministic fake model and a recording fake search; one agent test
on a real engine."""
from dataclasses import dataclass

import pytest

from fakes import ScriptedChatModel
from thread_rag.agent.loop import Agent
from bench.retrieval import default_spec, parse_config, same_config
from thread_rag.errors import SettingsError, ThreadRagError
from thread_rag.agent.steps import QuestionSteps, fill, interleave
from thread_rag.retrieve.pipeline import MAX_QUERY_CHARS
from thread_rag.settings import Settings

Q = "What river flows through the birthplace of the author of Green Hills?"


@dataclass
class Hit:
    chunk_id: str
    text: str = ""
    score: float = 0.0


class Search:
    """Hits by query: a fixed list per known query, else none; every call recorded."""

    def __init__(self, table):
        self.table, self.calls = table, []

    def __call__(self, text, k):
        self.calls.append((text, k))
        return self.table.get(text, [])[:k]


def model(**kw):
    m = ScriptedChatModel(**kw)
    m.calls = []
    return m


def test_lookups_are_filled_answered_and_the_answers_searched_with_the_question():
    search = Search({
        "Who is the author of Green Hills?": [Hit("D1_000", "Green Hills is a 1950 novel by Anna Reyes."), Hit("D9_000")],
        "Where was Anna Reyes born?": [Hit("D2_000", "Anna Reyes (born 1921 in Toledo) was a writer.")],
        "What river flows through Toledo?": [Hit("D3_000", "The Tagus flows through Toledo.")],
        f"{Q} Anna Reyes Toledo Tagus": [Hit("D3_000"), Hit("D1_000"), Hit("D4_000")],
    })
    m = model(lookups=["Who is the author of Green Hills?", "Where was #1 born?", "What river flows through #2?"],
              lookup_answers=["Anna Reyes.", " Toledo ", "Tagus"])
    base = [Hit("D1_000"), Hit("D5_000"), Hit("D6_000")]
    merged, trace = QuestionSteps(m, search).search(Q, 4, base)
    assert trace.searched == ["Who is the author of Green Hills?", "Where was Anna Reyes born?",
                              "What river flows through Toledo?"]
    assert trace.answers == ["Anna Reyes", "Toledo", "Tagus"] and trace.error is None
    assert trace.query == f"{Q} Anna Reyes Toledo Tagus"
    # the first k of each interleaved, each chunk once: nothing of the question's own first k is lost
    assert [h.chunk_id for h in merged] == ["D1_000", "D3_000", "D5_000", "D6_000", "D4_000"]
    assert [c[1] for c in search.calls] == [2, 2, 2, 4]  # lookups read their top 2; the added search k
    assert trace.calls == 4 and [c["stop"] for c in m.calls] == [None, ["\n"], ["\n"], ["\n"]]
    assert QuestionSteps(model(lookups=["a?", "b #1?"], lookup_answers=["x", "y"]), Search({})).plan(Q).query is None
    answer_prompt = m.calls[1]["last"]
    assert "Green Hills is a 1950 novel by Anna Reyes." in answer_prompt and "Question: Who is the author" in answer_prompt
    assert m.calls[0]["format"]["properties"]["steps"]["maxItems"] == 4  # the split is JSON-constrained


def test_a_single_lookup_costs_one_call_and_changes_nothing():
    search = Search({})
    m = model(lookups=["How do I pre-heat summaries?"])
    base = [Hit("D1_000"), Hit("D1_001")]
    merged, trace = QuestionSteps(m, search).search("How do I pre-heat summaries?", 5, base)
    assert merged == base and trace.query is None and search.calls == [] and len(m.calls) == 1


@pytest.mark.parametrize("reply", ["not json", '{"steps": []}', '{"other": 1}', '{"steps": [3, null]}'])
def test_an_unusable_split_leaves_the_hits(reply):
    m = model(lookups=reply)
    base = [Hit("D1_000")]
    merged, trace = QuestionSteps(m, Search({})).search(Q, 5, base)
    assert merged == base and trace.query is None and trace.lookups == [Q]
    assert trace.calls == 1 and (trace.error is None) == reply.startswith('{"steps": [')  # not a list: said so


class Down(ScriptedChatModel):
    def _generate(self, *a, **kw):
        raise ConnectionError("Ollama is not running")


def test_a_failing_model_leaves_the_hits_and_says_why():
    base = [Hit("D1_000"), Hit("D2_000")]
    merged, trace = QuestionSteps(Down(), Search({})).search(Q, 5, base)
    assert merged == base and trace.query is None and "Ollama is not running" in trace.error


def test_answers_found_before_a_failure_are_still_searched():
    class SecondAnswerFails(ScriptedChatModel):
        def reply(self, messages, kwargs):
            if len(self.calls) >= 2:
                raise TimeoutError("model timed out")
            return super().reply(messages, kwargs)

    m = SecondAnswerFails(lookups=["Who is the author of Green Hills?", "Where was #1 born?"],
                          lookup_answers=["Anna Reyes", "Toledo"])
    m.calls = []
    search = Search({"Who is the author of Green Hills?": [Hit("D1_000", "by Anna Reyes")],
                     "Where was Anna Reyes born?": [Hit("D2_000", "born in Toledo")],
                     f"{Q} Anna Reyes": [Hit("D7_000")]})
    merged, trace = QuestionSteps(m, search).search(Q, 3, [Hit("D1_000")])
    assert trace.answers == ["Anna Reyes"] and "timed out" in trace.error
    assert [h.chunk_id for h in merged] == ["D1_000", "D7_000"]


def test_a_multi_line_answer_keeps_its_first_line_and_long_questions_keep_the_answers():
    m = model(lookups=["Who wrote Blue Lanterns?", "Where was #1 born?"], lookup_answers=["\nMarta Quill\nShe was", "Toledo"])
    search = Search({"Who wrote Blue Lanterns?": [Hit("D1_000", "by Marta Quill")],
                     "Where was Marta Quill born?": [Hit("D2_000", "born in Toledo")]})
    long_q = "Who " + "very " * 600 + "long?"
    trace = QuestionSteps(m, search).plan(long_q)
    assert trace.answers == ["Marta Quill", "Toledo"]
    assert trace.query.endswith(" Marta Quill Toledo") and len(trace.query) <= MAX_QUERY_CHARS


def test_fill_and_interleave():
    assert fill("Where was #1 born, near #2?", ["Anna Reyes"], ["Who wrote X?"]) == "Where was Anna Reyes born, near #2?"
    assert fill("#1", [], []) == "#1"
    # a "#1" no earlier lookup answers is text ("the #1 pick"), not a hole; nor "#12" an answer and a "2"
    assert fill("Who was the #1 pick in 2003?", [], []) == "Who was the #1 pick in 2003?"
    assert fill("Seat #12 of #1", ["Bob"], ["Who?"]) == "Seat #12 of Bob"
    # an earlier lookup the model could not answer: its own words stand in for the answer (they left a hole)
    assert fill("Where was #1 born?", [""], ["Who directed Titanic?"]) == "Where was Who directed Titanic? born?"
    a, b = [Hit("A"), Hit("B"), Hit("C")], [Hit("B"), Hit("D")]
    assert [h.chunk_id for h in interleave(a, b)] == ["A", "B", "D", "C"]
    assert interleave(a, b)[1] is b[0]  # a chunk in both is the hit that came first


def test_setting_and_bench_label():
    with pytest.raises(SettingsError, match="QUESTION_STEPS"):
        Settings(QUESTION_STEPS=1)
    s = Settings()
    assert parse_config("three_stage:k15:q4")[1] == {"STAGE3_K": 15, "QUESTION_STEPS": 4}
    with pytest.raises(ThreadRagError, match="qN"):
        parse_config("three_stage:q1")
    assert parse_config("bm25_only:q0")[1] == {"QUESTION_STEPS": 0}  # a baseline without steps when they are on
    assert default_spec(s.replace(RERANKER="none", QUESTION_STEPS=4)) == "stage1_2:q4"
    assert default_spec(s.replace(FUSION="dense", QUESTION_STEPS=4)) == "dense_only:q4"
    assert default_spec(s.replace(QUESTION_STEPS=4)) == default_spec(s) + ":q4"
    assert not same_config(default_spec(s), default_spec(s) + ":q4", s)
    with pytest.raises(ValueError):
        QuestionSteps(model(), Search({}), max_steps=1)


def test_the_agent_searches_the_lookups_answers_and_traces_them(manual_engine):
    m = model(lookups=["Which command summarises every chunk?", "How do I run #1?"],
              lookup_answers=["thread-rag preheat", "nested retrieval excludes ancestors and descendants"],
              answer=lambda msgs: "Run thread-rag preheat [1].")
    m.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
    agent = Agent(manual_engine, chat_model=m)
    agent.settings = agent.settings.replace(QUESTION_STEPS=4)
    seen, read = {}, agent.read

    def spy(reader, query, hits, qvec, doc_id=None, k=None):
        seen.update(k=k, hits=[h.chunk_id for h in hits])
        return read(reader, query, hits, qvec, doc_id, k)

    agent.read = spy
    ans = agent.ask("how do I pre-heat summaries?")
    assert [t["tool"] for t in ans.tool_trace] == ["rag_search", "question_steps", "read:walk"]
    step = ans.tool_trace[1]
    assert step["ok"] and step["searched"] == ["Which command summarises every chunk?", "How do I run thread-rag preheat?"]
    assert step["lookups"] == ["Which command summarises every chunk?", "How do I run #1?"]
    assert step["args"]["query"] == ("how do I pre-heat summaries? thread-rag preheat nested retrieval excludes "
                                     "ancestors and descendants")
    assert ans.llm_calls == 4 and not ans.refused  # split + 2 answers + the answer
    own = [r.split()[0] for r in ans.tool_trace[0]["result"][:3]]
    merged = [r.split()[0] for r in step["result"]]
    assert merged[0] == own[0] and set(own) <= set(merged)  # its first hit first, none of its own lost
    assert len(merged) > 3 and seen["k"] == len(merged) and seen["hits"] == merged  # all of them go to the reader


def test_no_steps_below_the_relevance_floor_nor_for_the_nested_reader(manual_engine):
    m = model(lookups=["a?", "b #1?"], lookup_answers=["x", "y"], answer=lambda msgs: "Run thread-rag preheat [1].")
    m.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
    agent = Agent(manual_engine, chat_model=m)
    agent.settings = agent.settings.replace(QUESTION_STEPS=4)
    assert agent.ask("What is the boiling point of tungsten?").refused and m.calls == []
    ans = agent.ask("how do I pre-heat summaries?", reader="nested")
    assert "question_steps" not in [t["tool"] for t in ans.tool_trace] and ans.llm_calls <= 2


def test_steps_scoped_to_one_document(manual_engine):
    doc = next(d for d in manual_engine.documents() if "windows-and-summaries" in d.path)
    m = model(lookups=["Which command summarises every chunk?", "How do I run #1?"],
              lookup_answers=["thread-rag preheat", "thread-rag preheat DOC1"], answer=lambda msgs: "Run it [1].")
    m.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
    agent = Agent(manual_engine, chat_model=m)
    agent.settings = agent.settings.replace(QUESTION_STEPS=4)
    ans = agent.ask("how do I pre-heat summaries?", doc_id=doc.doc_id)
    step = next(t for t in ans.tool_trace if t["tool"] == "question_steps")
    assert step["result"] and all(r.startswith(doc.doc_id + "_") for r in step["result"])


def test_chat_shows_each_lookup_with_its_answer():
    """The chat printed question_steps like a search: the question cut at 60 characters, so the lookups and the
    answers it found (what the user needs to judge the step) were never seen."""
    import io

    from rich.console import Console

    from thread_rag.repl import Repl

    out = io.StringIO()
    repl = Repl(engine=None, console=Console(file=out, width=200))
    repl._event("tool", {"tool": "question_steps", "ok": True, "error": None, "args": {"query": Q + " Anna Reyes"},
                         "searched": ["Who is the author of Green Hills?", "Where was Anna Reyes born?"],
                         "answers": ["Anna Reyes", ""], "result": ["DOC1_000 (0.90)"]})
    text = out.getvalue()
    assert "Who is the author of Green Hills? -> Anna Reyes" in text and "Where was Anna Reyes born? -> ?" in text
