"""One-off probe (issue 14, musique all-supporting@10): the question split into steps, each step's answer read by the
embedded LLM from that step's top passages and filled into the next step. Dev halves to choose; a test half once.

    PYTHONPATH=. python bench_results/probes/decompose_probe.py DATASET [SPLIT=dev] [gold|llm] [N|all]

gold: MuSiQue's own sub-questions ("#1" = an earlier step's answer), the answers NOT given: the LLM reads each step's
      top 2 passages and answers it in a few words; that answer fills the next step. Measures the answer-filling half.
llm:  the embedded LLM (Qwen2.5-Coder-1.5B, greedy, JSON-schema constrained) writes the steps from the question alone,
      then the same chain. Measures the whole method.
Each step is searched with the default pipeline (k=10); rankings: the question's own, then the steps' interleaved
round robin (as decomposition_oracle_probe.py, whose gold-answer bound on dev is 0.95). Prints all-supporting@10 and
nDCG@10 against the question's search alone, and the seconds per question.
"""
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/
import json, os, re, sys, time
import numpy as np
from langchain_core.messages import HumanMessage, SystemMessage
from bench.corpus import open_corpus_engine
from bench.datasets import load_dataset
from bench.metrics import all_found_at_k, ndcg_at_k
from bench.retrieval import doc_ranking
from thread_rag.llm.backends import make_chat_model
from thread_rag.settings import load_settings

# the prompts this probe chose are the product's now (one home): thread_rag/agent/steps.py
from thread_rag.agent.steps import LOOKUP_ASK, LOOKUP_SYSTEM, SPLIT_ASK, SPLIT_SYSTEM, split_schema
from bench.datasets import shared_data

SPLIT_SCHEMA = split_schema(4)


def interleave(lists):
    out = [x for tup in zip(*lists) for x in tup] + [x for l in lists for x in l]
    return list(dict.fromkeys(out))


def fill(step, answers):
    return re.sub(r"#(\d)", lambda m: answers[int(m.group(1)) - 1] if int(m.group(1)) <= len(answers) else "", step)


def answer(llm, q, hits):
    p = "\n".join(f"[{i + 1}] {' '.join(h.text.split()[:90])}" for i, h in enumerate(hits[:2]))
    out = llm.invoke([SystemMessage(LOOKUP_SYSTEM), HumanMessage(LOOKUP_ASK.format(p=p, q=q))], max_tokens=16,
                     stop=["\n"]).content
    return out.strip().strip('."').strip()


def split(llm, q):
    out = llm.invoke([SystemMessage(SPLIT_SYSTEM), HumanMessage(SPLIT_ASK.format(q=q))], max_tokens=120,
                     format=SPLIT_SCHEMA).content
    try:
        steps = [s for s in json.loads(out).get("steps", []) if isinstance(s, str) and s.strip()]
    except (ValueError, AttributeError):
        steps = []
    return steps or [q]


CACHED = {}  # question -> steps, from an earlier run's output (the LLM is greedy: the same steps again)


