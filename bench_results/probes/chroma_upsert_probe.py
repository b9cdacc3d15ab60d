"""One-off probe (issue 16): what a Chroma upsert costs per call and per row, on an empty local collection.

    python bench_results/probes/chroma_upsert_probe.py [DIR]

Upserts synthetic rows (384-d random vectors, ~400-character texts, three metadata fields) in calls of 1, 15, 150
and 1,000 rows after a warm-up, and prints ms per row for each call size. Why grouped writes pay (BENCHMARKS.md,
"Grouped Chroma writes").
"""
from __future__ import annotations

import shutil
import sys
import time

import numpy as np


def main(root: str = "/tmp/chroma_upsert_probe") -> None:
    import chromadb
    from chromadb.config import Settings

    shutil.rmtree(root, ignore_errors=True)
    client = chromadb.PersistentClient(path=root, settings=Settings(anonymized_telemetry=False))
    col = client.get_or_create_collection("probe", embedding_function=None, metadata={"hnsw:space": "ip"})
    rng = np.random.default_rng(0)

    def insert(n: int, per: int, tag: str) -> float:
        t = time.perf_counter()
        for i in range(0, n, per):
            col.upsert(ids=[f"{tag}{j}" for j in range(i, i + per)],
                       embeddings=rng.standard_normal((per, 384)).astype(np.float32),
                       documents=["some text " * 40] * per,
                       metadatas=[{"serial": j, "generation": 1, "position": 0} for j in range(i, i + per)])
        return (time.perf_counter() - t) / n * 1000

    insert(200, 10, "warm")
    for per in (1, 15, 150, 1000):
        print(f"{per:5d} rows per call: {insert(300 if per == 1 else 3000, per, f'c{per}_'):.2f} ms per row")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(*sys.argv[1:2])
