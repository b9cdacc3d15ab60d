"""``thread-rag bench compare``: thread alignment of two editions of the Debian installation guide (issue 17).

Ground truth nobody wrote by hand: ``difflib`` of the two editions' TXT files. Lines in equal blocks are
unchanged; inside each changed block the words are diffed again, so a word counts as changed only when the
diff of the TXT files changes it (the strict line-level variant, where every word of a changed line counts as
changed, is reported beside it). Each indexed chunk is mapped onto its own edition's TXT words by
normalised word 4-grams (``map_chunks``: from its first to its last matched 4-gram, widened by its words
before and after them); a chunk is truly ``same`` when none of the words it covers changed, else
``changed/only``.
A chunk's true counterparts are the other edition's chunks covering the TXT words its unchanged words map to.

Pairs measured (the rules and thresholds were chosen on the dev pairs; the test pairs were measured after):
- ``pdf-amd64/pdf-arm64``: the test pair for F1 (two PDFs, 113 and 106 pages);
- ``txt-amd64/txt-arm64``: its dev pair (the two TXT files themselves);
- ``txt-arm64/pdf-arm64`` (dev) and ``txt-amd64/pdf-amd64`` (test): one edition in two renderings, where
  everything should be ``same``: the false-change rate (and the share of chunks whose words the other
  rendering lacks altogether), and the rows not labelled same (``false_change_rows``: what the false changes
  are).

Besides the default settings: sweeps of the coverage threshold, the window and the alignment's parameters,
and on the dev pairs a leave-one-out of the labelling rules (``rule_ablation``, ``compare.labels.RULES``).
"""
from __future__ import annotations

import difflib
import os
import subprocess
import sys
import time
import tracemalloc
from bisect import bisect_left
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

import numpy as np

from thread_rag.errors import ThreadRagError
from . import command_line
from .datasets import shared_data

EDITIONS = {"amd64": "installation-guide-amd64-en", "arm64": "installation-guide-arm64-en"}
PAIRS = [("pdf-amd64", "pdf-arm64", "test"), ("txt-amd64", "txt-arm64", "dev"),
         ("txt-arm64", "pdf-arm64", "same-edition dev"), ("txt-amd64", "pdf-amd64", "same-edition test")]
GRAM = 4
SWEEP = (1.0, 0.99, 0.98, 0.97, 0.95, 0.9)


# --------------------------------------------------------------------------------------------- truth
def txt_words(path: Path) -> tuple[list[str], list[int]]:
    """Normalised word keys of a TXT file (``compare.labels`` normalisation) and the line of each."""
    from thread_rag.compare.labels import tokens, word_key

    keys, lines = [], []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").split("\n")):
        for t in tokens(line):
            k = word_key(t)
            if k:
                keys.append(k)
                lines.append(n)
    return keys, lines


