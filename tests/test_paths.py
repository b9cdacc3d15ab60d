"""Where files live (issue 15 items 1-2): one home on disk, whatever the current directory.

A checkout keeps its store and summary cache beside runner.py; an installed copy uses the per-user folders
(platformdirs); ``--data-dir`` moves a store with its summary cache; joined models live in one per-user
cache; only the project's own config.py (or ``THREAD_RAG_CONFIG``) is read; ``doctor`` reports every path
and creates, joins and copies nothing.

Nothing here writes into the real per-user folders or the real checkout's local_rag_db/doc_cache: the
subprocesses get ``XDG_DATA_HOME``/``XDG_CACHE_HOME`` under tmp and run a copy of the package.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, machine_free_env, write
from thread_rag import settings as settings_mod
from thread_rag.errors import ModelUnavailableError, SettingsError
from thread_rag.settings import describe_paths, find_config_file, load_settings

FOREIGN_CONFIG = "DEBUG = True\nSECRET_KEY = 'dev'\nCHUNK_TOKENS = 'many'\n"  # another project's config.py


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts)


def child_env(tmp_path: Path, **extra) -> dict:
    """The environment of a subprocess: per-user folders under tmp, no THREAD_RAG_* or PYTHONPATH of ours."""
    env = {k: v for k, v in machine_free_env().items() if k not in ("PYTHONPATH", "OLLAMA_HOST")}
    env.update(XDG_DATA_HOME=str(tmp_path / "xdg-data"), XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
               XDG_CONFIG_HOME=str(tmp_path / "xdg-config"), PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def copy_package(dest: Path, checkout: bool) -> Path:
    """The package copied to ``dest``: as a checkout (runner.py and config.py beside it) or as installed."""
    shutil.copytree(REPO / "thread_rag", dest / "thread_rag", ignore=shutil.ignore_patterns("__pycache__"))
    if checkout:
        shutil.copy(REPO / "runner.py", dest / "runner.py")
        shutil.copy(REPO / "config.py", dest / "config.py")
    return dest


def doctor(argv: list[str], cwd: Path, env: dict) -> dict:
    cp = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
    assert "Traceback" not in cp.stderr and "error:" not in cp.stderr, cp.stderr[-2000:]
    assert cp.returncode in (0, 1), cp.stderr[-2000:]  # 1: some check failed (e.g. no llama.cpp here)
    return {r["check"]: r for r in json.loads(cp.stdout)}


def paths_of(rows: dict) -> dict:
    return {k: rows[k]["path"] for k in ("data dir", "summary cache", "model cache", "config file")}


# -- the checkout -------------------------------------------------------------------------------------
def test_checkout_defaults_do_not_depend_on_the_current_directory(tmp_path, monkeypatch):
    assert settings_mod.checkout_dir() == REPO
    monkeypatch.chdir(tmp_path)
    s = load_settings(env={}, config_file=False)
    assert s.home == REPO / "local_rag_db" and s.cache_path == REPO / "doc_cache"
    # the checkout's own store, named explicitly (e.g. --data-dir local_rag_db in the checkout), is the same store
    assert load_settings({"HOME": str(REPO / "local_rag_db")}, env={}, config_file=False).cache_path == REPO / "doc_cache"
    assert find_config_file({}) in (REPO / "config.py", None)
    assert not (tmp_path / "local_rag_db").exists() and not (tmp_path / "doc_cache").exists()


def test_a_checkout_copy_run_from_elsewhere_uses_its_own_folders_and_ignores_a_foreign_config(tmp_path):
    co = copy_package(tmp_path / "checkout", checkout=True)
    cwd = tmp_path / "flask-app"
    write(cwd / "config.py", FOREIGN_CONFIG)
    env = child_env(tmp_path)
    before = listing(tmp_path)
    want = {"data dir": str(co / "local_rag_db"), "summary cache": str(co / "doc_cache"),
            "model cache": str(tmp_path / "xdg-cache" / "thread-rag" / "models"), "config file": str(co / "config.py")}
    rows = doctor([sys.executable, str(co / "runner.py"), "doctor", "--json"], cwd, env)  # `python runner.py`
    assert paths_of(rows) == want
    assert rows["data dir"]["source"] == "default: this checkout" and "not created yet" in rows["data dir"]["detail"]
    rows = doctor([sys.executable, "-m", "thread_rag.cli", "doctor", "--json"], cwd, {**env, "PYTHONPATH": str(co)})
    assert paths_of(rows) == want
    assert listing(tmp_path) == before  # no data dir, summary cache or model cache made; nothing joined


def test_data_dir_moves_the_summary_cache_and_thread_rag_config_is_read(tmp_path):
    co = copy_package(tmp_path / "checkout", checkout=True)
    cwd = tmp_path / "work"
    write(cwd / "config.py", FOREIGN_CONFIG)
    cfg = write(tmp_path / "mine.py", "CHUNK_TOKENS = 150\n")
    env = child_env(tmp_path, PYTHONPATH=str(co), THREAD_RAG_CONFIG=str(cfg))
    before = listing(tmp_path)
    rows = doctor([sys.executable, "-m", "thread_rag.cli", "--data-dir", "./store", "doctor", "--json"], cwd, env)
    assert paths_of(rows) == {"data dir": str(cwd / "store"), "summary cache": str(cwd / "store" / "doc_cache"),
                              "model cache": str(tmp_path / "xdg-cache" / "thread-rag" / "models"),
                              "config file": str(cfg)}
    assert rows["config file"]["source"] == "THREAD_RAG_CONFIG"
    assert listing(tmp_path) == before


# -- an installed copy, outside any checkout -----------------------------------------------------------
def test_an_installed_copy_uses_the_per_user_folders(tmp_path):
    site = copy_package(tmp_path / "site-packages", checkout=False)
    cwd = tmp_path / "somewhere"
    write(cwd / "config.py", FOREIGN_CONFIG)
    before = listing(tmp_path)
    rows = doctor([sys.executable, "-m", "thread_rag.cli", "doctor", "--json"], cwd,
                  child_env(tmp_path, PYTHONPATH=str(site)))
    data = tmp_path / "xdg-data" / "thread-rag"
    assert paths_of(rows) == {"data dir": str(data), "summary cache": str(data / "doc_cache"),
                              "model cache": str(tmp_path / "xdg-cache" / "thread-rag" / "models"), "config file": None}
    assert rows["data dir"]["source"] == "default: per-user data dir"
    assert listing(tmp_path) == before


def test_installed_default_in_process(tmp_path, monkeypatch):
    monkeypatch.setattr(settings_mod, "checkout_dir", lambda: None)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "config.py", FOREIGN_CONFIG)
    s = load_settings(env={})
    assert s.home == tmp_path / "data" / "thread-rag" and s.cache_path == s.home / "doc_cache"
    assert s.model_dir == tmp_path / "cache" / "thread-rag" / "models"
    assert find_config_file({}) is None and describe_paths(s, env={})["config_file"]["path"] is None
    assert listing(tmp_path) == ["config.py"]


# -- explicit settings -----------------------------------------------------------------------------
def test_explicit_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = load_settings({"HOME": "./x"}, env={}, config_file=False)  # relative: from the current directory
    assert s.home == tmp_path / "x" and s.cache_path == tmp_path / "x" / "doc_cache"
    s = load_settings(env={"THREAD_RAG_HOME": str(tmp_path / "y")}, config_file=False)
    assert s.cache_path == tmp_path / "y" / "doc_cache"
    s = load_settings({"HOME": "./x"}, env={"THREAD_RAG_CACHE_PATH": str(tmp_path / "c")}, config_file=False)
    assert s.cache_path == tmp_path / "c"  # an explicit CACHE_PATH wins
    # one model cache shared by every store, unless MODEL_DIR is set
    a, b = (load_settings({"HOME": str(tmp_path / n)}, env={}, config_file=False) for n in ("a", "b"))
    assert a.model_dir == b.model_dir == settings_mod.default_model_dir() and a.model_dir.name == "models"
    assert load_settings({"MODEL_DIR": "./m"}, env={}, config_file=False).model_dir == tmp_path / "m"
    assert not any(tmp_path.iterdir())


def test_config_discovery(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "config.py", FOREIGN_CONFIG)
    assert find_config_file({}) != tmp_path / "config.py"
    load_settings(env={})  # the foreign file would fail as `unknown setting DEBUG`
    cfg = write(tmp_path / "cfg" / "mine.py", f"CHUNK_TOKENS = 150\nHOME = {str(tmp_path / 'h')!r}\n")
    env = {"THREAD_RAG_CONFIG": str(cfg)}
    s = load_settings(env=env)
    assert s.CHUNK_TOKENS == 150 and s.cache_path == tmp_path / "h" / "doc_cache"
    assert describe_paths(s, env)["config_file"] == {"path": str(cfg), "source": "THREAD_RAG_CONFIG", "error": False}
    with pytest.raises(SettingsError, match="THREAD_RAG_CONFIG"):
        load_settings(env={"THREAD_RAG_CONFIG": str(tmp_path / "missing.py")})


def test_the_doctor_names_which_setting_chose_each_path(tmp_path):
    """It said "set by --data-dir, THREAD_RAG_HOME or HOME in config.py", where it can tell which."""
    cfg = write(tmp_path / "mine.py", f"HOME = {str(tmp_path / 'h')!r}\nMODEL_DIR = {str(tmp_path / 'm')!r}\n")
    env = {"THREAD_RAG_CONFIG": str(cfg), "THREAD_RAG_CACHE_PATH": str(tmp_path / "c")}
    where = describe_paths(load_settings(env=env), env)
    assert [where[k]["source"] for k in ("data_dir", "summary_cache", "model_cache")] == [
        "set by HOME in mine.py", "set by THREAD_RAG_CACHE_PATH", "set by MODEL_DIR in mine.py"]
    env["THREAD_RAG_HOME"] = str(tmp_path / "e")
    assert describe_paths(load_settings(env=env), env)["data_dir"]["source"] == "set by THREAD_RAG_HOME"
    s = load_settings({"HOME": str(tmp_path / "d")}, env=env)
    assert describe_paths(s, env)["data_dir"]["source"] == "set by --data-dir"


# -- doctor looks, never touches -------------------------------------------------------------------
def test_doctor_creates_nothing_and_joins_nothing(tmp_path, monkeypatch, settings_for):
    from thread_rag.doctor import checks
    from thread_rag.llm import model_files

    def no(*a, **k):
        raise AssertionError("doctor must not join or hash a model")

    monkeypatch.setattr(model_files, "ensure_joined", no)
    monkeypatch.setattr(model_files, "sha256_file", no)
    home, models = tmp_path / "fresh-home", tmp_path / "fresh-models"
    s = settings_for(HOME=str(home), CACHE_PATH="", MODEL_DIR=str(models))
    for round_ in ("missing", "empty"):
        before = listing(tmp_path)
        rows = {r["check"]: r for r in checks(s, env={})}
        assert listing(tmp_path) == before, round_
        assert rows["data dir"]["path"] == str(home) and rows["summary cache"]["path"] == str(home / "doc_cache")
        assert rows["model cache"]["path"] == str(models) and rows["config file"]["path"] == str(REPO / "config.py")
        assert rows["data dir"]["ok"] and rows["chroma"]["ok"] and rows["store consistency"]["ok"]
        m = rows[f"model {s.MAIN_MODEL}"]
        assert ("not joined yet, joined on first use" in m["detail"] and str(models) in m["detail"]) \
            or (not m["ok"] and "not installed" in m["detail"])  # a machine without the part packages
        if round_ == "missing":
            assert "not created yet" in rows["data dir"]["detail"]
            home.mkdir(), models.mkdir()
    # an empty chroma folder and a torn catalog: reported, neither opened (no chroma.sqlite3) nor set aside
    (home / "chroma").mkdir()
    before = listing(tmp_path)
    rows = {r["check"]: r for r in checks(s, env={})}
    assert listing(tmp_path) == before and rows["chroma"]["ok"]
    (home / "catalog.json").write_text('{"documents": {"1": ')
    before = listing(tmp_path)
    rows = {r["check"]: r for r in checks(s, env={})}
    assert listing(tmp_path) == before and not rows["catalog"]["ok"] and "unreadable" in rows["catalog"]["detail"]


def tiny_model(tmp_path: Path, monkeypatch, sizes=(1000, 1000, 500)):
    from thread_rag.llm import model_files

    parts = [write(tmp_path / "parts" / f"p{i}.bin", bytes([i + 1]) * n) for i, n in enumerate(sizes)]
    data = b"".join(p.read_bytes() for p in parts)
    model = model_files.PackagedModel("tiny", "tiny-part", len(parts), len(data), hashlib.sha256(data).hexdigest(),
                                      "tiny.gguf")
    monkeypatch.setitem(model_files.MODELS, "tiny", model)
    records = {p: p.stat().st_size for p in parts}  # what each package's RECORD says
    monkeypatch.setattr(model_files, "_part_entries", lambda m: list(records.items()))
    return model, parts, records


def test_doctor_checks_parts_and_says_when_a_model_is_joined(tmp_path, monkeypatch, settings_for):
    from thread_rag.doctor import checks
    from thread_rag.llm import model_files

    model, parts, records = tiny_model(tmp_path, monkeypatch)
    models = tmp_path / "models"
    s = settings_for(MAIN_MODEL="tiny", SUMMARY_LLM="tiny", MODEL_DIR=str(models))
    path, note = model_files.inspect_model(s, "tiny")
    assert path == models / "tiny.gguf" and note.startswith("not joined yet, joined on first use (3 parts")
    assert not models.exists()
    # an older joined copy inside the data dir (the old default) is named, not used and not moved
    old = write(s.home / "models" / "tiny.gguf", b"".join(p.read_bytes() for p in parts))
    write(old.with_suffix(".verified"), model.sha256)
    assert f"an older joined copy is at {old}" in model_files.inspect_model(s, "tiny")[1] and not models.exists()
    assert model_files.ensure_joined(model, models) == models / "tiny.gguf"  # the first use joins
    assert model_files.inspect_model(s, "tiny") == (models / "tiny.gguf", "joined, sha256 verified at the join")
    # damaged parts are named without reading them
    records[parts[1]] += 1
    with pytest.raises(ModelUnavailableError, match="its package recorded"):
        model_files.check_parts(model)
    records[parts[1]] -= 1
    parts[2].write_bytes(b"x" * 10)
    records[parts[2]] = 10
    (models / "tiny.verified").unlink()
    rows = {r["check"]: r for r in checks(s, env={})}
    assert not rows["model tiny"]["ok"] and "add up to" in rows["model tiny"]["detail"]
    assert "reinstall" in rows["model tiny"]["detail"] and rows["model tiny"]["fix"]
    parts[0].unlink()
    with pytest.raises(ModelUnavailableError, match="is missing"):
        model_files.check_parts(model)
