"""Scores of an eval run: each question's rank of its first gold chunk, summaries by kind, document and section,
the weakest sections with a reason the code can see, refusals, and the paired difference to an earlier run."""
from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable

from .stats import bootstrap_ci

K = 10  # hits looked at per question: hit@1, hit@5, MRR@10


@dataclass
class Scored:
    qid: str
    kind: str
    doc_id: str
    section: str
    answerable: bool
    searched: bool = False         # its retrieval was scored (answerable questions)
    rank: int | None = None        # 1-based rank of the first gold chunk in the top K hits (None: not there)
    doc_rank: int | None = None    # rank of the gold chunks' document among the hits' documents
    beaten_by: str | None = None   # the hit just above the gold chunk (the top hit when it is not in the top K)
    seconds: float = 0.0
    refused: bool | None = None    # --answers: the answer path refused
    quote_gold: bool | None = None  # --answers: a quoted line comes from a gold chunk
    checked: int | None = None     # --answers full: spans the checker looked at in the explanation
    unsupported: int | None = None  # ... of which not in the sources

    @property
    def hit1(self) -> float:
        return float(self.rank == 1)

    @property
    def hit5(self) -> float:
        return float(self.rank is not None and self.rank <= 5)

    @property
    def mrr(self) -> float:
        return 1.0 / self.rank if self.rank else 0.0

    def row(self) -> dict:
        from ..records import to_dict

        return {**to_dict(self), "hit1": self.hit1, "hit5": self.hit5, "mrr": round(self.mrr, 4)}


def rank_of(hits: list, gold: set) -> tuple[int | None, int | None, str | None]:
    """(rank of the first gold chunk, rank of its document among the hits' documents, the hit just above the gold
    chunk, or the top hit when the gold chunk is not in the top K)."""
    docs: list[str] = []
    rank = doc_rank = None
    gold_docs = {g.rsplit("_", 1)[0] for g in gold}
    for i, h in enumerate(hits[:K]):
        if h.doc_id not in docs:
            docs.append(h.doc_id)
        if doc_rank is None and h.doc_id in gold_docs:
            doc_rank = len(docs)
        if h.chunk_id in gold:
            rank = i + 1
            break
    beaten = hits[0].chunk_id if hits and rank != 1 else None
    if rank and rank > 1:
        beaten = hits[rank - 2].chunk_id
    return rank, doc_rank, beaten


def score_retrieval(questions: list, search: Callable[[str], list], progress=None) -> list[Scored]:
    """Each answerable question searched over the whole library (``search(text) -> hits``, the top K)."""
    out = []
    asked = [q for q in questions if q.answerable]
    for i, q in enumerate(asked):
        t = time.perf_counter()
        hits = search(q.text)
        rank, doc_rank, beaten = rank_of(hits, set(q.gold))
        out.append(Scored(q.qid, q.kind, q.doc_id, q.section, True, True, rank, doc_rank, beaten,
                          round(time.perf_counter() - t, 4)))
        if progress:
            progress("search", i + 1, len(asked))
    return out


def score_answers(questions: list, scored: list[Scored], answer: Callable[[str], dict], progress=None) -> list[Scored]:
    """Every question (probes too) asked through the answer path (``answer(text)`` -> the ``ask --json`` dict):
    refused or not, whether the quote comes from a gold chunk, and the explanation's unsupported spans."""
    by_q = {s.qid: s for s in scored}
    out = []
    for i, q in enumerate(questions):
        s = by_q.get(q.qid) or Scored(q.qid, q.kind, q.doc_id, q.section, q.answerable)
        a = answer(q.text)
        s.refused = bool(a.get("refused"))
        quoted = {x.get("chunk_id") for x in a.get("quote") or []}
        s.quote_gold = bool(quoted & set(q.gold)) if q.answerable and not s.refused else None
        if a.get("checked") is not None:
            s.checked, s.unsupported = a["checked"], len(a.get("unsupported") or [])
        out.append(s)
        if progress:
            progress("answer", i + 1, len(questions))
    return out


