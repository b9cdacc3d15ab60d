"""Stage 2/3 model loading from local paths, exercised on tiny models built here (no download):
a random-weight BERT cross-encoder and a ColBERT-style encoder with a linear projection. The
weights are random, so only the loading code, batching and score ranges are checked."""
import numpy as np
import pytest

from thread_rag.errors import ModelUnavailableError


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    import shutil

    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    from thread_rag.embedder import packaged_minilm_path

    root = tmp_path_factory.mktemp("tiny")
    tok_src = packaged_minilm_path()
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, num_labels=1)
    torch.manual_seed(0)
    ce = root / "cross-encoder"
    BertForSequenceClassification(cfg).save_pretrained(ce)
    cb = root / "colbert"
    BertModel(cfg).save_pretrained(cb)
    from safetensors.torch import save_file

    save_file({"weight": torch.randn(16, 32)}, str(cb / "linear.safetensors"))
    for d in (ce, cb):
        for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
            shutil.copy(tok_src / f, d / f)
    return root


def test_cross_encoder_from_local_path(tiny_bert_dir):
    from thread_rag.retrieve.rerank import CrossEncoderReranker

    r = CrossEncoderReranker(str(tiny_bert_dir / "cross-encoder"))
    scores = r.score("install grub", ["grub installs the boot loader", "tea is hot " * 200, "x"])
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    with pytest.raises(ModelUnavailableError, match="never downloaded"):
        CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2")


def test_colbert_encoder_from_local_path(tiny_bert_dir):
    from thread_rag.retrieve.maxsim import ColbertEncoder

    enc = ColbertEncoder(str(tiny_bert_dir / "colbert"))
    q, d = enc.encode(["boot loader"], is_query=True)[0], enc.encode(["grub installs the boot loader"], is_query=False)[0]
    assert q.shape[1] == 16 and d.shape[1] == 16  # projected
    assert np.allclose(np.linalg.norm(d, axis=1), 1, atol=1e-5)


class FixedReranker:
    name = "fixed"

    def score(self, query, passages):
        return np.arange(len(passages))[::-1] / max(1, len(passages))  # reverses the order it is given


def test_early_exit_skips_stage3_and_schema_stays_the_same(manual_engine):
    from thread_rag.engine import Engine

    def engine_with(margin):
        e = Engine(manual_engine.settings.replace(RERANKER="fixed-for-test", EARLY_EXIT_MARGIN=margin),
                   embedder=manual_engine.embedder)
        e.retriever._reranker, e.retriever._reranker_checked = FixedReranker(), True
        return e

    decisive = engine_with(0.0).retriever.search("how do I pre-heat summaries?", k=3)
    assert decisive.early_exit and decisive.stages_run == ["stage1", "stage2"]
    assert all(h.scores["rerank"] is None for h in decisive.hits)
    full = engine_with(5.0).retriever.search("how do I pre-heat summaries?", k=3)
    assert not full.early_exit and full.stages_run == ["stage1", "stage2", "stage3"] and "stage3_ms" in full.timings_ms
    assert all(0 <= h.scores["rerank"] <= 1 for h in full.hits)
    assert set(vars(decisive.hits[0])) == set(vars(full.hits[0]))
