"""Stage 3 rerankers: a local cross-encoder, or pointwise LLM relevance; scores in 0..1."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Protocol

import numpy as np

from ..errors import ModelUnavailableError, failing_as
from ..packaged import PACKAGED
from ..settings import RERANK_CONTEXTS, Settings


_HTML_ANCHOR = re.compile(r"</?a\b[^>]*>", re.IGNORECASE)


def rerank_passage(text: str, heading_path: list, name: str, context: str) -> str:
    """What the reranker reads for a chunk (``RERANK_CONTEXT``): ``text`` the stored text as is; ``clean`` the text
    cleaned as for the embedder (Markdown link targets and escapes gone) and without HTML anchors; ``heading`` that,
    after the chunk's heading path (less its last heading when the text starts with it); ``title`` the same after
    the document's name too."""
    if context not in RERANK_CONTEXTS:
        raise ValueError(f"unknown RERANK_CONTEXT {context!r} (known: {', '.join(RERANK_CONTEXTS)})")
    if context == "text":
        return text
    body = _clean(text)
    if context == "clean":
        return body
    heads = [h for h in (_clean(str(x)) for x in heading_path or []) if h]
    if heads and (body == heads[-1] or body.startswith(heads[-1] + " ")):
        heads = heads[:-1]
    name = _clean(name) if context == "title" else ""
    if name:
        heads = [name] + heads
    return " > ".join(heads) + "\n" + body if heads else body


def _clean(text: str) -> str:
    from ..ingest.chunker import text_for_embedding

    return text_for_embedding(_HTML_ANCHOR.sub(" ", text))


class Reranker(Protocol):
    name: str

    def score(self, query: str, passages: list[str], max_tokens: int | None = None) -> np.ndarray:
        """Relevance of each passage to ``query`` in 0..1; ``max_tokens`` (the packaged cross-encoder only) truncates
        each pair to another length than the reranker's own."""


class CrossEncoderReranker:
    """``sentence_transformers.CrossEncoder`` from a local directory; batch size adapts to length."""

    def __init__(self, path: str, max_tokens_per_batch: int = 8192):
        p = Path(path).expanduser()
        if not p.is_dir():
            raise ModelUnavailableError(f"RERANKER {path!r} is not a local cross-encoder directory "
                                        f"(models are never downloaded)")
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(p), device="cpu", local_files_only=True)
        self.name = f"cross-encoder:{p.name}"
        self.max_tokens_per_batch = max_tokens_per_batch

    def score(self, query: str, passages: list[str], max_tokens: int | None = None) -> np.ndarray:
        if not passages:
            return np.zeros(0, np.float32)
        longest = max(len(p.split()) for p in passages) * 1.4 + len(query.split())
        batch = int(max(1, min(64, self.max_tokens_per_batch // max(32, longest))))
        raw = np.asarray(self.model.predict([(query, p) for p in passages], batch_size=batch,
                                            show_progress_bar=False), dtype=np.float32)
        if raw.min() < 0 or raw.max() > 1:  # logits -> probabilities
            raw = 1.0 / (1.0 + np.exp(-raw))
        return raw


class OnnxCrossEncoder:
    """A packaged INT8 ONNX cross-encoder (default ms-marco-MiniLM-L-12-v2): onnxruntime + tokenizers only.

    Pairs are truncated to ``max_tokens`` (longest side first), unpadded, and run one at a time (see
    ``OnnxEncoder``); the score is the logit ``out[:, 0]`` squashed to 0..1.
    """

    def __init__(self, name: str = "ms-marco-MiniLM-L-12-v2", max_tokens: int = Settings.RERANK_MAX_TOKENS,
                 threads: int = 0):
        from ..onnx_models import OnnxEncoder, packaged_onnx_dir

        self.encoder = OnnxEncoder(packaged_onnx_dir(name), max_tokens=max_tokens, threads=threads)
        self.name = f"cross-encoder:{name}"

    def logits(self, query: str, passages: list[str], max_tokens: int | None = None) -> np.ndarray:
        if not passages:
            return np.zeros(0, np.float32)
        outs = self.encoder.run(self.encoder.encodings([(query, p) for p in passages], max_tokens))
        return np.asarray([float(np.ravel(o)[0]) for o, _ in outs], np.float32)

    def score(self, query: str, passages: list[str], max_tokens: int | None = None) -> np.ndarray:
        return (1.0 / (1.0 + np.exp(-self.logits(query, passages, max_tokens).astype(np.float64)))).astype(np.float32)


def make_reranker(setting: str, load_llama=None, threads: int = 0, max_tokens: int = Settings.RERANK_MAX_TOKENS):
    """The stage-3 reranker a ``RERANKER`` setting names (None for "none")."""
    if setting == "none":
        return None
    if setting == "llm":
        return LLMRelevanceReranker(load_llama())
    if setting.startswith(PACKAGED):
        return OnnxCrossEncoder(setting[len(PACKAGED):], max_tokens=max_tokens, threads=threads)
    return CrossEncoderReranker(setting)


class LLMRelevanceReranker:
    """Pointwise relevance from the embedded LLM: P(yes) for "does this passage answer the query?"."""

    name = "llm-relevance"

    def __init__(self, llama):
        self.llama = llama  # a llama_cpp.Llama instance

    def score(self, query: str, passages: list[str], max_tokens: int | None = None) -> np.ndarray:
        out = []
        for p in passages:
            prompt = ("<|im_start|>system\nYou judge search results. Answer yes or no.<|im_end|>\n"
                      f"<|im_start|>user\nQuestion: {query}\n\nPassage: {' '.join(p.split()[:220])}\n\n"
                      "Does the passage help answer the question?<|im_end|>\n<|im_start|>assistant\n")
            with failing_as("the LLM reranker", (RuntimeError, ValueError, OSError)):  # llama.cpp's own errors
                r = self.llama.create_completion(prompt, max_tokens=1, temperature=0.0, logprobs=10)
            top = (r["choices"][0].get("logprobs") or {}).get("top_logprobs") or [{}]
            yes = sum(math.exp(v) for k, v in top[0].items() if k.strip().lower() == "yes")
            no = sum(math.exp(v) for k, v in top[0].items() if k.strip().lower() == "no")
            out.append(yes / (yes + no) if yes + no > 0 else 0.0)
        return np.asarray(out, np.float32)
