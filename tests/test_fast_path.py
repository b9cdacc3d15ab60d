"""The default answer path with a deterministic fake model: one LLM call per plain question, off-topic refused
with none, citations the model writes mapped to chunk ids, actions recognised cheaply, the budgeted walk."""
import io
import json

import pytest
from rich.console import Console

from conftest import needs_shared
from fakes import ScriptedChatModel, agent_with
from thread_rag.agent.answer import Source, holding_chunks, number, written_citations
from thread_rag.errors import ModelCallError, ThreadRagError
from thread_rag.agent.loop import Agent
from thread_rag.agent.reading import walk_sources
from bench.baselines import BASELINES, parent_blocks
from bench.baselines import parent_doc as parent_doc_sources
from bench.baselines import sentence_window as sentence_window_sources
from bench.baselines import topk as topk_sources


def cite_one(messages):
    return "Run thread-rag preheat to summarise every chunk [1]."


def test_plain_question_costs_one_llm_call_and_cites_what_it_read(manual_engine):
    agent, model = agent_with(manual_engine, answer=cite_one)
    agent.settings = agent.settings.replace(EXPLAIN_FROM="sources")  # the model reads every source the walk read
    ans = agent.ask("how do I pre-heat summaries?")
    assert not ans.refused and ans.mode == "fast/walk"
    assert len(model.calls) == 1 and ans.llm_calls == 1          # no intent call, no routing, no gate
    assert model.calls[0]["last"].startswith("Answer the question from the numbered sources")
    assert [t["tool"] for t in ans.tool_trace] == ["rag_search", "read:walk"]
    first = ans.sources[0]
    assert ans.citations[0].chunk_id == first["chunk_ids"][0] and ans.citations[0].how == "written"
    assert ans.citations[0].source == 1 and not ans.citations[0].inferred
    assert "preheat" in first["text"].lower() or "pre-heat" in first["text"].lower()
    assert ans.timings["first_token_s"] is not None and ans.tokens["in"] > ans.tokens["sources"] > 0


def test_an_answer_stopped_by_the_token_limit_says_so(manual_engine, capsys):
    """An answer that ran into MAX_ANSWER_TOKENS (a 1.5B model repeating one line) ended mid-sentence with nothing
    to say it was cut (`interrupted: false`): a new user's trial."""
    from thread_rag.render import answer_notes

    agent, _ = agent_with(manual_engine, answer=cite_one, finish_reason="length")
    ans = agent.ask("how do I pre-heat summaries?")
    assert ans.cut and not ans.interrupted
    note = (f"(the answer stopped at a token limit: MAX_ANSWER_TOKENS = {agent.settings.MAX_ANSWER_TOKENS}, or the "
            f"model's context)")
    assert answer_notes(ans, agent.settings) == [note]
    from thread_rag.repl import Repl

    buf = io.StringIO()
    Repl(manual_engine, console=Console(file=buf, width=200), agent=agent, preload=False).answer("how do I pre-heat?")
    assert note in buf.getvalue(), buf.getvalue()
    agent, _ = agent_with(manual_engine, answer=cite_one, finish_reason="stop")
    ans = agent.ask("how do I pre-heat summaries?")
    assert not ans.cut and answer_notes(ans, agent.settings) == []
    agent, _ = agent_with(manual_engine, answer=cite_one, finish_reason="length", finish_key="done_reason")  # Ollama
    assert agent.ask("how do I pre-heat summaries?").cut


WIDGET = """# Widget server guide

## Requirements

The widget server needs a Linux host with two cores, four gigabytes of memory and Python installed on it.

## Configuration

Open widget.conf and set the listen port to 9090 in the server section, then save the file.

## Starting

Start the widget server with the command widgetd start and check its log for the ready line.
"""


def test_a_citation_names_the_chunk_of_its_source_the_answer_is_closest_to(make_engine, tmp_path, monkeypatch):
    """A source the walk reads spans several chunks; the citation named its first chunk, where the fact was in
    another (a new user fetched the cited id and did not find it)."""
    from conftest import write

    engine = make_engine(CHUNK_TOKENS=40, CHUNK_OVERLAP=0, CHUNK_MIN_TOKENS=0)
    engine.index_file(write(tmp_path / "widget.md", WIDGET))
    agent, _ = agent_with(engine, answer=lambda m: "Set the listen port to 9090 in the server section of widget.conf [1].")
    ans = agent.ask("Which port should the widget server listen on?")
    src = ans.sources[0]
    assert len(src["chunk_ids"]) > 1 and "9090" not in engine.chunk(src["chunk_ids"][0]).text, src["chunk_ids"]
    cited = ans.citations[0]
    assert cited.source == 1 and cited.chunk_id in src["chunk_ids"] and "9090" in engine.chunk(cited.chunk_id).text
    calls = []
    embed = engine.query_embedder.embed_queries
    # the session's one embedder: patched for this test only
    monkeypatch.setattr(engine.query_embedder, "embed_queries", lambda texts: calls.append(list(texts)) or embed(texts))
    agent, _ = agent_with(engine, answer=lambda m: "It needs two cores [1]. Start it with widgetd start [1].")
    agent.ask("Which port should the widget server listen on?")
    assert calls[-1] == ["It needs two cores [1]. Start it with widgetd start [1]."]  # one call for the citations
    def failing(texts):  # as the ONNX runtime's failure reaches the answer path (onnx_models: ModelCallError)
        if "[1]" in texts[0]:
            raise ModelCallError("model.onnx failed: Fail: boom")
        return embed(texts)

    monkeypatch.setattr(engine.query_embedder, "embed_queries", failing)  # it fails:
    agent, _ = agent_with(engine, answer=lambda m: "Yes [1].")  # no word shared with any chunk either:
    ans = agent.ask("Which port should the widget server listen on?")
    assert ans.citations[0].chunk_id == ans.sources[0]["chunk_ids"][0]  # the answer stands, its first chunk cited