def diff_truth(path_a: Path, path_b: Path) -> dict:
    """Word-level truth from the line diff of two TXT files: per word of each file, changed (refined inside
    changed blocks), changed (strict: its line changed) and the other file's word it maps to (-1: none)."""
    la = Path(path_a).read_text(encoding="utf-8").split("\n")
    lb = Path(path_b).read_text(encoding="utf-8").split("\n")
    ka, line_a = txt_words(path_a)
    kb, line_b = txt_words(path_b)
    first_a = _first_word_of_line(line_a, len(la))
    first_b = _first_word_of_line(line_b, len(lb))
    na, nb = len(ka), len(kb)
    changed_a, changed_b = np.ones(na, bool), np.ones(nb, bool)
    strict_a, strict_b = np.ones(na, bool), np.ones(nb, bool)
    map_a, map_b = np.full(na, -1), np.full(nb, -1)
    sm = difflib.SequenceMatcher(None, [x.rstrip() for x in la], [x.rstrip() for x in lb], autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        wa = range(first_a[i1], first_a[i2])
        wb = range(first_b[j1], first_b[j2])
        if tag == "equal":
            changed_a[wa.start:wa.stop] = strict_a[wa.start:wa.stop] = False
            changed_b[wb.start:wb.stop] = strict_b[wb.start:wb.stop] = False
            map_a[wa.start:wa.stop] = np.arange(wb.start, wb.stop)
            map_b[wb.start:wb.stop] = np.arange(wa.start, wa.stop)
            continue
        inner = difflib.SequenceMatcher(None, ka[wa.start:wa.stop], kb[wb.start:wb.stop], autojunk=False)
        for t2, a1, a2, b1, b2 in inner.get_opcodes():
            if t2 == "equal":
                changed_a[wa.start + a1:wa.start + a2] = False
                changed_b[wb.start + b1:wb.start + b2] = False
                map_a[wa.start + a1:wa.start + a2] = np.arange(wb.start + b1, wb.start + b2)
                map_b[wb.start + b1:wb.start + b2] = np.arange(wa.start + a1, wa.start + a2)
    return {"keys": (ka, kb), "changed": (changed_a, changed_b), "strict": (strict_a, strict_b),
            "map": (map_a, map_b), "lines": (len(la), len(lb)), "changed_lines": _changed_lines(sm)}


def _changed_lines(sm) -> int:
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal")


def _first_word_of_line(word_lines: list[int], n_lines: int) -> list[int]:
    """first[l]: index of the first word on line >= l (len(words) past the end); length n_lines + 1."""
    return [bisect_left(word_lines, ln) for ln in range(n_lines + 1)]


def map_chunks(chunks, keys: list[str]) -> list[tuple[int, int] | None]:
    """Each chunk's span [lo, hi) of TXT words, by voting on normalised word 4-grams (None: not found)."""
    from thread_rag.compare.labels import Keyed

    index: dict = defaultdict(list)
    for p in range(len(keys) - GRAM + 1):
        index[tuple(keys[p:p + GRAM])].append(p)
    spans = []
    for c in chunks:
        ck = [k for k in Keyed.of(c.text).keys if k]
        grams = [(k, index.get(tuple(ck[k:k + GRAM]), ())) for k in range(len(ck) - GRAM + 1)]
        offsets = sorted(p - k for k, ps in grams for p in ps[:20])
        if not offsets:
            spans.append(None)
            continue
        tol = 25 + len(ck) // 5
        best, lo_i = (0, 0), 0
        for hi_i in range(len(offsets)):  # the offset window of width 2*tol holding most votes
            while offsets[hi_i] - offsets[lo_i] > 2 * tol:
                lo_i += 1
            if hi_i - lo_i + 1 > best[0]:
                best = (hi_i - lo_i + 1, offsets[(lo_i + hi_i) // 2])
        centre = best[1]
        hits = [(k, p) for k, ps in grams for p in ps[:20] if abs(p - k - centre) <= tol]
        found = len({k for k, _ in hits})
        if not hits or found < 0.3 * max(len(grams), 1):
            spans.append(None)
            continue
        # from the first to the last matched 4-gram, widened by the chunk's words before and after them (so
        # words at the chunk's edges that the other text changed are inside the span)
        k_first, p_first = min(hits, key=lambda x: x[1])
        k_last, p_last = max(hits, key=lambda x: x[1])
        lo = max(0, p_first - k_first)
        hi = min(len(keys), p_last + GRAM + max(0, len(ck) - (k_last + GRAM)))
        spans.append((lo, hi))
    return spans


def chunk_truth(spans, changed: np.ndarray) -> list[bool | None]:
    """True: every word in the chunk's span unchanged; None: unmapped."""
    return [None if s is None else bool(not changed[s[0]:s[1]].any()) for s in spans]


def true_counterparts(spans_a, spans_b, word_map: np.ndarray, changed_a: np.ndarray) -> list[set | None]:
    """For each A chunk with at least half of its words unchanged: the B chunks covering where they went."""
    starts = sorted((s[0], s[1], j) for j, s in enumerate(spans_b) if s is not None)
    out = []
    for s in spans_a:
        if s is None:
            out.append(None)
            continue
        lo, hi = s
        mapped = word_map[lo:hi][~changed_a[lo:hi]]
        mapped = mapped[mapped >= 0]
        if len(mapped) < 0.5 * (hi - lo):
            out.append(None)
            continue
        mlo, mhi = int(mapped.min()), int(mapped.max()) + 1
        out.append({j for b0, b1, j in starts if b0 < mhi and b1 > mlo and
                    _overlap(b0, b1, mapped) >= min(0.3 * len(mapped), 0.3 * (b1 - b0))})
    return out


def _overlap(b0: int, b1: int, mapped: np.ndarray) -> int:
    return int(((mapped >= b0) & (mapped < b1)).sum())


# ------------------------------------------------------------------------------------------ metrics
def prf(pred: list[bool], truth: list[bool], positive: bool) -> dict:
    tp = sum(1 for p, t in zip(pred, truth) if p == positive and t == positive)
    fp = sum(1 for p, t in zip(pred, truth) if p == positive and t != positive)
    fn = sum(1 for p, t in zip(pred, truth) if p != positive and t == positive)
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"precision": round(prec, 4), "recall": round(rec, 4), "f1": round(f1, 4), "support": tp + fn}


def predictions(rows: list[dict], n_a: int, n_b: int, same_min: float = 1.0) -> tuple[list, list, list, list]:
    """Per chunk of each side: predicted same? (its own words all found on the other side: its coverage, so
    an unchanged chunk beside an edited counterpart counts as unchanged), predicted counterpart (the other
    side's position, or None)."""
    same_a, same_b = [None] * n_a, [None] * n_b
    cp_a, cp_b = [None] * n_a, [None] * n_b

    def pos(side):
        return None if side is None else int(side["chunk_id"].rsplit("_", 1)[1])

    for r in rows:
        a, b = pos(r["a"]), pos(r["b"])
        if r.get("merged") != "b" and a is not None:
            same_a[a], cp_a[a] = _same(r, "coverage_a", same_min), b
        if r.get("merged") != "a" and b is not None:
            same_b[b], cp_b[b] = _same(r, "coverage_b", same_min), a
    return same_a, same_b, cp_a, cp_b


def _same(r: dict, key: str, same_min: float) -> bool:
    if r["label"] in ("only-in-A", "only-in-B"):
        return False
    return r.get(key) is not None and r[key] >= same_min - 1e-9


def score_pair(rows, gold: dict, n: tuple, same_min: float = 1.0) -> dict:
    """Same / changed-or-only F1 of the rows' per-chunk predictions against ``gold`` (``_gold``: ``truth``,
    ``strict``, ``cps``), and the share of chunks aligned to one of their true counterparts."""
    truth, strict_truth, counterparts = gold["truth"], gold["strict"], gold["cps"]
    same_a, same_b, cp_a, cp_b = predictions(rows, n[0], n[1], same_min)
    pred, want, want_strict = [], [], []
    for side, preds in ((0, same_a), (1, same_b)):
        for k, p in enumerate(preds):
            if truth[side][k] is None:
                continue
            pred.append(bool(p))
            want.append(truth[side][k])
            want_strict.append(strict_truth[side][k])
    hit = tot = 0
    for side, cps in ((0, cp_a), (1, cp_b)):
        for k, cp in enumerate(cps):
            if counterparts[side][k]:
                tot += 1
                hit += cp in counterparts[side][k]
    s, c = prf(pred, want, True), prf(pred, want, False)
    return {"chunks_scored": len(want), "unmapped_chunks": sum(t is None for t in truth[0] + truth[1]),
            "truly_same": sum(want), "predicted_same": sum(pred),
            "same": s, "changed_or_only": c, "macro_f1": round((s["f1"] + c["f1"]) / 2, 4),
            "accuracy": round(sum(p == g for p, g in zip(pred, want)) / max(len(want), 1), 4),
            "strict_line_truth": {"same": prf(pred, want_strict, True),
                                  "changed_or_only": prf(pred, want_strict, False)},
            "counterparts_with_truth": tot, "counterpart_accuracy": round(hit / tot, 4) if tot else None}


# ---------------------------------------------------------------------------------------------- run
def _files(settings) -> dict:
    root = shared_data() / "docs-debian-procedural"
    return {f"{kind}-{ed}": root / d / f"install.en.{kind}" for ed, d in EDITIONS.items() for kind in ("pdf", "txt")}


def _cli_run(home: Path, a: str, b: str) -> tuple[float, int]:
    """Wall time and peak RSS (KiB) of ``thread-rag compare A B --json`` in a fresh process."""
    code = ("import sys, io, contextlib; from thread_rag.cli import main; from bench import peak_rss_kib\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf): rc = main(sys.argv[1:])\n"
            "sys.stderr.write(f'RC {rc} MAXRSS {peak_rss_kib()}\\n')")  # its own peak, not the bench's
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, "--data-dir", str(home), "compare", a, b, "--json"],
                       capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    line = [x for x in p.stderr.splitlines() if x.startswith("RC ")]
    if not line or not line[-1].startswith("RC 0"):
        last = ([x for x in p.stderr.splitlines() if x.strip() and not x.startswith("RC ")] or ["no message"])[-1]
        raise ThreadRagError(f"thread-rag compare {a} {b} failed in the bench's subprocess: {last.strip()[:200]}")
    return wall, int(line[-1].split()[-1])


def run_compare_bench(settings, args, progress=None) -> dict:
    from thread_rag.compare.align import AlignParams
    from thread_rag.compare.labels import LabelParams
    from .corpus import bench_home
    from .retrieval import machine

    files = _files(settings)
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise ThreadRagError(f"bench compare needs {', '.join(missing)}")
    home = bench_home(settings, "compare-debian")
    load_start = _load()
    engine, ids, index_s = _index(settings, home, files)
    out: dict = {"machine": machine(), "embedder": settings.EMBEDDER_MODEL, "data_dir": str(home),
                 "indexing_this_run_s": round(index_s, 1),
                 "indexing_note": "indexing_this_run_s is the time this run spent indexing (about 0 when the four "
                                  "files were already indexed in data_dir and were reused); each document's "
                                  "indexed_in_s is the time its indexing took when it was indexed (catalog record)",
                 "documents": {k: _doc_info(engine.document(ids[k]), files[k]) for k in files},
                 "truth": "difflib of the two TXT files: equal lines, and equal words inside changed blocks; "
                          "a chunk is truly same when no word of its mapped span changed",
                 "tuned_on": "dev pairs only (txt-amd64/txt-arm64 for F1, txt-arm64/pdf-arm64 for false changes); "
                             "the test pairs were measured after the settings and rules were fixed",
                 "settings": {"align": asdict(AlignParams()), "labels": asdict(LabelParams())},
                 "command": command_line(), "pairs": {}}
    truths: dict = {}
    for ka, kb, role in PAIRS:
        out["pairs"][f"{ka}/{kb}"] = _measure_pair(engine, home, files, (ka, kb), (ids[ka], ids[kb]), role, truths)
        if progress:
            progress("compare", len(out["pairs"]), len(PAIRS))
    out["load_average_1min"] = {"start": load_start, "end": _load()}  # other processes on the machine
    return out


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # not available on this platform
        return None


def _doc_info(rec, path: Path) -> dict:
    return {"doc_id": rec.doc_id, "file": str(path), "chunks": rec.chunk_count, "indexed_at": rec.indexed_at,
            "indexed_in_s": round(rec.seconds, 1)}


def _index(settings, home: Path, files: dict) -> tuple:
    """The four files indexed into the bench's home (reused when already there): engine, doc ids, seconds."""
    from thread_rag.engine import Engine

    engine = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(home / "doc_cache")))
    t = time.perf_counter()
    results = engine.index_paths([files[k] for k in sorted(files)])
    index_s = time.perf_counter() - t
    ids = {}
    for key, path in files.items():
        rec = engine.catalog.find_by_path(str(path.resolve()))
        if rec is None:
            why = "; ".join(f"{r.status}: {r.error}" for r in results if r.path == str(path) and r.error)
            raise ThreadRagError(f"{path} was not indexed{f' ({why})' if why else ''}")
        ids[key] = rec.doc_id
    return engine, ids, index_s


