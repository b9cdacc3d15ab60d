"""The indexing embedder bounds torch's oneDNN kernel cache (ONEDNN_PRIMITIVE_CACHE_CAPACITY) before its first
encode, unless the user set it: the memory it saves is measured by bench_results/probes/onednn_cache_probe.py."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO

CHILD = ("import os; from thread_rag.embedder import MiniLMEmbedder as E; e = E(); "
         "e.embed_with_tokens(['a chunk of text']); print(os.environ.get('ONEDNN_PRIMITIVE_CACHE_CAPACITY'))")


@pytest.mark.slow
@pytest.mark.parametrize("preset, expected", [(None, "8"), ("64", "64")])
def test_the_embedder_sets_onednn_cache_before_its_first_encode_unless_the_user_did(preset, expected):
    env = {k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"}
    if preset:
        env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = preset
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == expected