def test_a_citation_gives_the_pages_of_what_was_read_not_of_a_version_indexed_since(make_engine, tmp_path):
    """The cited chunk's pages were read from the store when citing: a re-index between reading and citing (another
    process, a watcher) gave the new version's pages to the old version's text."""
    from dataclasses import replace

    from conftest import write

    engine = make_engine(CHUNK_TOKENS=40, CHUNK_OVERLAP=0, CHUNK_MIN_TOKENS=0)
    engine.index_file(write(tmp_path / "widget.md", WIDGET))
    real = engine.chunk

    def answer(messages):  # while the model writes, the store comes to hold another version's pages
        engine.chunk = lambda chunk_id: replace(real(chunk_id), page_start=99, page_end=99)
        return "Set the listen port to 9090 in the server section of widget.conf [1]."

    agent, _ = agent_with(engine, answer=answer)
    ans = agent.ask("Which port should the widget server listen on?")
    cited = ans.citations[0]
    assert len(ans.sources[0]["chunk_ids"]) > 1 and cited.chunk_id != ans.sources[0]["chunk_ids"][0]
    assert cited.pages == "" and "99" not in json.dumps(ans.sources)


def test_each_citation_is_placed_by_the_sentences_that_cite_it():
    from thread_rag.agent.answer import cited_text

    text = "Install it first [1]. Then set the port to 9090 [2]. Both steps need root [1, 2]. Done."
    assert cited_text(text, 1) == "Install it first [1]. Both steps need root [1, 2]."
    assert cited_text(text, 2) == "Then set the port to 9090 [2]. Both steps need root [1, 2]."
    assert cited_text(text, 3) == text  # a source named only in the follow-up call: the whole answer


def test_off_topic_question_refused_before_any_llm_call(manual_engine):
    agent, model = agent_with(manual_engine, answer=cite_one)
    ans = agent.ask("What is the boiling point of tungsten?")
    assert ans.refused and ans.answer.startswith("The documents do not say ") and ans.citations == []
    assert model.calls == [] and ans.llm_calls == 0
    assert ans.relevance < manual_engine.settings.RELEVANCE_MIN


def test_uncited_answer_gets_one_constrained_sources_call(manual_engine):
    agent, model = agent_with(manual_engine, answer=lambda m: "Run thread-rag preheat.", sources=[2, 1])
    ans = agent.ask("how do I pre-heat summaries?")
    assert len(model.calls) == 2 and ans.llm_calls == 2
    fmt = model.calls[1]["format"]
    assert fmt["properties"]["sources"]["items"]["enum"] == list(range(1, len(ans.sources) + 1))
    assert [c.how for c in ans.citations] == ["sources_call"] * len(ans.citations)
    assert len(ans.sources) >= 2  # so the follow-up's [2, 1] is kept whole, in the model's order
    assert [c.source for c in ans.citations] == [2, 1]
    assert [c.chunk_id for c in ans.citations] == [ans.sources[1]["chunk_ids"][0], ans.sources[0]["chunk_ids"][0]]


def test_citation_markers_map_to_sources_and_bad_ones_are_reported():
    srcs = number([Source(["DOC1_000", "DOC1_001"], "DOC1", "a.md", "", "", "x"),
                   Source(["DOC2_005"], "DOC2", "b.md", "p.3", "", "y"),
                   Source(["DOC1_007"], "DOC1", "a.md", "", "", "z")])
    text = "First [1]. Then [2, 3] and [1]. Not a source [7]. Odd id [DOC1_0052]. By id [DOC2_005] [DOC9_001]."
    nums, invalid = written_citations(text, srcs)
    assert nums == [1, 2, 3]
    assert invalid == ["[7]", "DOC1_0052", "DOC9_001"]
    assert written_citations("no markers here", srcs) == ([], [])


def test_a_malformed_citation_is_reported_not_a_crash(manual_engine):
    """[DOC1_0052] matches the citation pattern but is no chunk id: reported, not a crash after streaming."""
    agent, _ = agent_with(manual_engine, answer=lambda m: "See [DOC1_0052].")
    ans = agent.ask("how do I pre-heat summaries?")
    assert ans.mode == "fast/walk" and "DOC1_0052" in ans.invalid_citations, (ans.mode, ans.invalid_citations)


def test_actions_recognised_cheaply(manual_engine, tmp_path):
    agent, model = agent_with(manual_engine, action="list_available_documents")
    ans = agent.ask("List the indexed documents.")
    assert ans.mode == "action/list_available_documents" and not model.calls  # a clear request: no model call
    assert all(d.doc_id in ans.answer for d in manual_engine.documents())
    agent, model = agent_with(manual_engine, action="question", answer=cite_one)
    ans = agent.ask("Which documents does the manual say to keep in the summary cache?")  # about the content
    assert ans.mode == "fast/walk", ans.mode
    # indexing goes through the allowed-roots door: nothing outside is read
    before = len(manual_engine.documents())
    agent, model = agent_with(manual_engine, action="index_new_document")
    ans = agent.ask("Please index the file /etc/hosts.txt")
    assert ans.mode == "action/index_new_document" and ans.answer.startswith("error:")
    assert "outside the allowed folders" in ans.answer and len(manual_engine.documents()) == before
    # nested passages are a reader: the model answers from them
    agent, model = agent_with(manual_engine, action="nested_retrieve", answer=cite_one)
    ans = agent.ask("Give me 2 non-overlapping passages about pre-heating summaries")
    assert ans.mode == "fast/nested" and 1 <= len(ans.sources) <= 3


def test_questions_that_mention_actions_cost_no_intent_call(manual_engine):
    agent, model = agent_with(manual_engine, answer=cite_one, action="index_new_document")
    for q in ("How do I index a folder of PDF files?", "What happens when indexing is killed?"):
        agent.clear()
        model.calls = []
        ans = agent.ask(q)
        assert ans.mode == "fast/walk" and len(model.calls) == 1, q


def _count(text):
    return len(text.split())


