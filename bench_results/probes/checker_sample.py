"""The hand-checked sample for the span checker (issue 43): model answers of the grounding runs, drawn before any label
was written, with the text of the sources each answer was checked against.

    PYTHONPATH=. python bench_results/probes/checker_sample.py > bench_results/checker-labels/sample.jsonl

Every Debian answer (the procedural questions), and a seeded draw of 8 aws-docs-qa, 6 leval-legal and 6 musique answers
(explain and sources configurations alike, refusals left out). The sources are rebuilt from each row's `read` ranges on
the benchmark corpora (bench_out/, as the runs indexed them) and on a fresh index of the Debian guide: the same chunks,
joined as the answer path joins them.
"""
import json
import random
import sys
import tempfile
from pathlib import Path

from thread_rag.engine import Engine
from thread_rag.ids import ChunkId
from thread_rag.settings import load_settings
from thread_rag.threads.passages import join_thread

DRAW = {"aws-docs-qa": 8, "leval-legal": 6, "musique": 6}


def texts(engine, read: list[str]) -> list[str]:
    out = []
    for rng in read:
        first, _, last = rng.partition("..")
        a, b = ChunkId.parse(first), ChunkId.parse(last or first)
        thread = engine.thread(a.serial)
        out.append(join_thread(thread.chunks[a.position:b.position + 1]))
    return out


def rows_of(path: Path) -> list[dict]:
    d = json.loads(path.read_text())
    return [r for c in ("explain", "sources") for r in d["rows"].get(c, []) if not r["refused"] and r["text"].strip()]


def main() -> None:
    rng = random.Random(43)
    items = []
    settings = load_settings({}, env={}, config_file=False)
    home = Path(tempfile.mkdtemp(prefix="checker-sample-"))
    deb = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "cache")))
    deb.index_file(str(settings.shared_data / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf"))
    for r in rows_of(Path("bench_results/grounding-debian.json")):
        items.append({"id": f"{r['qid']}:{r['config']}", "question": r.get("question"), "answer": r["text"],
                      "sources": texts(deb, r["read"])})
    from thread_rag.bench.corpus import open_corpus_engine
    from thread_rag.bench.datasets import load_dataset

    for name, n in DRAW.items():
        ds = load_dataset(name, settings.shared_data, limit=60, seed=13, split="test")  # the runs' sample and corpus
        engine, _, _ = open_corpus_engine(settings, ds)
        questions = {q.qid: q.text for q in ds.queries}
        rows = rows_of(Path(f"bench_results/grounding-{name}.json"))
        for r in rng.sample(rows, n):
            items.append({"id": f"{r['qid']}:{r['config']}", "question": questions[r["qid"]], "answer": r["text"],
                          "sources": texts(engine, r["read"])})
    for it in items:
        print(json.dumps(it, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
