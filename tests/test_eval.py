"""``thread-rag eval``: questions made from a real indexed document (each with the chunk that answers it), the model's
questions filtered (a scripted model), scores against known gold, the report, resuming the set and ``--compare``."""
from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest

from conftest import write

MANUAL = """# Widget 3000 manual

## Installing the widget

Unpack the box and place the widget on a flat surface.

To mount the widget on a wall:

1. Drill two holes 80 mm apart.
2. Insert the wall plugs.
3. Hang the widget on the screws.

## Power requirements

| Model | Voltage | Current |
|-------|---------|---------|
| Widget 3000 | 230 V | 2 A |
| Widget 3000 Pro | 110 V | 4 A |
| Widget Mini | 12 V | 1 A |

## Glossary

A flux capacitor is a component that stores temporal charge between two plates of the widget.

## Overview

General words.
"""


@pytest.fixture
def widget(make_engine, tmp_path):
    engine = make_engine()
    engine.index_paths([write(tmp_path / "widget.md", MANUAL)])
    return engine


def _structure(engine):
    from thread_rag.evaluate.questions import structure_questions

    return structure_questions([engine.thread(d.serial) for d in engine.documents()])


def test_structure_questions_carry_the_chunk_that_answers_them(widget):
    pools = _structure(widget)
    texts = {k: [q.text for q in v] for k, v in pools.items()}
    assert "What are the steps for installing the widget?" in texts["heading"]
    assert "What should I know about power requirements?" in texts["heading"]
    assert not any("Overview" in t or "overview" in t for t in texts["heading"])  # asks nothing
    assert texts["procedure"] == ["How do I mount the widget on a wall?"]
    assert "What is a flux capacitor?" in texts["term"]
    assert len(pools["table"]) >= 1 and all(t.startswith("In Power requirements, what is the ") for t in texts["table"])

    def gold_text(q):
        return "\n".join(widget.chunk(c).text for c in q.gold)

    step = pools["procedure"][0]
    assert "Drill two holes" in gold_text(step)
    term = next(q for q in pools["term"] if q.text == "What is a flux capacitor?")
    assert "stores temporal charge" in gold_text(term)
    for q in pools["table"]:  # the row and the asked cell are in the gold chunk
        row = q.source.split(" | ")
        assert row[0] in gold_text(q) and q.extra["answer"] in gold_text(q)
    assert _structure(widget) == pools  # deterministic


@pytest.mark.parametrize("heading,question", [
    ("Configuring the network<a name=\"net\"></a>", "What are the steps for configuring the network?"),
    ("6.3.2 How to partition disks", "How do I partition disks?"),
    ("Install the \\(optional\\) tools", "How do I install the (optional) tools?"),
    ("Amazon S3 buckets", "What should I know about Amazon S3 buckets?"),
    ("Overview", None), ("Partitions", None), ("What is a VPC?", "What is a VPC?"),
])
def test_heading_question(heading, question):
    from thread_rag.evaluate.questions import heading_question

    assert heading_question(heading) == question


def test_markdown_table_split_from_its_header_asks_nothing():
    from thread_rag.evaluate.questions import tables

    cut = "| c3.large | 2 x 16 GB | SSD |\n| c3.xlarge | 2 x 40 GB | SSD |\n| c3.2xlarge | 2 x 80 GB | SSD |"
    assert tables(cut, markdown=True) == []  # its first row is data, not the header
    assert tables(cut)[0][0] == ["c3.large", "2 x 16 GB", "SSD"]  # rows the loaders wrote: first row is the header
    whole = "| Type | Size |\n|---|---|\n| a | 1 |\n| b | 2 |"
    assert tables(whole, markdown=True) == [(["Type", "Size"], [["a", "1"], ["b", "2"]])]


