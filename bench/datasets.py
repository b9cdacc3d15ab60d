"""Data set adapters: every set becomes one shape, ``Dataset(corpus, queries)``.

``corpus``: documents (key, title, text); ``queries``: (qid, text, gold doc keys, gold answers,
gold evidence spans). Read from ``shared_data()``: ``THREAD_RAG_SHARED_DATA`` in the environment, default
../shared/data; never modified.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from thread_rag.errors import ThreadRagError


@dataclass
class Doc:
    key: str
    title: str
    text: str
    kind: str = "text"          # text | markdown


@dataclass
class Query:
    qid: str
    text: str
    gold_docs: set
    answers: list = field(default_factory=list)
    spans: list = field(default_factory=list)


@dataclass
class Dataset:
    name: str
    corpus: list
    queries: list
    per_document: bool = False  # questions about one given document: each search is scoped to it
    split: str | None = None    # dev | test | None (all questions)
    corpus_name: str = ""       # names the corpus (and its bench index): the full corpus is shared by both halves

    @property
    def search_scope(self) -> str:
        return "gold document" if self.per_document else "corpus"

    def scope_doc_ids(self, keymap: dict) -> list:
        """Per question, the doc id (``keymap``: doc id -> document key) its search is limited to: the
        gold document for per-document sets, else None (the whole corpus)."""
        if not self.per_document:
            return [None] * len(self.queries)
        doc_of = {key: doc_id for doc_id, key in keymap.items()}
        return [doc_of.get(next(iter(q.gold_docs))) for q in self.queries]


QUICK_CORPUS = 60  # documents kept by --limit runs (gold + distractors)

DATASETS = ("limit-small", "aws-docs-qa", "musique", "leval-legal")


def shared_data() -> Path:
    """Where the shared data sets are: ``THREAD_RAG_SHARED_DATA``, default ../shared/data (the lab's, not a setting
    of the product)."""
    return Path(os.environ.get("THREAD_RAG_SHARED_DATA") or "../shared/data").expanduser().resolve()

LEVAL_BOILERPLATE = ("Highlight the parts (if any) of this contract related to",)


SPLITS = ("dev", "test")
DEV_SHARE = 0.4  # of each data set's questions: calibration and tuning; the other 60% are reported


def split_qids(qids: list[str]) -> dict[str, str]:
    """Each question's fixed half, ``dev`` or ``test``: questions ranked by a hash of their id, the first 40%
    are dev. Fixed by the data set alone, never by the sample size or the seed."""
    ranked = sorted(qids, key=lambda q: hashlib.sha256(q.encode("utf-8")).hexdigest())
    n_dev = round(len(ranked) * DEV_SHARE)
    return {q: SPLITS[0] if i < n_dev else SPLITS[1] for i, q in enumerate(ranked)}


def check_disjoint(ds: Dataset, results_dir: Path) -> None:
    """Stop when a calibration or tuning run (``refusal-*.json``, ``tuning-*.json`` in ``results_dir``) used any
    of ``ds``'s questions."""
    mine = {q.qid for q in ds.queries}
    files = sorted(Path(results_dir).glob("refusal-*.json")) + sorted(Path(results_dir).glob("tuning-*.json"))
    for f in files:
        try:
            info = json.loads(f.read_text(encoding="utf-8"))
        except ValueError:
            raise ThreadRagError(f"{f}: not readable JSON; cannot check that calibration and test are disjoint") from None
        if info.get("split") == "test":  # a held-out re-measurement, not a calibration
            continue
        used = set(info.get("qids", [])) | {r["qid"] for rows in (info.get("rows") or {}).values() for r in rows}
        shared = mine & used
        if shared:
            raise ThreadRagError(f"{len(shared)} test questions of {ds.name} were used to calibrate in {f} "
                                 f"(e.g. {sorted(shared)[0]}): calibration and test samples must be disjoint")


