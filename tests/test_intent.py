"""The chat's requests in everyday words (issue 62): the recogniser judged on request sets written apart from its
examples, and what each request does at the chat's doors (removal asked first, two things in one message, the HTTP
``/query`` that never changes the library)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import write
from fakes import agent_with
from thread_rag.agent import intent as I
from thread_rag.agent.intent_examples import EXAMPLES
from bench.intents import DOCS, judge, make_folder

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def examples():
    from thread_rag.embedder import OnnxMiniLMQueryEmbedder

    embed = OnnxMiniLMQueryEmbedder(threads=2).embed_queries  # the default query embedder
    return embed, I.Examples(embed)


@pytest.mark.parametrize("name", ["requests.json", "requests-heldout.json", "requests-heldout-2.json",
                                  "requests-heldout-3.json"])
def test_requests_in_everyday_words(examples, tmp_path, name):
    """Each set: at least 95% right (action, arguments, the question after it), no request that changes the library
    taken on a question, under 150 ms a message, the model asked (a close call) for at most 10% of messages; here
    with no model, so a close call falls to the safe reading. Four sets written by four other sessions that never
    saw the recogniser: the first three, each measured once before it guided a revision (84.8% and 85.9% right on
    the first two held-out sets when they were new), then the last, judged only (bench_results/intents.json)."""
    embed, ex = examples
    asked = []
    rec = I.Recogniser(embed, lambda: DOCS, None, examples=ex)
    rec._ask_model = lambda text, readings: asked.append(text) and None  # counts the close calls
    requests = json.loads((DATA / name).read_text())
    got = judge(requests, rec, make_folder(tmp_path))
    assert got["changes_on_questions"] == 0, got["wrong"]
    assert got["right"] / got["n"] >= 0.95, (got["right"], got["n"], got["wrong"])
    assert got["median_ms"] < 150, got["median_ms"]
    assert len(asked) <= 0.10 * got["n"], len(asked)


def test_no_request_of_the_sets_is_one_of_the_examples():
    """The examples are not the sets' requests, nor light rewordings of them (word overlap under 0.8), except
    commands of three words or fewer ("help", "remove DOC", "list your commands"), which have one wording. Examples
    that the sets' writers happened to write too, longer than that, were taken out of the examples."""
    def words(text):
        return set(re.findall(r"[a-z0-9]+", I.masked(text, I.paths(text) + I.named_documents(text, DOCS)).lower()))

    examples = [words(t) for texts in EXAMPLES.values() for t in texts]
    for name in ("requests.json", "requests-heldout.json", "requests-heldout-2.json", "requests-heldout-3.json"):
        for r in json.loads((DATA / name).read_text()):
            w = words(r["message"].replace("{DIR}", "/tmp/x"))
            if len(w) <= 3:
                continue
            closest = max(len(w & e) / len(w | e) for e in examples)
            assert closest < 0.8, (r["message"], closest)


def test_the_margin_and_cue_weight_hold_by_leave_one_out(examples):
    """What chose MARGIN and the cue words' weight: each example read by a classifier fitted without it. Sure
    readings (margin >= MARGIN) are right 93% of the time or more (a held-out example has no twin left), and most
    readings are sure."""
    _, ex = examples
    sure = right = 0
    for i in range(len(ex.texts)):
        keep = np.arange(len(ex.texts)) != i
        p = I.softmax(ex.x[i:i + 1] @ I.fit(ex.x[keep], ex.y[keep], len(ex.readings)))[0]
        order = np.argsort(-p)
        if p[order[0]] - p[order[1]] >= I.MARGIN:
            sure += 1
            right += order[0] == ex.y[i]
    assert right / sure >= 0.93 and sure / len(ex.texts) >= 0.85, (right, sure, len(ex.texts))


def test_names_ids_and_paths_are_the_messages_own(tmp_path):
    """Arguments come from the message: a path that exists or not (named, never guessed), ids, and documents named
    as the catalog knows them, told apart by year or by old/new."""
    folder = make_folder(tmp_path)
    found = I.paths(f"add {folder}/notes, then {folder}/missing/plan.pdf and widget-manual.md", DOCS)
    assert [(m.text, m.exists) for m in found] == [(f"{folder}/notes", True), (f"{folder}/missing/plan.pdf", False)]
    named = lambda text: [m.doc_id for m in I.named_documents(text, DOCS)]  # noqa: E731
    assert named("remove the widget manual") == ["DOC1"]
    assert named("drop the old install guide") == ["DOC2"] and named("drop the newest installation guide") == ["DOC3"]
    assert named("compare the 2024 install guide with the 2022 one") == ["DOC3", "DOC2"]
    assert named("compare the install guides") == ["DOC2", "DOC3"]
    assert named("what is DOC7 about") == ["DOC7"]  # an unknown id is still named: the tool says it is unknown
    assert named("how do I install it?") == []


