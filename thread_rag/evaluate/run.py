"""``thread-rag eval``: make (or reuse) the question set of the library, search each question, optionally answer
each through the answer path, and write the run (``<data dir>/eval/run-*.json`` unless ``--out``).

The set lives in ``<data dir>/eval/questions.jsonl`` (or ``--set``): one question a line, plus the model's tries
(``{"tried": ...}``) so a later run resumes instead of asking the model again. Questions of a document whose content
changed since are stale and dropped (their gold chunk ids may point elsewhere); the structure questions of its new
content are made again.
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ThreadRagError
from ..records import to_dict
from .questions import EvalQuestion, doc_key, library_key, probe_questions, sample_mix, section_of, structure_questions
from .score import (K, common_lines, compare_runs, score_answers, score_retrieval, summarize, weakest_sections)

ANSWER_MODES = ("quote", "full")
ROW_KEYS = {"qid", "searched", "answerable", "rank", "hit1", "hit5", "mrr", "refused"}  # what --compare reads of a row


@dataclass
class EvalOptions:
    docs: list
    questions: int = 100
    model_questions: int = 0
    probes: int | None = None      # default: a fifth of the questions asked, at least 5
    answers: str | None = None     # quote | full
    set_path: Path | None = None
    out: Path | None = None
    compare: Path | None = None
    seed: int = 13

    def __post_init__(self) -> None:
        if not isinstance(self.questions, int) or self.questions < 1:
            raise ThreadRagError(f"--questions {self.questions}: must be 1 or more")
        if not isinstance(self.model_questions, int) or self.model_questions < 0:
            raise ThreadRagError(f"--model-questions {self.model_questions}: must be 0 or more")
        if self.probes is not None and self.probes < 0:
            raise ThreadRagError(f"--probes {self.probes}: must be 0 or more")
        if self.answers is not None and self.answers not in ANSWER_MODES:
            raise ThreadRagError(f"--answers {self.answers}: quote (no model) or full (as ask answers)")
        if self.compare is not None and not Path(self.compare).is_file():
            raise ThreadRagError(f"--compare {self.compare}: no such run file (eval writes one per run)")


# --- the set on disk ---------------------------------------------------------------------------------------------
def load_set(path: Path) -> tuple[list[EvalQuestion], list[dict]]:
    """The saved questions and the model's tries; a file that is not a question set is one clear line."""
    if not path.exists():
        return [], []
    qs, tries = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            if "tried" in d:
                tries.append(d["tried"])
            else:
                qs.append(EvalQuestion(**d))
        except (ValueError, TypeError) as exc:
            raise ThreadRagError(f"{path}: line {n} is not an eval question ({exc.__class__.__name__}); "
                                 f"move the file away to make a new set") from None
    return qs, tries


def save_set(path: Path, qs: list[EvalQuestion], tries: list[dict]) -> None:
    from ..atomic import atomic_write_bytes

    lines = [json.dumps(to_dict(q), ensure_ascii=False) for q in qs]
    lines += [json.dumps({"tried": t}, ensure_ascii=False) for t in tries]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"))