def _measure_pair(engine, home: Path, files: dict, keys: tuple, doc_ids: tuple, role: str, truths: dict) -> dict:
    """One pair: end-to-end comparison (timed, memory), alignment alone, scores against the TXT diff, the
    false-change rate of a same-edition pair, and the sweeps."""
    from thread_rag.compare.run import Side

    res, timing, memory = _end_to_end(engine, home, *doc_ids)
    sides = []
    for doc in doc_ids:
        rec = engine.document(doc)
        ch, vec = engine.store.load(rec.serial, rec.generation, with_embeddings=True)
        sides.append(Side(rec.doc_id, rec.name, ch, vec))
    pairs, timing["align_s"] = _timed_align(sides)
    gold = _gold(files, keys, sides, truths)
    n = (len(sides[0].chunks), len(sides[1].chunks))
    entry = {"role": role, "a": f"{doc_ids[0]} ({keys[0]})", "b": f"{doc_ids[1]} ({keys[1]})", "chunks": list(n),
             "counts": dict(res["counts"]), "timing": timing, "memory": memory,
             "default": score_pair(res["rows"], gold, n, res["settings"]["same_min_coverage"]),
             "sections": section_alignment(res["rows"], sides[0].chunks, sides[1].chunks)}
    if gold["txt_diff"]:
        entry["txt_diff"] = gold["txt_diff"]
    if role.startswith("same-edition"):
        entry.update(_false_changes(res["rows"], gold["spans"], n, res["settings"]["same_min_coverage"]))
        entry["false_change_rows"] = not_same_rows(res["rows"])
    entry.update(_sweeps(sides, pairs, gold, n))
    if role.endswith("dev"):
        entry["rule_ablation"] = rule_ablation(sides, pairs, gold, n, same_edition=role.startswith("same-edition"))
    return entry


