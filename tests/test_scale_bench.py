"""`thread-rag bench scale` in CI (issue 16): a 1,000-chunk library grown from text every machine has (Python's
reference topics, this repository's manual, the standard library's sources), measured at two checkpoints."""
import json
import os
import subprocess
import sys

from conftest import REPO


def test_scale_smoke_one_hundred_fifty_chunks(tmp_path):
    # stored in groups of 32 chunks, the checkpoints fall where they are set (a group of 256: both after 542 chunks)
    env = {**os.environ, "PYTHONPATH": str(REPO), "THREAD_RAG_SHARED_DATA": str(tmp_path / "no-shared-data"),
           "THREAD_RAG_STORE_GROUP_CHUNKS": "32"}
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "bench", "scale", "--chunks", "150",
                        "--checkpoints", "75,150", "--queries", "3", "--no-download",
                        "--data-dir", str(tmp_path / "lib"), "--out", str(tmp_path / "results")],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads((tmp_path / "results" / "scale-150.json").read_text())
    assert out["chunks"] >= 150 and [p["target"] for p in out["checkpoints"]] == [75, 150]
    assert out["checkpoints"][0]["chunks"] < out["checkpoints"][1]["chunks"]
    assert set(out["sources_chunks"]) <= {"python-topics", "thread-rag-docs", "python-stdlib"}
    for p in out["checkpoints"]:
        assert p["add_one_document"]["found"] and 60 <= p["add_one_document"]["chunks"] <= 200
        assert set(p["queries"]) == {"stage1_rrf", "stage1_2", "three_stage"}
        assert all(0 < q["p50_ms"] <= q["p95_ms"] for q in p["queries"].values())
        assert "stage3_ms" in p["queries"]["three_stage"]["stage_p50_ms"]
        assert p["open_fds"] > 0 and p["bytes_per_chunk"] > 0 and p["peak_rss_mib"] > 0
    assert out["curve"] and all(c["chunks_per_s"] > 0 for c in out["curve"])
    assert out["encode_rate_chunks_per_s"]["before"] > 0 and out["encode_rate_sample_chunks"] == 128  # 2 x 64
    assert (tmp_path / "results" / "scale-150.svg").read_text().startswith("<svg")
    from bench.report import scale_table

    assert "Embedder alone (same run on 128 chunks," in scale_table(out)
