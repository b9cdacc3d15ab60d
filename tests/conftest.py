"""Shared fixtures: one real MiniLM embedder per session, isolated data dirs per test."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("THREAD_RAG_TEST_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data"
DOCS = REPO / "docs"
DEBIAN_PDF = DATA / "docs-debian-procedural/installation-guide-amd64-en/install.en.pdf"
DEBIAN_TXT = DATA / "docs-debian-procedural/installation-guide-amd64-en/install.en.txt"

needs_shared = pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data is not beside the checkout")


class RememberingEmbedder:
    """The real packaged MiniLM, which gives a text it embedded before in this session the vectors it gave it then.

    Tests index the same docs/ files hundreds of times, and on a 2-core AVX2 machine MiniLM embeds about 11 chunks a
    second: remembered, each text is embedded once per session. The vectors are the model's own (a text in another
    batch differs in the last float bits only; tests/test_minilm.py). At most ``limit_bytes`` are kept (oldest
    dropped first); everything but the three embedding calls is the model's."""

    def __init__(self, real, limit_bytes: int = 768 << 20):
        import threading
        from collections import OrderedDict

        self._real, self._seen, self._bytes, self._limit = real, OrderedDict(), 0, limit_bytes
        self._lock = threading.Lock()  # a server test embeds an upload and queries on two threads

    def __getattr__(self, name):
        return getattr(self._real, name)

    def embed_with_tokens(self, texts):
        import numpy as np

        texts = list(texts)
        if not texts:
            return self._real.embed_with_tokens(texts)
        with self._lock:
            new = list(dict.fromkeys(t for t in texts if t not in self._seen))
        made = self._real.embed_with_tokens(new) if new else ([], [])
        with self._lock:
            for t, v, tv in zip(new, *made):
                if t not in self._seen:
                    self._seen[t] = (v, tv)
                    self._bytes += v.nbytes + tv.nbytes
            got = [self._seen[t] for t in texts]
            for t in texts:
                self._seen.move_to_end(t)
            while self._bytes > self._limit and len(self._seen) > len(texts):
                v, tv = self._seen.popitem(last=False)[1]
                self._bytes -= v.nbytes + tv.nbytes
        return np.stack([v for v, _ in got]), [tv.copy() for _, tv in got]  # a caller may change what it gets

    def embed(self, texts):
        return self.embed_with_tokens(texts)[0]

    def embed_queries(self, texts):
        return self.embed(texts)


@pytest.fixture(scope="session")
def embedder():
    from thread_rag.embedder import MiniLMEmbedder

    return RememberingEmbedder(MiniLMEmbedder(threads=2))


def machine_setting(name: str) -> bool:
    """An environment variable of the machine running the tests that would change what the CLI does or prints."""
    return name.startswith("THREAD_RAG_") or name in ("FORCE_COLOR", "TTY_COMPATIBLE")


def machine_free_env() -> dict:
    """The environment for a subprocess of a test: this process's, without the ``machine_setting`` variables."""
    return {k: v for k, v in os.environ.items() if not machine_setting(k)}


@pytest.fixture
def no_env(monkeypatch):
    """In-process CLI calls that read none of the machine's ``machine_setting`` variables."""
    for k in [k for k in os.environ if machine_setting(k)]:
        monkeypatch.delenv(k)


@pytest.fixture(scope="session")
def debian_library(tmp_path_factory, embedder):
    """The Debian installation guide (113-page PDF) indexed once per session (~15 s), with the default settings
    (stage 3 on): ``(settings, IndexResult)``. Tests open their own Engine on it."""
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    home = tmp_path_factory.mktemp("debian")
    settings = load_settings({"HOME": str(home), "CACHE_PATH": str(home / "cache"),
                              "MODEL_DIR": str(REPO / "local_rag_db" / "models")}, env={}, config_file=False)
    with Engine(settings, embedder=embedder) as e:
        return settings, e.index_file(DEBIAN_PDF)