def test_walk_respects_budget_and_signals(manual_engine):
    e = manual_engine
    q = "how do I pre-heat summaries?"
    hits = e.retriever.search(q, k=3).hits
    qvec = e.embedder.embed([q])[0]
    idx = e.retriever.index
    top = topk_sources(hits, 3, e.thread, _count)
    assert [s.chunk_ids for s in top] == [[h.chunk_id] for h in hits[:3]] and [s.n for s in top] == [1, 2, 3]
    # no walking when the continuity threshold cannot be met: the entry chunks, merged where adjacent
    still = walk_sources(hits, 3, e.thread, idx, qvec, _count, budget=10**6, walk_threshold=0.9999)
    assert sorted(c for s in still for c in s.chunk_ids) == sorted({h.chunk_id for h in hits[:3]})
    # walking whenever possible: each entry chunk followed by up to 2 neighbours, merged, no chunk twice
    far = walk_sources(hits, 3, e.thread, idx, qvec, _count, budget=10**6, walk_threshold=-1, walk_query_min=-1)
    ids = [c for s in far for c in s.chunk_ids]
    assert len(ids) == len(set(ids)) and set(ids) > {h.chunk_id for h in hits[:3]}
    for s in far:
        pos = [int(c.split("_")[1]) for c in s.chunk_ids]
        assert pos == list(range(pos[0], pos[0] + len(pos)))       # one source = consecutive chunks
    assert far[0].chunk_ids[0] == hits[0].chunk_id                  # entry rank order kept
    # a small budget keeps the best entry chunk and drops walked text first
    small = walk_sources(hits, 3, e.thread, idx, qvec, _count, budget=_count(hits[0].text) + 1,
                         walk_threshold=-1, walk_query_min=-1)
    assert [c for s in small for c in s.chunk_ids] == [hits[0].chunk_id]
    # walking backward too (WALK_BACK): the chunk before each entry (where there is one) joins its source
    inner = next(h for h in hits if not h.chunk_id.endswith("_000"))  # a hit with a chunk before it
    entry = int(inner.chunk_id.split("_")[1])
    both = walk_sources([inner], 1, e.thread, idx, qvec, _count, budget=10**6, walk_threshold=-1, walk_query_min=-1,
                        max_walk=0, max_back=1)
    assert [int(c.split("_")[1]) for c in both[0].chunk_ids] == [entry - 1, entry]
    assert walk_sources([inner], 1, e.thread, idx, qvec, _count, budget=10**6, walk_threshold=0.9999,
                        max_walk=0, max_back=1)[0].chunk_ids == [inner.chunk_id]  # signals hold backward too


def test_reading_probe_measures_each_strategys_sources_without_the_model(manual_engine):
    """``bench reading``: the sources each strategy reads under the shared budget, scored against the gold, with no
    LLM call; a strategy may carry its own reading settings, nothing else."""
    from bench.answers import parse_strategy
    from bench.datasets import Dataset, Query
    from bench.reading import run_reading

    assert parse_strategy("walk:WALK_BACK=1:WALK_THRESHOLD=0.5") == ("walk", {"WALK_BACK": 1, "WALK_THRESHOLD": 0.5})
    for bad in ("walk:READ_BUDGET=5000", "walk:WALK_BACK", "bogus", "routed:WALK_BACK=1", "decide:WALK_BACK=1"):
        with pytest.raises(ValueError):
            parse_strategy(bad)
    docs = manual_engine.documents()
    keymap = {d.doc_id: d.path for d in docs}
    pre = next(d.path for d in docs if "windows-and-summaries" in d.path)
    ds = Dataset("manual", [], [Query("q1", "how do I pre-heat summaries?", {pre}, answers=["thread-rag preheat"])])
    model = ScriptedChatModel(answer=lambda msgs: pytest.fail("the probe called the model"))
    model.calls = []
    out = run_reading(manual_engine.settings, ds, manual_engine, keymap, ["topk", "walk", "walk:WALK_BACK=1"], k=2,
                      model=model)
    s = out["strategies"]
    assert set(s) == {"topk", "walk", "walk:WALK_BACK=1"} and model.calls == []
    assert all(0 <= r["coverage"] <= 1 and 0 < r["tokens"] <= out["budget"] + 400 for r in s.values())
    assert s["walk:WALK_BACK=1"]["tokens"] >= s["walk"]["tokens"] >= s["topk"]["tokens"]
    assert "coverage_minus_walk" in s["topk"] and "coverage_minus_walk" not in s["walk"]
    # the search's settings are recorded (an environment override such as THREAD_RAG_HOP_K is not in the command)
    assert out["shared_settings"]["READ_K"] == 2 and out["shared_settings"]["HOP_K"] == manual_engine.settings.HOP_K


def test_baseline_readers_fill_the_same_budget_from_their_own_windows(manual_engine):
    e = manual_engine
    hits = e.retriever.search("how do I pre-heat summaries?", k=3).hits
    entries = [h.chunk_id for h in hits[:3]]

    def ids(sources):
        return [c for s in sources for c in s.chunk_ids]

    def pos(cid):
        return int(cid.split("_")[1])

    # sentence window, no budget limit: every entry with both raw neighbours (clamped at the ends), no repeats
    wide = ids(sentence_window_sources(hits, 3, e.thread, _count, budget=10**6))
    want = set()
    for c in entries:
        doc, n = c.split("_")[0], len(e.thread(c.split("_")[0]))
        want |= {f"{doc}_{p:03d}" for p in (pos(c) - 1, pos(c), pos(c) + 1) if 0 <= p < n}
    assert set(wide) == want and len(wide) == len(set(wide))
    # parent document, no budget limit: the whole ~1000-word block around each entry
    blocks = {}
    for c in entries:
        doc = c.split("_")[0]
        a, b = next(x for x in parent_blocks(e.thread(doc).chunks) if x[0] <= pos(c) <= x[1])
        blocks.update({f"{doc}_{p:03d}": 1 for p in range(a, b + 1)})
    assert set(ids(parent_doc_sources(hits, 3, e.thread, _count, budget=10**6))) == set(blocks)
    # both spend a small budget the same way the walk does: the best entry chunk first, nothing else
    one = _count(hits[0].text) + 1
    for reader in (sentence_window_sources, parent_doc_sources):
        assert ids(reader(hits, 3, e.thread, _count, budget=one)) == [hits[0].chunk_id]
    # and the entries before any neighbour: a budget that holds the three entries holds exactly them
    three = sum(_count(e.chunk(c).text) for c in set(entries))
    assert set(ids(sentence_window_sources(hits, 3, e.thread, _count, budget=three))) == set(entries)


def test_parent_blocks_cover_the_thread_in_order():
    class C:
        def __init__(self, n):
            self.text = "w " * n

    chunks = [C(n) for n in (300, 400, 500, 100, 2000, 10, 20)]
    assert parent_blocks(chunks, 1000) == [(0, 2), (3, 4), (5, 6)]
    assert parent_blocks([], 1000) == []


