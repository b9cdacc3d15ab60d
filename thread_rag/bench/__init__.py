"""Benchmarks on the shared data sets: one harness (``thread-rag bench KIND``), one loader per set."""
