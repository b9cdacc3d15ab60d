"""Bad input through every door: one clear message, no traceback, store and cache unchanged."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, write
from thread_rag.agent.tools import call_tool, make_tools


def snapshot(engine) -> str:
    """What a bad call must not change: every file of the data dir and summary cache (catalog, token
    cache, trees, search index; Chroma's own files change on reads, so Chroma is compared by content:
    every record's id, text and metadata) and each document's chunk ids and texts as readers see them."""
    h = hashlib.sha256()
    for root in (engine.home, engine.settings.cache_path):
        for p in sorted(root.rglob("*")) if root.exists() else []:
            if p.is_file() and "chroma" not in p.parts and p.name != "write.lock" and not p.name.endswith(".lock"):
                h.update(str(p.relative_to(root)).encode())
                h.update(p.read_bytes())
    h.update(json.dumps(engine.store.rows(), sort_keys=True).encode())
    for d in engine.documents():
        chunks, _ = engine.store.load(d.serial, d.generation)
        h.update(json.dumps([d.doc_id, d.generation, [(c.chunk_id, c.text) for c in chunks]]).encode())
    return h.hexdigest()


BAD_TOOL_CALLS = [
    ("rag_search", {}), ("rag_search", {"query": ""}), ("rag_search", {"query": 12}),
    ("rag_search", {"query": "x", "doc_id": "DOC99"}), ("rag_search", {"query": "x", "doc_id": "../etc"}),
    ("rag_search", {"query": "x", "k": 0}), ("rag_search", {"query": "x", "top": 3}), ("fetch_chunks_by_id", {}), ("fetch_chunks_by_id", {"chunk_ids": []}),
    ("fetch_chunks_by_id", {"chunk_ids": "DOC1_000"}), ("fetch_chunks_by_id", {"chunk_ids": [1, 2]}),
    ("fetch_chunks_by_id", {"chunk_ids": ["x"] * 51}), ("nested_retrieve", {"query": "x", "limit": 0}),
    ("nested_retrieve", {"query": "x", "limit": "five"}), ("nested_retrieve", {"query": "x", "doc_id": "DOC7"}),
    ("pre_heat_summaries", {"serial_id": "DOC42"}), ("pre_heat_summaries", {"serial_id": 3}),
    ("index_new_document", {}), ("index_new_document", {"file_path": "/etc/passwd"}),
    ("index_new_document", {"file_path": "/root/.ssh/id_rsa"}), ("index_new_document", {"file_path": ""}),
    ("list_available_documents", {"extra": True}), ("rm_rf", {"path": "/"}), (None, {}), ("rag_search", "query"),
]


@pytest.mark.parametrize("name,args", BAD_TOOL_CALLS)
def test_bad_tool_calls_leave_store_unchanged(manual_engine, name, args):
    tools = make_tools(manual_engine)
    before = snapshot(manual_engine)
    out = call_tool(tools, name, args)
    assert not out.ok and out.error and "\n" not in out.error and "Traceback" not in out.error
    assert snapshot(manual_engine) == before


def test_a_number_too_large_is_named_so():
    """token_budget 1e308 said "Unable to parse input string as an integer" (it was a number, not a string)."""
    from thread_rag.agent.tools import call_tool

    out = call_tool({"fetch_chunks_by_id": None}, "fetch_chunks_by_id", {"chunk_ids": ["DOC1_000"], "token_budget": 1e308})
    assert out.error == "fetch_chunks_by_id: bad arguments (token_budget: a number too large for a whole number)"


def test_snapshot_sees_a_changed_chunk_text(manual_engine):
    """The snapshot above must notice a write that keeps the number of records (it once compared a count)."""
    before = snapshot(manual_engine)
    rec = manual_engine.documents()[0]
    chunks, vecs = manual_engine.store.load(rec.serial, rec.generation, with_embeddings=True)
    chunks[0].text += " (tampered)"
    manual_engine.store.add(chunks[:1], vecs[:1], rec.generation)
    assert snapshot(manual_engine) != before


def test_fetch_malformed_ids_in_a_valid_call(manual_engine):
    tools = make_tools(manual_engine)
    out = call_tool(tools, "fetch_chunks_by_id", {"chunk_ids": ["DOC1_", "DOC1_-1", "DOC99_000", "../x", "DOC1_001"]})
    assert out.ok and len(out.result["errors"]) == 4 and len(out.result["windows"]) == 1


@pytest.mark.parametrize("query", ["", "   ", "x" * 10_000, "DROP TABLE chunks; --", "\x00\x01", "🙂" * 500])
def test_odd_queries(manual_engine, query):
    tools = make_tools(manual_engine)
    out = call_tool(tools, "rag_search", {"query": query})
    # a blank query is refused, and so is one longer than a search reads (never cut); anything else is searched
    assert out.ok == (bool(query.strip()) and len(query) <= 2000)
    if len(query) > 2000:
        assert "the query is 10,000 characters; at most 2,000 are searched" in out.error, out.error
    if out.ok:
        hits = out.result["hits"]
        assert isinstance(hits, list) and hits
        assert all(manual_engine.chunk(h["chunk_id"]).text == h["text"] for h in hits)
    else:
        assert out.error and "\n" not in out.error and "Traceback" not in out.error


@pytest.mark.parametrize("name,data", [
    ("zero.txt", b""), ("ws.md", b" \n\t\n "), ("bin.md", os.urandom(4096).replace(b"\xff", b"\x00") + b"\x00" * 64),
    ("bad-utf8.txt", b"ok \xff\xfe\xfd " * 3 + b"\x00" * 20), ("trunc.pdf", b"%PDF-1.7\n%\xe2\xe3\n1 0 obj"),
    ("x.docx", b"PK\x03\x04garbage"), ("n.xyz", b"data"), ("dir name with spaces/ü.md", None),
])
def test_bad_files_via_the_agent_door(manual_engine, tmp_path, monkeypatch, name, data):
    monkeypatch.chdir(tmp_path)
    if data is None:
        write(tmp_path / name, "")
    else:
        write(tmp_path / name, data)
    tools = make_tools(manual_engine)
    before = snapshot(manual_engine)
    out = call_tool(tools, "index_new_document", {"file_path": str(tmp_path / name)})
    if out.ok:  # a directory-less file door returns per-file results
        assert out.result["results"]
        assert all(r["status"] == "failed" for r in out.result["results"])
        err = out.result["results"][0]["error"]
    else:
        err = out.error
    assert err and "\n" not in err
    assert snapshot(manual_engine) == before


def test_a_failed_file_is_named_as_it_was_given(make_engine, tmp_path, monkeypatch):
    """Errors found while loading named the resolved absolute path, those found before it the path as typed
    (`thread-rag index ./empty.txt nope.txt` said "/tmp/.../empty.txt: empty file" and "nope.txt: no such file")."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "empty.txt", b"")
    write(tmp_path / "sub" / "bad.pdf", b"not a pdf")
    (tmp_path / "link.txt").symlink_to(tmp_path / "empty.txt")
    e = make_engine()
    errors = [r.error for r in e.index_paths(["./empty.txt", "nope.txt", "sub/bad.pdf", "link.txt"])]
    assert errors == ["empty.txt: empty file (0 bytes)", "nope.txt: no such file",
                      "sub/bad.pdf: not a PDF (no %PDF header; corrupt or misnamed file)",
                      "link.txt: empty file (0 bytes)"]
    # a name that would break the line is quoted as on a result line, and its spaces are kept (they were squeezed:
    # "two  spaces\nx.txt" was named "two spaces x.txt", a file that does not exist)
    write(tmp_path / "two  spaces\nx.txt", b"")
    write(tmp_path / "a  b.txt", b"")
    errors = [r.error for r in e.index_paths(["two  spaces\nx.txt", "a  b.txt"])]
    assert errors == ['"two  spaces\\nx.txt": empty file (0 bytes)', "a  b.txt: empty file (0 bytes)"], errors


def test_unicode_path_with_spaces_indexes(make_engine, tmp_path):
    e = make_engine()
    f = write(tmp_path / "dossier avec espaces" / "guide-ü.md", "# Titre\n\nUne phrase complète sur l'installation.")
    assert e.index_file(f).status == "indexed"


def test_very_long_lines_and_big_file(make_engine, tmp_path):
    e = make_engine(CHUNK_TOKENS=200)
    f = write(tmp_path / "long.txt", ("word " * 20000) + "\n")
    r = e.index_file(f)
    chunks = e.thread(r.doc_id).chunks
    assert len(chunks) == r.chunks > 50 and all(c.n_tokens <= 200 for c in chunks)


@pytest.mark.slow
def test_twenty_megabyte_text_file_is_loaded_and_chunked(tmp_path, embedder):
    """A big plain text loads and chunks in time linear in its size (joining lines was quadratic once); 20 MB shows a
    quadratic step as plainly as the 50 MB this test used to write, in 40% of the time."""
    from thread_rag.ingest.chunker import SentenceChunker
    from thread_rag.ingest.loaders import load_document

    line = "Step {i}: tighten bolt number {i} to the torque in table 4 before moving on.\n"
    with (tmp_path / "big.txt").open("w") as fh:
        i = 0
        while fh.tell() < 20 * 1024 * 1024:
            fh.write("".join(line.format(i=i + j) for j in range(1000)) + "\n")
            i += 1000
    doc = load_document(tmp_path / "big.txt")
    assert len(doc.full_text) > 16_000_000
    chunks = SentenceChunker(embedder.count_tokens).chunk(doc)
    assert len(chunks) > 4_000


BIG_INDEX = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from thread_rag.embedder import TokenCounter, packaged_minilm_path
from thread_rag.engine import Engine
from thread_rag.settings import load_settings

class WideTokens:
    # MiniLM's tokenizer for chunking; 256 token vectors per chunk (what a 256-token chunk gets), made cheaply
    dtype = "fake"
    def __init__(self):
        self.tc = TokenCounter(packaged_minilm_path())
        self.tok = np.random.default_rng(0).normal(size=(256, 384)).astype(np.float32)
    def count_tokens(self, texts):
        return self.tc.count(texts)
    def embed_with_tokens(self, texts):
        v = np.ones((len(texts), 384), np.float32) / np.sqrt(384)
        return v, [self.tok.copy() for _ in texts]

home, big = Path(sys.argv[2]), Path(sys.argv[3])
s = load_settings({"HOME": str(home), "CACHE_PATH": str(home / "cache"), "NESTED": False}, env={}, config_file=False)
e = Engine(s, embedder=WideTokens())
r = e.index_file(big)
rec = e.document(r.doc_id)
# VmHWM: this process's own peak (ru_maxrss would carry the forking parent's peak over exec)
peak_kb = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
print(r.status, r.chunks, e.token_cache.n_chunks(rec.serial, rec.generation),
      e.token_cache.get(rec.serial, rec.generation, r.chunks - 1).shape[0], peak_kb // 1024)
"""


def test_indexing_streams_token_vectors_to_disk(tmp_path):
    """Issue 13 item 7: a file's token vectors (~400 KB per chunk as float32) were all held in memory while
    indexing (a 50 MB text file: > 20 GB). Measured on a 5 MB file (7,928 chunks x 256 token vectors): 12.3 GB
    peak RSS before, under 0.5 GB after; the peak must not grow with the token-vector volume. This test's 2.5 MB file
    (~3,960 chunks: 1.5 GB of float32 token vectors if they were held) takes half the time of the 5 MB one."""
    line = "Step {i}: tighten bolt number {i} to the torque in table 4 before moving on.\n"
    big = tmp_path / "big.txt"
    with big.open("w") as fh:
        i = 0
        while fh.tell() < 5 * 1024 * 1024 // 2:
            fh.write("".join(line.format(i=i + j) for j in range(1000)) + "\n")
            i += 1000
    script = tmp_path / "big_index.py"
    script.write_text(BIG_INDEX)
    r = subprocess.run([sys.executable, str(script), str(REPO), str(tmp_path / "home"), str(big)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    status, chunks, cached, last_tokens, peak_mb = r.stdout.split()
    assert status == "indexed" and int(chunks) > 3500 and int(cached) == int(chunks) and int(last_tokens) == 256
    # float32 token vectors of all chunks would be int(chunks) * 256 * 384 * 4 bytes (~1.5 GB) before any copy
    assert int(peak_mb) < 900, f"peak RSS {peak_mb} MB"  # under 0.5 GB measured; half-precision vectors held: ~1 GB
    assert not list((tmp_path / "home" / "tokcache").glob(".stage-*"))  # the staging folder was moved into place


def test_cli_bad_settings_and_args_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "THREAD_RAG_CHUNK_TOKENS": "lots"}
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path), "docs"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and r.stderr.strip() == \
        "error: invalid setting CHUNK_TOKENS='lots' (from $THREAD_RAG_CHUNK_TOKENS): expected int"
    env.pop("THREAD_RAG_CHUNK_TOKENS")
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path), "fetch", "DOC1_"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr


CONCURRENT = """
import sys
sys.path.insert(0, {repo!r})
from thread_rag.settings import load_settings
from thread_rag.engine import Engine
e = Engine(load_settings({{"HOME": {home!r}, "CACHE_PATH": {cache!r}}}, env={{}}, config_file=False))
for p in {paths!r}:
    e.index_file(p)
"""


def test_two_processes_index_different_files_at_once(tmp_path, embedder):
    from conftest import DOCS
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    files = sorted(DOCS.glob("*.md"))
    home, cache = str(tmp_path / "h"), str(tmp_path / "c")
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT.format(repo=str(REPO), home=home, cache=cache,
                                                                       paths=[str(p) for p in part])],
                              stderr=subprocess.PIPE) for part in (files[:3], files[3:])]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()[-2000:]
    e = Engine(load_settings({"HOME": home, "CACHE_PATH": cache}, env={}, config_file=False), embedder=embedder)
    docs = e.documents()
    assert sorted(d.name for d in docs) == sorted(f.name for f in files)
    assert sorted(d.doc_id for d in docs) == [f"DOC{i}" for i in range(1, 7)]
    assert e.check_consistency() == []
    assert e.retriever.search("pre-heat summaries", k=1).hits


def test_no_pickle_or_eval_of_stored_data():
    import re

    for p in (REPO / "thread_rag").rglob("*.py"):
        src = p.read_text()
        assert not re.search(r"^\s*import pickle|^\s*from pickle|allow_pickle\s*=\s*True|(?<![.\w])eval\(|(?<![.\w])exec\(", src, re.M), p


def test_a_file_that_no_longer_indexes_says_its_earlier_version_stays(make_engine, tmp_path):
    """A watched file truncated to nothing failed ("empty file") while its document went on serving the old text,
    and nothing said so."""
    from thread_rag.errors import IngestError

    e = make_engine()
    f = write(tmp_path / "b.md", "# B\n\nThe beta valve opens clockwise.\n")
    rec = e.document(e.index_file(f).doc_id)
    f.write_bytes(b"")
    note = f"{f}: empty file (0 bytes); {rec.doc_id} keeps the version indexed {rec.indexed_at}"
    assert [r.error for r in e.index_paths([f])] == [note]
    with pytest.raises(IngestError) as exc:
        e.index_file(f)
    assert str(exc.value) == note
    f.unlink()
    assert e.index_paths([f])[0].error == f"{f}: no such file; {rec.doc_id} keeps the version indexed {rec.indexed_at}"
    assert e.index_paths([tmp_path / "never.md"])[0].error == f"{tmp_path / 'never.md'}: no such file"


def test_a_broken_link_is_named_a_broken_link(make_engine, tmp_path):
    """`index DIR` with a dangling link said "no such file" for a name `ls` shows."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "dangling.md").symlink_to(tmp_path / "gone.md")
    errors = [r.error for r in make_engine().index_paths([tmp_path / "src"])]
    assert errors == [f"{tmp_path / 'src' / 'dangling.md'}: a link to {tmp_path / 'gone.md'}, which does not exist"]
    (tmp_path / "a.md").symlink_to("b.md")
    (tmp_path / "b.md").symlink_to("a.md")
    assert make_engine().index_paths([tmp_path / "a.md"])[0].error == (
        f"{tmp_path / 'a.md'}: a loop of links that never reaches a file")
    (tmp_path / "c.md").symlink_to("src/dangling.md")  # a chain that ends at a missing file is no loop
    assert make_engine().index_paths([tmp_path / "c.md"])[0].error == (
        f"{tmp_path / 'c.md'}: a link to src/dangling.md, which does not exist")


def test_a_file_name_that_is_not_utf8_fails_alone(make_engine, tmp_path):
    """A name such as caf\\xe9.md (Latin-1 bytes) stopped `index DIR` for every file of the folder ("unexpected
    UnicodeEncodeError", nothing indexed)."""
    src = tmp_path / "src"
    src.mkdir()
    bad = os.path.join(os.fsencode(src), b"caf\xe9.md")
    with open(bad, "wb") as f:
        f.write(b"The purple knob calibrates the sensor.\n")
    write(src / "normal.md", "The yellow knob is for the heater.\n")
    e = make_engine()
    res = e.index_paths([src])
    assert [r.status for r in res] == ["failed", "indexed"], res
    assert res[0].error == f"{src}/caf\\xe9.md: the file name is not valid UTF-8 (rename the file)"
    assert res[0].path == f"{src}/caf\\xe9.md"  # printable, as the error names it
    assert [d.name for d in e.documents()] == ["normal.md"] and e.check_consistency() == []
    # reached through a link (or the current folder), the real path is what the catalog would store
    os.mkdir(os.path.join(os.fsencode(tmp_path), b"d\xe9p\xf4t"))
    with open(os.path.join(os.fsencode(tmp_path), b"d\xe9p\xf4t", b"inside.md"), "wb") as f:
        f.write(b"The green knob is for the fan.\n")
    (tmp_path / "depot").symlink_to(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"d\xe9p\xf4t")))
    res = e.index_paths([tmp_path / "depot" / "inside.md", tmp_path / "lone\ud800.md"])
    assert res[0].error == (f"{tmp_path}/depot/inside.md: its real path {tmp_path}/d\\xe9p\\xf4t/inside.md is not "
                            f"valid UTF-8 (rename the folder or file)"), res[0].error
    assert res[1].status == "failed" and "not valid UTF-8" in res[1].error  # a JSON escape's lone surrogate too