def mean_ci(values: list[float], places: int = 4) -> dict:
    """The mean of ``values``, its bootstrap 95% CI and their count, rounded to ``places``."""
    if not values:
        return {"mean": None, "ci95": None, "n": 0}
    lo, hi = bootstrap_ci(values)
    return {"mean": round(sum(values) / len(values), places), "ci95": [round(lo, places), round(hi, places)],
            "n": len(values)}


def _group(rows: list[Scored]) -> dict:
    return {"questions": len(rows), "hit@1": round(sum(r.hit1 for r in rows) / len(rows), 4),
            "hit@5": round(sum(r.hit5 for r in rows) / len(rows), 4),
            "mrr@10": round(sum(r.mrr for r in rows) / len(rows), 4)}


def summarize(rows: list[Scored]) -> dict:
    """Overall (with bootstrap CIs), by kind and by document; answers where they were asked."""
    ret = [r for r in rows if r.searched]
    out: dict = {}
    if ret:
        out["retrieval"] = {"hit@1": mean_ci([r.hit1 for r in ret]), "hit@5": mean_ci([r.hit5 for r in ret]),
                            "mrr@10": mean_ci([r.mrr for r in ret])}
        out["by_kind"] = {k: _group([r for r in ret if r.kind == k]) for k in sorted({r.kind for r in ret})}
        out["by_document"] = {d: _group([r for r in ret if r.doc_id == d]) for d in sorted({r.doc_id for r in ret})}
    asked = [r for r in rows if r.refused is not None]
    if asked:
        ans = [r for r in asked if r.answerable]
        probes = [r for r in asked if not r.answerable]
        quoted = [r for r in ans if r.quote_gold is not None]
        checked = [r for r in asked if r.checked]
        out["answers"] = {
            "answerable": len(ans), "wrongly_refused": sum(r.refused for r in ans),
            "probes": len(probes), "probes_refused": sum(r.refused for r in probes),
            "quote_from_gold": round(sum(r.quote_gold for r in quoted) / len(quoted), 4) if quoted else None,
            "spans_checked": sum(r.checked for r in checked), "spans_unsupported": sum(r.unsupported for r in checked),
            "answers_with_unsupported": sum(1 for r in checked if r.unsupported)}
    return out


# --- why a section is weak ---------------------------------------------------------------------------------------
def _shingles(text: str) -> set:
    w = re.findall(r"\w+", text.lower())
    return {" ".join(w[i:i + 3]) for i in range(max(len(w) - 2, 1))}


def reason(gold_text: str, gold_doc: str, section: str, beaten_text: str | None, beaten_id: str | None,
           beaten_section: str, common_lines: set) -> str:
    """What the code can see about a missed question's gold chunk, the first that applies: a near-duplicate passage
    ranked above it, the same section in another document ranked above it (another edition of the manual), mostly
    boilerplate (lines found in 3+ other chunks of its document), a table flattened (numbers without rows), no
    heading, else the chunk that outranked it."""
    lines = [ln.strip() for ln in gold_text.split("\n") if ln.strip()]
    tokens = gold_text.split()
    if beaten_text is not None:
        a, b = _shingles(gold_text), _shingles(beaten_text)
        if a and b and len(a & b) / len(a | b) >= 0.5:
            return f"near-duplicate passage elsewhere ({beaten_id})"
    last = lambda sec: sec.rsplit(" > ", 1)[-1].strip()  # noqa: E731
    if beaten_id and section and beaten_section and last(section).lower() == last(beaten_section).lower() \
            and beaten_id.rsplit("_", 1)[0] != gold_doc:
        return f"the same section in another document ranked first ({beaten_id})"
    if lines and sum(ln in common_lines for ln in lines) / len(lines) >= 0.5:
        return "mostly boilerplate (its lines recur in 3+ other chunks of its document)"
    numeric = sum(bool(re.fullmatch(r"[\d.,%/x:-]+[A-Za-z]{0,3}", t)) for t in tokens)
    if len(tokens) >= 20 and numeric / len(tokens) >= 0.3 and "|" not in gold_text:
        return "table flattened (numbers without rows)"
    if not section:
        return "no heading"
    if beaten_id:
        return f"outranked by {beaten_id}" + (f" ({last(beaten_section)})" if beaten_section else "")
    return ""