def not_same_rows(rows: list[dict], words: int = 12) -> list[dict]:
    """The rows not labelled same, compactly: chunk ids and what was not found on the other side (changed: the
    unmatched phrases; only-in: the chunk's first words), to see what the false changes of a same-edition
    pair are."""
    out = []
    for r in rows:
        if r["label"] == "same":
            continue
        d = {"label": r["label"], "a": (r["a"] or {}).get("chunk_id"), "b": (r["b"] or {}).get("chunk_id")}
        if r["label"] == "changed":
            d["removed"], d["added"] = r.get("removed", [])[:6], r.get("added", [])[:6]
        else:
            side = r["a"] if r["label"] == "only-in-A" else r["b"]
            d["text"] = " ".join((side or {}).get("text", "").split()[:words])
        out.append(d)
    return out


def rule_ablation(sides, pairs: list, gold: dict, n: tuple, same_edition: bool) -> dict:
    """Leave-one-out of the labelling rules (``compare.labels.RULES``) on one pair, same alignment: the share
    of chunks called not same (the false-change rate on a same-edition pair) and the F1 scores, with all
    rules and with each one off."""
    from thread_rag.compare.labels import RULES, LabelParams

    out = {}
    for off in (None,) + RULES:
        rd = _rows(sides, pairs, LabelParams(rules=tuple(r for r in RULES if r != off)))
        sc = score_pair(rd, gold, n)
        pa, pb, _, _ = predictions(rd, *n)
        d = {"chunks_not_same": sum(not x for x in pa + pb),
             "chunks_not_same_rate": round(sum(not x for x in pa + pb) / (n[0] + n[1]), 4),
             "same_f1": sc["same"]["f1"]}
        if not same_edition:
            d.update(changed_f1=sc["changed_or_only"]["f1"], macro_f1=sc["macro_f1"])
        out["all rules" if off is None else f"without {off}"] = d
    return out


