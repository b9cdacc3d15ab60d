"""Per-token embeddings for late interaction, stored int8 with one scale per token.

One directory per (document, generation): ``codes.npy`` int8 [tokens, dim], ``scales.npy``
float32 [tokens], ``offsets.npy`` int64 [chunks + 1]. Written to a temporary directory and renamed
into place; loaded memory-mapped. Quantisation: ``code = round(v / s * 127)`` with
``s = max|v|`` per token, so each component's error is at most ``s / 254``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from ..atomic import atomic_replace_dir


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vectors = np.asarray(vectors, dtype=np.float32)
    scales = np.max(np.abs(vectors), axis=1) if len(vectors) else np.zeros(0, np.float32)
    safe = np.where(scales > 0, scales, 1.0)
    codes = np.clip(np.rint(vectors / safe[:, None] * 127.0), -127, 127).astype(np.int8)
    return codes, scales.astype(np.float32)


def dequantize(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    return codes.astype(np.float32) * (np.asarray(scales, np.float32)[:, None] / 127.0)


class TokenCache:
    def __init__(self, root: Path):
        self.root = Path(root)
        self._open: dict[tuple[int, int], tuple] = {}

    def dir_for(self, serial: int, generation: int) -> Path:
        return self.root / f"DOC{serial}.g{generation}"

    def write(self, serial: int, generation: int, token_vectors: list[np.ndarray]) -> None:
        final = self.dir_for(serial, generation)
        tmp = final.with_name(f".{final.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        lengths = [len(t) for t in token_vectors]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        dim = token_vectors[0].shape[1] if token_vectors and len(token_vectors[0]) else 0
        allv = np.concatenate([t for t in token_vectors if len(t)]) if sum(lengths) else np.zeros((0, dim), np.float32)
        codes, scales = quantize(allv)
        np.save(tmp / "codes.npy", codes)
        np.save(tmp / "scales.npy", scales)
        np.save(tmp / "offsets.npy", offsets)
        atomic_replace_dir(tmp, final)
        self._open.pop((serial, generation), None)

    def exists(self, serial: int, generation: int) -> bool:
        return (self.dir_for(serial, generation) / "offsets.npy").is_file()

    def _arrays(self, serial: int, generation: int):
        key = (serial, generation)
        if key not in self._open:
            d = self.dir_for(serial, generation)
            self._open[key] = (np.load(d / "codes.npy", mmap_mode="r"), np.load(d / "scales.npy", mmap_mode="r"),
                               np.load(d / "offsets.npy"))
        return self._open[key]

    def n_chunks(self, serial: int, generation: int) -> int:
        return len(self._arrays(serial, generation)[2]) - 1

    def get(self, serial: int, generation: int, position: int) -> np.ndarray:
        codes, scales, offsets = self._arrays(serial, generation)
        a, b = int(offsets[position]), int(offsets[position + 1])
        return dequantize(np.asarray(codes[a:b]), np.asarray(scales[a:b]))

    def remove(self, serial: int, generation: int | None = None) -> None:
        for d in self.root.glob(f"DOC{serial}.g*"):
            if generation is None or d.name == f"DOC{serial}.g{generation}":
                self._open.pop((serial, int(d.name.rsplit(".g", 1)[1])), None)
                shutil.rmtree(d, ignore_errors=True)

    def present(self) -> set[tuple[int, int]]:
        out = set()
        for d in self.root.glob("DOC*.g*"):
            try:
                s, g = d.name[3:].split(".g")
                out.add((int(s), int(g)))
            except ValueError:
                continue
        return out
