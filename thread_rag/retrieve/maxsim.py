"""Late interaction (ColBERT-style MaxSim) scoring.

``maxsim(Q, D) = mean_i max_j <q_i, d_j>`` over L2-normalised token vectors. The document side
comes from the int8 token cache written at index time; the query side is encoded per query by
the same model. A real ColBERT checkpoint can be plugged in from a local path (``COLBERT_MODEL``);
otherwise the embedder's own token embeddings are used.
"""
from __future__ import annotations

import numpy as np


def maxsim(query_tokens: np.ndarray, doc_tokens: np.ndarray) -> float:
    if len(query_tokens) == 0 or len(doc_tokens) == 0:
        return 0.0
    sims = query_tokens @ doc_tokens.T
    return float(sims.max(axis=1).mean())


def maxsim_many(query_tokens: np.ndarray, docs: list[np.ndarray]) -> np.ndarray:
    """MaxSim of one query against many documents with a single matrix product."""
    if not docs:
        return np.zeros(0, np.float32)
    lengths = np.array([len(d) for d in docs])
    if lengths.sum() == 0 or len(query_tokens) == 0:
        return np.zeros(len(docs), np.float32)
    allv = np.concatenate([d for d in docs if len(d)])
    sims = query_tokens @ allv.T  # [q, total]
    out = np.zeros(len(docs), np.float32)
    start = 0
    for i, n in enumerate(lengths):
        if n:
            out[i] = sims[:, start:start + n].max(axis=1).mean()
        start += n
    return out


class ColbertEncoder:
    """A ColBERT checkpoint from a local directory (HF format with a linear projection), loaded lazily.

    Query/document markers ([Q]/[D] tokens) and the projection follow the checkpoint's files;
    used only when ``COLBERT_MODEL`` is set. No model name is ever downloaded.
    """

    def __init__(self, path: str):
        from pathlib import Path

        from ..errors import ModelUnavailableError

        self.path = Path(path).expanduser()
        if not self.path.is_dir():
            raise ModelUnavailableError(f"COLBERT_MODEL {path!r} is not a local directory")
        self._model = None

    def _load(self):
        if self._model is None:
            import torch
            from transformers import AutoModel, AutoTokenizer

            tok = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            model = AutoModel.from_pretrained(str(self.path), local_files_only=True).eval()
            proj = None
            for name in ("linear.safetensors", "1_Dense/model.safetensors"):
                f = self.path / name
                if f.is_file():
                    from safetensors.torch import load_file

                    w = load_file(str(f))
                    weight = w.get("weight", w.get("linear.weight"))
                    if weight is not None:
                        proj = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
                        proj.weight.data = weight
            self._model = (tok, model, proj)
        return self._model

    def encode(self, texts: list[str], is_query: bool) -> list[np.ndarray]:
        import torch

        tok, model, proj = self._load()
        marker = "[unused0] " if is_query else "[unused1] "
        out = []
        with torch.inference_mode():
            for t in texts:
                enc = tok(marker + t, return_tensors="pt", truncation=True, max_length=512 if not is_query else 64)
                h = model(**enc).last_hidden_state[0]
                if proj is not None:
                    h = proj(h)
                h = torch.nn.functional.normalize(h, dim=-1)
                out.append(h[1:-1].numpy().astype(np.float32))
        return out
