"""``thread-rag bench throughput``: how fast llama.cpp reads a prompt here, and which knobs change it.

The answer's first token waits for the whole prompt to be evaluated, so prompt tokens/s sets the fast path's
latency. Measured on 800 tokens of the Debian guide (best of 2 evaluations, cache reset each time), and 20
greedy tokens of generation, for: the packaged Q4_K_M with llama.cpp's defaults, other ``n_batch``, flash
attention, one thread, a q8_0 KV cache, and Q4_0 / Q8_0 copies of the packaged GGUF made locally with
llama.cpp's own quantize API (``--configs`` picks; the copies live in a temporary folder and are removed).
"""
from __future__ import annotations

import ctypes
import shutil
import tempfile
import time
from pathlib import Path
from .datasets import shared_data

VARIANTS = {
    "default": {},
    "batch128": {"n_batch": 128, "n_ubatch": 128},
    "batch1024": {"n_batch": 1024, "n_ubatch": 1024},
    "flash_attn": {"flash_attn": True},
    "one_thread": {"n_threads": 1, "n_threads_batch": 1},
    "kv_q8": {"flash_attn": True, "type_k": 8, "type_v": 8},
    "q4_0_copy": {"quant": "Q4_0"},
    "q8_0_copy": {"quant": "Q8_0"},
}


def _quantize(src: Path, dst: Path, kind: str) -> float:
    import llama_cpp

    p = llama_cpp.llama_model_quantize_default_params()
    p.nthread, p.allow_requantize = 2, True
    p.ftype = {"Q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0, "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0}[kind]
    t = time.perf_counter()
    if llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(p)) != 0:
        raise RuntimeError(f"quantize to {kind} failed")
    return time.perf_counter() - t


def _measure(path: Path, text: str, params: dict) -> dict:
    from llama_cpp import Llama

    from thread_rag.llm.model_files import quiet_llama_cpp

    kw = {"n_threads": 2, "n_threads_batch": 2, "n_batch": 512, "n_ubatch": 512, **params}
    quiet_llama_cpp()  # as every load: no descriptor redirected
    llm = Llama(model_path=str(path), n_ctx=4096, verbose=False, seed=0, **kw)
    toks = llm.tokenize(text.encode("utf-8"))[:800]
    best = float("inf")
    for _ in range(2):
        llm.reset()
        t = time.perf_counter()
        llm.eval(toks)
        best = min(best, time.perf_counter() - t)
    llm.reset()
    llm.eval(toks[:100])
    t = time.perf_counter()
    for _ in range(20):
        llm.eval([llm.sample(top_k=1)])
    gen = 20 / (time.perf_counter() - t)
    return {"prompt_tokens": len(toks), "prompt_tok_s": round(len(toks) / best, 1), "gen_tok_s": round(gen, 1)}


def run_throughput_bench(settings, args) -> dict:
    from thread_rag.llm.model_files import model_path
    from .retrieval import machine

    src = model_path(settings, settings.MAIN_MODEL)
    guide = shared_data() / "docs-debian-procedural/installation-guide-amd64-en/install.en.txt"
    text = guide.read_text(encoding="utf-8", errors="replace")[20000:26000]
    names = args.configs.split(",") if args.configs else list(VARIANTS)
    tmp = Path(tempfile.mkdtemp(prefix="thread-rag-quant-"))
    rows = []
    try:
        for name in names:
            params = dict(VARIANTS[name])
            path, extra = src, {}
            if "quant" in params:
                kind = params.pop("quant")
                path = tmp / f"{kind}.gguf"
                extra = {"quantize_s": round(_quantize(src, path, kind), 1), "size_mb": round(path.stat().st_size / 2**20)}
            rows.append({"variant": name, "params": params, **extra, **_measure(path, text, params)})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"model": src.name, "machine": machine(), "rows": rows,
            "command": "thread-rag bench throughput" + (f" --configs {args.configs}" if args.configs else "")}


def throughput_table(x: dict) -> str:
    m = x["machine"]
    lines = [f"*{x['model']}; 800-token prompt (best of 2), 20 generated tokens; {m['cpu']}, {m['cores']} cores.*", "",
             "| variant | llama.cpp parameters | prompt tokens/s | generation tokens/s |", "|---|---|---|---|"]
    for r in x["rows"]:
        p = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "defaults (n_batch 512, 2 threads)"
        if "size_mb" in r:
            p += f"; local copy {r['size_mb']} MB, made in {r['quantize_s']} s"
        lines.append(f"| {r['variant']} | {p} | {r['prompt_tok_s']:.1f} | {r['gen_tok_s']:.1f} |")
    return "\n".join(lines)