def _end_to_end(engine, home: Path, a_id: str, b_id: str) -> tuple[dict, dict, dict]:
    """``compare_documents`` on a fresh Engine as the CLI runs it (timed, then again under tracemalloc) and
    the CLI itself in a fresh process: (result, timings, memory)."""
    from thread_rag import tools
    from thread_rag.engine import Engine

    def fresh():
        return Engine(engine.settings.replace(HOME=str(home), CACHE_PATH=str(home / "doc_cache")))

    t = time.perf_counter()
    res = tools.compare_documents(fresh(), a_id, b_id)
    e2e_s = time.perf_counter() - t
    tracemalloc.start()
    tools.compare_documents(fresh(), a_id, b_id)
    peak_py = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    cli_s, cli_rss = _cli_run(home, a_id, b_id)
    timing = {"label_s": round(res["timings_ms"]["label_ms"] / 1000, 3), "end_to_end_s": round(e2e_s, 3),
              "cli_wall_s": round(cli_s, 2), "store_read_s": round(res["timings_ms"]["load_ms"] / 1000, 3)}
    memory = {"compare_python_peak_mib": round(peak_py / 2**20, 1),
              "cli_process_peak_rss_mib": round(cli_rss / 1024, 1)}
    return res, timing, memory


def _timed_align(sides) -> tuple[list, float]:
    """The alignment alone, on already loaded vectors: (pairs, seconds)."""
    from thread_rag.compare.align import align, heading_ids

    ha, hb = heading_ids([c.heading_path for c in sides[0].chunks], [c.heading_path for c in sides[1].chunks])
    t = time.perf_counter()
    pairs = align(sides[0].vectors, sides[1].vectors, ha, hb)
    return pairs, round(time.perf_counter() - t, 3)


