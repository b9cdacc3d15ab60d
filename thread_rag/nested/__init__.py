"""Nested retrieval over a per-document hierarchical chunk tree."""