def test_model_questions_that_copy_or_are_not_answered_are_dropped(widget):
    from thread_rag.evaluate.model_questions import model_questions

    threads = [widget.thread(d.serial) for d in widget.documents()]
    chunk = next(c for c in threads[0].chunks if "Drill two holes" in c.text)
    one = [SimpleNamespace(record=threads[0].record, chunks=[chunk])]
    replies = iter(["Question: Drill two holes 80 mm apart and insert the wall plugs?",  # copies the passage
                    "Sure! Here is a question.",                                          # no question
                    "How far apart should the holes for wall mounting be?"])              # kept
    tries: list = []
    kept = []
    for _ in range(3):  # the one chunk, asked again each time
        kept += model_questions(one, lambda prompt: next(replies), lambda q, t: 2.0, 1, tried=tries.append)
    assert [t["why"] for t in tries] == ["copies the passage", "no question in the reply", None]
    assert [q.text for q in kept] == ["How far apart should the holes for wall mounting be?"]
    assert kept[0].gold == [chunk.chunk_id] and kept[0].kind == "model"
    # the cross-encoder says the passage does not answer it: dropped
    tries.clear()
    got = list(model_questions(one, lambda p: "What colour is the box?", lambda q, t: -3.0, 1, tried=tries.append))
    assert got == [] and tries[0]["why"] == "the passage does not answer it"


def test_rare_word_filter():
    from collections import Counter

    from thread_rag.evaluate.model_questions import filter_reason, longest_shared_run

    text = "The zorbulator recalibrates the quuxifier using flimflam settings and gribble ratios every week."
    df = Counter({w: 50 for w in ("the", "using", "settings", "and", "every", "week", "ratios")})
    assert longest_shared_run("when does the zorbulator recalibrate", text) == 2
    assert filter_reason("What do zorbulator, quuxifier and flimflam do?", text, df, 100) == \
        "made of the passage's rare words"
    assert filter_reason("How often is the device tuned?", text, df, 100) is None


