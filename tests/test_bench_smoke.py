"""CI smoke runs of the benchmark harness (--limit 5: a few questions over a shrunken corpus)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import DATA, REPO, needs_shared

pytestmark = needs_shared


def bench(tmp_path, *args, env: dict | None = None):
    env = {**os.environ, "THREAD_RAG_SHARED_DATA": str(DATA), "PYTHONPATH": str(REPO), **(env or {})}
    r = subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_retrieval_smoke(tmp_path):
    out = json.loads(bench(tmp_path, "retrieval", "--dataset", "limit-small", "--limit", "5"))
    assert out["queries"] == 5 and list(out["configs"]) == ["dense_only", "bm25_only", "stage1_rrf", "stage1_2",
                                                            "stage1_3", "three_stage"]
    assert out["models"]["reranker"] == "packaged:ms-marco-MiniLM-L-12-v2"  # stage 3 rows use the packaged model
    assert all(len(v["ndcg@10"]) == 5 for v in out["per_query"].values()) and len(out["qids"]) == 5
    for row in out["configs"].values():  # stage 3 after stage1_3 reuses its remembered pairs: no k=50 latency
        assert 0 <= row["ndcg@10"] <= 1 and row["k5_p50_ms"] > 0 and (row["p50_ms"] or 0) >= 0
    assert out["configs"]["stage1_3"]["p50_ms"] > 0 and out["configs"]["three_stage"]["p50_ms"] is None
    assert out["configs"]["bm25_only"]["ndcg@10"] > out["configs"]["dense_only"]["ndcg@10"]
    from bench.report import retrieval_table  # what --markdown prints (a second run took 7 s)

    assert retrieval_table(out).splitlines()[2].startswith("| configuration | nDCG@10")


@pytest.mark.slow
def test_suite_quick_variant(tmp_path):
    """A smaller run of the documented quick variant of the one-command comparison (BENCHMARKS.md): one test-split
    question on one of its three sets (musique, the smallest corpus: aws-docs-qa's 510 chunks took 34 s of 69, and
    leval-legal's contracts most of the rest), from one entry chunk (--k 1: shorter prompts); the real embedded LLM
    answers through the shared answer path from top-k and from the walk. Its context tables are the context
    benchmark's smoke run (one of its own took 29 s more)."""
    md = bench(tmp_path, "suite", "--limit", "1", "--k", "1", "--dataset", "musique",
               "--out", str(tmp_path / "res"), env={"THREAD_RAG_MODEL_DIR": str(REPO / "local_rag_db" / "models")})
    assert not (tmp_path / "res" / "suite-aws-docs-qa.json").exists()
    for name in ("musique",):
        x = json.loads((tmp_path / "res" / f"suite-{name}.json").read_text())
        assert x["questions"] == 1 and x["context"]["queries"] == 1 and x["answers"]["split"] == "test"
        c = x["context"]["strategies"]
        assert set(c) == {"topk", "sentence_window", "parent_doc", "thread_windows", "walk", "nested"}
        assert c["sentence_window"]["words"] >= c["topk"]["words"] and c["parent_doc"]["words"] >= c["topk"]["words"]
        assert c["sentence_window"]["coverage"] >= c["topk"]["coverage"]
        a = x["answers"]["strategies"]
        assert set(a) == {"topk", "walk"}
        for r in a.values():
            assert r["questions"] == 1 and 0 <= r["f1"] <= 1 and (r["refusal_rate"] == 1.0 or r["tokens_in"] > 0)
        assert f"### {x['dataset']} (suite)" in md
    assert "| walk | 1 |" in md


def test_embedders_bench_alternates_both_packaged_embedders():
    from conftest import DOCS
    from bench.ingest import run_embedders_bench
    from thread_rag.settings import load_settings

    out = run_embedders_bench(load_settings({}, env={}, config_file=False), str(DOCS / "03-searching.md"), rounds=1)
    e = out["embedders"]
    assert set(e) == {"packaged:all-MiniLM-L6-v2", "packaged:bge-small-en-v1.5"} and out["chunks"] > 0
    assert all(len(v["chunks_per_s"]) == 1 and v["median_chunks_per_s"] > 0 and v["median_query_ms"] > 0
               for v in e.values())
    assert out["bge_ingest_speed_vs_minilm"] == round(e["packaged:bge-small-en-v1.5"]["median_chunks_per_s"] /
                                                       e["packaged:all-MiniLM-L6-v2"]["median_chunks_per_s"], 3)


def test_report_embedder_table_takes_one_file_per_set_and_embedder(tmp_path):
    """Test-half files that rerun MiniLM's default beside something else (the hop, its chain) stay out of the
    embedder table, or a set would get two MiniLM rows."""
    from bench.report import embedder_runs

    names = ["retrieval-musique-test-minilm", "retrieval-musique-test-bge", "retrieval-aws-docs-qa-quick60-test-bge",
             "retrieval-musique-test-hop", "retrieval-musique-test-chain", "retrieval-musique", "tuning-retrieval-musique-hop"]
    for n in names:
        (tmp_path / f"{n}.json").write_text("{}")
    assert [p.stem for p in embedder_runs(tmp_path)] == sorted(names[:3])


def test_a_recorded_command_names_the_settings_it_ran_with(monkeypatch, no_env):
    """Runs that differ only by a THREAD_RAG_* setting recorded the same command line (the answers with and without
    question steps): the command now starts with those settings, as a shell would take it."""
    import sys

    from bench import command_line

    monkeypatch.setenv("THREAD_RAG_QUESTION_STEPS", "4")
    monkeypatch.setenv("THREAD_RAG_HOME", "/somewhere")        # where, not how: left out
    import bench

    monkeypatch.setattr(bench, "DOOR", "thread-rag")  # as bench.cli.main sets it for `thread-rag bench`
    monkeypatch.setattr(sys, "argv", ["thread-rag", "--data-dir", "x", "bench", "answers", "--dataset", "musique"])
    assert command_line() == "THREAD_RAG_QUESTION_STEPS=4 thread-rag --data-dir x bench answers --dataset musique"
    monkeypatch.setattr(bench, "DOOR", "python -m bench")
    monkeypatch.setattr(sys, "argv", ["/repo/bench/__main__.py", "answers", "--dataset", "musique"])
    assert command_line() == "THREAD_RAG_QUESTION_STEPS=4 python -m bench answers --dataset musique"


def test_a_child_process_peak_is_its_own_not_the_forking_parents():
    """The compare bench's `thread-rag compare` subprocess reported its peak RSS from ru_maxrss, which Linux carries
    over fork and exec from the parent: after the bench had indexed its corpus in-process, the CLI "peaked" at 899
    MiB (its own peak is ~150 MiB). bench.peak_rss_kib reads the process's own high-water mark (VmHWM)."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("no /proc: ru_maxrss is the only measure")
    ballast = bytearray(300 * 1024 * 1024)
    ballast[::4096] = b"\x01" * len(range(0, len(ballast), 4096))  # touched: resident in this process
    code = ("import resource; from bench import peak_rss_kib; "
            "print(peak_rss_kib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    own, inherited = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                             check=True, cwd=REPO).stdout.split())
    del ballast
    if inherited < 300 * 1024:
        pytest.skip("this kernel does not carry ru_maxrss over exec: nothing to tell apart")
    assert own < 200 * 1024, own


def test_coldstart_reports_a_childs_own_peak(tmp_path):
    """os.wait4's ru_maxrss of a child carries the bench's own peak over fork and exec (a trivial child of a
    500 MiB parent "peaked" at 513 MiB): the cold-start bench reads the child's VmHWM while it runs."""
    from bench.coldstart import run_process

    if not os.path.exists("/proc/self/status"):
        pytest.skip("no /proc: wait4 is the only measure")
    ballast = bytearray(300 * 1024 * 1024)
    ballast[::4096] = b"\x01" * len(range(0, len(ballast), 4096))
    r = run_process([sys.executable, "-c", "import time; time.sleep(0.3)"], dict(os.environ), tmp_path)
    del ballast
    assert r["rc"] == 0 and 0 < r["rss_mb"] < 150, r["rss_mb"]