@pytest.fixture(scope="session")
def debian_pdf():
    """The Debian guide's PDF as loaded (~5 s a load), shared by the loader and chunker tests; do not modify."""
    from thread_rag.ingest.loaders import load_document

    return load_document(DEBIAN_PDF)


@pytest.fixture
def settings_for(tmp_path):
    from thread_rag.settings import load_settings

    def make(**over):
        # stage 3 (the packaged cross-encoder, on by default) is off here for speed; tests that need it say so
        base = {"HOME": str(tmp_path / "home"), "CACHE_PATH": str(tmp_path / "cache"),
                "MODEL_DIR": str(REPO / "local_rag_db" / "models"), "RERANKER": "none"}
        base.update(over)
        return load_settings(base, env={}, config_file=False)

    return make


@pytest.fixture
def make_engine(settings_for, embedder):
    from thread_rag.engine import Engine

    def make(**over):
        return Engine(settings_for(**over), embedder=embedder)

    return make


@pytest.fixture(scope="session")
def manual_library(tmp_path_factory, embedder):
    """The project's own user manual (docs/) indexed once per session with ``settings_for``'s defaults: the folder
    that holds its data dir (``home``) and summary cache (``cache``). ``manual_engine`` copies it for each test (about
    4 s of indexing per test before, for 89 tests); nothing opens this copy again after it is closed."""
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    root = tmp_path_factory.mktemp("manual")
    settings = load_settings({"HOME": str(root / "home"), "CACHE_PATH": str(root / "cache"),
                              "MODEL_DIR": str(REPO / "local_rag_db" / "models"), "RERANKER": "none"},
                             env={}, config_file=False)
    with Engine(settings, embedder=embedder) as engine:
        results = engine.index_paths([DOCS])
    assert all(r.status == "indexed" for r in results), results
    return root


@pytest.fixture
def manual_engine(manual_library, tmp_path, make_engine):
    """The project's own user manual (docs/), indexed: a copy of the session's library in this test's folder."""
    import shutil

    for part in ("home", "cache"):
        if (manual_library / part).exists():
            shutil.copytree(manual_library / part, tmp_path / part)
    return make_engine()


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _close_engines(monkeypatch):
    """Every Engine a test makes is closed after it: an open Chroma client holds ~6 file descriptors, and a
    suite that leaked them reached 1,024 (prompt-toolkit's select() limit) by test ~200."""
    from thread_rag import engine as engine_module

    made = []
    real_init = engine_module.Engine.__init__

    def init(self, *args, **kwargs):
        made.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(engine_module.Engine, "__init__", init)
    yield
    for e in made:
        e.close()