def test_a_close_call_asks_the_model_between_the_two_readings_and_question(examples):
    """"I'd like to index a new document" reads close to the list and to indexing: the model picks among those two
    and "question"; with no model, or a failed call, a close call that would change the library is a question. A
    question in a question's words is never put to the model as a change."""
    embed, ex = examples
    seen = []

    def model(messages, schema, max_tokens):
        seen.append(schema["properties"]["action"]["enum"])
        return {"action": "index_new_document"}

    rec = I.Recogniser(embed, lambda: DOCS, model, examples=ex)
    message = "I'd like to index a new document"
    got = rec.recognise(message)
    assert seen == [["list_available_documents", "index_new_document", "question"]] and got.asked_model, seen
    assert got.action == "index_new_document" and got.missing  # no path given: asked for, nothing guessed
    assert I.Recogniser(embed, lambda: DOCS, None, examples=ex).recognise(message).action == "list_available_documents"
    broken = I.Recogniser(embed, lambda: DOCS, lambda *a: (_ for _ in ()).throw(ValueError("no JSON")), examples=ex)
    assert broken.recognise(message).action == "list_available_documents"  # a failed call: as with no model
    seen.clear()
    assert rec.recognise("How do I remove the old boot entry?").action == I.QUESTION and not seen


# ---------------------------------------------------------------- at the doors
def test_removal_is_asked_first_and_no_removes_nothing(manual_engine):
    agent, _ = agent_with(manual_engine)
    before = [d.doc_id for d in manual_engine.documents()]
    asked = []
    agent.confirm = lambda prompt: asked.append(prompt) or False
    ans = agent.ask(f"please delete {before[0]} from the library")
    assert asked and before[0] in asked[0] and "[y/N]" in asked[0], asked
    assert [d.doc_id for d in manual_engine.documents()] == before and "Not removed" in ans.answer
    assert ans.tool_trace[0]["tool"] == "remove_document" and not ans.tool_trace[0]["ok"]
    agent.confirm = None  # no one to ask (ask in a script): nothing removed either
    agent.ask(f"delete {before[0]}")
    assert [d.doc_id for d in manual_engine.documents()] == before
    ans = agent.ask("please delete DOC99 from the library")  # unknown: said so, nobody asked
    assert "DOC99" in ans.answer and "Not removed" not in ans.answer and not ans.tool_trace[0]["ok"], ans.answer
    agent.confirm = lambda prompt: True
    ans = agent.ask(f"delete {before[0]}")
    assert before[0] not in [d.doc_id for d in manual_engine.documents()] and ans.tool_trace[0]["ok"], ans.answer


def test_index_then_answer_in_one_message(manual_engine, tmp_path, monkeypatch):
    """"index X and tell me how to Y": the file is indexed, then the question is answered from the library as it now
    is; the trace names the action first (``ask --json``'s ``tool_trace``)."""
    write(tmp_path / "pump.md", "# Pump\n\nPrime the pump with two litres of water before you start it.\n")
    monkeypatch.chdir(tmp_path)
    agent, _ = agent_with(manual_engine, answer=lambda msgs: "Prime it with two litres [1].")
    agent.settings = manual_engine.settings.replace(ALLOWED_ROOTS=[str(tmp_path)])
    ans = agent.ask("index ./pump.md and tell me how to prime the pump")
    assert any(d.name == "pump.md" for d in manual_engine.documents())
    assert ans.tool_trace[0]["tool"] == "index_new_document" and ans.tool_trace[0]["ok"]
    assert ans.mode.startswith("fast") and "two litres" in ans.answer, (ans.mode, ans.answer)


def test_requests_that_change_nothing_and_ones_that_lack_something(manual_engine):
    agent, _ = agent_with(manual_engine)
    assert "You can ask me in your own words" in agent.ask("what can you do?").answer
    n = len(manual_engine.documents())
    assert agent.ask("how many chunks are indexed?").answer.startswith(f"{n} document")
    assert "MAIN_MODEL" in agent.ask("which model are you using?").answer
    ans = agent.ask("index a new file please")  # no path: asked for, nothing guessed
    assert ans.mode == "action/index_new_document" and "which file or folder" in ans.answer
    assert len(manual_engine.documents()) == n


def test_the_http_query_never_changes_the_library(manual_engine, tmp_path, monkeypatch):
    write(tmp_path / "pump.md", "# Pump\n\nPrime the pump.\n")
    monkeypatch.chdir(tmp_path)
    agent, _ = agent_with(manual_engine)
    agent.settings = manual_engine.settings.replace(ALLOWED_ROOTS=[str(tmp_path)])
    agent.confirm = lambda prompt: True
    first = manual_engine.documents()[0].doc_id
    for message in ("index ./pump.md", f"delete {first}"):
        ans = agent.ask(message, changes=False)
        assert "never changes the library" in ans.answer and not ans.tool_trace[0]["ok"], ans.answer
    assert first in [d.doc_id for d in manual_engine.documents()]
    assert not any(d.name == "pump.md" for d in manual_engine.documents())
    ans = agent.ask("index ./pump.md and tell me how to pre-heat summaries", changes=False)  # the question still
    assert "never changes the library" in ans.answer and ans.mode.startswith("fast"), ans.mode  # answered
    assert not any(d.name == "pump.md" for d in manual_engine.documents())