def _gold(files: dict, keys: tuple, sides, truths: dict) -> dict:
    """The truth for a pair: each chunk's span of its edition's TXT words, truly same or not (refined and
    strict), true counterparts. One edition in two renderings: nothing changed, each word maps to itself."""
    ed_a, ed_b = keys[0].split("-")[1], keys[1].split("-")[1]
    if (ed_a, ed_b) not in truths:
        truths[(ed_a, ed_b)] = diff_truth(files[f"txt-{ed_a}"], files[f"txt-{ed_b}"]) if ed_a != ed_b else None
    dt = truths[(ed_a, ed_b)]
    if dt is None:
        words, _ = txt_words(files[f"txt-{ed_a}"])
        same = np.zeros(len(words), bool)
        dt = {"keys": (words, words), "changed": (same, same), "strict": (same, same),
              "map": (np.arange(len(words)),) * 2}
    spans = (map_chunks(sides[0].chunks, dt["keys"][0]), map_chunks(sides[1].chunks, dt["keys"][1]))
    return {"spans": spans,
            "truth": tuple(chunk_truth(spans[s], dt["changed"][s]) for s in (0, 1)),
            "strict": tuple(chunk_truth(spans[s], dt["strict"][s]) for s in (0, 1)),
            "cps": (true_counterparts(spans[0], spans[1], dt["map"][0], dt["changed"][0]),
                    true_counterparts(spans[1], spans[0], dt["map"][1], dt["changed"][1])),
            "txt_diff": None if "lines" not in dt else {
                "lines": list(dt["lines"]), "changed_lines": dt["changed_lines"],
                "changed_words": [int(dt["changed"][0].sum()), int(dt["changed"][1].sum())]}}