def make_epub(path: Path, chapters: list[tuple[str, bytes]], title: str = "A Book", linear_no: tuple = (),
              extra: dict | None = None, drop: tuple = ()) -> Path:
    """An EPUB 3 as a reader would get it: mimetype first, container.xml, an OPF in OEBPS/ with each chapter in
    the manifest and the spine (in the order given; ``linear_no`` names chapters marked linear="no"; ``drop`` names
    chapters listed but left out of the zip); ``extra`` adds files."""
    import zipfile

    items = "".join(f'<item id="c{i}" href="{n}" media-type="application/xhtml+xml"/>' for i, (n, _) in
                    enumerate(chapters))
    no = ' linear="no"'
    spine = "".join(f'<itemref idref="c{i}"{no if n in linear_no else ""}/>' for i, (n, _) in enumerate(chapters))
    opf = (f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
           f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata>'
           f'<manifest>{items}</manifest><spine>{spine}</spine></package>')
    container = ('<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                 'version="1.0"><rootfiles><rootfile full-path="OEBPS/content.opf" '
                 'media-type="application/oebps-package+xml"/></rootfiles></container>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        zf.writestr("META-INF/container.xml", container)
        zf.writestr("OEBPS/content.opf", opf)
        for n, data in chapters:
            if n not in drop:
                zf.writestr(f"OEBPS/{n}", data)
        for n, data in (extra or {}).items():
            zf.writestr(n, data)
    return path


def debian_html_pages() -> list[Path]:
    """The Debian guide's HTML edition in reading order: its pages followed by their rel="next" links."""
    import re

    folder = DATA / "docs-debian-procedural/installation-guide-amd64-en"
    pages, name = [], "index.html"
    while name and len(pages) < 500:
        pages.append(folder / name)
        m = re.search(r'<link rel="next" href="([^"]+)"', (folder / name).read_text(encoding="utf-8"))
        name = m.group(1) if m else None
    return pages


# --- the suite's own record (README's suite figure) and the quick tier ------------------------------------------
RECORD_ENV = "THREAD_RAG_SUITE_RECORD"  # a path: a run writes what it did there (bench_results/suite-run.json)
DURATIONS = Path(__file__).parent / "durations.json"  # each test's seconds in the last recorded whole run
QUICK_MAX_S = 2.0  # the quick tier (-m "not slow") leaves out every test that took longer in that run
QUICK = "not slow"


def pytest_collection_modifyitems(config, items):
    """The quick tier: a test that took more than ``QUICK_MAX_S`` in the last recorded whole run is marked ``slow``,
    as are the tests marked so by hand (real model, many trials); a test marked ``door`` (a door's one test in the
    quick tier) is kept whatever its time. The durations come from the run itself
    (``durations.json``, written with the suite record), never typed by hand."""
    try:
        took = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return
    for item in items:
        if took.get(item.nodeid, 0.0) > QUICK_MAX_S and item.get_closest_marker("door") is None:
            item.add_marker(pytest.mark.slow)


TOOK: dict = {}  # a recorded run's seconds per test: setup, call and teardown summed (for ``durations.json``)


def pytest_sessionstart(session):
    import time

    session.config._thread_rag_t0 = time.time()


def pytest_runtest_logreport(report):
    if os.environ.get(RECORD_ENV):  # only a recorded run keeps them
        TOOK[report.nodeid] = round(TOOK.get(report.nodeid, 0.0) + report.duration, 2)


def pytest_terminal_summary(terminalreporter):
    """How many tests the missing ../shared data skipped, said in the summary (a plain clone runs without it)."""
    skipped = terminalreporter.stats.get("skipped", [])
    shared = [r for r in skipped if "../shared/data" in str(getattr(r, "longrepr", ""))]
    if shared:
        terminalreporter.write_line(f"{len(shared)} tests skipped: they need ../shared/data beside the checkout")


def pytest_sessionfinish(session, exitstatus):
    """With ``THREAD_RAG_SUITE_RECORD=path``, the run writes its own record: tests, failures, minutes, machine and
    commit, so README's figure is never typed by hand. A whole run (no -k or paths) is recorded, and the quick tier
    (``-m "not slow"``) too; a whole run also writes each test's seconds (``durations.json``: the quick tier's)."""
    target = os.environ.get(RECORD_ENV)
    if not target:
        return
    import datetime
    import subprocess
    import time

    from thread_rag.run_record import machine

    config = session.config
    whole = config.args in ([], ["tests"], [str(REPO / "tests")])
    tier = config.option.markexpr or ""
    if not whole or config.option.keyword or tier not in ("", QUICK) or config.option.collectonly:
        return
    stats = config.pluginmanager.get_plugin("terminalreporter").stats
    count = {k: len(stats.get(k, [])) for k in ("passed", "failed", "skipped", "error")}
    git = lambda *a: subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True).stdout.strip()  # noqa: E731
    command = "python -m pytest -q" + (f' -m "{QUICK}" (the quick tier)' if tier else " (the README's test command)")
    record = {"command": command, "machine": machine(),
              "date": datetime.date.today().isoformat(), "commit": git("rev-parse", "--short", "HEAD"),
              "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
              "tests": count["passed"] + count["failed"], "failed": count["failed"], "skipped": count["skipped"],
              "errors": count["error"], "minutes": round((time.time() - config._thread_rag_t0) / 60, 1),
              "exit_status": int(exitstatus)}
    Path(target).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if not tier and not count["failed"] and not count["error"]:
        DURATIONS.write_text(json.dumps(dict(sorted(TOOK.items())), indent=0) + "\n")