def test_disjoint_calibration_is_checked(tmp_path):
    from bench.datasets import Dataset, Query, check_disjoint, split_qids
    from thread_rag.errors import ThreadRagError

    qids = [f"q{i}" for i in range(200)]
    half = split_qids(qids)
    assert sum(v == "dev" for v in half.values()) == 80 and set(half.values()) == {"dev", "test"}
    assert split_qids(list(reversed(qids))) == half  # fixed by the ids, not their order
    ds = Dataset("x", [], [Query("q1", "?", set()), Query("q2", "?", set())])
    (tmp_path / "refusal-x.json").write_text(json.dumps({"qids": ["q9", "q7"]}))
    check_disjoint(ds, tmp_path)  # no overlap: fine
    (tmp_path / "refusal-y.json").write_text(json.dumps({"qids": ["q2"]}))
    with pytest.raises(ThreadRagError, match="must be disjoint"):
        check_disjoint(ds, tmp_path)


def test_dataset_splits_partition_the_questions():
    from conftest import DATA

    if not DATA.is_dir():
        pytest.skip("../shared/data is not beside the checkout")
    from bench.datasets import load_dataset

    full = load_dataset("aws-docs-qa", DATA)
    dev = load_dataset("aws-docs-qa", DATA, split="dev")
    test = load_dataset("aws-docs-qa", DATA, split="test", limit=10)
    assert {q.qid for q in dev.queries}.isdisjoint({q.qid for q in test.queries})
    assert len(dev.queries) + len(load_dataset("aws-docs-qa", DATA, split="test").queries) == len(full.queries)
    assert test.name == "aws-docs-qa-test-quick10" and test.split == "test"
    sampled = load_dataset("aws-docs-qa", DATA, split="test", sample=10)  # --questions: the full corpus stays
    assert len(sampled.queries) == 10 and sampled.name == "aws-docs-qa-test-sample10"
    assert len(sampled.corpus) == len(full.corpus) and sampled.corpus_name == "aws-docs-qa"
    assert {q.qid for q in sampled.queries} <= {q.qid for q in load_dataset("aws-docs-qa", DATA, split="test").queries}


def test_answers_bench_shares_everything_but_the_reading(manual_engine):
    """The answers benchmark's bookkeeping (not the LLM): every strategy answers every question through the same
    answer prompt and caps; citations are stripped before scoring; paired differences against top-k."""
    from bench.answers import ANSWER_TOKENS, run_answers
    from bench.datasets import Dataset, Query

    docs = manual_engine.documents()
    keymap = {d.doc_id: d.path for d in docs}
    pre = next(d.path for d in docs if "windows-and-summaries" in d.path)
    ds = Dataset("manual", [], [Query("q1", "how do I pre-heat summaries?", {pre}, answers=["run thread-rag preheat"]),
                                Query("q2", "What is the boiling point of tungsten?", {pre}, answers=["3422"])])
    model = ScriptedChatModel(answer=lambda msgs: "Run thread-rag preheat [1].")
    model.calls, model.metadata = [], {"backend": "fake", "model": "scripted", "ctx": 0}
    out = run_answers(ds, manual_engine, keymap, ["topk", "walk"], k=2, model=model)
    rows, s = out["rows"], out["strategies"]
    assert [len(rows[x]) for x in ("topk", "walk")] == [2, 2]
    assert rows["topk"][0]["f1"] == 1.0 and rows["topk"][0]["recall"] == 1.0   # "[1]" stripped before scoring
    assert rows["topk"][1]["refused"] and rows["walk"][1]["refused"]          # the same floor for both
    assert s["walk"]["topk_f1_same_questions"] == 1.0 / 2 and "f1_minus_topk_ci95" in s["walk"]
    prompts = [c["last"] for c in model.calls if c["last"].startswith("Answer the question")]
    assert len(prompts) == 2 and all(p.split("\n")[:4] == prompts[0].split("\n")[:4] for p in prompts)
    assert out["shared_settings"]["MAX_ANSWER_TOKENS"] == ANSWER_TOKENS and out["shared_settings"]["READ_K"] == 2


def test_suite_pairs_new_readings_with_an_earlier_runs_topk_answers(manual_engine, tmp_path):
    """``bench suite --base DIR``: the stored top-k rows stand as the paired baseline only for the same questions,
    k, backend and shared settings, and only if top-k answered again on the first questions says the same."""
    import argparse

    from bench.answers import run_answers
    from bench.datasets import Dataset, Query
    from bench.suite import BaseMismatch, check_base_args, with_base

    docs = manual_engine.documents()
    keymap = {d.doc_id: d.path for d in docs}
    pre = next(d.path for d in docs if "windows-and-summaries" in d.path)
    ds = Dataset("manual", [], [Query("q1", "how do I pre-heat summaries?", {pre}, answers=["run thread-rag preheat"]),
                                Query("q2", "how are summaries cached?", {pre}, answers=["as JSON"])])

    def fresh_model():  # the answer depends on what was read: readings and questions differ in their answers
        model = ScriptedChatModel(answer=lambda msgs: " ".join(msgs[-1].content.split()[-12:]) + " [1].")
        model.calls, model.metadata = [], {"backend": "fake", "model": "scripted", "ctx": 0}
        return model

    first = run_answers(ds, manual_engine, keymap, ["topk", "walk"], k=2, model=fresh_model())
    assert first["rows"]["topk"][0]["answer"] != first["rows"]["topk"][1]["answer"]
    path = tmp_path / "suite-manual.json"
    path.write_text(json.dumps({"answers": first}))
    out = with_base(ds, manual_engine, keymap, ["walk"], 2, path, model=fresh_model())
    assert out["topk_from"] == {"file": str(path), "checked": 2, "identical": 2}
    assert out["rows"]["topk"] == first["rows"]["topk"] and list(out["strategies"]) == ["topk", "walk"]
    assert out["strategies"]["walk"]["f1_minus_topk"] == first["strategies"]["walk"]["f1_minus_topk"]
    with pytest.raises(BaseMismatch, match="differs in k"):
        with_base(ds, manual_engine, keymap, ["walk"], 3, path, model=fresh_model())
    with pytest.raises(BaseMismatch, match="other questions"):
        with_base(Dataset("manual", [], ds.queries[::-1]), manual_engine, keymap, ["walk"], 2, path,
                  model=fresh_model())
    first["rows"]["topk"][1]["answer"] = "an answer this code would not give"
    path.write_text(json.dumps({"answers": first}))
    with pytest.raises(BaseMismatch, match="differs from .* on 1 of 2 questions"):
        with_base(ds, manual_engine, keymap, ["walk"], 2, path, model=fresh_model())
    args = argparse.Namespace(base=str(tmp_path))
    assert check_base_args(args, ["manual"], ["walk"], tmp_path / "new") == {"manual": (path, json.loads(path.read_text()))}
    assert check_base_args(argparse.Namespace(base=None), ["manual"], ["walk"], tmp_path) == {}
    for names, configs, out_dir, why in ((["manual"], ["topk", "walk"], tmp_path / "new", "leave topk out"),
                                         (["manual"], ["walk"], tmp_path, "the same folder"),
                                         (["other"], ["walk"], tmp_path / "new", "not a suite result")):
        with pytest.raises(BaseMismatch, match=why):
            check_base_args(args, names, configs, out_dir)