def test_scores_against_known_gold():
    from thread_rag.evaluate.score import Scored, compare_runs, rank_of, summarize

    hit = lambda cid: SimpleNamespace(chunk_id=cid, doc_id=cid.rsplit("_", 1)[0])  # noqa: E731
    hits = [hit("DOC2_001"), hit("DOC1_004"), hit("DOC1_007")]
    assert rank_of(hits, {"DOC1_007"}) == (3, 2, "DOC1_004")
    assert rank_of(hits, {"DOC2_001"}) == (1, 1, None)
    assert rank_of(hits, {"DOC3_000"}) == (None, None, "DOC2_001")
    rows = [Scored("a", "heading", "DOC1", "S", True, True, 1), Scored("b", "table", "DOC1", "S", True, True, 3),
            Scored("c", "table", "DOC2", "T", True, True, None)]
    s = summarize(rows)
    assert s["retrieval"]["hit@1"]["mean"] == pytest.approx(1 / 3, abs=1e-4)
    assert s["retrieval"]["hit@5"]["mean"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["retrieval"]["mrr@10"]["mean"] == pytest.approx((1 + 1 / 3) / 3, abs=1e-4)
    assert s["by_kind"]["table"] == {"questions": 2, "hit@1": 0.0, "hit@5": 0.5, "mrr@10": pytest.approx(1 / 6, abs=1e-4)}
    before = [r.row() for r in rows]
    now = [r.row() for r in [Scored("a", "heading", "DOC1", "S", True, True, 1),
                             Scored("b", "table", "DOC1", "S", True, True, 1),
                             Scored("c", "table", "DOC2", "T", True, True, 2),
                             Scored("d", "term", "DOC2", "T", True, True, 1)]]
    c = compare_runs(now, before)
    assert c["paired"] == 3 and c["only_now"] == 1 and c["changed"] == 2
    assert c["hit@1"]["diff"] == pytest.approx(1 / 3, abs=1e-4)
    assert c["hit@5"]["diff"] == pytest.approx(1 / 3, abs=1e-4)


def test_weak_section_reasons():
    from thread_rag.evaluate.score import common_lines, reason

    assert reason("a b c", "DOC1", "", None, None, "", set()) == "no heading"
    boiler = "Copyright 2024 Example Corp all rights\nSee the docs for more info"
    common = common_lines([("DOC1", boiler + f"\nline {i} here now") for i in range(4)] + [("DOC2", boiler)])
    assert common["DOC1"] == {"Copyright 2024 Example Corp all rights", "See the docs for more info"}
    assert common["DOC2"] == set()  # once in its own document: not boilerplate there
    assert reason(boiler, "DOC1", "S", None, None, "", common["DOC1"]).startswith("mostly boilerplate")
    flat = " ".join(["Desktop 1 GB 10 GB Server 512 MB 4 GB"] * 4)
    assert reason(flat, "DOC1", "Requirements", None, None, "", set()).startswith("table flattened")
    text = "To mount the widget drill two holes 80 mm apart and insert the wall plugs then hang it."
    assert reason(text, "DOC1", "S", text + " Done.", "DOC9_001", "", set()) == \
        "near-duplicate passage elsewhere (DOC9_001)"
    assert reason(text, "DOC1", "Guide > Mounting", "other words", "DOC2_004", "Guide > Mounting", set()) == \
        "the same section in another document ranked first (DOC2_004)"
    assert reason(text, "DOC1", "S", "something else entirely", "DOC9_001", "Other", set()) == \
        "outranked by DOC9_001 (Other)"


def test_eval_command_reports_resumes_and_compares(widget, tmp_path, capsys, monkeypatch):
    from thread_rag.cli import main

    home = str(widget.home)
    widget.close()
    assert main(["--data-dir", home, "eval", "--questions", "6", "--probes", "2", "--answers"]) == 0
    shown = capsys.readouterr().out
    assert "questions (" in shown and "by kind of question" in shown and "probes refused" in shown
    runs = sorted((tmp_path / "home" / "eval").glob("run-*.json"))
    first = json.loads(runs[-1].read_text())
    assert sum(first["questions"].values()) == 8 and first["questions"]["probe"] == 2
    assert all(r["rank"] is None or 1 <= r["rank"] <= 10 for r in first["rows"])
    searched = [r for r in first["rows"] if r["searched"]]
    assert len(searched) == 6 and all(r["refused"] is not None for r in first["rows"])
    set_lines = (tmp_path / "home" / "eval" / "questions.jsonl").read_text().splitlines()
    assert len(set_lines) == 8
    # the same set again, under another setting, against the first run: paired on the same questions
    monkeypatch.setenv("THREAD_RAG_FUSION", "bm25")
    out = tmp_path / "second.json"
    assert main(["--data-dir", home, "--json", "eval", "--questions", "6", "--probes", "2", "--out", str(out),
                 "--compare", str(runs[-1])]) == 0
    second = json.loads(capsys.readouterr().out)
    assert {r["qid"] for r in second["rows"] if r["searched"]} == {r["qid"] for r in searched}
    assert second["compare"]["paired"] == 6 and second["compare"]["settings_changed"] == {}  # FUSION: search spec
    assert second["search"].startswith("bm25_only") and json.loads(out.read_text())["search"] == second["search"]


def test_a_changed_document_gets_new_questions(make_engine, tmp_path):
    from thread_rag.evaluate.questions import doc_key
    from thread_rag.evaluate.run import EvalOptions, load_set, run_eval

    path = write(tmp_path / "widget.md", MANUAL)
    engine = make_engine()
    engine.index_paths([path])
    run_eval(engine, EvalOptions([], questions=4, probes=0))
    before, _ = load_set(tmp_path / "home" / "eval" / "questions.jsonl")
    write(path, MANUAL.replace("## Glossary", "## Glossary of terms"))
    engine.index_paths([path])
    run_eval(engine, EvalOptions([], questions=4, probes=0))
    after, _ = load_set(tmp_path / "home" / "eval" / "questions.jsonl")
    new_key = doc_key(engine.documents()[0])
    assert all(q.doc_key == new_key for q in after) and len(after) == 4
    assert {q.doc_key for q in before} != {new_key}
    engine.close()
    # the same file cut into other chunks: the gold chunk ids mean other text, so the questions are made again
    other = make_engine(CHUNK_TOKENS=64, CHUNK_OVERLAP=8)
    other.delete("DOC1")
    other.index_paths([path])
    run_eval(other, EvalOptions([], questions=4, probes=0))
    rechunked, _ = load_set(tmp_path / "home" / "eval" / "questions.jsonl")
    assert {q.doc_key for q in rechunked} == {doc_key(other.documents()[0])} != {new_key}


@pytest.mark.parametrize("argv,says", [
    (["eval", "--questions", "0"], "--questions 0: must be 1 or more"),
    (["eval", "--compare", "/nonexistent/run.json"], "no such run file"),
    (["eval", "DOC99"], "DOC99"),
])
def test_eval_bad_options_are_one_line(widget, capsys, argv, says):
    from thread_rag.cli import main

    home = str(widget.home)
    widget.close()
    assert main(["--data-dir", home] + argv) == 1
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_a_file_that_is_not_a_question_set_is_one_line(widget, tmp_path, capsys):
    from thread_rag.cli import main

    bad = write(tmp_path / "set.jsonl", "not json\n")
    home = str(widget.home)
    widget.close()
    assert main(["--data-dir", home, "eval", "--set", str(bad)]) == 1
    assert "line 1 is not an eval question" in capsys.readouterr().err
    assert bad.read_text() == "not json\n"  # left as it was


def test_sample_mix_takes_kinds_in_turn():
    from thread_rag.evaluate.questions import EvalQuestion, sample_mix

    doc = SimpleNamespace(doc_id="DOC1", content_hash="h", content_key="k")
    pools = {"heading": [EvalQuestion.make("heading", f"h{i}?", doc, [], "", "") for i in range(5)],
             "table": [EvalQuestion.make("table", f"t{i}?", doc, [], "", "") for i in range(1)]}
    got = sample_mix(pools, 4, seed=random.Random(1).randint(0, 9))
    assert sorted(q.kind for q in got) == ["heading", "heading", "heading", "table"]


def test_bench_eval_agreement_and_its_table():
    """``bench eval``: Kendall's tau of two orderings, and the report's table from a run's numbers."""
    from bench.eval_validity import kendall
    from bench.report import eval_validity_table

    assert kendall([0.1, 0.2, 0.3], [0.5, 0.6, 0.9]) == 1.0
    assert kendall([0.1, 0.2, 0.3], [0.9, 0.6, 0.5]) == -1.0
    assert kendall([0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.3, 0.4]) == pytest.approx(0.6667, abs=1e-4)
    x = {"real_questions": 2, "synthetic_questions": {"heading": 3}, "corpus": "shrunk", "corpus_docs": 4, "chunks": 9,
         "configs": ["bm25_only"], "real": {"bm25_only": {"mrr@10": 0.5, "hit@5": 1.0}},
         "synthetic": {"bm25_only": {"mrr@10": 0.75, "hit@5": 1.0, "chunk_hit@5": 0.6667, "chunk_mrr@10": 0.5}},
         "validity": {"kendall_tau_mrr@10": None, "kendall_tau_hit@5": None, "kendall_tau_mrr@10_heading": None,
                      "per_document": {"documents": 0}, "real_self_tau_mrr@10": {"median": 1.0, "p05": 1.0}},
         "refusal": {"real_answerable": {"questions": 2, "refused": 1}, "probes": {"questions": 0, "refused": 0}}}
    table = eval_validity_table(x)
    assert "| `bm25_only` | 0.500 | 0.750 | 1.000 | 1.000 | 0.667 |" in table
    assert "real answerable 1/2" in table and "probes" not in table  # a group with no questions is left out
    x["validity"]["separated_pairs_mrr@10"] = {"pairs": 10, "separated_by_real": 4, "same_order": 3,
                                               "made_up_separates_same_order": 2, "rows": []}
    assert ("leaves out 0): 4 of 10; the made-up questions order 3 of them the same way, and tell 2 apart the same way"
            in eval_validity_table(x))


def test_bench_eval_counts_the_pairs_the_real_questions_separate_and_how_the_made_up_set_orders_them():
    """A tau over five configurations counts pairs that differ by noise. Also reported: the pairs whose real
    difference's paired bootstrap 95% CI leaves out 0, and how many of them the made-up set orders the same way (and
    separates itself)."""
    from bench.eval_validity import separated_pairs

    real = {"a": [1.0] * 30, "b": [0.0] * 30, "c": [1.0] * 29 + [0.0]}  # a > b and c > b clearly; a, c alike
    made_up = {"a": [1.0] * 20, "b": [0.5, 0.0] * 10, "c": [0.0] * 20}  # a > b as real, c < b against real
    out = separated_pairs(["a", "b", "c"], real, made_up)
    assert out["pairs"] == 3 and out["separated_by_real"] == 2
    assert out["same_order"] == 1 and out["made_up_separates_same_order"] == 1
    rows = {(r["a"], r["b"]): r for r in out["rows"]}
    assert rows[("a", "b")]["same_order"] and not rows[("b", "c")]["same_order"]
    assert ("a", "c") not in rows  # not separated by the real questions: not judged


def test_model_questions_stay_in_the_set_when_a_run_asks_for_none(widget, tmp_path):
    """A plain run after a run with model questions keeps them (and their tries) in the set, asks none of them, and
    a later run that asks for them again gets them back without calling the model."""
    from thread_rag.evaluate.run import EvalOptions, load_set, run_eval

    replies = iter(["How far apart should the holes for wall mounting be?"] + ["What is in the box?"] * 20)
    calls = []

    def fake_model(engine):
        def ask(prompt):
            calls.append(prompt)
            return next(replies)
        return ask, lambda q, t: 2.0

    import thread_rag.evaluate.run as run_mod

    original = run_mod._model
    run_mod._model = fake_model
    try:
        first = run_eval(widget, EvalOptions([], questions=3, model_questions=1, probes=0))
        assert first["questions"].get("model") == 1 and len(calls) == 1
        plain = run_eval(widget, EvalOptions([], questions=3, probes=0))
        assert "model" not in plain["questions"]
        saved, tries = load_set(tmp_path / "home" / "eval" / "questions.jsonl")
        assert [q.kind for q in saved].count("model") == 1 and len(tries) == 1
        again = run_eval(widget, EvalOptions([], questions=3, model_questions=1, probes=0))
        assert again["questions"].get("model") == 1 and len(calls) == 1  # from the set, not the model
    finally:
        run_mod._model = original


def test_a_run_file_without_rows_to_pair_is_one_line(widget, tmp_path, capsys):
    from thread_rag.cli import main

    home = str(widget.home)
    widget.close()
    for bad in ('{"rows": null}', '{"rows": [1, 2]}', '{"rows": [{"qid": "a"}]}', "[]"):
        f = write(tmp_path / "bad.json", bad)
        assert main(["--data-dir", home, "eval", "--questions", "2", "--compare", str(f)]) == 1
        err = capsys.readouterr().err
        assert "not an eval run file" in err and err.count("\n") == 1, err


def test_probes_name_only_products_the_library_never_names():
    from thread_rag.evaluate.questions import EvalQuestion, probe_questions

    doc = SimpleNamespace(doc_id="DOC1", content_hash="h", content_key="k")
    base = [EvalQuestion.make("heading", f"How do I install part {i}?", doc, ["DOC1_000"], "S", "") for i in range(30)]
    text = "Runs on Solaris, BeOS and NetWare. " + " ".join(str(i) for i in range(100))
    probes = probe_questions(base, text, 30, random.Random(3), {"DOC1": doc})
    named = {q.extra["product"] for q in probes}
    assert named and not named & {"Solaris 2.6", "BeOS 5", "NetWare 4"}, named
    assert all(not q.answerable and q.gold == [] and q.text.endswith(f" on {q.extra['product']}?") for q in probes)


def test_a_library_with_nothing_to_ask_about_is_one_line(make_engine, tmp_path, capsys):
    from thread_rag.cli import main

    engine = make_engine()
    engine.index_paths([write(tmp_path / "plain.txt", "just some words without any structure at all\n")])
    home = str(engine.home)
    engine.close()
    assert main(["--data-dir", home, "eval"]) == 1
    err = capsys.readouterr().err
    assert "no question could be made" in err and err.count("\n") == 1


def test_rank_correlations_match_scipy_with_ties():
    """The bench's Kendall tau-b and Spearman rho, written without scipy (not a dependency), against scipy's."""
    stats = pytest.importorskip("scipy.stats")
    import warnings

    import numpy as np

    from bench.eval_validity import kendall, spearman

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 9))
        a, b = list(rng.integers(0, 4, n).astype(float)), list(rng.integers(0, 4, n).astype(float))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tau, rho = stats.kendalltau(a, b).statistic, stats.spearmanr(a, b).statistic
        assert (kendall(a, b) is None) == (tau != tau) and (tau != tau or kendall(a, b) == pytest.approx(tau, abs=1e-4))
        assert (spearman(a, b) is None) == (rho != rho) and (rho != rho or spearman(a, b) == pytest.approx(rho))


