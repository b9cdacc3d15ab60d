"""One-off probe (2026-12-03): which chunk of a multi-chunk source a citation names, judged on the published suite
answers (no LLM call: the stored walk answers, their sources and citations are read back from suite-*.json).

    PYTHONPATH=. python bench_results/probes/cite_chunk_probe.py > bench_results/probes/cite_chunk_probe.txt

For every citation of a walk answer into a source of two or more chunks (the walk's), the chunk named by
- "first": the source's first chunk (the rule before 2026-11-30),
- "embedding": the chunk nearest the sentences citing it by embedding (the rule the suite answers were made with),
- "words": the rule since 2026-12-03 (the chunks sharing the most words with those sentences, numbers twice, markers
  left out; the embedding among them),
is "precise" when it holds at least half of the gold answer's tokens (the suite's citation-precision test, applied to
the chunk instead of the whole source). "any" counts citations where some chunk of the source is precise (the
ceiling); "words_up"/"words_down": citations the word rule gets right where the embedding rule does not, and the
reverse. Stored answers are cut at 300 characters, so the sentences citing a source can be shorter than the model's.
"stored_first": citations whose stored chunk is the source's first (the suite ran on 2026-11-30 under the first-chunk
rule: all of them). Same corpora as the suite (bench_out/, built by `thread-rag bench suite`).
"""
import json
import sys
from pathlib import Path

from thread_rag.agent.answer import cited_text, holding_chunks
from thread_rag.agent.reading import closest
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.bench.metrics import token_coverage
from thread_rag.ids import ChunkId
from thread_rag.settings import load_settings


def span_ids(span: str) -> list[str]:
    first, _, last = span.partition("..")
    a = ChunkId.parse(first)
    b = ChunkId.parse(last) if last else a
    return [str(ChunkId(a.serial, p)) for p in range(a.position, b.position + 1)]


def main() -> None:
    base = load_settings(None)
    for name in ("aws-docs-qa", "leval-legal", "musique"):
        suite = json.loads(Path(f"bench_results/suite-{name}.json").read_text())
        ds = load_dataset(name, base.shared_data, limit=suite["questions"], split="test")
        gold = {q.qid: (q.spans[0] if q.spans else None) for q in ds.queries}
        engine, _, _ = open_corpus_engine(base, ds)
        index = engine.retriever.index
        counts = dict.fromkeys(("citations", "judged", "first", "embedding", "words", "any", "words_up", "words_down",
                                "stored_first"), 0)
        for row in suite["answers"]["rows"]["walk"]:
            sources = [span_ids(s) for s in row["read"]]
            for c in row["citations"]:
                n, ids = next(((i + 1, s) for i, s in enumerate(sources) if c["chunk_id"] in s), (0, []))
                if len(ids) < 2:
                    continue
                counts["citations"] += 1
                said = cited_text(row["answer"], n)
                texts = [engine.chunk(x).text for x in ids]
                vec = engine.query_embedder.embed_queries([said])[0]
                by_embedding = closest(index, vec, ids)[0]
                by_words = closest(index, vec, [ids[i] for i in holding_chunks(said, texts)])[0]
                counts["stored_first"] += ids[0] == c["chunk_id"]
                g = gold.get(row["qid"])
                if g is None:
                    continue
                counts["judged"] += 1
                precise = {x: token_coverage(t, g) >= 0.5 for x, t in zip(ids, texts)}
                counts["first"] += precise[ids[0]]
                counts["embedding"] += precise[by_embedding]
                counts["words"] += precise[by_words]
                counts["any"] += any(precise.values())
                counts["words_up"] += precise[by_words] and not precise[by_embedding]
                counts["words_down"] += precise[by_embedding] and not precise[by_words]
        print(name, json.dumps(counts), flush=True)
        engine.close()


if __name__ == "__main__":
    sys.exit(main())