def test_windows_reader_frames_sources_with_neighbour_summaries(manual_engine):
    agent, model = agent_with(manual_engine, answer=cite_one)
    plain = agent.ask("how do I pre-heat summaries?", reader="walk")
    agent.clear()
    framed = agent.ask("how do I pre-heat summaries?", reader="windows")
    assert [s["chunk_ids"] for s in framed.sources] == [s["chunk_ids"] for s in plain.sources]
    for p, f in zip(plain.sources, framed.sources):
        assert p["text"] in f["text"] and f["tokens"] >= p["tokens"]
    assert any("(before: " in s["text"] or "(after: " in s["text"] for s in framed.sources)
    assert not any("(before: " in s["text"] for s in plain.sources)


def test_every_reader_answers_through_the_same_path(manual_engine):
    from thread_rag.settings import READERS

    from thread_rag.agent.loop import Agent

    _, model = agent_with(manual_engine, answer=cite_one)
    agent = Agent(manual_engine, chat_model=model, readers=BASELINES)  # the lab's readings, composed in by name
    for name in [*READERS, *BASELINES]:  # the product's and the benchmarks'
        agent.clear()
        ans = agent.ask("how do I pre-heat summaries?", reader=name)
        assert ans.mode == f"fast/{name}" and not ans.refused and ans.sources, name
        assert sum(s["tokens"] for s in ans.sources) <= manual_engine.settings.READ_BUDGET + 400, name
    agent.clear()
    with pytest.raises(Exception, match="unknown reader 'bogus' .*topk"):
        agent.ask("how do I pre-heat summaries?", reader="bogus")
    with pytest.raises(Exception, match="unknown reader 'topk'"):  # a plain agent has the answer path's only
        agent_with(manual_engine)[0].ask("how do I pre-heat summaries?", reader="topk")
    with pytest.raises(ValueError, match="answer path's own names"):  # a reading never hides the walk
        Agent(manual_engine, chat_model=model, readers={"walk": BASELINES["topk"]})


def test_post_reading_decision_searches_once_more_under_the_same_budget(manual_engine):
    e = manual_engine
    q = "how do I pre-heat summaries?"
    e.settings = e.settings.replace(DECIDE=True)
    try:
        agent, model = agent_with(e, answer=cite_one, decide={"decision": "answer"})
        ans = agent.ask(q)
        assert [t["tool"] for t in ans.tool_trace] == ["rag_search", "read:walk", "decide"]
        assert ans.llm_calls == 2 and model.calls[0]["format"]["required"] == ["decision"]
        first = [s["chunk_ids"] for s in ans.sources]

        other = "nested retrieval excludes ancestors and descendants"
        agent, model = agent_with(e, answer=cite_one, decide={"decision": "search", "query": other})
        ans = agent.ask(q)
        assert [t["tool"] for t in ans.tool_trace] == ["rag_search", "read:walk", "decide", "read:walk"]
        read = {c for s in ans.sources for c in s["chunk_ids"]}
        assert e.retriever.search(other, k=3).hits[0].chunk_id in read          # the second search was read
        assert e.retriever.search(q, k=3).hits[0].chunk_id in read              # and the first one's best hit kept
        assert sum(s["tokens"] for s in ans.sources) <= e.settings.READ_BUDGET + 200
        assert ans.llm_calls == 2 and not ans.refused

        agent, model = agent_with(e, answer=cite_one, decide="not json")       # an unusable decision: answer
        ans = agent.ask(q)
        assert [s["chunk_ids"] for s in ans.sources] == first and not ans.refused

        e.retriever.settings = e.retriever.settings.replace(FUSION="bm25")  # a second search that finds nothing
        agent, model = agent_with(e, answer=cite_one, decide={"decision": "search", "query": "zzqx vvkw"})
        ans = agent.ask(q)
        assert e.retriever.search("zzqx vvkw", k=3).hits == [] and not ans.refused
        assert {h.chunk_id for h in e.retriever.search(q, k=3).hits} <= {c for s in ans.sources for c in s["chunk_ids"]}
    finally:
        e.settings = e.settings.replace(DECIDE=False)
        e.retriever.settings = e.retriever.settings.replace(FUSION="rrf")


def ranked_then_replaced(make_engine, tmp_path):
    """A 39-step document searched (hits at generation 1), then replaced by another process with a one-chunk
    version: (engine, query, hits, the ranked version's chunks)."""
    from conftest import write
    from thread_rag.engine import Engine

    e = make_engine()
    long = "# Oxen\n\n" + "\n\n".join(f"## Step {i}\n\nStep {i}: the ox pulls the plough {i} furrows across the "
                                      f"field, then rests for {i} minutes in the shade." for i in range(1, 40))
    doc = write(tmp_path / "in" / "oxen.md", long)
    e.index_file(doc)
    q = "how many furrows does the ox pull in step 37"
    hits = e.retriever.search(q, k=3).hits
    assert hits[0].generation == 1 and int(hits[0].chunk_id.split("_")[1]) > 3
    ranked = e.thread(int(hits[0].doc_id[3:])).chunks
    other = Engine(e.settings, embedder=e.embedder)  # another process replaces it with a short version
    write(doc, "# Oxen\n\nThe ox pulls the plough across the field in step 37 and rests in the shade.")
    assert other.index_file(doc).status == "replaced"
    return e, q, hits, ranked


