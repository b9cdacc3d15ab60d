"""The span checker against hand labels (issue 43): its precision and recall on the hand-checked sample.

    PYTHONPATH=. python bench_results/probes/checker_score.py > bench_results/checker-labels/score.json
    PYTHONPATH=. python bench_results/probes/checker_score.py 2 > bench_results/checker-labels/score-2.json

``2``: the fresh sample (sample-2.jsonl, labels-2.json), drawn and labelled after the checker's last change.

``sample.jsonl`` (grounding_spans.py sample) holds each answer and its sources; ``labels.json`` the spans a reader marked in
each answer, blind to the checker: ``{"<id>": [{"text": ..., "kind": ..., "in_sources": true|false}, ...]}``. A
labelled span and a checker span match when one's text holds the other's (case and spacing aside). Reported: of the
spans the checker flags, how many a reader also found unsupported (precision); of the spans a reader found
unsupported, how many the checker flags (recall, the goal being all of them); the same for all checkable spans (does
the checker find what a reader would check).
"""
import json
import sys
from pathlib import Path

from thread_rag.agent.check import CheckedStream, SourceText

DIR = Path("bench_results/checker-labels")


def norm(text: str) -> str:
    return " ".join(text.replace("`", "").replace("**", "").lower().split()).strip(".,;:")


def same(a: str, b: str) -> bool:
    a, b = norm(a), norm(b)
    return bool(a) and bool(b) and (a in b or b in a)


def main() -> None:
    tag = f"-{sys.argv[1]}" if sys.argv[1:] else ""
    items = [json.loads(line) for line in (DIR / f"sample{tag}.jsonl").read_text().splitlines() if line.strip()]
    labels = json.loads((DIR / f"labels{tag}.json").read_text())
    found = flagged = flagged_right = unsupported = unsupported_caught = labelled = labelled_found = 0
    misses, false_flags = [], []
    for it in items:
        stream = CheckedStream(SourceText(it["sources"]))  # as the answer path checks a stream
        stream.feed(it["answer"])
        spans = stream.close().checked
        mine = labels.get(it["id"], [])
        labelled += len(mine)
        labelled_found += sum(any(same(s.text, m["text"]) for s in spans) for m in mine)
        found += len(spans)
        for s in spans:
            if s.found:
                continue
            flagged += 1
            if any(same(s.text, m["text"]) and not m["in_sources"] for m in mine):
                flagged_right += 1
            else:
                false_flags.append({"id": it["id"], "span": s.text, "kind": s.kind})
        for m in mine:
            if m["in_sources"]:
                continue
            unsupported += 1
            if any(same(s.text, m["text"]) and not s.found for s in spans):
                unsupported_caught += 1
            else:
                misses.append({"id": it["id"], "span": m["text"], "kind": m.get("kind")})
    out = {"command": "PYTHONPATH=. python bench_results/probes/checker_score.py" + (f" {sys.argv[1]}" if tag else ""),
           "sample": f"sample{tag}.jsonl", "answers": len(items),
           "labelled_spans": labelled, "labelled_spans_the_checker_finds": labelled_found, "checker_spans": found,
           "flagged": flagged, "flagged_that_readers_call_unsupported": flagged_right,
           "precision": round(flagged_right / flagged, 3) if flagged else None,
           "unsupported_by_readers": unsupported, "of_those_flagged": unsupported_caught,
           "recall": round(unsupported_caught / unsupported, 3) if unsupported else None,
           "false_flags": false_flags, "misses": misses}
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
