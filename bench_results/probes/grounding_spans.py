"""The span check, run again over the stored model answers of the grounding runs with today's checker, and the
hand-checked sample drawn from them (issue 43).

    PYTHONPATH=. python bench_results/probes/grounding_spans.py recheck > bench_results/grounding-spans.json
    PYTHONPATH=. python bench_results/probes/grounding_spans.py sample > bench_results/checker-labels/sample.jsonl
    PYTHONPATH=. python bench_results/probes/grounding_spans.py fresh > bench_results/checker-labels/sample-2.jsonl

The answers do not depend on the checker (with UNSUPPORTED = "mark" it only marks), so the stored texts are checked
again here, every set with the same checker, against the same sources: each row's `read` ranges rebuilt into the
numbered sources the answer path made (the benchmark corpora in bench_out/ as the runs indexed them; the Debian guide
indexed again), checked as the answer path checks a stream (check.CheckedStream, segment by segment).
The sample: every Debian answer, and a seeded draw of 20 aws-docs-qa answers (explain and sources configurations
alike, refusals left out), drawn before any label was written. The fresh sample (``fresh``, 2026-12-05): a seeded draw
of 60 of the other aws-docs-qa answers, none of them in the first sample, drawn after the checker's last change (the
one the first sample's miss led to), so its labels judge a checker nobody fitted to them. Only the sets whose grounding run has model answers are
read (the leval-legal run measured the quote alone). Both samples were drawn from the aws-docs-qa run of 2026-12-04,
kept as grounding-aws-docs-qa-2026-12-04.json since the run of 2026-12-05 (today's code) replaced it; ``recheck``
reads the current runs.
"""
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/
import json
import random
import sys
import tempfile
from pathlib import Path

from thread_rag.agent.check import DANGEROUS, CheckedStream, SourceText, citations_hold
from thread_rag.agent.reading import source_of as _source
from thread_rag.engine import Engine
from thread_rag.ids import ChunkId
from thread_rag.settings import load_settings
from bench.datasets import shared_data

DRAW = {"aws-docs-qa": 20, "leval-legal": 6, "musique": 6}


def _answered(name: str) -> bool:
    p = Path(f"bench_results/grounding-{name}.json")
    return p.exists() and any(json.loads(p.read_text())["rows"].get(c) for c in ("explain", "sources"))


SETS = tuple(n for n in ("debian", *DRAW) if _answered(n))


def engines() -> dict:
    from bench.corpus import open_corpus_engine
    from bench.datasets import load_dataset

    settings = load_settings()
    home = Path(tempfile.mkdtemp(prefix="grounding-spans-"))
    deb = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "cache")))
    deb.index_file(str(shared_data() / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf"))
    out = {"debian": (deb, {})}
    for name in (n for n in DRAW if n in SETS):
        ds = load_dataset(name, shared_data(), limit=60, seed=13, split="test")  # the runs' sample and corpus
        out[name] = (open_corpus_engine(settings, ds)[0], {q.qid: q.text for q in ds.queries})
    return out


def sources(engine, read: list[str]) -> list:
    out = []
    for n, rng in enumerate(read, 1):
        first, _, last = rng.partition("..")
        a, b = ChunkId.parse(first), ChunkId.parse(last or first)
        thread = engine.thread(a.serial)
        src = _source(thread.chunks[a.position:b.position + 1], thread.record.name, "entry", lambda t: 0)
        src.n = n
        out.append(src)
    return out


def checked(answer: str, srcs: list) -> dict:
    stream = CheckedStream(SourceText([x.read_text() for x in srcs]))  # what the answer path checks against
    stream.feed(answer)
    stream.close()
    bad = [s for s in stream.checked if not s.found]
    return {"checked": len(stream.checked), "unsupported": len(bad),
            "unsupported_commands": sum(s.kind in DANGEROUS for s in bad),
            "spans": [{"text": s.text, "kind": s.kind, "found": s.found, "missing": s.missing} for s in stream.checked],
            "citations_held": citations_hold(answer, {x.n: x.text for x in srcs})}


SAMPLED = {"aws-docs-qa": "grounding-aws-docs-qa-2026-12-04.json"}  # the runs the hand-labelled samples drew from


def rows(name: str, sampled: bool = False) -> dict:
    d = json.loads(Path("bench_results", SAMPLED.get(name, f"grounding-{name}.json") if sampled
                        else f"grounding-{name}.json").read_text())
    return {c: [r for r in d["rows"].get(c, []) if not r["refused"]] for c in ("explain", "sources")}


def recheck() -> dict:
    eng = engines()
    out = {"command": "PYTHONPATH=. python bench_results/probes/grounding_spans.py recheck", "sets": {}}
    for name in SETS:
        engine, _ = eng[name]
        per = {}
        for config, rs in rows(name).items():
            got = [{"qid": r["qid"], **checked(r["text"], sources(engine, r["read"]))} for r in rs]
            spans = sum(g["checked"] for g in got)
            bad = sum(g["unsupported"] for g in got)
            held = [g["citations_held"] for g in got]
            per[config] = {"answers": len(got), "checked_spans": spans, "unsupported_spans": bad,
                           "unsupported_rate": round(bad / spans, 4) if spans else None,
                           "answers_with_unsupported": sum(g["unsupported"] > 0 for g in got),
                           "answers_with_unsupported_command": sum(g["unsupported_commands"] > 0 for g in got),
                           "cited_sentences_with_spans": sum(h["sentences"] for h in held),
                           "citation_precision": round(sum(h["held"] for h in held) / sum(h["sentences"] for h in held), 4)
                           if sum(h["sentences"] for h in held) else None, "rows": got}
        out["sets"][name] = per
    return out


def sample() -> list[dict]:
    rng = random.Random(43)
    eng = engines()
    items = []
    for name in SETS:
        engine, questions = eng[name]
        rs = [r for c in ("explain", "sources") for r in rows(name, sampled=True)[c] if r["text"].strip()]
        for r in (rs if name == "debian" else rng.sample(rs, DRAW[name])):
            srcs = sources(engine, r["read"])
            items.append({"id": f"{name}:{r['qid']}:{r['config']}", "question": r.get("question") or questions[r["qid"]],
                          "answer": r["text"], "sources": [x.header() + "\n" + x.text for x in srcs]})
    return items


def fresh(n: int = 60) -> list[dict]:
    """``n`` aws-docs-qa answers the first sample does not hold, drawn with their own seed."""
    first = {json.loads(line)["id"] for line in Path("bench_results/checker-labels/sample.jsonl").read_text().splitlines()
             if line.strip()}
    engine, questions = engines()["aws-docs-qa"]
    rs = [r for c in ("explain", "sources") for r in rows("aws-docs-qa", sampled=True)[c] if r["text"].strip()]
    rs = [r for r in rs if f"aws-docs-qa:{r['qid']}:{r['config']}" not in first]
    out = []
    for r in random.Random(4302).sample(rs, min(n, len(rs))):
        srcs = sources(engine, r["read"])
        out.append({"id": f"aws-docs-qa:{r['qid']}:{r['config']}", "question": questions[r["qid"]],
                    "answer": r["text"], "sources": [x.header() + "\n" + x.text for x in srcs]})
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["fresh"]:
        for it in fresh():
            print(json.dumps(it, ensure_ascii=False))
    elif sys.argv[1:] == ["recheck"]:
        print(json.dumps(recheck(), indent=1, ensure_ascii=False))
    elif sys.argv[1:] == ["sample"]:
        for it in sample():
            print(json.dumps(it, ensure_ascii=False))
    else:
        sys.exit(__doc__)
