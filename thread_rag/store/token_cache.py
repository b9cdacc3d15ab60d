"""Per-token embeddings for late interaction, stored int8 with one scale per token.

One directory per (document, generation): ``codes.npy`` int8 [tokens, dim], ``scales.npy``
float32 [tokens], ``offsets.npy`` int64 [chunks + 1]. Written to a temporary directory and renamed
into place; loaded memory-mapped. Quantisation: ``code = round(v / s * 127)`` with
``s = max|v|`` per token, so each component's error is at most ``s / 254``.
"""
from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import numpy as np

from ..atomic import atomic_replace_dir
from ..ids import generation_name, parse_generation_name
from ..lru import LRU


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vectors = np.asarray(vectors, dtype=np.float32)
    scales = np.max(np.abs(vectors), axis=1) if len(vectors) else np.zeros(0, np.float32)
    safe = np.where(scales > 0, scales, 1.0)
    codes = np.clip(np.rint(vectors / safe[:, None] * 127.0), -127, 127).astype(np.int8)
    return codes, scales.astype(np.float32)


def dequantize(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    return codes.astype(np.float32) * (np.asarray(scales, np.float32)[:, None] / 127.0)


def _chunk_of(arrays: tuple, position: int) -> np.ndarray:
    """The token vectors of the chunk at ``position`` from a cache's (codes, scales, offsets)."""
    codes, scales, offsets = arrays
    a, b = int(offsets[position]), int(offsets[position + 1])
    return dequantize(np.asarray(codes[a:b]), np.asarray(scales[a:b]))


class TokenCache:
    def __init__(self, root: Path, max_open: int = 64):
        self.root = Path(root)
        self._open: LRU[tuple[int, int], tuple] = LRU(max_open)  # memory maps of the recently read documents

    def close(self) -> None:
        self._open.clear()

    def dir_for(self, serial: int, generation: int) -> Path:
        return self.root / generation_name(serial, generation)

    def stage(self) -> "TokenStage":
        """A staging area that takes a document's token vectors batch by batch (quantised on arrival, so
        indexing never holds a file's float32 token vectors in memory); ``write`` moves it into place."""
        return TokenStage(self.root)

    def write(self, serial: int, generation: int, tokens: "TokenStage | list[np.ndarray]", key: str = "") -> None:
        """Commit staged token vectors (or a list of per-chunk arrays) as the cache of (serial, generation), made
        from the chunks whose content key is ``key``."""
        stage = tokens if isinstance(tokens, TokenStage) else TokenStage(self.root).add(tokens)
        final = self.dir_for(serial, generation)
        stage.finish()
        if key:
            (stage.dir / "key").write_text(key)
        atomic_replace_dir(stage.dir, final)
        self._open.pop((serial, generation), None)

    def exists(self, serial: int, generation: int, key: str | None = None) -> bool:
        """The cache of (serial, generation) is there (and, when ``key`` is given, was made from that content)."""
        if key is None:
            return (self.dir_for(serial, generation) / "offsets.npy").is_file()
        return self.key_of(serial, generation) == key  # None when missing

    def key_of(self, serial: int, generation: int) -> str | None:
        """The content key the cache was made from ("" before keys); None when it is missing or unreadable."""
        try:
            return self._held(serial, generation)[2]
        except (OSError, ValueError, EOFError):  # EOFError: a file cut to 0 bytes (np.load finds no header)
            return None

    def _arrays(self, serial: int, generation: int):
        """The document's memory maps; opened again when its folder was replaced (``doctor --repair`` rewrites a
        damaged cache in place: a long-running reader must not keep reading the old files)."""
        return self._held(serial, generation)[1]

    def _held(self, serial: int, generation: int) -> tuple:
        """(stamp, memory maps, content key) of an open cache, opened (again) when its folder changed."""
        key = (serial, generation)
        d = self.dir_for(serial, generation)
        st = os.stat(d / "offsets.npy")
        stamp = (st.st_ino, st.st_mtime_ns)
        held = self._open.get(key)
        if held is None or held[0] != stamp:
            content = (d / "key").read_text() if (d / "key").is_file() else ""
            held = (stamp, (np.load(d / "codes.npy", mmap_mode="r"), np.load(d / "scales.npy", mmap_mode="r"),
                            np.load(d / "offsets.npy")), content)
            self._open[key] = held
        return held

    def n_chunks(self, serial: int, generation: int) -> int:
        return len(self._arrays(serial, generation)[2]) - 1

    def readable_chunks(self, serial: int, generation: int) -> int | None:
        """Chunks in the cache of (serial, generation); None when it is missing or cannot be read (damaged)."""
        try:
            codes, scales, offsets = self._arrays(serial, generation)
            n = len(offsets) - 1
            return n if n >= 0 and len(codes) == len(scales) == int(offsets[-1]) else None
        except (OSError, ValueError, IndexError, EOFError):
            return None

    def get_made_from(self, serial: int, generation: int, key: str | None, position: int) -> np.ndarray | None:
        """A chunk's token vectors from the cache of (serial, generation) made from content ``key``, read from the
        one opening of that cache; None when it is missing, unreadable or made from other content (another process
        may remove it any time: a check and then a read would race with it)."""
        try:
            _, arrays, content = self._held(serial, generation)
            return _chunk_of(arrays, position) if key is None or content == key else None
        except (OSError, ValueError, EOFError):
            return None

    def get(self, serial: int, generation: int, position: int) -> np.ndarray:
        return _chunk_of(self._arrays(serial, generation), position)

    def remove(self, serial: int, generation: int | None = None) -> None:
        for d in self.root.glob(f"DOC{serial}.g*"):
            key = parse_generation_name(d.name)
            if key is not None and key[0] == serial and generation in (None, key[1]):
                self._open.pop(key, None)
                shutil.rmtree(d, ignore_errors=True)

    def present(self) -> set[tuple[int, int]]:
        return {key for key in (parse_generation_name(d.name) for d in self.root.glob("DOC*.g*")) if key}


class TokenStage:
    """Token vectors of one document on their way to the cache: each batch is quantised and appended to raw
    files in a PID-named temporary folder (recovery removes it only once this process is gone); ``finish``
    turns them into the cache's ``.npy`` files. Memory stays at one batch."""

    BUFFER = 8 << 20  # bytes copied per step in ``finish``

    def __init__(self, root: Path):
        root.mkdir(parents=True, exist_ok=True)
        self.dir = root / f".stage-{uuid.uuid4().hex[:12]}.{os.getpid()}.tmp"
        self.dir.mkdir()
        self.lengths: list[int] = []
        self.dim = 0

    def add(self, token_vectors: list[np.ndarray]) -> "TokenStage":
        rows = [t for t in token_vectors if len(t)]
        self.lengths.extend(len(t) for t in token_vectors)
        if rows:
            self.dim = rows[0].shape[1]
            codes, scales = quantize(np.concatenate(rows))
            with open(self.dir / "codes.bin", "ab") as fc, open(self.dir / "scales.bin", "ab") as fs:
                fc.write(codes.tobytes())
                fs.write(scales.tobytes())
        return self

    def finish(self) -> None:
        """Write ``offsets.npy`` and turn the raw files into ``codes.npy`` / ``scales.npy`` (an ``.npy`` header,
        then the raw bytes copied through a small buffer: no memory map, nothing held in memory)."""
        n = int(sum(self.lengths))
        np.save(self.dir / "offsets.npy", np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64))
        for name, dtype, shape in (("codes", np.int8, (n, self.dim)), ("scales", np.float32, (n,))):
            raw = self.dir / f"{name}.bin"
            with open(self.dir / f"{name}.npy", "wb") as out:
                np.lib.format.write_array_header_1_0(out, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                                           "fortran_order": False, "shape": shape})
                if n:
                    with open(raw, "rb") as src:
                        shutil.copyfileobj(src, out, self.BUFFER)
            raw.unlink(missing_ok=True)

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
