"""``thread-rag calibrate``: the library's own operating point for *answered* / *not answered*.

Scores mean different things on different libraries (a floor that refuses well on one manual refuses every answer
on another), so each library is calibrated on itself. Questions are made from its chunks by ``thread-rag eval``'s
structure rules (headings, procedures, table cells, defined terms, listings; no model). Each is asked twice through
the answer path in quote mode (no model): as the library is (answerable), and with its answering chunks hidden
everywhere the answer path looks (``retrieve/hidden.py``: the realistic negative, a manual that does not cover it,
its neighbours still there). A logistic model of the evidence (``agent/outcome.py``: the quote's score, the cosine,
the entry chunks' cross-encoder probability, words the library or the quote lacks) is fitted on those pairs, and the
threshold is put where about ``target`` of the answerable questions are refused. The rates it reports are
cross-validated: each fold's model and threshold are made without that fold's questions.

Deterministic for a library and a seed. Stored as ``calibration.json`` in the data dir; a library whose documents
changed by more than ``STALE_SHARE`` of its chunks since is calibrated again by ``index`` (``due``).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict
from typing import Callable

import numpy as np

from ..agent.outcome import Calibration, Evidence
from ..errors import ThreadRagError
from .questions import doc_key, library_key, sample_mix, structure_questions

MIN_QUESTIONS = 12    # fewer questions than this: no calibration (the floors stay)
MIN_NEGATIVES = 6     # ... or fewer questions than this whose hidden answer changed what the answer path found
QUESTIONS = 40        # questions asked, each twice
TARGET = 0.05         # share of the library's answerable questions the threshold may refuse
STALE_SHARE = 0.25    # a calibration is made again when this share of the chunks changed
FOLDS = 5
L2 = 1.0


def due(engine) -> bool:
    """Whether ``index`` should calibrate now: no calibration yet, or the library changed enough since."""
    docs = engine.documents()
    if sum(d.chunk_count for d in docs) == 0:
        return False
    cal = engine.calibration()
    return cal is None or stale_share(cal, docs) > STALE_SHARE


def stale_share(cal: Calibration, docs: list) -> float:
    """The share of the library's chunks in documents the calibration was not made with (added or changed since),
    deleted documents' chunks counted too."""
    now = {d.doc_id for d in docs}
    gone = sum(1 for d in cal.doc_keys if d not in now) * (cal.chunks / max(len(cal.doc_keys), 1))
    total = (sum(d.chunk_count for d in docs) + gone) or 1
    return (sum(d.chunk_count for d in docs if cal.doc_keys.get(d.doc_id) != doc_key(d)) + gone) / total


def calibrate(engine, questions: int = QUESTIONS, target: float = TARGET, seed: int = 13,
              progress: Callable[[str, int, int], None] | None = None, store: bool = True,
              keep: dict | None = None) -> Calibration:
    """Make the library's calibration and store it (``store``); ThreadRagError when too few questions can be made.
    ``keep``: filled with the questions and their evidence (benchmarks publish them)."""
    if not 0 < target < 0.5:
        raise ThreadRagError(f"target {target!r}: the share of answerable questions refused, between 0 and 0.5")
    t0 = time.perf_counter()
    path = engine.home / "calibration.json"
    if store:
        engine.writable(path, "the calibration cannot be stored")
    docs = engine.documents()
    threads = [engine.thread(d.serial) for d in docs]
    asked = questions_for(threads, questions, seed)
    if len(asked) < MIN_QUESTIONS:
        raise ThreadRagError(f"only {len(asked)} questions could be made from this library (calibration needs "
                             f"{MIN_QUESTIONS}: headings, 'To ...' procedures, tables, terms); it keeps today's floors")
    X, y, g = collect(engine, asked, progress)
    if (y == 0).sum() < MIN_NEGATIVES:
        raise ThreadRagError(f"hiding the answers changed what the answer path finds for only {int((y == 0).sum())} "
                             f"of {len(asked)} questions (calibration needs {MIN_NEGATIVES}): this library answers "
                             f"its own questions in several places; it keeps today's floors")
    if keep is not None:
        keep.update(questions=[(q.kind, q.text) for q in asked], X=X.round(4).tolist(), y=y.tolist(), groups=g.tolist())
    mean, std, w = fit(X, y)
    threshold = operating_point(probabilities(X[y == 1], mean, std, w), target)
    cal = Calibration(weights=w[:-1].tolist(), bias=float(w[-1]), mean=mean.tolist(), std=std.tolist(),
                      threshold=threshold, target=target, library_key=library_key(threads),
                      doc_keys={d.doc_id: doc_key(d) for d in docs}, chunks=sum(d.chunk_count for d in docs),
                      questions=len(asked), rates=cross_validated(X, y, g, target),
                      seconds=round(time.perf_counter() - t0, 2), made_at=time.strftime("%Y-%m-%dT%H:%M:%S"))
    if store:
        from ..atomic import atomic_write_json

        atomic_write_json(path, asdict(cal))
    return cal


