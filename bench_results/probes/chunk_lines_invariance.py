"""One-off check (2026-12-03, LOADER_VERSION 4): the chunker now keeps a block's line breaks in the chunk text (code
lines, list items, table rows were joined with spaces). Does anything retrieval reads change? Every shared corpus is
chunked by the chunker of revision REV (default 80ce65f, before the change) and by this checkout's, from the same
loaded blocks; the chunks must have the same units (sentences), token counts and heading paths, the same embedded
text (``text_for_embedding``, which the cross-encoder's ``clean``/``heading`` contexts also start from) and the same
BM25 tokens. Only the line breaks and indentation of the stored text may differ, and the character offsets of a
long line cut into parts, which were off by the line's indentation before.

    PYTHONPATH=. python bench_results/probes/chunk_lines_invariance.py [REV] > bench_results/probes/chunk_lines_invariance.txt
"""
import subprocess
import sys
import types

from thread_rag.bench.datasets import load_dataset
from thread_rag.embedder import TokenCounter, packaged_minilm_path
from thread_rag.ingest.chunker import make_chunker, text_for_embedding
from thread_rag.ingest.text import parse_text
from thread_rag.retrieve.search_index import bm25_tokenize
from thread_rag.settings import load_settings

rev = sys.argv[1] if len(sys.argv) > 1 else "80ce65f"
src = subprocess.run(["git", "show", f"{rev}:thread_rag/ingest/chunker.py"], capture_output=True, text=True,
                     check=True).stdout
old = types.ModuleType("thread_rag.ingest.old_chunker")
old.__package__ = "thread_rag.ingest"
sys.modules[old.__name__] = old
exec(compile(src, f"{rev}:chunker.py", "exec"), old.__dict__)
settings = load_settings(None)
counter = TokenCounter(packaged_minilm_path())
for name in ("limit-small", "musique", "leval-legal", "aws-docs-qa"):
    ds = load_dataset(name, settings.shared_data)
    n = more_lines = moved = 0
    for d in ds.corpus:
        doc = parse_text(d.text, d.key, markdown=(d.kind == "markdown"))
        if not doc.blocks:
            continue
        a = old.make_chunker(settings, counter.count).chunk(doc)
        b = make_chunker(settings, counter.count).chunk(doc)
        assert len(a) == len(b), (name, d.key)
        for x, y in zip(a, b):
            n += 1
            assert (len(x.units), x.n_tokens, x.heading_path) == (len(y.units), y.n_tokens, y.heading_path), \
                (name, d.key)
            moved += (x.char_start, x.char_end) != (y.char_start, y.char_end)
            assert text_for_embedding(x.text) == text_for_embedding(y.text), (name, d.key)
            assert bm25_tokenize([x.text]) == bm25_tokenize([y.text]), (name, d.key)
            more_lines += x.text != y.text
    print(f"{name}: {n} chunks, the same for retrieval; {more_lines} keep more line breaks (or indentation) now; "
          f"{moved} with other character offsets", flush=True)