def _false_changes(rows: list[dict], spans: tuple, n: tuple, same_min: float) -> dict:
    """One edition in two renderings, where every chunk should be same: the share of chunks (both sides)
    predicted not same, of rows labelled other than same, and of chunks when those whose words the other
    rendering lacks altogether are left out."""
    same_a, same_b, _, _ = predictions(rows, *n, same_min)
    absent = _absent_in_other(*spans)
    kept = [(p, ab) for preds, abs_ in ((same_a, absent[0]), (same_b, absent[1])) for p, ab in zip(preds, abs_)]
    present = [p for p, ab in kept if not ab]
    return {"false_change_rate": round(sum(1 for r in rows if r["label"] != "same") / max(len(rows), 1), 4),
            "false_change_rate_chunks": round(sum(not p for p, _ in kept) / max(len(kept), 1), 4),
            "false_change_chunks": sum(not p for p, _ in kept),
            "false_change_rate_present_text": round(sum(not p for p in present) / max(len(present), 1), 4),
            "chunks_absent_in_other_rendering": sum(ab for _, ab in kept)}


def _sweeps(sides, pairs: list, gold: dict, n: tuple) -> dict:
    """How the labels move with the coverage threshold and the window (same alignment), and with the
    alignment's parameters."""
    from thread_rag.compare.labels import LabelParams

    def scored(params=None, pr=pairs, same_min=1.0) -> dict:
        rd = _rows(sides, pr, params)
        sc = score_pair(rd, gold, n, same_min=same_min)
        pa, pb, _, _ = predictions(rd, *n, same_min)
        return {"same_f1": sc["same"]["f1"], "changed_f1": sc["changed_or_only"]["f1"], "macro_f1": sc["macro_f1"],
                "counterpart_accuracy": sc["counterpart_accuracy"],
                "chunks_not_same": round(sum(not x for x in pa + pb) / (n[0] + n[1]), 4)}

    cov = {str(c): scored(LabelParams(same_min_coverage=c), same_min=c) for c in SWEEP}
    win = {f"window={w} nearby={near}": scored(LabelParams(window=w, nearby=near))
           for w, near in ((1, 5), (2, 5), (1, 0), (1, 10))}
    return {"coverage_sweep": {k: _drop(v, "counterpart_accuracy") for k, v in cov.items()},
            "window_sweep": {k: _drop(v, "counterpart_accuracy") for k, v in win.items()},
            "match_min_sweep": _match_sweep(sides, scored)}