def test_reading_stays_on_the_generation_the_search_ranked(make_engine, tmp_path):
    """Issue 13: another process re-indexes a document between the search and the reading. The readers must not
    read the new version's chunks at the old version's positions (before: IndexError or a mix of versions)."""
    e, q, hits, _ = ranked_then_replaced(make_engine, tmp_path)
    agent, _ = agent_with(e, answer=cite_one)
    agent.readers.update(BASELINES)
    qvec = e.query_embedder.embed_queries([q])[0]
    ranked = {h.chunk_id: h.text for h in hits}
    for reader in ("walk", "windows", *BASELINES):
        sources = agent.read(reader, q, hits, qvec)
        new = ["step 37 and rests" in s.text for s in sources]
        read = [(c, s.text) for s in sources for c in s.chunk_ids if c in ranked]
        assert sources and (all(new) or not any(new)), reader  # one version, never a mix
        if not any(new):  # the ranked version (still held in memory): its chunks exactly as ranked
            assert all(" ".join(ranked[c].split()[-8:]) in " ".join(text.split()) for c, text in read), reader
        e.library.clear()  # once it is gone from memory too: searched again, the new version only
        sources = agent.read(reader, q, hits, qvec)
        assert sources and all("step 37 and rests" in s.text for s in sources), reader


def test_window_frames_come_from_the_generation_the_search_ranked(make_engine, tmp_path):
    """The ``windows`` reader frames each source with its neighbours' summaries: those neighbours belong to the
    version the search ranked, even when the engine already reads the newer version elsewhere (before: the frame
    came from the newest thread, where the ranked positions no longer exist, so it was silently empty)."""
    e, q, hits, ranked_chunks = ranked_then_replaced(make_engine, tmp_path)
    serial = int(hits[0].doc_id[3:])
    e.library._threads.clear()
    assert len(e.thread(serial)) == 1  # the engine now reads the new version ...
    e.library._old_generation = (serial, 1, ranked_chunks)  # ... and still holds the ranked one, as after a stale search
    agent, _ = agent_with(e, answer=cite_one)
    sources = agent.read("windows", q, hits, e.query_embedder.embed_queries([q])[0])
    assert sources and not any("step 37 and rests" in s.text for s in sources)
    assert all("(before: " in s.text or "(after: " in s.text for s in sources), [s.text[:200] for s in sources]


class _ScaledReranker:
    """Stage 3 that keeps the order it is given, its first passage scoring ``p`` (a question the documents match
    weakly, or well)."""
    name = "scaled"

    def __init__(self, p):
        self.p = p

    def score(self, query, passages, max_tokens=None):
        import numpy as np
        return self.p * np.arange(len(passages), 0, -1) / len(passages)


def _engine_reranked(manual_engine, p, **changes):
    from thread_rag.engine import Engine

    e = Engine(manual_engine.settings.replace(RERANKER="scaled-for-test", EARLY_EXIT_MARGIN=100.0, **changes),
               embedder=manual_engine.embedder)
    e.retriever._reranker, e.retriever._reranker_checked = _ScaledReranker(p), True
    return e


def test_a_weak_match_says_so_and_may_let_the_model_refuse(manual_engine):
    """A new user's trial: "How do I reset my Dell laptop's BIOS password?" over the Debian guide passed the cosine
    floor (its entry chunks share "Dell", "laptop", "BIOS") while the cross-encoder gave its best entry chunk 0.011;
    the 1.5B model invented reset steps and named three sources after them. Under MATCH_MIN the answer carries a
    note; with WEAK_MATCH = "refuse" the answer prompt also lets the model say the documents do not answer."""
    from thread_rag.agent.answer import EXPLAIN_PROMPT, MAY_REFUSE
    from thread_rag.render import answer_notes

    note = ("(the documents match this question weakly: the cross-encoder gives its best source 0.010, under "
            "MATCH_MIN = 0.05; they may not answer it)")
    weak = _engine_reranked(manual_engine, 0.01)
    assert weak.settings.MATCH_MIN == 0.05 and weak.settings.WEAK_MATCH == "note"
    agent, model = agent_with(weak, answer=cite_one)  # the default: the usual prompt, and a note
    ans = agent.ask("how do I pre-heat summaries?")
    assert not model.calls[0]["tail"].endswith(MAY_REFUSE) and not ans.refused and ans.match == 0.01
    assert answer_notes(ans, agent.settings) == [note]
    weak = _engine_reranked(manual_engine, 0.01, WEAK_MATCH="refuse")
    agent, model = agent_with(weak, answer=lambda m: "NOT IN DOCUMENTS")
    shown = []
    ans = agent.ask("how do I pre-heat summaries?", on_token=shown.append)
    assert model.calls[0]["last"].startswith(EXPLAIN_PROMPT.split("\n")[0]) and len(model.calls) == 1
    assert model.calls[0]["tail"].endswith(MAY_REFUSE)
    assert ans.refused and ans.answer.startswith("The documents do not say ") and ans.citations == [] and ans.llm_calls == 1
    assert "".join(shown) == ans.answer  # the marker itself never reaches the screen
    assert ans.match == 0.01
    agent, model = agent_with(weak, answer=cite_one)
    ans = agent.ask("how do I pre-heat summaries?")
    assert not ans.refused and ans.citations and ans.match == 0.01
    assert answer_notes(ans, agent.settings) == [note]
    strong = _engine_reranked(manual_engine, 0.9, WEAK_MATCH="refuse")
    agent, model = agent_with(strong, answer=cite_one)
    ans = agent.ask("how do I pre-heat summaries?")
    assert not model.calls[0]["tail"].endswith(MAY_REFUSE) and ans.match == 0.9 and answer_notes(ans, agent.settings) == []
    agent, model = agent_with(manual_engine, answer=cite_one)  # no stage 3: no match score, no band
    ans = agent.ask("how do I pre-heat summaries?")
    assert ans.match is None and not model.calls[0]["tail"].endswith(MAY_REFUSE) and answer_notes(ans, agent.settings) == []