def questions_for(threads: list, n: int, seed: int = 13) -> list:
    """The library's own answerable questions a calibration asks (``thread-rag eval``'s structure kinds, mixed)."""
    return [q for q in sample_mix(structure_questions(threads, seed=seed), n, seed) if q.answerable and q.gold]


def collect(engine, asked: list, progress=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each question's evidence as the library is (label 1) and with its gold chunks hidden (label 0; none when
    hiding changed none of the evidence: the search never reached them): (features, labels, the question each row
    belongs to)."""
    rows, labels, groups = [], [], []
    for i, q in enumerate(asked):
        if progress:
            progress("calibrating", i, len(asked))
        present = evidence_of(engine, q.text).vector()
        with engine.retriever.hiding(q.gold):
            hidden = evidence_of(engine, q.text).vector()
        rows.append(present)
        labels.append(1)
        groups.append(i)
        if not np.allclose(present, hidden):  # else the library answers it elsewhere too: no negative
            rows.append(hidden)
            labels.append(0)
            groups.append(i)
    return np.asarray(rows), np.asarray(labels, float), np.asarray(groups)


def evidence_of(engine, question: str) -> Evidence:
    """The evidence the answer path sees for ``question``, in quote mode with every floor off (no model call)."""
    from ..agent.loop import Agent

    agent = Agent(engine)
    agent.settings = engine.settings.replace(ANSWER_MODE="quote", QUOTE_MIN=-100.0, RELEVANCE_MIN=-1.0, INTENTS=False,
                                             CONDENSE_FOLLOWUPS=False, QUESTION_STEPS=0, DECIDE=False, CALIBRATION="off")
    ans = agent.ask(question, reader="walk")  # the walk: what hiding covers (the nested reader has its own tree)
    ev = (ans.outcome or {}).get("evidence")
    if not ev:  # nothing was read or quoted
        return Evidence(None, ans.relevance if ans.relevance is not None else -1.0, ans.match, 1.0, 1.0)
    return Evidence(ev["quote_best"], ev["relevance"], ev["match"], ev["absent"], ev["uncovered"],
                    margin=ev.get("margin"), spread=ev.get("spread"))


# --- the model ----------------------------------------------------------------------------------------------------
def fit(X: np.ndarray, y: np.ndarray, l2: float = L2, iters: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """L2-regularised logistic regression on standardised features by Newton's method: (mean, std, weights with the
    bias last). Deterministic."""
    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std < 1e-6] = 1.0
    Z = np.hstack([(X - mean) / std, np.ones((len(X), 1))])
    w = np.zeros(Z.shape[1])
    reg = np.full(Z.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(Z @ w)))
        grad = Z.T @ (p - y) + reg * w
        hess = Z.T @ (Z * (p * (1 - p))[:, None]) + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return mean, std, w


def probabilities(X: np.ndarray, mean: np.ndarray, std: np.ndarray, w: np.ndarray) -> np.ndarray:
    z = ((X - mean) / std) @ w[:-1] + w[-1]
    return 1.0 / (1.0 + np.exp(-z))


def operating_point(answerable: np.ndarray, target: float) -> float:
    """The threshold under which at most ``target`` of the answerable questions' probabilities fall."""
    ranked = np.sort(answerable)
    return float(ranked[min(int(math.floor(target * len(ranked))), len(ranked) - 1)])


def cross_validated(X: np.ndarray, y: np.ndarray, groups: np.ndarray, target: float, folds: int = FOLDS) -> dict:
    """Refusal rates on questions each fold's model and threshold never saw (a question's two askings in one
    fold): answerable wrongly refused, and hidden-answer questions refused."""
    refused = np.zeros(len(y), bool)
    for f in range(folds):
        test = groups % folds == f
        if not test.any() or (y[~test] == 1).sum() < 2 or (y[~test] == 0).sum() < 2:
            continue
        mean, std, w = fit(X[~test], y[~test])
        t = operating_point(probabilities(X[~test][y[~test] == 1], mean, std, w), target)
        refused[test] = probabilities(X[test], mean, std, w) < t
    return {"answerable_refused": round(float(refused[y == 1].mean()), 4),
            "hidden_refused": round(float(refused[y == 0].mean()), 4),
            "answerable": int((y == 1).sum()), "hidden": int((y == 0).sum())}
