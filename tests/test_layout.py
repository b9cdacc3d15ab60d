"""The data path's parts receive what they use, never the Engine (issue 16): ingest, store, retrieve, threads
and nested import no engine and take no ``engine`` argument; the search and the windows work when built from a
Library reader alone."""
import ast
from pathlib import Path

import thread_rag
from conftest import write

PARTS = ("ingest", "store", "retrieve", "threads", "nested")


def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and ((node.module or "").split(".")[-1] == "engine"
                                                 or any(a.name == "engine" for a in node.names)):
            found.append(f"{path.name}:{node.lineno} imports the engine")
        elif isinstance(node, ast.Import) and any(a.name.endswith(".engine") for a in node.names):
            found.append(f"{path.name}:{node.lineno} imports the engine")
        elif isinstance(node, ast.arg) and node.arg == "engine":
            found.append(f"{path.name}:{node.lineno} takes an engine")
        elif isinstance(node, ast.Attribute) and node.attr == "engine":
            found.append(f"{path.name}:{node.lineno} reaches for .engine")
    return found


def test_the_parts_never_receive_nor_import_the_engine():
    root = Path(thread_rag.__file__).parent
    files = [f for part in PARTS for f in sorted((root / part).glob("*.py"))]
    assert len(files) >= 15
    assert [o for f in files for o in _offences(f)] == []


def test_the_check_catches_an_engine_argument(tmp_path):
    bad = write(tmp_path / "bad.py", "from ..engine import Engine\nfrom .. import engine as e\n"
                                     "def f(engine):\n    return engine.store\n")
    assert len(_offences(bad)) == 3


def test_search_and_windows_built_from_a_library_reader_alone(make_engine, tmp_path):
    from thread_rag.retrieve.pipeline import Retriever
    from thread_rag.store import Catalog, Library, TokenCache
    from thread_rag.threads.windows import WindowBuilder

    e = make_engine()
    e.index_file(write(tmp_path / "g.md", "# Guide\n\n" + "\n\n".join(
        f"Step {i}: turn valve {i} clockwise until the gauge reads {i * 10} bar." for i in range(40))))
    home, s = e.home, e.settings
    lib = Library(Catalog(home / "catalog.json"), lambda: e.store, 4)  # a second reader of the same store
    qe = lambda: e.query_embedder  # noqa: E731 - the same model, no Engine inside the parts
    r = Retriever(lib, s, home, TokenCache(home / "tokcache"), query_embedder=qe, embedder=qe)
    got = r.search("valve 7 gauge", k=3)
    assert got.hits and [h.chunk_id for h in got.hits] == [
        h.chunk_id for h in e.retriever.search("valve 7 gauge", k=3).hits]
    w = WindowBuilder(lib, s, summarizer=lambda: e.summarizer, query_embedder=qe,
                      count_tokens=e.embedder.count_tokens, index=lambda: r.index)
    ids = [h.chunk_id for h in got.hits]
    mine, engines = w.fetch(ids, query="valve 7 gauge"), e.windows.fetch(ids, query="valve 7 gauge")
    assert [x.rendered for x in mine.windows] == [x.rendered for x in engines.windows]  # summaries, walk signals
    assert [x.walk for x in mine.windows] == [x.walk for x in engines.windows]
    assert any(x.walk.next_similarity is not None for x in mine.windows)  # the index provider was used
