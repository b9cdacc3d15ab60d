"""One-off probe: rules on top of stage 3, evaluated offline on the pools ``stage3_pool_dump.py`` wrote (dev halves).

    python bench_results/probes/stage3_rules_offline.py DUMP.json [DUMP.json ...]

For each rule and dump: nDCG@10, its difference from the cross-encoder alone, all-supporting@10, and how many
questions went up / down. The rules (each reorders the stage-3 pool; the rest follows in stage-2 order):
- ``ce``: the cross-encoder alone (the pipeline as it was);
- ``guard``: candidates BM25 did not return (or scored 0) after the others;
- ``pin``: stage 2's leader stays first when it is also the pool's best BM25 candidate;
- ``skip_agree``: no stage 3 when stage 2's leader is also the pool's best by BM25 and by dense score;
- ``rrf_bm25_w``: reciprocal-rank fusion (k=60) of the cross-encoder's rank (weight w) and BM25's;
- ``rrf_s2_kK_w``: the same with stage 2's rank, RRF constant K;
- ``floor_t``: candidates whose BM25 score (as stage 1 returned it, 0 outside its list) is below t x the pool's
  best after the others (the first build of ``STAGE3_LEXICAL_FLOOR``);
- ``cemargin_t``: when the cross-encoder's top two are within t (its 0..1 scores), the one BM25 scores higher first;
- ``floor0.1+rrf_s2_kK_w``: both;
- ``floor_exact_t``: the floor on each candidate's own BM25 score (``bm25_exact``; the floor as built now), in dumps
  that have it.
DUMP files may be gzipped (``.json.gz``); the dumps of the stage-3 runs left the tree with the probes that no current
figure needs (``git log -- bench_results/probes/stage3_data`` finds them).
"""
from __future__ import annotations
import sys as _sys, pathlib as _pl; _sys.path.insert(0, str(_pl.Path(__file__).resolve().parents[2]))  # the lab, bench/

import gzip
import json
import sys

import numpy as np

from bench.metrics import all_found_at_k, ndcg_at_k


def dedupe(keys):
    out, seen = [], set()
    for k in keys:
        if k is not None and k not in seen:
            seen.add(k)
            out.append(k)
    return out


def ranks(vals):  # 1 = best
    order = sorted(range(len(vals)), key=lambda i: -vals[i])
    r = [0] * len(vals)
    for pos, i in enumerate(order):
        r[i] = pos + 1
    return r


def bm25(p):
    return [c["bm25"] or 0.0 for c in p]


def ce(p):
    return [c["ce"] for c in p]


def guard(p):
    return [c["ce"] - (0 if b > 0 else 1e6) for c, b in zip(p, bm25(p))]


def pin(p):
    s, b = ce(p), bm25(p)
    if b[0] > 0 and b[0] == max(b):
        s[0] = 1e6
    return s


def skip_agree(p):
    b, d = bm25(p), [c["dense"] if c["dense"] is not None else -9 for c in p]
    return [-i for i in range(len(p))] if b[0] == max(b) and d[0] == max(d) else ce(p)


def rrf_with(prior, w, k):
    def rule(p):
        rc, rp = ranks(ce(p)), ranks(prior(p))
        return [w / (k + a) + (1 - w) / (k + b) for a, b in zip(rc, rp)]
    return rule


def exact(p):
    return [c["bm25_exact"] for c in p]


def floor(t, inner=ce, lexical=bm25):
    def rule(p):
        b = lexical(p)
        top = max(b) or 1.0
        return [s - (0 if x >= t * top else 1e6) for s, x in zip(inner(p), b)]
    return rule


def cemargin(t):
    def rule(p):
        s, b = ce(p), bm25(p)
        a, c = sorted(range(len(p)), key=lambda i: -s[i])[:2]
        if s[a] - s[c] < t and b[c] > b[a]:
            s[c] = s[a] + 1e-3
        return s
    return rule


def stage2(p):
    return [c["stage2"] for c in p]


RULES = {"ce": ce, "guard": guard, "pin": pin, "skip_agree": skip_agree,
         **{f"rrf_bm25_{w}": rrf_with(bm25, w, 60) for w in (0.8, 0.7, 0.6, 0.5)},
         **{f"rrf_s2_k{k}_{w}": rrf_with(stage2, w, k) for k in (5, 10, 20, 60) for w in (0.7, 0.8, 0.9)},
         **{f"floor_{t}": floor(t) for t in (0.02, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5)},
         **{f"cemargin_{t}": cemargin(t) for t in (0.5, 1.0, 2.0)},
         **{f"floor0.1+rrf_s2_k{k}_{w}": floor(0.1, rrf_with(stage2, w, k)) for k in (10, 20) for w in (0.7, 0.8)},
         **{f"floor_exact_{t}": floor(t, lexical=exact) for t in (0.05, 0.1, 0.2)}}


def evaluate(dump: dict, rule) -> tuple[np.ndarray, float]:
    nd, al = [], []
    for q in dump["rows"]:
        p = q["pool"]
        s = rule(p)
        ranked = dedupe([p[i]["doc"] for i in sorted(range(len(p)), key=lambda i: -s[i])] + q["rest"])
        nd.append(ndcg_at_k(ranked, set(q["gold"]), 10))
        al.append(all_found_at_k(ranked, set(q["gold"]), 10))
    return np.asarray(nd), float(np.mean(al))


def main(paths: list[str]) -> None:
    dumps = [json.loads((gzip.open if p.endswith(".gz") else open)(p, "rt").read()) for p in paths]
    base = [evaluate(d, ce)[0] for d in dumps]
    print("rule".ljust(26) + "".join(d["dataset"].ljust(40) for d in dumps))
    for name, rule in RULES.items():
        if name.startswith("floor_exact") and not all("bm25_exact" in d["rows"][0]["pool"][0] for d in dumps):
            continue
        cells = []
        for d, b in zip(dumps, base):
            nd, al = evaluate(d, rule)
            diff = nd - b
            cells.append(f"{nd.mean():.4f} {diff.mean():+.4f} all{al:.2f} up{(diff > 1e-9).sum()} "
                         f"dn{(diff < -1e-9).sum()}".ljust(40))
        print(name.ljust(26) + "".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
