"""A search configuration named in one line (``stage1_2``, ``full:m0.3:t256:f0.1:ctext:h0``) and the settings a
result file records: what ``thread-rag eval`` writes beside its scores, and the benchmarks beside theirs."""
from __future__ import annotations

from .pipeline import NEVER_EXIT


HOP_SETTINGS = ("HOP_K", "HOP_RESCORE", "HOP_PICKS", "HOP_MIN_SCORE", "HOP_MAX_TOKENS", "HOP_DEPTH")
# the tuning settings of a search (the models and the store's recipe are recorded apart): every result file that
# searched records them
SEARCH_SETTINGS = ("CHUNK_TOKENS", "CHUNK_OVERLAP", "STAGE1_K", "RRF_K", "DENSE_WEIGHT", "BM25_WEIGHT", "STAGE2_K",
                   "STAGE2_WEIGHT", "STAGE3_K", "STAGE3_WEIGHT", "STAGE3_PRIOR", "STAGE3_LEXICAL_FLOOR",
                   "EARLY_EXIT_MARGIN", "RERANK_MAX_TOKENS", "RERANK_CONTEXT", "STATEMENTS") + HOP_SETTINGS
# recorded besides by the runs that apply it (bench retrieval; the answers bench through the agent)
STEPS_SETTINGS = ("QUESTION_STEPS",)


def search_settings(settings, *more: str) -> dict:
    """``SEARCH_SETTINGS`` and ``more`` of ``settings``, by name, for a result file."""
    return {n: getattr(settings, n) for n in dict.fromkeys(SEARCH_SETTINGS + more)}


def default_spec(settings) -> str:
    """The configuration ``rag_search`` runs with these settings, in ``parse_config`` syntax."""
    s = settings
    steps = f":q{s.QUESTION_STEPS}" if s.QUESTION_STEPS else ""  # labels from before QUESTION_STEPS stay valid
    if s.FUSION != "rrf":
        return ("dense_only" if s.FUSION == "dense" else "bm25_only") + steps
    if s.RERANKER == "none":
        return ("stage1_2" if s.STAGE2 else "stage1_rrf") + steps
    margin = "" if not s.STAGE2 else ":m-" if s.EARLY_EXIT_MARGIN >= NEVER_EXIT else f":m{s.EARLY_EXIT_MARGIN:g}"
    weight = "" if s.STAGE3_WEIGHT >= 1 else f":w{s.STAGE3_WEIGHT:g}" + (":pbm25" if s.STAGE3_PRIOR == "bm25" else "")
    # truncation (of the packaged cross-encoder), floor and context always named: a label means one thing in any file
    trunc = "" if rerank_truncation(s) is None else f":t{s.RERANK_MAX_TOKENS}"
    rest = f"{trunc}:f{s.STAGE3_LEXICAL_FLOOR:g}:c{s.RERANK_CONTEXT}"
    depth = "" if s.HOP_DEPTH == 1 else f":d{s.HOP_DEPTH}"  # labels from before HOP_DEPTH stay valid
    rest += (f":h{s.HOP_K}:s{s.HOP_RESCORE}:n{s.HOP_PICKS}:g{s.HOP_MIN_SCORE:g}:x{s.HOP_MAX_TOKENS}{depth}"
             if s.hop_runs() else ":h0")
    return f"{'three_stage' if s.STAGE2 else 'stage1_3'}:k{s.STAGE3_K}{margin}{weight}{rest}{steps}"


def rerank_truncation(s) -> int | None:
    """``RERANK_MAX_TOKENS`` where it applies (the packaged cross-encoder), else None."""
    from ..packaged import PACKAGED

    return s.RERANK_MAX_TOKENS if s.RERANKER.startswith(PACKAGED) else None