# ---------------------------------------------------------------- review findings (each failed before its fix)
NOTES = [("DOC1", "notes.md"), ("DOC2", "guide.pdf"), ("DOC3", "manual.pdf")]


@pytest.mark.parametrize("message", [
    "I need to add ~/bin to my PATH, how do I do that?",
    "copy ./backup.txt to the USB stick and tell me how to restore it",
    "The router manual says to load ./firmware.txt, how do I do that?",
    "load ./config.txt into the router and explain what happens next",
])
def test_a_path_in_a_question_about_the_content_is_never_indexed(examples, message):
    embed, ex = examples
    got = I.Recogniser(embed, lambda: NOTES, None, examples=ex).recognise(message)
    assert got.action not in I.CHANGES, (message, got)


@pytest.mark.parametrize("message", [
    "index notes.md", "reindex notes.md", "add guide.pdf to the library", "show the guide", "open notes.md",
    "list notes.md", "notes", "guide", "DOC1", "notes.md", "don't delete DOC1", "never remove DOC2",
    "I removed DOC1 yesterday, what now", "Delete the old logs as described in the guide",
    "delete the notes field and tell me how to save the form", "remove the cover manually",
])
def test_naming_a_document_is_not_asking_to_remove_it(examples, message):
    embed, ex = examples
    got = I.Recogniser(embed, lambda: NOTES, None, examples=ex).recognise(message)
    assert got.action != "remove_document", (message, got)


def test_a_removal_is_still_read_with_its_verb_and_its_document(examples):
    embed, ex = examples
    rec = I.Recogniser(embed, lambda: NOTES, None, examples=ex)
    for message, doc in (("remove notes.md", "DOC1"), ("delete DOC2", "DOC2"), ("get rid of manual.pdf", "DOC3"),
                         ("please drop guide.pdf from the library", "DOC2")):
        got = rec.recognise(message)
        assert (got.action, got.args.get("doc_id")) == ("remove_document", doc), (message, got)


def test_a_reading_left_after_the_best_was_dropped_must_stand_on_its_own(examples):
    embed, ex = examples
    rec = I.Recogniser(embed, lambda: DOCS, None, examples=ex)
    got = rec.recognise("differences between the manual and the guide")
    assert got.action in (I.QUESTION, "compare_documents"), got


def test_respelling_leaves_real_words_alone():
    for word in ("older", "three", "backed", "serve", "recompute", "remote"):
        assert I.respelled(word) == word, word
    assert I.respelled("remvoe DOC") == "remove DOC" and I.respelled("statistcs") == "statistics"


def test_old_and_new_keep_each_mention_inside_the_message():
    text = "compare the newer install guide with the older one"
    found = I.named_documents(text, DOCS)
    assert [m.doc_id for m in found] == ["DOC3", "DOC2"] and all(m.start < m.end for m in found), found
    assert I.masked(text, found).count("DOC") == 2 and "older one" not in I.masked(text, found)


def test_an_unknown_id_beside_a_known_one_is_still_named():
    assert [m.doc_id for m in I.named_documents("compare DOC1 with DOC9", DOCS)] == ["DOC1", "DOC9"]


def test_the_number_of_passages_asked_for_is_read(manual_engine):
    """Review: "give me 4 separate passages" was parsed as 4 and read as READ_K (3)."""
    agent, _ = agent_with(manual_engine, answer=lambda m: "Pre-heat them [1].")
    limits = []
    real = manual_engine.nested.retrieve
    manual_engine.nested.retrieve = lambda q, limit, doc_id=None, **kw: limits.append(limit) or real(
        q, limit=limit, doc_id=doc_id, **kw)
    ans = agent.ask("give me 4 separate passages about pre-heating summaries")
    assert ans.mode == "fast/nested" and limits == [4], (ans.mode, limits)


def test_help_lists_what_the_chat_understands_with_an_example_each(manual_engine):
    import io

    from rich.console import Console

    from thread_rag.agent.actions import HELP
    from thread_rag.repl import Repl

    buf = io.StringIO()
    Repl(manual_engine, console=Console(file=buf, width=200), preload=False).handle("/help")
    out = buf.getvalue()
    assert all(f"e.g. {example}" in out for _, example in HELP) and "/delete" in out, out


def test_two_changes_in_one_message_do_neither(examples, tmp_path):
    """Review: "index ./pump.md and then delete DOC1" removed (after asking) and dropped the index without a word."""
    embed, ex = examples
    folder = make_folder(tmp_path)
    rec = I.Recogniser(embed, lambda: DOCS, None, examples=ex)
    for message in (f"index {folder}/notes/runbook.md and then delete DOC1",
                    f"delete DOC2 and add {folder}/notes/runbook.md to the library"):
        got = rec.recognise(message)
        assert got.action in I.CHANGES and "one change at a time" in got.missing, (message, got)
