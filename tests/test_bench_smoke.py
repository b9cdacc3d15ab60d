"""CI smoke runs of the benchmark harness (--limit 5: a few questions over a shrunken corpus)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import DATA, REPO, needs_shared

pytestmark = needs_shared


def bench(tmp_path, *args):
    env = {**os.environ, "THREAD_RAG_SHARED_DATA": str(DATA), "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "bench", *args], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_retrieval_smoke(tmp_path):
    out = json.loads(bench(tmp_path, "retrieval", "--dataset", "limit-small", "--limit", "5"))
    assert out["queries"] == 5 and set(out["configs"]) == {"dense_only", "bm25_only", "stage1_rrf", "stage1_2"}
    for row in out["configs"].values():
        assert 0 <= row["ndcg@10"] <= 1 and row["p50_ms"] > 0
    assert out["configs"]["bm25_only"]["ndcg@10"] > out["configs"]["dense_only"]["ndcg@10"]
    md = bench(tmp_path, "retrieval", "--dataset", "limit-small", "--limit", "5", "--markdown")
    assert md.splitlines()[2].startswith("| configuration | nDCG@10")


def test_context_smoke(tmp_path):
    out = json.loads(bench(tmp_path, "context", "--dataset", "aws-docs-qa", "--limit", "5"))
    s = out["strategies"]
    assert set(s) == {"topk", "sentence_window", "parent_doc", "thread_windows", "thread_walk", "nested"}
    assert s["sentence_window"]["words"] >= s["topk"]["words"]
    assert s["sentence_window"]["coverage"] >= s["topk"]["coverage"]