def main(name, split_="dev", mode="gold", n=None):
    s = load_settings(None)
    ds = load_dataset(name, shared_data(), split=split_)
    engine, keymap, _ = open_corpus_engine(s, ds)
    raw = {}
    if name == "musique":
        raw = {q["question"]: q for q in json.load(open(shared_data() / "musique-hipporag100/musique_train.json"))}
    llm = make_chat_model(s)
    qs = ds.queries[:n] if n else ds.queries
    a0, a1, n0, n1, secs, recs = [], [], [], [], [], []
    for q in qs:
        t0 = time.perf_counter()
        base = doc_ranking(engine.retriever.search(q.text, k=10).hits, keymap)
        steps = ([d["question"] for d in raw[q.text]["question_decomposition"]] if mode == "gold" else
                 CACHED[q.text] if q.text in CACHED else split(llm, q.text))
        answers, lists, searched = [], [], []
        for i, st in enumerate(steps):
            text = fill(st, answers, searched)
            hits = engine.retriever.search(text, k=10).hits
            lists.append(doc_ranking(hits, keymap))
            searched.append(text)
            if len(steps) > 1:
                answers.append(answer(llm, text, hits))
        bridge = [a for a in answers[:-1] if a]  # every step's answer but the last: the names the question hides
        qa = doc_ranking(engine.retriever.search(" ".join([q.text] + bridge), k=10).hits, keymap) if bridge else base
        qa_all = (doc_ranking(engine.retriever.search(" ".join([q.text] + [a for a in answers if a]), k=10).hits, keymap)
                  if answers else base)
        secs.append(time.perf_counter() - t0)
        ranked = interleave([base] + lists) if len(steps) > 1 else base
        a0.append(all_found_at_k(base, q.gold_docs, 10)); a1.append(all_found_at_k(ranked, q.gold_docs, 10))
        n0.append(ndcg_at_k(base, q.gold_docs, 10)); n1.append(ndcg_at_k(ranked, q.gold_docs, 10))
        gold_ans = [d["answer"] for d in raw.get(q.text, {}).get("question_decomposition", [])]
        recs.append({"q": q.text, "steps": steps, "searched": searched, "answers": answers, "gold_answers": gold_ans,
                     "gold": sorted(q.gold_docs), "base": base, "lists": lists, "qa": qa, "qa_all": qa_all})
        print(f"{int(a0[-1])}->{int(a1[-1])} {secs[-1]:5.1f}s {q.text[:60]!r} -> {searched} | gold {gold_ans[:-1]}",
              flush=True)
    print(f"{name} {split_} {len(qs)} q, mode {mode}: all@10 {np.mean(a0):.3f} -> {np.mean(a1):.3f}, ndcg@10 "
          f"{np.mean(n0):.4f} -> {np.mean(n1):.4f}; up {sum(b > a for a, b in zip(a0, a1))} down "
          f"{sum(b < a for a, b in zip(a0, a1))}; {np.median(secs):.1f} s/q median, {np.max(secs):.1f} max")
    json.dump(recs, open(f"/tmp/decompose-{name}-{split_}-{mode}.json", "w"), indent=1)
    merges(recs)


def merges(recs):
    """Offline: ways to merge the question's ranking with the steps' and with "question + the steps' answers"."""
    ways = {"base": lambda r: r["base"],
            "base+steps": lambda r: interleave([r["base"]] + r["lists"]) if len(r["lists"]) > 1 else r["base"],
            "base+steps+qa": lambda r: interleave([r["base"]] + r["lists"] + [r["qa"]]) if len(r["lists"]) > 1 else r["base"],
            "base+qa": lambda r: interleave([r["base"], r["qa"]]),
            "qa": lambda r: r["qa"],
            "base+qa_all": lambda r: interleave([r["base"], r["qa_all"]]),
            "qa_all": lambda r: r["qa_all"],
            "base+steps+qa_all": lambda r: interleave([r["base"]] + r["lists"] + [r["qa_all"]]) if len(r["lists"]) > 1 else r["base"]}
    b = [all_found_at_k(r["base"], set(r["gold"]), 10) for r in recs]
    for name, f in ways.items():
        al = [all_found_at_k(f(r), set(r["gold"]), 10) for r in recs]
        nd = [ndcg_at_k(f(r), set(r["gold"]), 10) for r in recs]
        print(f"  {name:20s} all@10 {np.mean(al):.3f} ndcg@10 {np.mean(nd):.4f} up {sum(y > x for x, y in zip(b, al))} "
              f"down {sum(y < x for x, y in zip(b, al))}")


if __name__ == "__main__":
    a = sys.argv[1:]
    if os.environ.get("STEPS_FROM"):  # an earlier run's /tmp/decompose-*.json: reuse its LLM-written steps
        CACHED.update({r["q"]: r["steps"] for r in json.load(open(os.environ["STEPS_FROM"]))})
    main(a[0], a[1] if len(a) > 1 else "dev", a[2] if len(a) > 2 else "gold",
         int(a[3]) if len(a) > 3 and a[3] != "all" else None)