@pytest.mark.parametrize("text,expected", [
    ("Geneva Durben likes Quokkas, River Otters, Tapirs, Asymmetry and Snow Leopards.",
     ("Geneva Durben", "likes", ["Quokkas", "River Otters", "Tapirs", "Asymmetry", "Snow Leopards"])),
    ("Debian GNU/Linux 13 supports amd64, arm64,\narmhf, i386 and s390x.",  # a wrapped line is joined
     ("Debian GNU/Linux 13", "supports", ["amd64", "arm64", "armhf", "i386", "s390x"])),
    ("Dorathea Bastress likes Crows, Cherries, Chess, Drum Kits, Magic: The Gathering, Rice Cakes.",  # cut there
     ("Dorathea Bastress", "likes", ["Crows", "Cherries", "Chess", "Drum Kits"])),
    ("The installer can format ext4, xfs, btrfs or vfat partitions.",
     ("The installer", "can format", ["ext4", "xfs", "btrfs", "vfat partitions"])),
    ("The Widget Pro supports Zigbee, Thread, Matter, and Bluetooth LE 5.0.",  # a serial comma, a version
     ("The Widget Pro", "supports", ["Zigbee", "Thread", "Matter", "Bluetooth LE 5.0"])),
    ("Is it fast? The package includes a charger, a cable, a manual and a case.",  # the verb phrase backs off
     ("The package", "includes", ["a charger", "a cable", "a manual", "a case"])),
    ("Supported hardware\nThe Widget Pro supports Zigbee, Thread, Matter and Bluetooth LE.",  # a heading above
     ("The Widget Pro", "supports", ["Zigbee", "Thread", "Matter", "Bluetooth LE"])),
    ("Alice Smith likes Cats, Dogs, Birds, Fish? No! Snakes.", None),
    ("Select the instance, choose **Actions**, **Networking**, **Manage IP Addresses**.", None),  # a menu path
    ("You can use the console, the CLI, the SDKs, or the REST API.", None),                       # a pronoun
    ("The film stars Richard Dix, Esther Ralston and Harry Beresford.", None),                    # three items
    ("Pocahontas is a city in Randolph County, Arkansas, United States, along the Black River.", None),  # place
    ("Over his career, Young wrote 45 books, including novels, plays, poems and essays.", None),
    ("The driest months are November, December, January and February.", None),  # "What months are January?"
    ("Gordius was employed by him, in 116 BC, to murder Ariarathes VI, and others.", None),       # clauses
])
def test_listing_sentences(text, expected):
    from thread_rag.evaluate.questions import listings

    got = listings(text)
    assert (got[0][:3] if got else None) == expected