# --- making the set ----------------------------------------------------------------------------------------------
def build_set(threads: list, saved: list[EvalQuestion], tries: list[dict], opts: EvalOptions, model=None,
              on_saved=None, progress=None, library: list | None = None
              ) -> tuple[list[EvalQuestion], list[EvalQuestion], list[dict], dict]:
    """The questions for ``threads``: saved ones still current come first; structure questions fill up to
    ``opts.questions``, the model writes up to ``opts.model_questions`` (``model``: (ask, answers) callables),
    probes up to their count. Returns (this run's questions, every current question to keep in the set (more than
    this run asks when an earlier run asked for more), tries, seconds by kind). ``library``: every document search
    reads (default ``threads``), where a list question's answer may be too."""
    current = {t.record.doc_id: doc_key(t.record) for t in threads}
    key = library_key(library or threads)  # a list question holds for the library as it was when made
    keep = [q for q in saved if current.get(q.doc_id) == q.doc_key and q.extra.get("library", key) == key]
    tries = [t for t in tries if current.get(t["chunk_id"].rsplit("_", 1)[0], t.get("doc_key")) == t.get("doc_key")]
    timings = {}
    t0 = time.perf_counter()
    structure = [q for q in keep if q.kind not in ("model", "probe")]
    if len(structure) < opts.questions:
        known = {q.qid for q in structure}
        made = structure_questions(threads, opts.seed, library)
        pools = {k: [q for q in v if q.qid not in known] for k, v in made.items()}
        structure += sample_mix(pools, opts.questions - len(structure), opts.seed)
    have = structure[:opts.questions]
    timings["structure_s"] = round(time.perf_counter() - t0, 3)
    written = [q for q in keep if q.kind == "model"]
    if len(written) < opts.model_questions:
        written += _write(threads, tries, opts, model, written, structure, on_saved, progress, timings)
    written_now = written[:opts.model_questions]
    n_probes = max(5, min(opts.questions, len(have + written_now)) // 5) if opts.probes is None else opts.probes
    probes = [q for q in keep if q.kind == "probe"]
    if len(probes) < n_probes:
        docs = {t.record.doc_id: t.record for t in threads}
        text = "\n".join(c.text for t in threads for c in t.chunks)
        known = {q.qid for q in probes}
        more = probe_questions(have + written_now, text, n_probes * 2, random.Random(opts.seed), docs)
        probes += [q for q in more if q.qid not in known][:n_probes - len(probes)]
    return have + written_now + probes[:n_probes], structure + written + probes, tries, timings


def _write(threads, tries: list, opts: EvalOptions, model, written: list, structure: list, on_saved, progress,
           timings: dict) -> list[EvalQuestion]:
    """The model's new questions (each saved at once: a stopped run resumes), its tries appended to ``tries``."""
    from .model_questions import model_questions

    ask, answers = model
    key_of = {t.record.doc_id: doc_key(t.record) for t in threads}
    chunk_doc = {c.chunk_id: t.record.doc_id for t in threads for c in t.chunks}
    new: list = []

    def tried(r: dict) -> None:
        tries.append({**r, "doc_key": key_of[chunk_doc[r["chunk_id"]]]})
        if progress:
            progress("model questions", len(written) + len(new) + int(r["kept"]), opts.model_questions)

    t1 = time.perf_counter()
    skip = {t["chunk_id"] for t in tries}
    for q in model_questions(threads, ask, answers, opts.model_questions - len(written), opts.seed, skip, tried):
        new.append(q)
        if on_saved:
            on_saved(structure + written + new, tries)
    timings["model_s"] = round(time.perf_counter() - t1, 3)
    timings["model_tries"] = len(tries) - len(skip)
    return new


# --- the run -----------------------------------------------------------------------------------------------------
def run_eval(engine, opts: EvalOptions, progress=None) -> dict:
    """The whole command on ``engine``'s library; returns the run (also written to its file)."""
    from ..retrieve.label import default_spec, search_settings
    from ..run_record import command_line, machine

    t_start = time.perf_counter()
    docs = [engine.document(d) for d in opts.docs] if opts.docs else engine.documents()
    if not docs:
        raise ThreadRagError("no documents indexed yet: index some first (thread-rag index PATH)")
    threads = [engine.thread(d.serial) for d in docs]
    set_path = Path(opts.set_path) if opts.set_path else Path(engine.home) / "eval" / "questions.jsonl"
    out = Path(opts.out) if opts.out else Path(engine.home) / "eval" / f"run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    for path in (set_path, out):
        engine.writable(path, "eval writes its question set and each run there; give --set and --out elsewhere")
    saved, tries = load_set(set_path)
    model = _model(engine) if opts.model_questions else None
    answer = _answerer(engine, opts.answers) if opts.answers else None  # a model that does not load: said now
    library_ids, evaluated = {d.doc_id for d in engine.documents()}, {d.doc_id for d in docs}
    # documents not evaluated this time keep their questions; deleted documents' questions go
    others = [q for q in saved if q.doc_id in library_ids and q.doc_id not in evaluated]
    everything = threads if evaluated == library_ids else \
        [engine.thread(d.serial) for d in engine.documents()]  # a list question's answer may be in any document
    questions, kept, tries, timings = build_set(threads, saved, tries, opts, model, progress=progress,
                                                on_saved=lambda qs, ts: save_set(set_path, others + qs, ts),
                                                library=everything)
    save_set(set_path, others + kept, tries)
    if not any(q.answerable for q in questions):
        raise ThreadRagError("no question could be made from these documents: they have no headings, 'To ...' "
                             "procedures, tables, defined terms or listing sentences (--model-questions N has the "
                             "model write some)")
    engine.retriever.search("warm up", k=K)  # models load outside the timed searches
    t = time.perf_counter()
    rows = score_retrieval(questions, lambda text: engine.retriever.search(text, k=K).hits, progress)
    timings["search_s"] = round(time.perf_counter() - t, 3)
    if opts.answers:
        t = time.perf_counter()
        rows = score_answers(questions, rows, answer, progress)
        timings["answer_s"] = round(time.perf_counter() - t, 3)
    timings["total_s"] = round(time.perf_counter() - t_start, 3)  # opening the library to the scores
    by_q = {q.qid: q for q in questions}
    chunks = {c.chunk_id: c for th in threads for c in th.chunks}
    common = common_lines([(c.doc_id, c.text) for c in chunks.values()])

    def text_of(cid):
        c = chunks.get(cid) or _chunk(engine, cid)
        return c.text if c else None

    def section_at(cid):
        c = chunks.get(cid) or _chunk(engine, cid)
        return section_of(c) if c else ""

    run = {"kind": "thread-rag eval run", "set": str(set_path), "search": default_spec(engine.settings),
           "answers": opts.answers, "documents": {d.doc_id: {"name": d.name, "doc_key": doc_key(d)} for d in docs},
           "questions": {k: sum(q.kind == k for q in questions) for k in sorted({q.kind for q in questions})},
           "summary": summarize(rows), "weakest": weakest_sections(rows, by_q, text_of, section_at, common),
           "timings": timings, "rows": [{**r.row(), "text": by_q[r.qid].text} for r in rows],
           "settings": search_settings(engine.settings), "models": {"embedder": engine.settings.EMBEDDER_MODEL,
                                                                     "reranker": engine.settings.RERANKER},
           "machine": machine(), "written_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "command": command_line()}
    if opts.compare:
        run["compare"] = _compare(run, Path(opts.compare))
    from ..atomic import atomic_write_json

    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out, run)
    run["written_to"] = str(out)
    return run


def _chunk(engine, cid: str):
    try:
        return engine.chunk(cid)
    except ThreadRagError:  # a hit of a document deleted meanwhile
        return None


def _compare(run: dict, path: Path) -> dict:
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
        rows = before["rows"]
        if not isinstance(rows, list) or not all(isinstance(r, dict) and ROW_KEYS <= r.keys() for r in rows):
            raise ValueError
    except (OSError, ValueError, KeyError, TypeError):
        raise ThreadRagError(f"--compare {path}: not an eval run file (each row needs "
                             f"{', '.join(sorted(ROW_KEYS))})") from None
    out = compare_runs(run["rows"], rows)
    out["before"] = {"file": str(path), "search": before.get("search"), "settings": before.get("settings"),
                     "written_at": before.get("written_at")}
    changed = {k: (v, run["settings"].get(k)) for k, v in (before.get("settings") or {}).items()
               if run["settings"].get(k) != v}
    out["settings_changed"] = {k: {"before": a, "now": b} for k, (a, b) in changed.items()}
    moved = [d for d, info in (before.get("documents") or {}).items()
             if d in run["documents"] and run["documents"][d]["doc_key"] != info.get("doc_key")]
    out["documents_changed"] = moved
    return out


def _model(engine):
    """(ask, answers): the chat model writing one question, and the cross-encoder's logit of a pair."""
    from langchain_core.messages import HumanMessage

    from ..llm.backends import limit

    chat = engine.chat_model
    tokens = engine.settings.QUOTE_TOKENS

    def ask(prompt: str) -> str:
        r = chat.invoke([HumanMessage(prompt)], **limit(chat, 60))
        return r.content if isinstance(r.content, str) else str(r.content)

    def answers(question: str, text: str) -> float:
        return float(engine.retriever.cross_encoder.logits(question, [text], tokens)[0])

    return ask, answers


def _answerer(engine, mode: str):
    """``answer(text) -> dict``: the quote path with no model (``quote``), or the whole answer as ``ask`` gives it."""
    from ..agent.loop import Agent, quote_answer

    if mode == "quote":
        return lambda text: quote_answer(engine, text)

    engine.chat_model  # the model loads now, or its one line is the error before any search
    agent = Agent(engine)

    def full(text: str) -> dict:
        agent.clear()  # each question stands alone: no follow-up condensation
        return to_dict(agent.ask(text, reader=agent.settings.READER))  # a made-up question, never a request

    return full
