"""Issue 44: a one-page file indexed cold, with the small-job embedder (the INT8 ONNX MiniLM queries use) and with
the torch MiniLM, and how far the two embedders' vectors are apart.

1. Speed (farm-bench, both commands in turn, 5 runs each after a warm-up; each run copies a 6-document library and
   indexes a 578-word page of the Debian guide's TXT edition into it):

    farm-bench -n 5 --timeout 400 --vs "sh -c 'rm -rf /tmp/cold/lib && cp -r /tmp/cold/base /tmp/cold/lib && \\
        THREAD_RAG_SMALL_INDEX_CHUNKS=0 exec thread-rag --data-dir /tmp/cold/lib index /tmp/cold/note.txt'" -- \\
        sh -c 'rm -rf /tmp/cold/lib && cp -r /tmp/cold/base /tmp/cold/lib && \\
        exec thread-rag --data-dir /tmp/cold/lib index /tmp/cold/note.txt'

   (/tmp/cold/base: `thread-rag --data-dir /tmp/cold/base index docs`; note.txt: lines 1640-1720 of install.en.txt)
2. Vectors (this script): every chunk of the Debian guide's TXT edition embedded by both; cosine per chunk, and for
   the 12 questions of txt_sections_probe.py the overlap of the dense top 10 over those chunks (queries embedded by
   the ONNX model, as searches are).

    PYTHONPATH=. python bench_results/probes/small_index_probe.py FARM_BENCH_OUTPUT.txt > bench_results/small-index.json
"""
import json
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from txt_sections_probe import QUESTIONS  # noqa: E402
from bench.retrieval import machine  # noqa: E402
from thread_rag.embedder import make_embedder, make_query_embedder  # noqa: E402
from thread_rag.ingest import make_chunker, text_for_embedding  # noqa: E402
from thread_rag.ingest.loaders import load_document  # noqa: E402
from thread_rag.settings import load_settings  # noqa: E402

TXT = Path("../shared/data/docs-debian-procedural/installation-guide-amd64-en/install.en.txt")


def farm(text: str) -> dict:
    out = {}
    for key in ("A wall s", "B wall s", "A peak MiB", "B peak MiB", "A/B wall"):
        m = re.search(rf"^{re.escape(key)}\s+(\S+)\s+(\S+)\s+(\S+)", text, re.M)
        out[key] = {"min": float(m.group(1)), "median": float(m.group(2)), "max": float(m.group(3))}
    return out


def main(farm_file: str) -> None:
    s = load_settings({})
    torch_emb, onnx_emb = make_embedder(s), make_query_embedder(s, None)
    drafts = make_chunker(s, torch_emb.count_tokens).chunk(load_document(TXT))
    texts = [text_for_embedding(d.text) for d in drafts]
    a, _ = onnx_emb.embed_with_tokens(texts)
    b, _ = torch_emb.embed_with_tokens(texts)
    cos = (a * b).sum(axis=1)
    q = onnx_emb.embed(QUESTIONS)
    overlap = [len(set(np.argsort(-(a @ v))[:10]) & set(np.argsort(-(b @ v))[:10])) / 10 for v in q]
    top1 = sum(int(np.argmax(a @ v) == np.argmax(b @ v)) for v in q)
    text = Path(farm_file).read_text()
    print(json.dumps({
        "command": "PYTHONPATH=. python bench_results/probes/small_index_probe.py FARM_BENCH_OUTPUT.txt",
        "machine": machine(), "speed": farm(text), "farm_bench_output": text.splitlines(),
        "chunks": len(texts), "cosine": {"min": round(float(cos.min()), 5), "mean": round(float(cos.mean()), 5)},
        "dense_top10_overlap_mean": round(float(np.mean(overlap)), 3), "dense_top1_same": f"{top1}/{len(QUESTIONS)}"},
        indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