def test_the_band_bench_answers_with_and_without_leave(manual_engine):
    """``bench band``: each mode reaches the answer prompt (with WEAK_MATCH = "refuse" the prompt ends with leave and
    the model's marker is a refusal; with "note" it is the usual prompt), and the engine's settings are put back."""
    from thread_rag.agent.answer import MAY_REFUSE
    from bench.datasets import Dataset, Query
    from bench.refusal import band_runs

    weak = _engine_reranked(manual_engine, 0.01)
    docs = weak.documents()
    pre = next(d.path for d in docs if "windows-and-summaries" in d.path)
    ds = Dataset("manual", [], [Query("q1", "how do I pre-heat summaries?", {pre}, answers=["thread-rag preheat"])])
    model = ScriptedChatModel(answer=lambda m: "NOT IN DOCUMENTS" if m[-1].content.endswith(MAY_REFUSE)
                              else "Run thread-rag preheat [1].")
    model.calls, model.metadata = [], {"backend": "fake", "model": "scripted", "ctx": 0}
    before = weak.settings
    out = band_runs(ds, weak, {d.doc_id: d.path for d in docs}, ["walk"], 2, model)
    assert [r["refused"] for r in out["refuse"]["walk"]] == [True] and out["refuse"]["walk"][0]["match"] == 0.01
    assert [r["refused"] for r in out["note"]["walk"]] == [False] and out["note"]["walk"][0]["recall"] == 1.0
    assert weak.settings is before


def test_holding_chunks_counts_the_answers_words_not_its_markers():
    """"[1]" counted as the number 1 (twice, as numbers do): the chunk saying "Step 1" won over the one that holds
    the answer (a review finding)."""
    chunks = ["Twice the RAM is advised for it.", "Step 1: create the swap area."]
    assert holding_chunks("Swap should be twice the RAM [1].", chunks) == [0]
    assert holding_chunks("Swap should be twice the RAM [DOC1_001].", chunks) == [0]
    assert holding_chunks("Yes [1].", chunks) == [0, 1]  # nothing shared: the embedding decides among all
    assert holding_chunks("It takes 64 to 128 MB.", ["about 64-128MB of swap", "a swap of 64 MB"]) == [0]


@needs_shared
def test_a_citation_names_the_chunk_of_its_source_that_holds_the_answer(debian_library, embedder):
    """A trial's answer "between 64 and 128 MB" cited DOC1_199 p.48 of the source DOC1_198..199: the answer's nearest
    chunk by embedding, which says nothing of 64-128MB (DOC1_198, p.47, does). Words and numbers the answer shares with
    a chunk decide first; the embedding breaks ties."""
    from thread_rag.agent.loop import Agent
    from thread_rag.agent.reading import source_of as _source
    from thread_rag.engine import Engine

    settings, _ = debian_library
    with Engine(settings, embedder=embedder) as e:
        thread = e.thread(1)
        at = next(i for i, c in enumerate(thread.chunks) if "(64– 128MB)" in c.text)
        src = number([_source(thread.chunks[at:at + 2], thread.record.name, "entry", lambda t: len(t.split()))])[0]
        assert "128" not in src.chunk_texts[1]
        agent = Agent(e)
        for answer in ("The recommended swap partition size for low memory mode is between 64 and 128 MB.",
                       "In low memory mode a relatively large swap partition (64-128MB) is recommended [1]."):
            (cite,) = agent._cite([src], answer, "written")
            assert cite.chunk_id == src.chunk_ids[0] and cite.pages == src.chunk_pages[0], (answer, cite)
        (cite,) = agent._cite([src], "An ext2 partition can be changed to ext3 after installing [1].", "written")
        assert cite.chunk_id == src.chunk_ids[1], cite


def test_an_unmistakable_request_is_carried_out_without_asking_the_model(manual_engine, tmp_path, monkeypatch):
    """README's own `index ./notes/runbook.md` was answered as a question: the one-word model call said "question"
    (and "list the documents" flipped to "question" right after it). A clear request is carried out with no model
    call; a question that names a path or a folder is never indexed; with intents off every message is a question."""
    from conftest import write

    notes = tmp_path / "notes"
    write(notes / "runbook.md", "# Runbook\n\nRestart the pump after every filter change.\n")
    monkeypatch.chdir(tmp_path)
    agent, model = agent_with(manual_engine, action="question", answer=cite_one)
    agent.settings = manual_engine.settings.replace(ALLOWED_ROOTS=[str(tmp_path)])
    ans = agent.ask("index ./notes/runbook.md")
    assert ans.mode == "action/index_new_document" and not model.calls, (ans.mode, ans.answer)
    assert any(d.name == "runbook.md" for d in manual_engine.documents())
    for text in ("list the documents", "Please show me all indexed documents.", "which documents are indexed?"):
        ans = agent.ask(text)
        assert ans.mode == "action/list_available_documents" and not model.calls, text
    n = len(manual_engine.documents())
    for text in ("Add ./notes to my PATH: which file do I edit?",  # a question naming an existing folder (review)
                 "How do I import ~/notes/runbook.md into the widget server?"):
        assert agent.ask(text).mode == "fast/walk", text
    assert len(manual_engine.documents()) == n
    agent.settings = agent.settings.replace(INTENTS=False)  # intents off: every message is a question
    model.calls.clear()
    assert agent.ask("list the documents").mode == "fast/walk"


def test_a_sources_chunk_texts_stay_out_of_its_json():
    """``chunk_texts`` (for choosing the cited chunk) repeated every chunk's text in `ask --json` and script rows."""
    from thread_rag.records import to_dict

    src = Source(["DOC1_000", "DOC1_001"], "DOC1", "a.md", "", "", "x y", chunk_texts=["x", "y"])
    assert "chunk_texts" not in to_dict(src) and to_dict(src)["text"] == "x y"


def test_a_rare_word_no_chunk_holds_is_said_after_the_answer(manual_engine):
    """A trial asked the Debian guide how to set up a ZFS root filesystem: the cross-encoder scored unrelated chunks
    0.99 and the model made up a procedure, with no word of warning. No indexed chunk holds "zfs"; the answer now
    says so (a rare word: more than one word piece; everyday words and the documents' own words are not named)."""
    from thread_rag.render import answer_notes

    agent, _ = agent_with(manual_engine, answer=cite_one)
    manual = " ".join(c.text for d in manual_engine.documents() for c in manual_engine.thread(d.doc_id).chunks)
    assert "btrfs" not in manual.lower()
    ans = agent.ask("How do I pre-heat summaries on a Btrfs pool?")  # (the manual names ZFS: it tells this story)
    assert not ans.refused and ans.unmentioned == ["btrfs"], (ans.refused, ans.unmentioned)
    notes = answer_notes(ans, manual_engine.settings)
    assert "(the documents never use the word 'btrfs': what the answer says about it may not come from them)" in notes
    assert agent.ask("how do I pre-heat summaries?").unmentioned == []


