"""Does Chroma's in-process client account for the indexing process's native memory growth? Upserts synthetic
chunks (1 KB of text, a 384-d vector, metadata like the chunk store's) in batches of 15 (one document's worth)
into a throwaway PersistentClient and prints RSS (and RSS after malloc_trim) every 1,000 chunks; no embedder,
no torch.

    python bench_results/probes/chroma_memory_probe.py [CHUNKS]     # default 10000
"""
import ctypes
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from _scale_library import rss_mib


def main(n: int) -> None:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    home = Path(tempfile.mkdtemp(prefix="chroma-mem-"))
    try:
        client = chromadb.PersistentClient(path=str(home), settings=ChromaSettings(anonymized_telemetry=False))
        col = client.get_or_create_collection("probe", embedding_function=None, metadata={"hnsw:space": "ip"})
        rng = np.random.default_rng(0)
        print(f"start: rss {rss_mib():.0f} MiB", flush=True)
        words = "install partition mount kernel package network configure boot disk user".split()
        for start in range(0, n, 15):
            ids = [f"DOC{start // 15}_{i:03d}.g1" for i in range(15)]
            vecs = rng.standard_normal((15, 384)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            docs = [" ".join(rng.choice(words, 160)) for _ in ids]
            metas = [{"serial": start // 15, "position": i, "generation": 1, "heading": "A > B", "page_start": 1}
                     for i in range(15)]
            col.upsert(ids=ids, embeddings=vecs, documents=docs, metadatas=metas)
            if (start + 15) % 1005 == 0:
                before = rss_mib()
                ctypes.CDLL("libc.so.6").malloc_trim(0)
                print(f"{start + 15:6d} chunks  rss {before:6.0f} MiB  after malloc_trim {rss_mib():6.0f} MiB", flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000)
