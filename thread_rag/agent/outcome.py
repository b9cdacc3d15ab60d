"""The outcome of a question: *answered*, *partly* or *not answered*, decided from evidence before any explanation.

Evidence (``Evidence``), all of it known once the quote is chosen, no model call:
- ``quote_best``: the cross-encoder's logit of the best line of what was read (the quote's score);
- ``relevance``: the best cosine between the question and an entry chunk;
- ``match``: the best cross-encoder probability among the entry chunks (stage 3), as a logit;
- ``absent``: the share of the question's words, weighted by rarity, that no chunk of the library holds;
- ``uncovered``: the share of the question's words, weighted by rarity, that no quoted line holds.

A library calibrated by ``thread-rag calibrate`` (``evaluate/calibrate.py``) combines them with its own weights into
one probability that the quote answers, and answers when it reaches the library's threshold (``Calibration``). A
library with no calibration uses the floors it always had: ``RELEVANCE_MIN`` on the cosine and ``QUOTE_MIN`` on the
quote's score.

A question of two parts ("How do I reset the database and how long does it take?") is judged part by part
(``parts``): each part's quote score and uncovered words are its own, the rest is the question's. Some parts pass:
*partly*, and the parts that fail are named. None: *not answered*. The checked explanation may afterwards only
lower the outcome (``lowered``), never raise it.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field

import numpy as np

ANSWERED, PARTLY, NOT_ANSWERED = "answered", "partly", "not_answered"
OUTCOMES = (ANSWERED, PARTLY, NOT_ANSWERED)
FEATURES = ("quote_best", "relevance", "match", "absent", "uncovered", "margin", "spread")
CALIBRATION_VERSION = 2


@dataclass
class Evidence:
    quote_best: float | None     # best line's cross-encoder logit (None: nothing could be scored)
    relevance: float             # best entry-chunk cosine
    match: float | None          # best entry chunk's cross-encoder probability (None: stage 3 off)
    absent: float = 0.0          # rarity-weighted share of the question's words no chunk holds
    uncovered: float = 0.0       # rarity-weighted share of the question's words no quoted line holds
    absent_words: list = field(default_factory=list)
    uncovered_words: list = field(default_factory=list)
    margin: float | None = None  # the best line's lead over the best line of the other sources read
    spread: float | None = None  # ... over the median line read

    def vector(self) -> np.ndarray:
        best = -12.0 if self.quote_best is None else min(max(self.quote_best, -12.0), 12.0)
        p = 0.5 if self.match is None else min(max(self.match, 1e-5), 1 - 1e-5)
        return np.array([best, self.relevance, math.log(p / (1 - p)), self.absent, self.uncovered,
                         self.margin or 0.0, self.spread or 0.0])

    def to_dict(self) -> dict:
        d = asdict(self)
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in d.items()}


def stand_out(scored: list) -> tuple[float | None, float | None]:
    """How far the best scored unit stands above the rest: (its lead over the best unit of any other source, its lead
    over the median unit). A question the sources answer has a line that stands out; one they do not answer scores
    every line alike. Scores are on the question's own scale, so this reads the same on any library."""
    scored = [u for u in scored if u.score > float("-inf")]  # units left unscored (``PART_UNITS``) aside
    if len(scored) < 2:
        return None, None
    best = max(scored, key=lambda u: u.score)
    others = [u.score for u in scored if u.source != best.source]
    margin = best.score - max(others) if others else None
    return margin, best.score - float(np.median([u.score for u in scored]))


# --- the question's words -----------------------------------------------------------------------------------------
ASKING_WORDS = frozenset("how what where when which why who whom whose does did can could should would will must may "
                         "might shall tell explain describe show give need want get use using way ways possible".split())


def words(text: str) -> list[str]:
    """The BM25 tokens of ``text`` of 3 letters or more (the search's own words, stopwords out), less the words
    that only make it a question ("how", "does", "tell")."""
    from ..retrieve.search_index import bm25_tokenize

    return [t for t in dict.fromkeys(bm25_tokenize([text])[0]) if len(t) >= 3 and t not in ASKING_WORDS]


def weighted_words(index, text: str) -> dict[str, float]:
    """The question's words with their rarity in the library, log((N + 1) / (df + 0.5)): a word no chunk holds
    weighs most, an everyday word of the manual least."""
    n = len(index)
    return {t: math.log((n + 1) / (index.doc_freq(t) + 0.5)) for t in words(text)}