@needs_shared
def test_unmentioned_terms_on_the_debian_guide(debian_library, embedder):
    from thread_rag.agent.loop import unmentioned_terms
    from thread_rag.engine import Engine

    settings, _ = debian_library
    with Engine(settings, embedder=embedder) as e:
        assert unmentioned_terms(e, "How do I set up a ZFS root filesystem with the Debian installer?") == ["zfs"]
        assert unmentioned_terms(e, "How do I create btrfs subvolumes during installation?") == ["btrfs", "subvolumes"]
        for q in ("How do I reset my Dell laptop's BIOS password?",  # words of the guide, or everyday ones
                  "How do I prepare a USB stick to boot the Debian installer?",
                  "The installer hangs or freezes during boot. What should I try?"):
            assert unmentioned_terms(e, q) == [], q


def test_an_empty_library_can_be_filled_from_a_chat_message(make_engine, tmp_path, monkeypatch):
    """On an empty store, "index ./pump.md" (README's way to add a file in the chat) and "list the documents" said
    "no documents indexed yet": the check came before the message was read as an action. A question still gets it."""
    from conftest import write

    write(tmp_path / "pump.md", "# Pump\n\nPrime the pump before starting it.\n")
    monkeypatch.chdir(tmp_path)
    engine = make_engine()
    agent, model = agent_with(engine, action="question", answer=cite_one)
    agent.settings = engine.settings.replace(ALLOWED_ROOTS=[str(tmp_path)])
    assert agent.ask("list the documents").answer == "No documents are indexed yet."
    with pytest.raises(ThreadRagError, match="no documents indexed yet"):
        agent.ask("how do I prime the pump?")
    ans = agent.ask("index ./pump.md")
    assert ans.mode == "action/index_new_document" and [d.name for d in engine.documents()] == ["pump.md"], ans.answer


def test_the_walk_leaves_no_hole_when_the_budget_cuts_it():
    """A walked chunk nearer the question than the one between it and the entry chunk must not be kept without it
    (step 2 and step 4 of a procedure with step 3 left out): the budget cuts a walk from its far end."""
    from types import SimpleNamespace

    import numpy as np

    texts = ["entry chunk with step one", "step two is here", "step three then follows", "unrelated tail"]
    from thread_rag.records import Chunk

    thread = SimpleNamespace(chunks=[Chunk(f"DOC1_{i:03d}", "DOC1", i, t) for i, t in enumerate(texts)],
                             record=SimpleNamespace(name="guide.md"))
    vectors = np.asarray([[0.8, 0.6, 0], [0.3, 0.95, 0], [0.6, 0.8, 0], [0, 0, 1]], np.float32)

    class Index:
        row_of = {(1, i): i for i in range(4)}

        def __init__(self):
            self.vectors = vectors

        def generation_of(self, serial):
            return None

    class Thread:
        chunks, record = thread.chunks, thread.record

        def __len__(self):
            return 4

    hits = [SimpleNamespace(chunk_id="DOC1_000", generation=None)]
    qvec = np.asarray([1, 0, 0], np.float32)
    words = lambda t: len(t.split())  # noqa: E731
    budget = words(texts[0]) + words(texts[2]) + 1  # room for the entry and one more chunk (of either size)
    got = walk_sources(hits, 1, lambda s: Thread(), Index(), qvec, words, budget=budget, walk_threshold=0.35,
                       walk_query_min=0.2)
    kept = [cid for s in got for cid in s.chunk_ids]
    assert kept == ["DOC1_000", "DOC1_001"], kept  # not DOC1_000 + DOC1_002 (a hole at step two)


@needs_shared
def test_on_a_real_guide_no_reader_exceeds_its_budget_and_the_walk_leaves_no_hole(debian_library, embedder):
    """Issue 46's reading: on the Debian guide's numbered procedures, the text each shipped reader gives the model
    (chunks, and a window's neighbour summaries) fits READ_BUDGET, LLM tokens of source text, and the walk's sources
    are runs of neighbouring chunks (no step left out between two it kept), at the default budget and a tight one.
    The windows reader's summaries were not counted (1,082 tokens against 900), nor a nested passage longer than the
    budget (1,164)."""
    from thread_rag.engine import Engine
    from thread_rag.ids import ChunkId

    settings, _ = debian_library
    questions = ["How do I write the installer image to a USB stick from Linux?",
                 "How do I set up encrypted LVM during partitioning?",
                 "How do I load missing firmware during the installation?",
                 "How do I verify the checksums of downloaded installation images?"]
    with Engine(settings, embedder=embedder) as e:
        model = ScriptedChatModel()
        model.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
        agent = Agent(e, chat_model=model)
        for budget in (settings.READ_BUDGET, 450):
            agent.settings = settings.replace(READ_BUDGET=budget)
            for q in questions:
                hits = e.retriever.search(q, k=3).hits
                qvec = e.query_embedder.embed_queries([q])[0]
                for reader in ("walk", "windows", "nested"):
                    sources = agent.read(reader, q, hits, qvec)
                    assert sources and sum(agent._count(s.text) for s in sources) <= budget, (reader, budget, q)
                    assert all(s.tokens == agent._count(s.render()) for s in sources)
                    if reader == "walk":
                        for s in sources:
                            positions = [ChunkId.parse(c).position for c in s.chunk_ids]
                            assert positions == list(range(positions[0], positions[0] + len(positions))), s.chunk_ids


def test_an_answer_citing_nothing_is_matched_to_what_it_read(manual_engine):
    """The model cites no source and names none when asked: each sentence is matched to the chunk it read most like it
    (marked inferred). The match lived on the routed turn after the split, and this path raised AttributeError
    ('Agent' object has no attribute '_attribute'), found by `bench grounding` on aws-docs-qa."""
    said = "Run thread-rag preheat to summarise every chunk of a document ahead of time."
    agent, model = agent_with(manual_engine, answer=lambda m: said, sources=[])
    ans = agent.ask("how do I pre-heat summaries?")
    assert not ans.refused and ans.citations and all(c.inferred for c in ans.citations)
    read = {c for s in ans.sources for c in s["chunk_ids"]}
    assert {c.chunk_id for c in ans.citations} <= read
