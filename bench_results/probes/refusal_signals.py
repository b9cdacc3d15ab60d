"""Refusal signals on the dev halves only (issue 43's "refuse from the evidence"): can any signal the answer path has
tell "answered here" from "on topic, not answered" with at most 5% of answerable questions refused?

Per set (dev half, the quick corpus of 30 questions, as ``bench refusal``): each question asked in quote mode
(``QUOTE_MIN`` off) of its corpus (answerable), and of a copy of that corpus with every sampled question's gold
documents deleted (in-domain unanswerable: the same questions in the same domain, their answer gone; not possible on
leval-legal, whose corpus is its gold contracts). Signals, each tried as a refusal rule:
- ``best``: the quote's best line logit (today's ``QUOTE_MIN``), at the highest floor refusing <= 1 answerable;
- ``coverage``: the IDF-weighted share of the question's words (folded, crude stems) no source read holds, >= 0.5;
- ``named``: an identifier or capitalised name of the question (not first in it or after a colon) no source holds.

    python bench_results/probes/refusal_signals.py > bench_results/refusal-signals-dev.json
"""
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/
import json
import math
import re
import shutil
import sys
import tempfile
import unicodedata
from collections import Counter
from pathlib import Path

from bench.corpus import bench_home, open_corpus_engine
from bench.datasets import load_dataset
from bench.refusal import quote_agent
from bench.retrieval import machine
from thread_rag.engine import Engine
from thread_rag.settings import load_settings
from bench.datasets import shared_data

STOP = set("""a an the of in on at to for from by with and or is are was were be been can could do does did how what
which who whom whose when where why will would should shall may might must i my me we our you your it its this that
these those there their they them as if not no yes any all about into than then so such per use using used get""".split())


def fold(t: str) -> str:
    return unicodedata.normalize("NFKD", t).encode("ascii", "ignore").decode().replace("\\", "")


def stem(w: str) -> str:
    for suf in ("ing", "es", "ed", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[:-len(suf)]
    return w


def words(t: str) -> list[str]:
    return [stem(w) for w in re.findall(r"[a-z0-9][a-z0-9._\-]*[a-z0-9]|[a-z0-9]", fold(t).lower())
            if w not in STOP and len(w) > 2]


def named(q: str) -> set[str]:
    q = fold(q)
    first = {m.group(2) for m in re.finditer(r"(^|[:?.!]\s*)([A-Za-z0-9][\w.\-]*)", q)}
    out = set()
    for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9._\-]*[A-Za-z0-9]|[A-Za-z0-9]", q):
        if (re.search(r"\d", w) and re.search(r"[A-Za-z]", w)) or "_" in w or re.search(r"[a-z]\.[a-z0-9]", w, re.I):
            out.add(w.lower())
        elif w[0].isupper() and w not in first and len(w) > 2:
            out.add(w.lower())
    return out


def ask_all(engine, queries) -> list[dict]:
    agent = quote_agent(engine)
    rows = []
    for q in queries:
        agent.clear()
        a = agent.ask(q.text, reader="walk")
        rows.append({"qid": q.qid, "question": q.text, "best": a.quote_best,
                     "sources": fold(" ".join(x.get("text") or "" for x in a.sources)).lower()})
    return rows


def signals(rows: list[dict], df: Counter, n: int) -> None:
    for r in rows:
        qw, src = set(words(r["question"])), r.pop("sources")
        have = set(words(src))
        idf = {w: math.log((n + 1) / (df.get(w, 0) + 1)) for w in qw}
        r["coverage_missing"] = round(sum(idf[w] for w in qw - have) / (sum(idf.values()) or 1), 3)
        r["named_missing"] = sorted(t for t in named(r["question"]) if t not in src)


def rules(groups: dict) -> dict:
    ans = groups["answerable"]
    bests = sorted(-1e9 if r["best"] is None else r["best"] for r in ans)
    floor = bests[1] if len(bests) > 1 else bests[0]  # refuses at most one answerable question (ties aside)
    tests = {"best": lambda r: r["best"] is None or r["best"] < floor,
             "coverage": lambda r: r["best"] is None or r["coverage_missing"] >= 0.5,
             "named": lambda r: r["best"] is None or bool(r["named_missing"])}
    return {"best_floor": floor, **{k: {g: f"{sum(map(t, rows))}/{len(rows)}" for g, rows in groups.items() if rows}
                                    for k, t in tests.items()}}


def main() -> None:
    s = load_settings()
    out = {"split": "dev", "machine": machine(), "command": "python bench_results/probes/refusal_signals.py", "sets": {}}
    for name in ("aws-docs-qa", "musique", "leval-legal"):
        ds = load_dataset(name, shared_data(), limit=30, seed=13, split="dev")
        engine, keymap, _ = open_corpus_engine(s, ds)
        groups = {"answerable": ask_all(engine, ds.queries), "gold_deleted": []}
        gold = {doc_id for doc_id, key in keymap.items() if any(key in q.gold_docs for q in ds.queries)}
        engine.close()
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "lib"
            shutil.copytree(bench_home(s, ds.corpus_name), home)
            copy = Engine(s.replace(HOME=str(home), CACHE_PATH=str(home / "doc_cache")))
            for doc_id in sorted(gold):
                copy.delete(doc_id)
            if copy.documents():
                groups["gold_deleted"] = ask_all(copy, ds.queries)
            copy.close()
        pieces = [" ".join(d.text.split()[i:i + 200]) for d in ds.corpus for i in range(0, max(len(d.text.split()), 1), 200)]
        df = Counter(w for p in pieces for w in set(words(p)))
        for rows in groups.values():
            signals(rows, df, len(pieces))
        out["sets"][name] = {"rules": rules(groups), "deleted_docs": len(gold), "rows": groups}
        print(name, out["sets"][name]["rules"], file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
