"""The packaged MiniLM run in plain torch (``thread_rag.minilm``) against sentence-transformers on the same weights:
the vectors a store holds, and the token vectors MaxSim reads, are the same."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import DOCS


def _texts() -> list[str]:
    texts = []
    for f in sorted(DOCS.glob("*.md"))[:1]:
        t = f.read_text()
        texts += [t[i:i + 1200] for i in range(0, len(t), 900)]
    # an empty text, edge spaces, one past the 256-piece window, accents, one word
    return texts + ["", "  padded  ", "word " * 400, "Ünïcödé façade naïve", "x"]


@pytest.mark.slow
def test_minilm_gives_sentence_transformers_vectors_and_token_vectors():
    from sentence_transformers import SentenceTransformer

    from thread_rag.embedder import MiniLMEmbedder

    texts = _texts()
    embedder = MiniLMEmbedder(dtype="float32", threads=2)  # bfloat16 (AVX-512 BF16 machines) rounds both differently
    ref = SentenceTransformer(str(embedder.model_path), device="cpu", local_files_only=True)
    ref.eval()
    outs = ref.encode(texts, batch_size=32, output_value=None, show_progress_bar=False)
    sent, toks = embedder.embed_with_tokens(texts)
    want = np.stack([o["sentence_embedding"].numpy() for o in outs])
    assert np.abs(sent - want).max() < 1e-5
    assert np.allclose(embedder.embed(texts), sent, atol=1e-6)
    for o, mine in zip(outs, toks):
        te = o["token_embeddings"][o["attention_mask"].bool()].numpy()
        te = te[1:-1] if len(te) > 2 else te
        te = te / np.linalg.norm(te, axis=1, keepdims=True)
        assert te.shape == mine.shape and np.abs(te - mine).max() < 1e-5
    assert len(toks[-3]) == 254  # the window: 256 pieces with [CLS] and [SEP]


def test_the_default_embedder_never_imports_sentence_transformers():
    import subprocess
    import sys

    from conftest import REPO

    code = ("import sys; from thread_rag.embedder import make_embedder; from thread_rag.settings import load_settings; "
            "e = make_embedder(load_settings({}, env={}, config_file=False)); e.embed(['a line']); "
            "print(type(e).__name__, 'sentence_transformers' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["MiniLMEmbedder", "False", "False"]


@pytest.mark.slow
def test_minilm_in_bfloat16_stays_beside_sentence_transformers_in_bfloat16():
    """AVX-512 BF16 machines run the embedder in bfloat16 ("auto"): both round at each step, in other places (the
    pooling here is float32), so the vectors differ a little more than in float32."""
    import torch
    from sentence_transformers import SentenceTransformer

    from thread_rag.embedder import MiniLMEmbedder

    texts = _texts()[:6] + _texts()[-5:]
    mine = MiniLMEmbedder(dtype="bfloat16", threads=2)
    ref = SentenceTransformer(str(mine.model_path), device="cpu", local_files_only=True).to(torch.bfloat16)
    ref.eval()
    want = ref.encode(texts, batch_size=32, convert_to_tensor=True, normalize_embeddings=True,
                      show_progress_bar=False).float().numpy()
    got = mine.embed(texts)
    assert (got * want).sum(axis=1).min() >= 0.995