def test_a_query_that_is_not_valid_utf8_is_searched_not_a_crash(manual_engine, tmp_path):
    """`thread-rag search $'valve \\xff'` (and a JSON line's lone surrogate) gave "unexpected TypeError:
    TextEncodeInput must be ..." from the tokenizer."""
    from thread_rag import tools

    for text in ("pre-heat summaries \udcff", "pre-heat \ud800 summaries"):
        assert tools.rag_search(manual_engine, text)["hits"]
        assert tools.nested_retrieve(manual_engine, text, limit=1)["hits"]
        assert tools.compare_documents(manual_engine, "DOC1", "DOC4", topic=text)["rows"]  # compare's topic too


def test_a_folder_of_new_formats_with_bad_files_indexes_the_rest(make_engine, tmp_path):
    """Broken HTML is read as far as it goes; an HTML file that is binary, an image with no text and a corrupt
    image (named: a folder walk leaves images out) are one line each; an EPUB missing a chapter is indexed with a warning; nothing of a refused file is
    stored and the library stays consistent."""
    from PIL import Image

    from conftest import make_epub

    src = tmp_path / "site"
    write(src / "good.html", "<html><head><title>Pump</title></head><body><h1>Pump</h1><p>Hold the red button "
                             "for ten seconds.<p>Unclosed <b>bold <div>and a div")
    write(src / "binary.html", bytes(range(256)) * 40)
    make_epub(src / "book.epub", [("a.xhtml", b"<html><body><h1>Fan</h1><p>Turn the blue knob.</p></body></html>"),
                                  ("b.xhtml", b"<html><body><p>Lost chapter.</p></body></html>")], drop=("b.xhtml",))
    Image.new("RGB", (200, 100), "white").save(src / "blank.png")
    write(src / "broken.jpg", b"\xff\xd8\xff not an image at all" * 20)
    e = make_engine()
    assert not any(f.suffix in (".png", ".jpg") for f in e.expand_paths([src]))  # a folder's images: left out
    res = {r.path.rsplit("/", 1)[-1]: r for r in e.index_paths([src, src / "blank.png", src / "broken.jpg"])}
    assert {n: r.status for n, r in res.items()} == {"binary.html": "failed", "blank.png": "failed",
                                                   "book.epub": "indexed", "broken.jpg": "failed",
                                                   "good.html": "indexed"}
    assert res["binary.html"].error.endswith("binary.html: not an HTML file (binary content)")
    assert res["blank.png"].error.endswith("blank.png: no text found in the image (OCR read nothing on it)")
    assert res["broken.jpg"].error.endswith("broken.jpg: not an image this reader knows (corrupt or misnamed file)")
    assert res["book.epub"].warnings == ["spine item OEBPS/b.xhtml is missing from the book: skipped"]
    assert all("\n" not in r.error for r in res.values() if r.error)
    assert sorted(d.name for d in e.documents()) == ["book.epub", "good.html"] and e.check_consistency() == []
    text = " ".join(c.text for d in e.documents() for c in e.thread(d.serial).chunks)
    assert "red button" in text and "and a div" in text and "blue knob" in text


