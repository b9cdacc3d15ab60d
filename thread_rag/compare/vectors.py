"""Chunk vectors as the comparison uses them (shared by the alignment and the row labels)."""
from __future__ import annotations

import numpy as np


def unit_rows(v) -> np.ndarray:
    """Each row scaled to unit length (zero rows stay zero), float32: cosines become dot products."""
    v = np.asarray(v, dtype=np.float32)
    if v.ndim != 2:
        raise ValueError("vectors must be a 2-D array (chunks x dimensions)")
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)