ROSTER = {"durben.txt": "Geneva Durben likes Quokkas, River Otters, Tapirs, Hydrangeas and Glaciers.\n",
          "bastress.txt": "Dorathea Bastress likes Crows, Tapirs, Cherries, Kangaroos and Caves.\n",
          "schweda.txt": "Armand Schweda likes Mandolins, Quiches, Wombats, Starfish and Caves.\n",
          "models.txt": "The Widget Pro supports Zigbee, Thread, Matter and Bluetooth LE.\n"}


def test_list_questions_ask_from_the_item_and_gold_every_document_that_lists_it(make_engine, tmp_path):
    """Records of the "Who likes X?" kind: the gold of an item two documents list is both documents' chunks, and the
    search of the question ranks one of them first."""
    import random

    from thread_rag.evaluate.questions import library_key, list_questions

    engine = make_engine()
    engine.index_paths([write(tmp_path / n, t) for n, t in ROSTER.items()])
    threads = [engine.thread(d.serial) for d in engine.documents()]
    qs = list_questions(threads, random.Random(13))
    by_text = {q.text: q for q in qs}
    assert all(q.kind == "list" for q in qs) and len(by_text) == len(qs)  # an item two list is asked once
    assert 6 <= len(qs) <= 8 and {q.source.split(" ")[1] for q in qs} >= {"Durben", "Bastress", "Schweda", "Widget"}
    assert all(t.startswith("Who likes ") for t in by_text if "Widget" not in by_text[t].source)
    assert all(t.startswith("What supports ") for t in by_text if "Widget" in by_text[t].source)
    doc_of = {d.name: d.doc_id for d in engine.documents()}
    for q in qs:
        item = q.text.split(" ", 2)[2].rstrip("?")
        listed = {doc_of[n] for n, t in ROSTER.items() if f" {item}," in t or f" {item}." in t}
        assert {g.rsplit("_", 1)[0] for g in q.gold} == listed  # every document that lists it, no other
        assert q.extra["library"] == library_key(threads)
        top = engine.retriever.search(q.text, k=5).hits[0]
        assert top.chunk_id in q.gold, (q.text, top.chunk_id)
    assert list_questions(threads, random.Random(13)) == qs  # deterministic