def common_lines(chunks: list, times: int = 4) -> dict:
    """Per document, its lines (of 3+ words) found in at least ``times`` of its chunks: boilerplate (running
    headers, footers, notices). ``chunks``: (doc id, text) pairs."""
    by_doc: dict = defaultdict(Counter)
    for doc, t in chunks:
        by_doc[doc].update({ln.strip() for ln in t.split("\n") if len(ln.split()) >= 3})
    return {doc: {ln for ln, n in c.items() if n >= times} for doc, c in by_doc.items()}


def weakest_sections(rows: list[Scored], questions: dict, chunk_text: Callable[[str], str | None],
                     chunk_section: Callable[[str], str], common: dict, limit: int = 10) -> list[dict]:
    """Sections with a question whose gold chunk is not in the top 5, worst first (hit@5, then MRR), each with the
    reason of its first miss."""
    by_section: dict = defaultdict(list)
    for r in rows:
        if r.searched:
            by_section[(r.doc_id, r.section)].append(r)
    out = []
    for (doc, section), rs in by_section.items():
        missed = [r for r in rs if not r.hit5]
        if not missed:
            continue
        m = missed[0]
        q = questions[m.qid]
        gold_text = chunk_text(q.gold[0]) or ""
        beaten_text = chunk_text(m.beaten_by) if m.beaten_by else None
        out.append({"doc_id": doc, "section": section, **_group(rs), "missed": len(missed),
                    "example": q.text,
                    "reason": reason(gold_text, doc, section, beaten_text, m.beaten_by,
                                     chunk_section(m.beaten_by) if m.beaten_by else "", common.get(doc, set()))})
    out.sort(key=lambda x: (x["hit@5"], x["mrr@10"], -x["questions"], x["doc_id"], x["section"]))
    return out[:limit]


# --- against an earlier run --------------------------------------------------------------------------------------
def compare_runs(now: list[dict], before: list[dict]) -> dict:
    """The paired differences (now - before) over the questions both runs searched or answered, with bootstrap 95%
    CIs; questions only one run has are counted."""
    from .stats import paired_rows

    ret_now = [r for r in now if r.get("searched")]
    ret_before = [r for r in before if r.get("searched")]
    out: dict = {"paired": 0}
    for key, name in (("hit1", "hit@1"), ("hit5", "hit@5"), ("mrr", "mrr@10")):
        diff, ci, n = paired_rows(ret_now, ret_before, key)
        out[name] = {"diff": diff, "ci95": ci}
        out["paired"] = n
    both = {r["qid"] for r in ret_now} & {r["qid"] for r in ret_before}
    out["only_now"] = len({r["qid"] for r in ret_now} - both)
    out["only_before"] = len({r["qid"] for r in ret_before} - both)
    before_by = {r["qid"]: r for r in before}
    out["changed"] = sum(1 for r in ret_now if r["qid"] in before_by and before_by[r["qid"]].get("rank") != r.get("rank"))
    refused = [(r, before_by[r["qid"]]) for r in now if r.get("refused") is not None and r["qid"] in before_by
               and before_by[r["qid"]].get("refused") is not None]
    if refused:
        out["refusals"] = {"answerable_now": sum(a["refused"] for a, b in refused if a["answerable"]),
                           "answerable_before": sum(b["refused"] for a, b in refused if a["answerable"]),
                           "probes_now": sum(a["refused"] for a, b in refused if not a["answerable"]),
                           "probes_before": sum(b["refused"] for a, b in refused if not a["answerable"])}
    return out
