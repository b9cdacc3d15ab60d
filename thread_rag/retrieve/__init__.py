"""Retrieval: stage 1 (FAISS dense + bm25s, fused by RRF) -> stage 2 (MaxSim over the int8 token
cache) -> stage 3 (cross-encoder or LLM relevance), with early exit."""
