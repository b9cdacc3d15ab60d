"""A library on a read-only file system: searched, fetched, asked and listed without writing a byte; changes refused
in one line. The mount is a real read-only bind mount (root only; skipped where the machine allows none)."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DOCS, REPO, machine_free_env
from thread_rag.errors import ReadOnlyError
from thread_rag.threads.summarizers import ExtractiveSummarizer


@contextlib.contextmanager
def read_only_mount(src: Path, at: Path):
    """``src`` seen read-only at ``at`` (a bind mount, remounted read-only)."""
    at.mkdir()
    try:
        subprocess.run(["mount", "--bind", str(src), str(at)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"no bind mount on this machine ({exc})")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(at)], check=True, capture_output=True)
        yield at
    finally:
        subprocess.run(["umount", "--lazy", str(at)], check=True)  # lazy: an engine a failed test left open


def listing(root: Path) -> dict:
    """Every file and folder under ``root`` with its size and modification time (what a write would change)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


class CountingSummarizer(ExtractiveSummarizer):
    calls = 0

    def summarize(self, text: str, heading: str = "") -> str:
        CountingSummarizer.calls += 1
        return super().summarize(text, heading)


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a bind mount needs root")


@needs_root
@pytest.mark.parametrize("derived", ["kept", "lost"])
def test_a_read_only_library_is_searched_fetched_and_listed_and_nothing_is_written(
        manual_library, tmp_path, settings_for, embedder, derived):
    """``lost``: the search index and trees were never made (an older library, or deleted): they are built in memory
    from vectors read off a private copy of the chroma folder, removed when the engine closes."""
    from thread_rag import tools
    from thread_rag.agent.loop import quote_answer
    from thread_rag.engine import Engine

    src = tmp_path / "src"
    shutil.copytree(manual_library / "home", src / "home")  # its summary cache (``cache``) made by nothing yet
    if derived == "lost":
        for name in ("index", "index_parts", "trees"):
            shutil.rmtree(src / "home" / name, ignore_errors=True)
    before = listing(src)
    with read_only_mount(src, tmp_path / "ro") as ro:
        settings = settings_for(HOME=str(ro / "home"), CACHE_PATH=str(ro / "cache"))
        CountingSummarizer.calls = 0
        e = Engine(settings, embedder=embedder, summarizer=CountingSummarizer(40))
        assert e.read_only
        assert [d.doc_id for d in e.documents()][:2] == ["DOC1", "DOC2"]
        hits = e.retriever.search("how are scanned pages read", k=5).hits
        assert hits and any("OCR" in h.text for h in hits)
        first = tools.fetch_chunks_by_id(e, [hits[0].chunk_id])
        assert first["windows"] and not first["errors"]
        made = CountingSummarizer.calls
        assert made > 0  # the cache on disk lacks them: made now
        again = tools.fetch_chunks_by_id(e, [hits[0].chunk_id])
        assert CountingSummarizer.calls == made and again["windows"][0]["text"] == first["windows"][0]["text"]
        nested = tools.nested_retrieve(e, "how are scanned pages read", limit=3)
        assert nested["hits"]
        quote = quote_answer(e, "How are scanned pages read?")
        assert quote["quote"]
        copy = e.store._copy[1].path.parent if e.store._copy else None  # the private copy of the chroma folder
        assert (copy is not None) == (derived == "lost")  # vectors were needed only when the index was lost
        for change in (lambda: e.index_paths([DOCS / "01-getting-started.md"]), lambda: e.delete("DOC1"),
                       lambda: tools.pre_heat_summaries(e)):
            with pytest.raises(ReadOnlyError, match="read-only"):
                change()
        e.close()
        assert copy is None or not copy.exists()
    assert listing(src) == before


@needs_root
def test_the_cli_on_a_read_only_library_answers_and_refuses_changes_in_one_line(manual_library, tmp_path):
    src, tmp = tmp_path / "src", tmp_path / "tmp"
    shutil.copytree(manual_library / "home", src / "home")
    for name in ("index", "index_parts", "trees"):  # lost: the search reads vectors off a private copy of chroma/
        shutil.rmtree(src / "home" / name, ignore_errors=True)
    before = listing(src)
    tmp.mkdir()
    env = {**machine_free_env(), "THREAD_RAG_RERANKER": "none", "TMPDIR": str(tmp)}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(ro / "home"), *args],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=300)

    with read_only_mount(src, tmp_path / "ro") as ro:
        found = cli("search", "how are scanned pages read")
        assert found.returncode == 0, found.stderr
        assert "OCR" in found.stdout
        assert not list(tmp.glob("thread-rag-readonly-*"))  # the copy went with the process (the CLI closes no engine)
        refused = cli("index", str(DOCS / "01-getting-started.md"))
        assert refused.returncode != 0
        lines = [ln for ln in (refused.stdout + refused.stderr).splitlines() if ln.strip()]
        assert len(lines) == 1 and "is read-only" in lines[0] and "Traceback" not in lines[0], lines
        rows = {r["check"]: r for r in json.loads(cli("doctor", "--json").stdout)}
        assert rows["data dir"]["ok"] and "read-only: search and reading work" in rows["data dir"]["detail"]
        assert rows["chroma"]["ok"], rows["chroma"]
        assert "nested tree missing" in rows["store consistency"]["detail"]  # what was lost, named (not an OSError)
        evaluated = cli("eval")
        assert evaluated.returncode != 0 and "is read-only: eval writes its question set" in evaluated.stderr
    assert listing(src) == before


def test_the_read_only_reader_reads_what_chroma_reads(manual_library, tmp_path):
    """The sqlite reader against Chroma's own client, row for row, on a real store."""
    from thread_rag.store.chunk_store import ChunkStore
    from thread_rag.store.read_only_store import ReadOnlyChunkStore

    shutil.copytree(manual_library / "home" / "chroma", tmp_path / "a")
    shutil.copytree(manual_library / "home" / "chroma", tmp_path / "b")
    chroma, reader = ChunkStore(tmp_path / "a"), ReadOnlyChunkStore(tmp_path / "b")
    try:
        assert reader.count() == chroma.count() > 0
        assert reader.rows() == chroma.rows()
        assert reader.generations() == chroma.generations()
        for serial, gen in sorted(chroma.generations())[:3]:
            assert reader.load(serial, gen)[0] == chroma.load(serial, gen)[0]
            chunks, vecs = reader.load(serial, gen, with_embeddings=True)
            want, want_vecs = chroma.load(serial, gen, with_embeddings=True)
            assert chunks == want and (vecs == want_vecs).all()
        keys = [(1, 0, 1), (2, 3, 1), (1, 10_000, 1), (1, 0, 99)]
        assert reader.get_chunks(keys) == chroma.get_chunks(keys) and len(reader.get_chunks(keys)) == 2
    finally:
        chroma.close()
        reader.close()
