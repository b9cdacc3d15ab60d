"""Late interaction (ColBERT-style MaxSim) scoring.

``maxsim(Q, D) = mean_i max_j <q_i, d_j>`` over L2-normalised token vectors. The document side
comes from the int8 token cache written at index time; the query side is encoded per query by
the same model: the embedder's own token embeddings (MiniLM or bge-small; neither was trained for
late interaction, so whether MaxSim helps is measured per set, not assumed). No ColBERT checkpoint is
supported: one would have to encode the document side at index time too, and none ships offline.
"""
from __future__ import annotations

import numpy as np


def maxsim(query_tokens: np.ndarray, doc_tokens: np.ndarray) -> float:
    if len(query_tokens) == 0 or len(doc_tokens) == 0:
        return 0.0
    sims = query_tokens @ doc_tokens.T
    return float(sims.max(axis=1).mean())


def maxsim_many(query_tokens: np.ndarray, docs: list[np.ndarray]) -> np.ndarray:
    """MaxSim of one query against many documents with a single matrix product."""
    if not docs:
        return np.zeros(0, np.float32)
    lengths = np.array([len(d) for d in docs])
    if lengths.sum() == 0 or len(query_tokens) == 0:
        return np.zeros(len(docs), np.float32)
    allv = np.concatenate([d for d in docs if len(d)])
    sims = query_tokens @ allv.T  # [q, total]
    out = np.zeros(len(docs), np.float32)
    start = 0
    for i, n in enumerate(lengths):
        if n:
            out[i] = sims[:, start:start + n].max(axis=1).mean()
        start += n
    return out