def word_evidence(index, question: str, quoted: str, unknown: set) -> tuple[float, float, list, list]:
    """(absent, uncovered, absent words, uncovered words) of ``question`` against the library and the quote.
    ``unknown``: the words no chunk holds that are no everyday words (``agent.loop.unmentioned_terms``: more than one
    word piece to the embedder; "nvidia", not "containing", which a small library may simply not hold)."""
    w = weighted_words(index, question)
    total = sum(w.values())
    if not total:
        return 0.0, 0.0, [], []
    absent = [t for t in w if t in unknown]
    held = set(words(quoted))
    uncovered = [t for t in w if t not in held]
    return (sum(w[t] for t in absent) / total, sum(w[t] for t in uncovered) / total, absent, uncovered)


# --- parts of a question ------------------------------------------------------------------------------------------
ASKING = r"(?:how|what|where|when|which|why|who|whom|whose|can|could|does|do|did|is|are|was|were|should|will|would|must|may)"
ACTING = (r"(?:install|configure|set|create|add|remove|delete|enable|disable|use|run|start|stop|change|update|upgrade|"
          r"build|connect|choose|select|write|open|close|make|get|check|verify|prepare|download|boot|mount|edit|deploy|"
          r"restore|migrate|import|export|find|keep|access|view|test|move|copy|rename|load|save|register|upload|share|"
          r"attach|grant|revoke|rotate|reset|resize|scale|schedule|turn|fix|recover|replace|partition|format|encrypt|"
          r"send|apply|assign|restart|reboot|back|list|show|tell|explain|allow|block|forward|expose|point|map|bind)")
_ALSO = r"(?:(?:and\s+)?(?:also|plus),?\s+)"  # "; also, how long ...", "? Plus, can it ..."
JOINT = re.compile(rf"(?:,?\s+and\s+(?:then\s+|also\s+)?|;\s*{_ALSO}?|,\s+then\s+|\?\s+(?:and\s+)?{_ALSO}?|"
                   rf"\.\s+{_ALSO})(?=(?:{ASKING}|{ACTING})\b)", re.I)


def parts(question: str) -> list[str]:
    """The separate requests of a question, each ending in '?': joined by "and" (or ";", ", then", a second "?", and
    "also" or "plus" after ";", "?" or a full stop)
    before a word that asks (how, what, can, ...) or acts (open, restart, ...), each side at least three words, the
    left one with a word of its own and not ending in a verb; "the RAM and disk requirements" and "install and
    configure nginx" stay one."""
    q = " ".join(question.split()).rstrip()
    cuts = [m for m in JOINT.finditer(q)]
    out, at = [], 0
    for m in cuts:
        left, right = q[at:m.start()], q[m.end():]
        if len(words(left)) >= 1 and not re.search(rf"(?i)\b{ACTING}(?:\s+(?:up|down|in|out|on|off))?\s*$", left) and len(left.split()) >= 3 \
                and len(right.rstrip("?").split()) >= 3:  # "install and configure nginx" is one request
            out.append(left)
            at = m.end()
    out.append(q[at:])
    return [p.strip().rstrip("?.").strip() + "?" for p in out if p.strip(" ?.")]


def indirect(question: str) -> str:
    """"How do I install the driver?" -> "how to install the driver"; other questions quoted as asked."""
    q = question.strip().rstrip("?").strip()
    m = re.match(r"(?i)how\s+(?:do|can|should|would|could)\s+(?:i|we|you|one)\s+(.+)$|how\s+to\s+(.+)$", q)
    if m:
        return "how to " + (m.group(1) or m.group(2))
    if re.match(rf"(?i){ACTING}\b", q):  # the second part of "How do I X and open Y?"
        return "how to " + q[0].lower() + q[1:]
    return f'"{q}?"'