def test_a_list_question_is_made_again_when_another_document_joins(make_engine, tmp_path):
    """A list question's gold spans documents: a new document listing the item changes its answer, so the saved
    question is dropped and made again from the documents as they are."""
    from thread_rag.evaluate.run import EvalOptions, load_set, run_eval

    engine = make_engine()
    engine.index_paths([write(tmp_path / n, ROSTER[n]) for n in ("durben.txt", "schweda.txt")])
    run_eval(engine, EvalOptions([], questions=4, probes=0))
    before, _ = load_set(tmp_path / "home" / "eval" / "questions.jsonl")
    assert {q.kind for q in before} == {"list"}
    engine.index_paths([write(tmp_path / "bastress.txt", ROSTER["bastress.txt"])])
    run_eval(engine, EvalOptions([], questions=4, probes=0))
    after, _ = load_set(tmp_path / "home" / "eval" / "questions.jsonl")
    assert {q.extra["library"] for q in after} != {q.extra["library"] for q in before}
    assert len({q.extra["library"] for q in after}) == 1
    caves = [q for q in after if q.text == "Who likes Caves?"]
    assert caves and all(len({g.rsplit("_", 1)[0] for g in q.gold}) == 2 for q in caves)


def test_a_list_questions_gold_is_every_chunk_of_the_library_that_names_the_item_after_the_verb(make_engine, tmp_path):
    """The gold is found more loosely than questions are made: a profile that lists the item past a colon ("Magic:
    The Gathering") or in other case is gold too; a run on one document still finds the answer in the others (search
    reads them all); an item listed under another verb is not."""
    from thread_rag.evaluate.run import EvalOptions, load_set, run_eval

    files = {"a.txt": "Ada Lovelace likes Crows, Tapirs, Chess, Fennel and Caves.\n",
             "b.txt": "Bob Marley likes Cherries, Magic: The Gathering, fennel, Chess and Kites.\n",
             "c.txt": "Cy Twombly hates Fennel, Tapirs, Chess, Crows and Caves.\n"}
    engine = make_engine()
    engine.index_paths([write(tmp_path / n, t) for n, t in files.items()])
    doc = {d.name: d.doc_id for d in engine.documents()}
    run_eval(engine, EvalOptions([doc["a.txt"]], questions=20, probes=0))
    qs, _ = load_set(tmp_path / "home" / "eval" / "questions.jsonl")
    gold = {q.text: {g.rsplit("_", 1)[0] for g in q.gold} for q in qs if q.kind == "list"}
    assert gold and all(t.startswith("Who likes ") for t in gold)  # from a.txt only: "hates" is not asked
    expected = {"Fennel": {doc["a.txt"], doc["b.txt"]}, "Chess": {doc["a.txt"], doc["b.txt"]},
                "Crows": {doc["a.txt"]}, "Tapirs": {doc["a.txt"]}, "Caves": {doc["a.txt"]}}
    for text, docs in gold.items():
        assert docs == expected[text[len("Who likes "):-1]], text
