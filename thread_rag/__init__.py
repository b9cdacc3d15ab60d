"""THREAD-RAG: a terminal RAG agent for long procedural documents.

Search JUMPS to an entry chunk; the agent WALKS the ordered chunk thread (DOC1_000, DOC1_001, ...),
seeing each chunk inside a window of neighbour summaries.
"""
__version__ = "0.1.0"
