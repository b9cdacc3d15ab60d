"""Ingest: files -> blocks (loaders) -> ordered chunk threads (chunkers)."""
from .chunker import make_chunker, text_for_embedding
from .loaders import SUPPORTED_SUFFIXES, load_document

__all__ = ["SUPPORTED_SUFFIXES", "load_document", "make_chunker", "text_for_embedding"]