# --- the judge ----------------------------------------------------------------------------------------------------
@dataclass
class Calibration:
    """One library's operating point: a logistic model of the evidence (on standardised features) and the
    probability at which a quote counts as an answer, chosen so that about ``target`` of the library's own
    answerable questions are refused. ``rates``: what it gave on those questions (cross-validated)."""

    weights: list
    bias: float
    mean: list
    std: list
    threshold: float
    target: float
    library_key: str = ""
    doc_keys: dict = field(default_factory=dict)   # doc_id -> content key when it was made (staleness)
    chunks: int = 0
    questions: int = 0
    rates: dict = field(default_factory=dict)
    seconds: float = 0.0
    made_at: str = ""
    version: int = CALIBRATION_VERSION
    features: list = field(default_factory=lambda: list(FEATURES))

    def probability(self, ev: Evidence) -> float:
        z = float(((ev.vector() - np.asarray(self.mean)) / np.asarray(self.std)) @ np.asarray(self.weights)) + self.bias
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_dict(cls, d: dict) -> "Calibration":
        if d.get("version") != CALIBRATION_VERSION or d.get("features") != list(FEATURES):
            raise ValueError("calibration made by another version")
        cal = cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
        n = len(FEATURES)
        numbers = [*cal.weights, *cal.mean, *cal.std, cal.bias, cal.threshold]
        if not (len(cal.weights) == len(cal.mean) == len(cal.std) == n and all(
                isinstance(x, (int, float)) and math.isfinite(x) for x in numbers)
                and all(x > 0 for x in cal.std) and 0 < cal.threshold < 1):
            raise ValueError("calibration damaged")
        return cal


@dataclass
class Outcome:
    kind: str                                     # answered | partly | not_answered
    calibrated: bool                              # judged by the library's calibration (else today's floors)
    score: float | None = None                    # the calibrated probability that the quote answers
    threshold: float | None = None
    covered: list = field(default_factory=list)   # the parts of the question the quote answers
    missing: list = field(default_factory=list)   # ... and those it does not (partly)
    evidence: dict = field(default_factory=dict)
    reasons: list = field(default_factory=list)   # the evidence in words
    lowered: str = ""                             # why the checked explanation lowered it
    anyway: bool = False                          # explained although not answered (``ask --anyway``)

    def line(self, question: str) -> str:
        """The one line a person reads about it (empty for answered)."""
        if self.kind == NOT_ANSWERED:
            return f"The documents do not say {indirect(question)}."
        if self.lowered:
            return f"Only partly from the documents: {self.lowered}."
        if self.kind == PARTLY:
            return "Not in the documents: " + "; ".join(indirect(p) for p in self.missing) + "."
        return ""


ABSENT_WEAK = 0.2  # a weak match with this share of the question's words (by rarity) unknown to the library: not
#                    answered (chosen on musique's dev half: the one answerable question the rule touched had 0.15)


QUOTE_STRONG = 5.0  # a line scoring this (the cross-encoder's logit; > 0.99 "relevant") answers though the passage's
#                    cosine is under RELEVANCE_MIN (a page of many topics, one chunk, dilutes its vector). Chosen from
#                    the model's scale; under the floor, no question of the dev halves scores 5 (the highest, 4.1, an
#                    unanswerable contract question: bench_results/outcome-dev/), nor of the test halves (3.5).


