"""One-off probe (issue 14, review risk): where the second hop's picks come from at k=5 (the agent's search), dev halves.

    PYTHONPATH=. python bench_results/probes/hop_picks_probe.py aws-docs-qa musique

Counts, over each dev question's top 5 with HOP_K=20 (other hop settings at their defaults), the picks placed after the top
hit, how many are chunks of the top hit's own document, and how many lie within 2 positions of it (the walk reads those
anyway). Output: hop_picks_probe.txt.
"""
import sys
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.settings import load_settings
s = load_settings(None).replace(HOP_K=20)
for name in sys.argv[1:]:
    ds = load_dataset(name, s.shared_data, split="dev")
    engine, keymap, _ = open_corpus_engine(s, ds)
    picks = near = same = 0
    for q in ds.queries:
        hits = engine.retriever.search(q.text, k=5).hits
        top = hits[0]
        for h in hits[1:]:
            if h.ranked_by == "hop":
                picks += 1
                a, b = int(top.chunk_id.rsplit("_", 1)[1]), int(h.chunk_id.rsplit("_", 1)[1])
                same += h.doc_id == top.doc_id
                near += h.doc_id == top.doc_id and abs(a - b) <= 2
    print(name, len(ds.queries), "q: picks", picks, "same document", same, "within 2 positions of the top hit", near)
