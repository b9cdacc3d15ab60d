"""all-MiniLM-L6-v2 in plain torch: the BERT encoder, mean pooling and L2 norm that sentence-transformers runs for it.

Loaded from the packaged ``model.safetensors`` and ``tokenizer.json`` with ``safetensors`` and ``tokenizers`` only:
importing sentence-transformers (and with it transformers, scikit-learn and scipy) cost 8.5 s of a process's
12 s model load on a 2-core AVX2 machine. ``tests/test_minilm.py`` compares every output with sentence-transformers'.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class BertShape:
    layers: int
    heads: int
    hidden: int
    eps: float
    max_tokens: int

    @classmethod
    def read(cls, model_dir: Path) -> "BertShape":
        cfg = json.loads((model_dir / "config.json").read_text())
        if cfg.get("model_type") != "bert" or cfg.get("hidden_act", "gelu") != "gelu" \
                or cfg.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{model_dir} is not a BERT encoder this module runs")
        st = model_dir / "sentence_bert_config.json"
        max_tokens = json.loads(st.read_text()).get("max_seq_length", 256) if st.is_file() else 256
        return cls(cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"],
                   float(cfg.get("layer_norm_eps", 1e-12)), min(int(max_tokens), cfg["max_position_embeddings"]))


class MiniLMEncoder:
    """Texts in; per text its token vectors (last hidden layer, special tokens included) and attention length."""

    def __init__(self, model_dir: Path, dtype: str = "float32", batch_size: int = 32):
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self.shape = BertShape.read(model_dir)
        self.batch_size = batch_size
        self.dtype = torch.bfloat16 if dtype == "bfloat16" else torch.float32
        self.w = {k: v.to(self.dtype) for k, v in load_file(str(model_dir / "model.safetensors")).items()
                  if v.is_floating_point()}
        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.enable_truncation(self.shape.max_tokens)
        self.tok.no_padding()

    def _layer_norm(self, x, name: str):
        import torch.nn.functional as F

        return F.layer_norm(x, (self.shape.hidden,), self.w[f"{name}.weight"], self.w[f"{name}.bias"], self.shape.eps)

    def _linear(self, x, name: str):
        import torch.nn.functional as F

        return F.linear(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"])

    def _forward(self, ids, mask):
        import torch
        import torch.nn.functional as F

        s, w = self.shape, self.w
        n, length = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][0] \
            + w["embeddings.position_embeddings.weight"][:length]  # in transformers' order (bfloat16 rounds each sum)
        x = self._layer_norm(x, "embeddings.LayerNorm")
        keep = mask[:, None, None, :].bool()  # padded keys are never attended to
        bias = torch.zeros(keep.shape, dtype=self.dtype).masked_fill(~keep, torch.finfo(self.dtype).min)
        head = s.hidden // s.heads
        for i in range(s.layers):
            p = f"encoder.layer.{i}"
            q, k, v = (self._linear(x, f"{p}.attention.self.{m}").view(n, length, s.heads, head).transpose(1, 2)
                       for m in ("query", "key", "value"))
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1 / math.sqrt(head))
            ctx = ctx.transpose(1, 2).reshape(n, length, s.hidden)
            x = self._layer_norm(self._linear(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
            mid = F.gelu(self._linear(x, f"{p}.intermediate.dense"))
            x = self._layer_norm(self._linear(mid, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        return x

    def hidden(self, texts: Sequence[str]) -> list[tuple[np.ndarray, int]]:
        """Per text (in the given order): float32 token vectors ``[tokens, hidden]`` and the token count."""
        import torch

        enc = self.tok.encode_batch([t.strip() for t in texts])
        order = sorted(range(len(enc)), key=lambda i: -len(enc[i].ids))  # like lengths batched together
        out: list = [None] * len(enc)
        with torch.inference_mode():
            for b in range(0, len(order), self.batch_size):
                part = order[b:b + self.batch_size]
                length = max(len(enc[i].ids) for i in part)
                ids = torch.zeros((len(part), length), dtype=torch.long)
                mask = torch.zeros((len(part), length), dtype=torch.long)
                for row, i in enumerate(part):
                    ids[row, :len(enc[i].ids)] = torch.tensor(enc[i].ids)
                    mask[row, :len(enc[i].ids)] = 1
                h = self._forward(ids, mask).float().numpy()
                for row, i in enumerate(part):
                    out[i] = (h[row, :len(enc[i].ids)], len(enc[i].ids))
        return out