class Judge:
    """Decides an outcome from evidence: with the library's ``calibration``, or with today's floors. Either way, a
    weak match (the entry chunks' best cross-encoder probability under ``match_min``) for a question whose words the
    library largely never uses ("nvidia" asked of the Debian guide) is not answered: both signals say the same."""

    def __init__(self, calibration: Calibration | None, relevance_min: float, quote_min: float,
                 match_min: float = 0.05):
        self.calibration, self.relevance_min, self.quote_min = calibration, relevance_min, quote_min
        self.match_min = match_min

    def passes(self, ev: Evidence) -> tuple[bool, float | None]:
        if ev.match is not None and ev.match < self.match_min and ev.absent >= ABSENT_WEAK:
            return False, None if self.calibration is None else self.calibration.probability(ev)
        if self.calibration is not None and ev.quote_best is not None:  # no score (no cross-encoder): the floors
            p = self.calibration.probability(ev)
            return p >= self.calibration.threshold, p
        near = ev.relevance >= self.relevance_min or (ev.quote_best is not None and ev.quote_best >= QUOTE_STRONG)
        ok = near and (ev.quote_best is None or ev.quote_best >= self.quote_min)
        return ok, None

    def decide(self, whole: Evidence, by_part: dict[str, Evidence]) -> Outcome:
        """``by_part``: each part's evidence when the question has more than one part (else empty)."""
        ok, p = self.passes(whole)
        cal = self.calibration
        out = Outcome(ANSWERED if ok else NOT_ANSWERED, cal is not None, None if p is None else round(p, 4),
                      None if cal is None else round(cal.threshold, 4), evidence=whole.to_dict())
        if len(by_part) > 1:
            verdicts = {q: self.passes(ev) for q, ev in by_part.items()}
            behind = outscored(by_part)
            verdicts.update({q: (False, verdicts[q][1]) for q in behind})
            out.covered = [q for q, (k, _) in verdicts.items() if k]
            out.missing = [q for q, (k, _) in verdicts.items() if not k]
            out.evidence["parts"] = {q: {**ev.to_dict(), "score": None if verdicts[q][1] is None else
                                         round(verdicts[q][1], 4)} for q, ev in by_part.items()}
            out.kind = ANSWERED if not out.missing else NOT_ANSWERED if not out.covered else PARTLY
        out.reasons = reasons(whole, out, self)
        if len(by_part) > 1 and behind:
            top = max(e.quote_best for e in by_part.values() if e.quote_best is not None)
            out.reasons += [f"no line answers {indirect(q)}: its best scores {by_part[q].quote_best:.2f} against "
                            f"{top:.2f} for the best part" for q in behind]
        return out


PART_UNITS = 16  # a part of a question is scored over the units the whole question scored best, not all it read
#                  (one pass over all of them per part cost a median 1.32 s on the Debian guide, AVX2)
PART_GAP = 6.0  # a part whose best line is under 0 and this far under the best part's is not answered (``outscored``)


def outscored(by_part: dict[str, Evidence]) -> list[str]:
    """The parts of a question no line answers while another part is answered well: the best line read for the part
    scores under 0 (the cross-encoder finds it more likely no answer than an answer) and ``PART_GAP`` or more under
    the best part's. Scores are compared within one question, so this reads the same on any library. (Chosen on
    partly.json's 24 questions, judged on partly-heldout.json.)"""
    scored = {q: e.quote_best for q, e in by_part.items() if e.quote_best is not None}
    if len(scored) < 2:
        return []
    top = max(scored.values())
    return [q for q, b in scored.items() if b < 0 and top - b >= PART_GAP]


def reasons(ev: Evidence, out: Outcome, judge: Judge) -> list[str]:
    """The evidence behind an outcome, in words."""
    said = []
    if out.calibrated and out.score is not None:
        said.append(f"calibrated on this library: {out.score:.2f} against its threshold {out.threshold:.2f}")
    else:
        said.append(f"not calibrated (no calibration applied: CALIBRATION off, or none made): floors RELEVANCE_MIN "
                    f"{judge.relevance_min:g}, QUOTE_MIN {judge.quote_min:g}")
    if ev.quote_best is not None:
        said.append(f"best quoted line scores {ev.quote_best:.2f}")
    said.append(f"closest passage cosine {ev.relevance:.2f}" + (
        f" (under RELEVANCE_MIN; a line scoring {QUOTE_STRONG:g} or more answers all the same)"
        if ev.relevance < judge.relevance_min and out.kind != NOT_ANSWERED and not out.calibrated else ""))
    if ev.match is not None and ev.match < judge.match_min:
        said.append(f"weak match: the best passage's cross-encoder probability {ev.match:.3f} is under MATCH_MIN "
                    f"{judge.match_min:g}")
    if ev.absent_words:
        said.append("the library never uses " + ", ".join(repr(w) for w in ev.absent_words))
    if ev.uncovered_words and not ev.absent_words:
        said.append("the quote does not hold " + ", ".join(repr(w) for w in ev.uncovered_words[:6]))
    return said


def lowered(out: Outcome, checked: int, unsupported: int) -> bool:
    """After the explanation: half or more of what it adds that can be checked is not in the sources (two spans or
    more): an *answered* outcome becomes *partly*. Returns whether it changed."""
    if out.kind != ANSWERED or unsupported < 2 or unsupported * 2 < checked:
        return False
    out.kind, out.lowered = PARTLY, f"{unsupported} of {checked} commands, paths or values the explanation wrote " \
                                    f"are not in the sources"
    return True