def load_dataset(name: str, root: Path, limit: int | None = None, seed: int = 13, split: str | None = None,
                 sample: int | None = None) -> Dataset:
    """A shared data set, its ``split`` half; ``limit``: a sample of N questions over a shrunk corpus; ``sample``: a
    sample of N questions over the full corpus (for configurations too slow to run every question)."""
    if split is not None and split not in SPLITS:
        raise ThreadRagError(f"unknown split {split!r} (dev or test)")
    root = Path(root)
    if not root.is_dir():
        raise ThreadRagError(f"shared data not found at {root} (set THREAD_RAG_SHARED_DATA)")
    if name == "limit-small":
        ds = _limit_small(root / "limit-small")
    elif name == "aws-docs-qa":
        ds = _aws(root / "aws-docs-qa")
    elif name == "musique":
        ds = _musique(root / "musique-hipporag100")
    elif name == "leval-legal":
        ds = _leval_legal(root / "leval")
    else:
        raise ThreadRagError(f"unknown dataset {name!r} (known: {', '.join(DATASETS)})")
    ds.corpus_name = ds.name
    if split is not None:
        half = split_qids([q.qid for q in ds.queries])
        ds.queries = [q for q in ds.queries if half[q.qid] == split]
        ds.split = split
        ds.name = f"{ds.name}-{split}"
    if sample is not None and limit is None and sample < len(ds.queries):  # the full corpus: its name stays
        ds.queries = sorted(random.Random(seed).sample(ds.queries, sample), key=lambda q: q.qid)
        ds.name = f"{ds.name}-sample{sample}"
    if limit is not None:  # a sample of the questions (all of them if there are fewer) over a shrunk corpus
        rng = random.Random(seed)
        ds.queries = sorted(rng.sample(ds.queries, min(limit, len(ds.queries))), key=lambda q: q.qid)
        # quick runs: the corpus shrinks to the gold documents plus seeded distractors
        gold = set().union(*(q.gold_docs for q in ds.queries))
        # single-document QA (leval) searches inside the gold document only: distractors would never be read
        others = [] if ds.per_document else [d for d in ds.corpus if d.key not in gold]
        # at least as many distractors as gold documents (multi-hop sets have more gold documents than QUICK_CORPUS)
        n_distractors = max(QUICK_CORPUS - len(gold), len(gold))
        keep = gold | {d.key for d in rng.sample(others, min(len(others), n_distractors))}
        ds.corpus = [d for d in ds.corpus if d.key in keep]
        ds.name = f"{ds.name}-quick{limit}"
        ds.corpus_name = ds.name  # shrunk around the sampled questions
    return ds


def _jsonl(path: Path):
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _limit_small(d: Path) -> Dataset:
    corpus = [Doc(r["_id"], r.get("title", ""), r["text"]) for r in _jsonl(d / "corpus.jsonl")]
    gold: dict[str, set] = {}
    for r in _jsonl(d / "qrels.jsonl"):
        if r.get("score", 1) > 0:
            gold.setdefault(r["query-id"], set()).add(r["corpus-id"])
    queries = [Query(r["_id"], r["text"], gold.get(r["_id"], set())) for r in _jsonl(d / "queries.jsonl")]
    return Dataset("limit-small", corpus, [q for q in queries if q.gold_docs])


def _aws(d: Path) -> Dataset:
    docs_root = d / "documents"
    corpus = []
    for f in sorted(docs_root.glob("*/doc_source/*.md")):
        key = f"{f.parent.parent.name}/{f.name}"
        corpus.append(Doc(key, f.stem, f.read_text(encoding="utf-8", errors="replace"), kind="markdown"))
    queries = []
    with (d / "QA_true.csv").open(encoding="utf-8-sig", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            gold = row["Document_True"].strip()
            queries.append(Query(f"aws_{i:03d}", row["Question"].strip(), {gold}, answers=[row["Answer_True"].strip()],
                                 spans=[row["Answer_True"].strip()]))
    return Dataset("aws-docs-qa", corpus, queries)


def _musique(d: Path) -> Dataset:
    paras = json.loads((d / "musique_train_corpus.json").read_text(encoding="utf-8"))
    key_of = {}
    corpus = []
    for i, p in enumerate(paras):
        key = f"para_{i:04d}"
        key_of[(p["title"], p["text"])] = key
        corpus.append(Doc(key, p["title"], f"{p['title']}\n{p['text']}"))
    queries = []
    for q in json.loads((d / "musique_train.json").read_text(encoding="utf-8")):
        gold = {key_of[(p["title"], p["paragraph_text"])] for p in q["paragraphs"]
                if p["is_supporting"] and (p["title"], p["paragraph_text"]) in key_of}
        queries.append(Query(q["id"], q["question"], gold, answers=[q["answer"]] + list(q.get("answer_aliases", []))))
    return Dataset("musique", corpus, queries)


def _leval_legal(d: Path) -> Dataset:
    corpus: list[Doc] = []
    queries: list[Query] = []
    seen: dict[str, str] = {}
    for i, row in enumerate(_jsonl(d / "legal_contract_qa.jsonl")):
        text = row["input"]
        key = seen.get(text[:2000])
        if key is None:
            key = f"contract_{len(seen):02d}"
            seen[text[:2000]] = key
            corpus.append(Doc(key, key, text))
        for j, (q, a) in enumerate(zip(row["instructions"], row["outputs"])):
            queries.append(Query(f"legal_{i:02d}_{j:02d}", strip_leval(q), {key}, answers=[a], spans=[a]))
    return Dataset("leval-legal", corpus, queries, per_document=True)


def strip_leval(q: str) -> str:
    """Remove L-Eval's instruction boilerplate (it hurts retrieval): keep the clause name and the question."""
    import re

    m = re.search(r'related to "([^"]+)".*?Details:\s*(.*)$', q, flags=re.S)
    if m:
        return f"{m.group(1)}: {' '.join(m.group(2).split())}"
    return " ".join(q.split())
