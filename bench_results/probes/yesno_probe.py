"""Probe (issue 59): does the embedded 1.5B model's P(yes) for "do these lines answer the question?" tell answerable
questions from unanswerable ones where the cheap evidence (cross-encoder, cosine, words) does not?

    python bench_results/probes/yesno_probe.py run DATASET PROMPT OUT.json   (DATASET: debian | docs; PROMPT: 1 | 2)
    python bench_results/probes/yesno_probe.py fit OUT.json [...]

``run``: each question of ``bench outcome``'s answerable and unanswerable groups (the same hiding) goes through the
quote path as in quote mode; then the quoted lines (the related ones when not answered) and the question go to the
model once, and P(yes) among yes/no is read from the logits of the first answer token (one prompt read, no
generation; what the model already read of the same prompt head is kept). ``fit``: the area under the ROC curve of
each signal, and leave-one-out the product's calibration fit (``evaluate/calibrate.fit``) on the cheap evidence
alone and with P(yes) added: how many unanswerable questions are refused where one answerable is.
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from thread_rag.agent.outcome import Evidence  # noqa: E402

PROMPTS = {
    "1": ("You check whether lines quoted from a manual answer a question. Answer yes or no.",
          "Question: {q}\n\nLines from the manual:\n{text}\n\nDo these lines answer the question?"),
    "2": ("You are a strict reader. Say yes only if the text itself states the answer; say no if the text is only "
          "about a related topic.",
          "Text:\n{text}\n\nQuestion: {q}\n\nDoes the text above state the answer to this question? Reply yes or no."),
}
WORDS = 220  # the quoted lines are cut to this many words


def yes_probability(llama, prompt: str) -> tuple[float, int]:
    import llama_cpp

    tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    same = 0
    for a, b in zip(list(llama.input_ids[:llama.n_tokens]), tokens):
        if a != b:
            break
        same += 1
    llama.n_tokens = min(same, len(tokens) - 1)  # at least one token read, so the logits are this prompt's
    llama.eval(tokens[llama.n_tokens:])
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama.ctx, -1), shape=(llama.n_vocab(),))

    def ids(words):
        return sorted({t[0] for w in words for t in [llama.tokenize(w.encode(), add_bos=False)] if len(t) == 1})
    yes, no = ids(("yes", "Yes", " yes", " Yes", "YES")), ids(("no", "No", " no", " No", "NO"))
    top = float(max(logits[yes].max(), logits[no].max()))
    y = sum(math.exp(float(logits[i]) - top) for i in yes)
    n = sum(math.exp(float(logits[i]) - top) for i in no)
    return y / (y + n), len(tokens)


def run(name: str, variant: str, out: str) -> None:
    from bench.outcome import _hand_written
    from bench.retrieval import machine
    from thread_rag.agent.loop import quote_answer
    from thread_rag.llm.model_files import load_llama
    from thread_rag.settings import load_settings

    settings = load_settings()
    engine, groups = _hand_written(settings, name)
    llama = load_llama(settings, settings.MAIN_MODEL, n_ctx=settings.LLM_CTX)
    system, user = PROMPTS[variant]
    rows = []
    for g in ("answerable", "unanswerable"):
        for q, doc, hidden in [x[:3] for x in groups[g]]:
            t = time.perf_counter()
            with engine.retriever.hiding(hidden):
                r = quote_answer(engine, q, doc_id=doc)
            t_quote = time.perf_counter() - t
            text = " ".join(" ".join(x["text"] for x in r["quote"]).split()[:WORDS])
            prompt = (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user.format(q=q, text=text)}"
                      "<|im_end|>\n<|im_start|>assistant\n")
            t = time.perf_counter()
            p, n_tok = yes_probability(llama, prompt)
            o = r.get("outcome") or {}
            rows.append({"group": g, "question": q, "kind": o.get("kind"), "p_yes": round(p, 4), "tokens": n_tok,
                         "yesno_s": round(time.perf_counter() - t, 3), "quote_s": round(t_quote, 3),
                         "evidence": {k: v for k, v in (o.get("evidence") or {}).items() if k != "parts"}})
            print(g, o.get("kind"), round(p, 3), n_tok, rows[-1]["yesno_s"], q[:70], flush=True)
    Path(out).write_text(json.dumps({"dataset": name, "prompt": variant, "system": system, "user": user,
                                     "rows": rows, "fit": fit_rows(rows), "machine": machine(),
                                     "command": "python " + " ".join(sys.argv)}, indent=1))


def _auc(pos, neg) -> float:
    return round(float(np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg])), 3)


def fit_rows(rows: list) -> dict:
    from thread_rag.evaluate.calibrate import fit, probabilities

    def cheap(r):
        e = r["evidence"]
        return Evidence(e.get("quote_best"), e["relevance"], e.get("match"), e.get("absent", 0.0),
                        e.get("uncovered", 0.0), margin=e.get("margin"), spread=e.get("spread")).vector()

    def logit(p):
        p = min(max(p, 1e-4), 1 - 1e-4)
        return math.log(p / (1 - p))
    y = np.array([r["group"] == "answerable" for r in rows], int)
    out = {"answerable": int(y.sum()), "unanswerable": int((1 - y).sum()),
           "auc": {"p_yes": _auc([r["p_yes"] for r in rows if r["group"] == "answerable"],
                                 [r["p_yes"] for r in rows if r["group"] != "answerable"])},
           "median_yesno_s": float(np.median([r["yesno_s"] for r in rows])),
           "median_tokens": float(np.median([r["tokens"] for r in rows]))}
    for i, f in enumerate(("quote_best", "relevance", "match", "margin", "spread")):
        i = ("quote_best", "relevance", "match", "absent", "uncovered", "margin", "spread").index(f)
        v = np.array([cheap(r)[i] for r in rows])
        out["auc"][f] = _auc(v[y == 1], v[y == 0])
    for label, with_yes in (("cheap", False), ("cheap+p_yes", True)):
        X = np.array([np.append(cheap(r), logit(r["p_yes"])) if with_yes else cheap(r) for r in rows])
        s = np.zeros(len(y))
        for k in range(len(y)):  # leave one out
            keep = np.arange(len(y)) != k
            mean, std, w = fit(X[keep], y[keep])
            s[k] = probabilities(X[k:k + 1], mean, std, w)[0]
        t = np.sort(s[y == 1])[1]  # one answerable question refused (under the second lowest)
        out[label] = {"loo_auc": _auc(s[y == 1], s[y == 0]),
                      "unanswerable_refused_at_one_answerable_refused": int((s[y == 0] < t).sum())}
    return out


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(*sys.argv[2:5])
    else:
        for f in sys.argv[2:]:
            print(f, json.dumps(fit_rows(json.loads(Path(f).read_text())["rows"])))