def _drop(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


def _rows(sides, pairs: list, params=None) -> list[dict]:
    """Rows of an alignment as the bench scores them (label, coverage, chunk ids)."""
    from thread_rag.compare.labels import heading_titles, label_rows

    titles = heading_titles([c.heading_path for c in sides[0].chunks], [c.heading_path for c in sides[1].chunks])
    rows = label_rows([c.text for c in sides[0].chunks], [c.text for c in sides[1].chunks], pairs, params=params,
                      titles=titles)
    return [_row_dict(r, sides) for r in rows]


def section_alignment(rows: list[dict], chunks_a, chunks_b) -> dict:
    """Sections whose title (deepest heading, numbering stripped) occurs exactly once in each document are
    true counterparts; one counts as aligned when most of its chunks in A have a counterpart in B's section
    of that title. (Only documents with headings: PDFs.)"""
    from collections import Counter

    from thread_rag.compare.labels import heading_key

    ka = [heading_key(c.heading_path) for c in chunks_a]
    kb = [heading_key(c.heading_path) for c in chunks_b]
    if not any(ka) or not any(kb):
        return {"sections": 0, "aligned_share": None}
    _, _, cp_a, _ = predictions(rows, len(chunks_a), len(chunks_b))

    def runs_of(keys):  # a title counts once per contiguous stretch
        out, prev = Counter(), None
        for k in keys:
            if k and k != prev:
                out[k] += 1
            prev = k
        return out

    ra, rb = runs_of(ka), runs_of(kb)
    common = [t for t in ra if ra[t] == 1 and rb.get(t) == 1]
    ok = 0
    for t in common:
        mine = [i for i, k in enumerate(ka) if k == t]
        hits = sum(1 for i in mine if cp_a[i] is not None and kb[cp_a[i]] == t)
        ok += hits * 2 > len(mine)
    return {"sections": len(common), "aligned": ok, "aligned_share": round(ok / len(common), 4) if common else None}


def _match_sweep(sides, scored) -> dict:
    """Macro F1, counterparts and chunks not same for other alignment parameters (labels at their defaults)."""
    from thread_rag.compare.align import AlignParams, align, heading_ids

    ha, hb = heading_ids([c.heading_path for c in sides[0].chunks], [c.heading_path for c in sides[1].chunks])
    base = AlignParams()
    out = {}
    for mm, gap, hbonus in ((base.match_min, base.gap, base.heading_bonus), (0.5, base.gap, base.heading_bonus),
                            (0.75, base.gap, base.heading_bonus), (base.match_min, 0.0, base.heading_bonus),
                            (base.match_min, 0.25, base.heading_bonus), (base.match_min, base.gap, 0.0)):
        pairs = align(sides[0].vectors, sides[1].vectors, ha, hb, AlignParams(match_min=mm, gap=gap,
                                                                              heading_bonus=hbonus))
        sc = scored(pr=pairs)
        out[f"match_min={mm} gap={gap} heading_bonus={hbonus}"] = {
            k: sc[k] for k in ("macro_f1", "counterpart_accuracy", "chunks_not_same")}
    return out


def _row_dict(r, sides) -> dict:
    return {"label": r.label, "merged": r.merged, "coverage_a": r.coverage_a, "coverage_b": r.coverage_b,
            "a": None if r.a is None else {"chunk_id": sides[0].chunks[r.a].chunk_id},
            "b": None if r.b is None else {"chunk_id": sides[1].chunks[r.b].chunk_id}}


def _absent_in_other(spans_a, spans_b) -> tuple[list, list]:
    """Same-edition pair: chunks more than half of whose TXT words no chunk of the other rendering covers."""
    def covered(spans) -> np.ndarray:
        hi = max((s[1] for s in spans if s), default=0)
        m = np.zeros(hi + 1, bool)
        for s in spans:
            if s:
                m[s[0]:s[1]] = True
        return m

    ca, cb = covered(spans_a), covered(spans_b)

    def absent(spans, other) -> list:
        res = []
        for s in spans:
            if s is None:
                res.append(True)
                continue
            seg = other[s[0]:min(s[1], len(other))]
            res.append(bool(len(seg) == 0 or seg.mean() < 0.5))
        return res

    return absent(spans_a, cb), absent(spans_b, ca)


def compare_table(out: dict) -> str:
    """The bench_results/DETAILS.md table of a ``bench compare`` result."""
    lines = ["| pair | role | chunks A/B | F1 same | F1 changed/only | macro F1 | counterparts aligned | "
             "false changes | align s | end-to-end s | CLI wall s | peak (Python / CLI RSS) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, e in out["pairs"].items():
        d = e["default"]
        fc = e.get("false_change_rate_chunks")
        one_class = not d["changed_or_only"]["support"]  # same edition: nothing truly changed, only "same" scores
        lines.append(
            f"| {name} | {e['role']} | {e['chunks'][0]}/{e['chunks'][1]} | {d['same']['f1']:.3f} | "
            f"{'-' if one_class else format(d['changed_or_only']['f1'], '.3f')} | "
            f"{'-' if one_class else format(d['macro_f1'], '.3f')} | "
            f"{d['counterpart_accuracy']:.3f} | {'-' if fc is None else f'{fc:.1%}'} | "
            f"{e['timing']['align_s']:.2f} | {e['timing']['end_to_end_s']:.2f} | {e['timing']['cli_wall_s']:.1f} | "
            f"{e['memory']['compare_python_peak_mib']:.0f} MiB / {e['memory']['cli_process_peak_rss_mib']:.0f} MiB |")
    return "\n".join(lines)