def test_hostile_files_are_one_line_each_fast_and_small(tmp_path):
    """Issue 47: a zip bomb (DOCX, EPUB), PDFs whose page tree holds itself, nests 100,000 deep or names the page
    as its own contents, a 200 MiB one-line text, NUL bytes, an HTML file that is random bytes: each is refused
    in one line (or read as far as it goes) in its own fresh process, in seconds, its peak memory under 1 GiB."""
    from hostile_files import HOSTILE, make_hostile

    files = make_hostile(tmp_path / "hostile")
    code = ("import json, sys, time\nfrom thread_rag.ingest.loaders import load_document\n"
            "t = time.perf_counter()\ntry:\n    load_document(sys.argv[1]); said = ''\n"
            "except Exception as exc:\n    said = f'{type(exc).__name__}: {exc}'\n"
            "peak = [int(ln.split()[1]) for ln in open('/proc/self/status') if ln.startswith('VmHWM')]\n"
            "print(json.dumps({'said': said, 's': time.perf_counter() - t, 'peak_kib': peak[0] if peak else 0}))\n")
    for name, expected in HOSTILE.items():
        r = subprocess.run([sys.executable, "-c", code, str(files[name])], cwd=REPO, capture_output=True, text=True,
                           timeout=120)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        if expected:
            assert out["said"].startswith("IngestError: ") and expected in out["said"], (name, out)
        else:
            assert out["said"] == "", (name, out)
        assert "\n" not in out["said"] and out["s"] < 20 and out["peak_kib"] < 2**20, (name, out)


def test_a_nested_query_over_the_limit_is_refused_in_one_line_not_cut(manual_engine):
    tools = make_tools(manual_engine)
    out = call_tool(tools, "nested_retrieve", {"query": " " * 1990 + "how do I pre-heat summaries?" * 2})
    assert not out.ok and "the query is 2,046 characters; at most 2,000 are searched" in out.error
    assert call_tool(tools, "nested_retrieve", {"query": "how do I pre-heat summaries?"}).ok
