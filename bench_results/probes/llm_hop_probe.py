"""One-off probe (issue 14, musique all-supporting@10): the LLM writes the next search (self-ask), dev halves only.

    PYTHONPATH=. python bench_results/probes/llm_hop_probe.py DATASET [SPLIT=dev] [HOPS=2] [N|all] [steps|fewshot]

Search the question (default pipeline, no hop); the embedded LLM (Qwen2.5-Coder-1.5B, greedy) reads the question and
the top passages found so far (the question's top 2, then each search's new top 1) and writes one search for the next
step (prompt "steps": a Known/Next search reply; "fewshot": two made-up examples); up to HOPS times. Rankings: the
searches' doc rankings interleaved, the question's first; and, offline ("guarded"), up to m hits of each LLM search
whose stage-3 score is >= tau placed after the question's top hit. Prints all-supporting@10 / nDCG@10 against the
question's search alone, and the seconds per question (the LLM's calls and the searches). An earlier prompt that
allowed the reply DONE got DONE for 8 of 8 dev questions and was dropped.
"""
import json, sys, time
import numpy as np
from langchain_core.messages import HumanMessage, SystemMessage
from thread_rag.bench.corpus import open_corpus_engine
from thread_rag.bench.datasets import load_dataset
from thread_rag.bench.metrics import all_found_at_k, ndcg_at_k
from thread_rag.bench.retrieval import doc_ranking
from thread_rag.llm.backends import make_chat_model
from thread_rag.settings import load_settings

SYSTEM = ("You plan searches over a document collection. Questions often need two or more facts found one after "
          "another: the answer to one step names what to look up next.")
ASKS = {
    "steps": ("Question: {q}\n\nPassages found so far:\n{p}\n\nBreak the question into steps. Reply in exactly two "
              "lines:\nKnown: <the step the passages answer, with the name they give>\n"
              "Next search: <a short search query for the next step, using that name>"),
    "fewshot": ("Rewrite the question as the next search, replacing the part the passages answer with the name they "
                "give.\n\nExample:\nQuestion: Who founded the company that makes the Foo 3000 camera?\n"
                "Passages:\n[1] The Foo 3000 is a digital camera made by Barco Optics, released in 2004.\n"
                "Next search: Who founded Barco Optics?\n\n"
                "Example:\nQuestion: What river flows through the birthplace of the author of Green Hills?\n"
                "Passages:\n[1] Green Hills is a 1950 novel by Anna Reyes.\n[2] Anna Reyes (born 1921 in Toledo) was a "
                "writer.\nNext search: What river flows through Toledo?\n\nQuestion: {q}\nPassages:\n{p}\nNext search:"),
}
ASK = [ASKS["steps"]]


def next_search(out: str) -> str:
    if ASK[0] is ASKS["steps"]:
        line = next((l.split(":", 1)[1] for l in out.splitlines() if l.lower().startswith("next search:")), "")
    else:
        line = (out.replace("Next search:", "").strip().splitlines() or [""])[0]
    return line.strip().strip('"')


DEBUG, RECS = False, []


def interleave(lists):
    out = []
    for tup in zip(*lists):
        out.extend(tup)
    for l in lists:
        out.extend(l)
    return list(dict.fromkeys(out))


def main(name, split="dev", hops=2, n=None):
    s = load_settings(None)
    ds = load_dataset(name, s.shared_data, split=split)
    engine, keymap, _ = open_corpus_engine(s, ds)
    llm = make_chat_model(s)
    qs = ds.queries[:n] if n else ds.queries
    a0, a1, n0, n1, secs = [], [], [], [], []
    for q in qs:
        t0 = time.perf_counter()
        res = engine.retriever.search(q.text, k=10)
        lists, shown, searches = [doc_ranking(res.hits, keymap)], res.hits[:2], []
        scored = [[(keymap.get(h.doc_id), h.scores["rerank"]) for h in res.hits]]
        for _ in range(hops):
            p = "\n".join(f"[{i + 1}] {' '.join(h.text.split()[:90])}" for i, h in enumerate(shown))
            out = llm.invoke([SystemMessage(SYSTEM), HumanMessage(ASK[0].format(q=q.text, p=p))],
                             max_tokens=64 if ASK[0] is ASKS["steps"] else 40).content
            line = next_search(out)
            if DEBUG: print("   LLM:", repr(out))
            if not line or "DONE" in line.upper()[:8]:
                break
            searches.append(line)
            r2 = engine.retriever.search(line, k=10)
            lists.append(doc_ranking(r2.hits, keymap))
            scored.append([(keymap.get(h.doc_id), h.scores["rerank"]) for h in r2.hits])
            seen = {h.chunk_id for h in shown}
            shown = shown + [h for h in r2.hits if h.chunk_id not in seen][:1]
        secs.append(time.perf_counter() - t0)
        ranked = interleave(lists)
        a0.append(all_found_at_k(lists[0], q.gold_docs, 10)); a1.append(all_found_at_k(ranked, q.gold_docs, 10))
        n0.append(ndcg_at_k(lists[0], q.gold_docs, 10)); n1.append(ndcg_at_k(ranked, q.gold_docs, 10))
        RECS.append({"gold": sorted(q.gold_docs), "searches": searches, "scored": scored})
        print(f"{int(a0[-1])}->{int(a1[-1])} {secs[-1]:5.1f}s  {q.text[:70]!r} -> {searches}", flush=True)
    print(f"{name} {split} {len(qs)} q, hops<={hops}: all@10 {np.mean(a0):.3f} -> {np.mean(a1):.3f}, ndcg@10 "
          f"{np.mean(n0):.4f} -> {np.mean(n1):.4f}, {np.median(secs):.1f} s/q median, {np.max(secs):.1f} max")
    json.dump(RECS, open(f"/tmp/llm_hop-{name}-{split}.json", "w"))
    guarded(RECS)


def guarded(recs):
    """Offline rules: each LLM search's hits whose stage-3 score >= tau (up to m per search) follow the top hit."""
    for m in (1, 2):
        for tau in (0.5, 0.9, 0.99):
            al, nd = [], []
            for x in recs:
                base = list(dict.fromkeys(k for k, _ in x["scored"][0]))
                ins = [k for lst in x["scored"][1:] for k, v in [kv for kv in lst if kv[1] is not None and kv[1] >= tau][:m]]
                ranked = list(dict.fromkeys(base[:1] + ins + base[1:]))
                al.append(all_found_at_k(ranked, set(x["gold"]), 10)); nd.append(ndcg_at_k(ranked, set(x["gold"]), 10))
            print(f"  guarded m={m} tau={tau}: all@10 {np.mean(al):.3f} ndcg@10 {np.mean(nd):.4f}")


if __name__ == "__main__":
    a = sys.argv[1:]
    ASK[0] = ASKS[a[4]] if len(a) > 4 else ASKS["steps"]
    main(a[0], a[1] if len(a) > 1 else "dev", int(a[2]) if len(a) > 2 else 2, int(a[3]) if len(a) > 3 and a[3] != "all" else None)
