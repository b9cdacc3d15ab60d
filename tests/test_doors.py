"""The doors as a new user meets them, in fresh processes: the chat on a real piped or redirected stdin, the CLI's
option order through runner.py, a script file with a bad byte, fetch's errors, output into a pipe."""
import io
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, machine_setting, needs_shared, write
from thread_rag.agent.script import run_script


def _env(tmp_path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not machine_setting(k)}
    # no model load in the background: Ollama on a closed port fails at once (the chat never asks it here)
    env.update(THREAD_RAG_HOME=str(tmp_path / "home"), THREAD_RAG_CACHE_PATH=str(tmp_path / "cache"),
               THREAD_RAG_CHAT_BACKEND="ollama", OLLAMA_HOST="http://127.0.0.1:9", COLUMNS="80", **extra)
    return env


def _indexed_home(cli, tmp_path) -> str:
    home = str(tmp_path / "home")
    assert cli.main(["--data-dir", home, "index", str(write(tmp_path / "g.md", "# G\n\nOpen the valve first.\n"))]) == 0
    return home


def test_chat_reads_every_line_of_a_piped_or_redirected_stdin(tmp_path):
    """prompt-toolkit on a real pipe dropped lines that arrived together (17 of 20 ran) and on a redirected file
    ran none; the chat now reads such input line by line."""
    lines = "/stats\n" * 20 + "/exit\n"  # an empty store: no demo offer may take the first line as its answer
    runner = [sys.executable, str(REPO / "runner.py")]
    piped = subprocess.run(runner, input=lines, capture_output=True, text=True, timeout=180, env=_env(tmp_path))
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert piped.stdout.count("0 documents, 0 chunks") == 20 and "bye" in piped.stdout, piped.stdout[-2000:]
    assert "demo corpus" not in piped.stdout
    script = write(tmp_path / "lines.txt", b"/bogus caf\xe9\n" + lines.encode())  # one byte that is not UTF-8
    with open(script, "rb") as f:
        redirected = subprocess.run(runner, stdin=f, capture_output=True, timeout=180, env=_env(tmp_path))
    out = redirected.stdout.decode()
    assert redirected.returncode == 0, redirected.stderr[-2000:]
    assert "unknown command /bogus" in out and out.count("0 documents, 0 chunks") == 20 and "bye" in out
    assert b"Traceback" not in piped.stderr.encode() + redirected.stderr


def test_runner_takes_options_before_the_command(tmp_path):
    """`python runner.py --data-dir D docs`, as README shows for thread-rag, was sent to the chat as an error."""
    r = subprocess.run([sys.executable, str(REPO / "runner.py"), "--data-dir", str(tmp_path / "d"), "docs", "--json"],
                       capture_output=True, text=True, timeout=180, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["documents"] == []


def test_script_line_with_a_bad_byte_fails_alone(make_engine, tmp_path):
    """One line that is not UTF-8 stopped the whole script with 'unexpected UnicodeDecodeError'."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"tool": "list_available_documents"}\r\n'  # a BOM, CRLF line ends
                     b'{"tool": "rag_search", "args": {"query": "caf\xe9"}}\r\n'
                     b'# a comment in Latin-1: caf\xe9\r\n'
                     b'{"tool": "list_available_documents"}\r\n')
    engine = make_engine()
    buf = io.StringIO()
    assert run_script(engine, str(path), out=buf) == 1
    rows = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert [(r["line"], r["ok"]) for r in rows] == [(1, True), (2, False), (4, True)]
    assert rows[1]["error"] == "not UTF-8 text (byte 46 of the line is 0xe9)"
    path.write_bytes(b'\xef\xbb\xbf{"tool": "rag_search", "args": {"query": "caf\xe9"}}\n')  # the BOM is not counted
    buf = io.StringIO()
    assert run_script(engine, str(path), out=buf) == 1
    assert json.loads(buf.getvalue())["error"] == "not UTF-8 text (byte 46 of the line is 0xe9)"


def test_script_folder_is_named_a_folder(make_engine, tmp_path):
    from thread_rag.errors import ThreadRagError

    with pytest.raises(ThreadRagError, match="is a folder, not a script file"):
        run_script(make_engine(), str(tmp_path))


def test_cli_fetch_errors_and_output_into_a_pipe(tmp_path):
    """fetch printed a bad id's error on stdout, its id twice, and exited 0 beside a good window; a line longer
    than 80 columns was wrapped into a pipe; stats printed a Python dict."""
    cli = [sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path / "d")]
    env = {**_env(tmp_path), "PYTHONPATH": str(REPO)}
    long_dir = tmp_path / ("a-folder-name-long-enough-to-push-the-index-line-past-eighty-columns" * 2)
    doc = write(long_dir / "guide.md", "# Guide\n\nOpen the valve before you start the pump.\n")
    r = subprocess.run([*cli, "index", str(doc)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [x.split()[:2] for x in r.stdout.splitlines() if x.strip()] == [["indexed", "DOC1"]]
    assert r.stdout.startswith("indexed") and str(doc) in r.stdout.splitlines()[0]  # one line, path included, no blank line first
    r = subprocess.run([*cli, "fetch", "DOC1_000", "DOC1_999", "DOC999_000"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 1 and "Open the valve" in r.stdout and "DOC1_999" not in r.stdout
    assert r.stderr.splitlines() == ["error: DOC1_999: out of range (DOC1 has chunks DOC1_000..DOC1_000)",
                                     "error: DOC999_000: unknown document DOC999"]
    r = subprocess.run([*cli, "stats"], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and r.stdout.startswith("1 document, 1 chunk, data dir "), r.stdout


def test_data_dir_that_is_a_file_is_named(tmp_path):
    """A data dir path that is a file said only 'File exists'."""
    afile = write(tmp_path / "afile", "hi")
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(afile), "docs"], capture_output=True,
                       text=True, timeout=180, env={**_env(tmp_path), "PYTHONPATH": str(REPO)})
    assert r.returncode == 1
    assert r.stderr.strip() == f"error: file system error: {afile} is a file, where a folder is needed"


def test_a_mistyped_command_line_is_one_line(tmp_path, capsys, no_env):
    """`search hello --k abc`, a bare `delete`, `compare DOC1` printed argparse's usage block and its own error line
    (two to four lines); now one line that names the command's --help, exit 2 as for any usage error."""
    from thread_rag import cli

    home = str(tmp_path / "home")
    for argv, line in [(["search", "hello", "--k", "abc"],
                        "error: argument --k: invalid int value: 'abc' (see `thread-rag search --help`)"),
                       (["delete"], "error: the following arguments are required: doc_id "
                                    "(see `thread-rag delete --help`)"),
                       (["bogus"], "error: argument cmd: invalid choice: 'bogus' "),
                       (["search", "ram", "--bogus"],  # it named `thread-rag --help`, which does not list --doc
                        "error: unrecognized arguments: --bogus (see `thread-rag search --help`)"),
                       (["delete", "DOC1", "DOC2"], "error: unrecognized arguments: DOC2 (see `thread-rag delete --help`)"),
                       (["--data-dir", " ", "stats"], "error: --data-dir is empty: give a folder, or leave the option "
                                                      "out for the default data dir (see `thread-rag --help`)")]:
        with pytest.raises(SystemExit) as stop:
            cli.main(argv if argv[0] == "--data-dir" else ["--data-dir", home, *argv])
        out, err = capsys.readouterr()
        assert stop.value.code == 2 and not out and len(err.splitlines()) == 1 and err.startswith(line), (argv, err)
    assert not os.path.exists(home)


def test_an_empty_data_dir_is_refused_and_a_closed_pipe_is_quiet(tmp_path):
    """`--data-dir ""` (a script's unset variable) quietly used the default library; `thread-rag --json docs | head`
    said "error: file system error: Broken pipe" and exited 1 (a new user's trial)."""
    env = {**_env(tmp_path), "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", " ", "stats"], capture_output=True,
                       text=True, timeout=180, env=env)
    assert r.returncode == 2 and "--data-dir" in r.stderr and "empty" in r.stderr and not r.stdout, r
    line = f"{sys.executable} -m thread_rag.cli --data-dir {tmp_path / 'd'} --json stats | true"
    r = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0 and r.stderr == "", r


def test_empty_store_hint_names_a_path_that_exists_anywhere(tmp_path):
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path / "d"), "docs"],
                       capture_output=True, text=True, timeout=180, env={**_env(tmp_path), "PYTHONPATH": str(REPO)},
                       cwd=tmp_path)
    d = tmp_path / "d"
    assert r.returncode == 0 and r.stdout.strip() == (f"No documents indexed in {d}. Index a file or folder: "
                                                      f"thread-rag --data-dir {d} index PATH")


def test_doctor_on_a_data_dir_that_is_a_file_says_so(tmp_path):
    afile = write(tmp_path / "afile", "hi")
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "doctor", "--data-dir", str(afile), "--json"],
                       capture_output=True, text=True, timeout=180, env={**_env(tmp_path), "PYTHONPATH": str(REPO)})
    row = next(x for x in json.loads(r.stdout) if x["check"] == "data dir")
    assert r.returncode == 1 and not row["ok"] and "is not a folder" in row["detail"]
    assert row["fix"].startswith("a file is in the way: move it, or use another folder"), row["fix"]
    afile.chmod(0o755)  # below a file (even one root may enter): it can never be made
    r = subprocess.run([sys.executable, "-m", "thread_rag.cli", "doctor", "--data-dir", str(afile / "sub"), "--json"],
                       capture_output=True, text=True, timeout=180, env={**_env(tmp_path), "PYTHONPATH": str(REPO)})
    row = next(x for x in json.loads(r.stdout) if x["check"] == "data dir")
    assert not row["ok"] and f"cannot be made: {afile} is not a folder" in row["detail"], row
    assert row["fix"].startswith("a file is in the way"), row["fix"]


def test_doctor_names_a_store_that_does_not_open_once(tmp_path, capsys, monkeypatch, no_env):
    """On a store Chroma could not open (seen on a read-only file system, before such a library was read through
    sqlite) the doctor's consistency line was "'RustBindingsAPI' object has no attribute 'bindings'" (it opened the
    store again after the chroma check had failed to). The store's first read fails as Chroma's did there; a real
    read-only library is tests/test_read_only.py's."""
    from thread_rag import cli
    from thread_rag.store import chunk_store

    home = _indexed_home(cli, tmp_path)
    capsys.readouterr()

    def readonly(self):
        raise RuntimeError("error returned from database: (code: 8) attempt to write a readonly database")

    monkeypatch.setattr(chunk_store.ChunkStore, "count", readonly)
    assert cli.main(["--data-dir", home, "doctor", "--json"]) == 1
    rows = {x["check"]: x for x in json.loads(capsys.readouterr().out)}
    assert not rows["chroma"]["ok"] and "readonly" in rows["chroma"]["detail"], rows["chroma"]
    assert rows["store consistency"] == {"check": "store consistency", "ok": False,
                                         "detail": "not checked: the store did not open (see chroma)",
                                         "fix": "fix what the chroma line names first"}, rows["store consistency"]


def test_script_line_whose_tool_partly_failed_is_not_ok(make_engine, tmp_path):
    """fetch with an unknown id, or index of a corrupt file, came back as "ok": true (exit 0), where the CLI exits 1
    and MCP returns isError; a NaN in the arguments was echoed as non-standard JSON."""
    engine = make_engine(ALLOWED_ROOTS=[str(tmp_path)])
    engine.index_file(write(tmp_path / "guide.md", "# Guide\n\nOpen the valve before you start the pump.\n"))
    write(tmp_path / "bad.pdf", b"%PDF-1.4 not really")
    path = write(tmp_path / "s.jsonl", "\n".join([
        json.dumps({"tool": "fetch_chunks_by_id", "args": {"chunk_ids": ["DOC1_000", "DOC99_001"]}}),
        json.dumps({"tool": "index_new_document", "args": {"file_path": str(tmp_path / "bad.pdf")}}),
        '{"tool": "nested_retrieve", "args": {"query": "valve", "limit": NaN}}',
        '{"tool": "nested_retrieve", "args": {"query": "valve", "limit": 1e400}}',
        json.dumps({"tool": "fetch_chunks_by_id", "args": {"chunk_ids": ["DOC1_000"]}})]))
    buf = io.StringIO()
    assert run_script(engine, str(path), out=buf) == 1
    rows = [json.loads(x, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}")) for x in
            buf.getvalue().splitlines()]
    assert [r["ok"] for r in rows] == [False, False, False, False, True]
    assert rows[0]["error"] == "fetch_chunks_by_id: DOC99_001: unknown document DOC99"
    assert "Open the valve" in rows[0]["result"]["windows"][0]["rendered"]  # what did work is still there
    assert rows[1]["error"].startswith("index_new_document: ") and "bad.pdf" in rows[1]["error"]
    assert rows[2]["error"].startswith("not valid JSON") and rows[3]["error"].startswith("not valid JSON")


def test_what_a_bad_input_trial_found_in_the_wording(make_engine, tmp_path, capsys, no_env):
    """A new user's trial: a valid JSON line that is not an object was "not valid JSON"; {"ask": 123} was asked as
    "123" where a tool refuses a number for text; an empty file_path said "index_new_document: index_new_document
    needs a file_path"; a second delete said "known: none indexed yet"; a name with a line break broke the `docs`
    table over two rows (index and watch lines quote it); a full disk was "unexpected InternalError"."""
    from thread_rag import cli
    from thread_rag.errors import one_line

    engine = make_engine(ALLOWED_ROOTS=[str(tmp_path)])
    path = write(tmp_path / "s.jsonl", "\n".join(['[1, 2, 3]', '"text"', '{"ask": 123}',
                                                 '{"tool": "index_new_document", "args": {"file_path": ""}}']))
    buf = io.StringIO()
    assert run_script(engine, str(path), out=buf) == 1
    errors = [json.loads(x)["error"] for x in buf.getvalue().splitlines()]
    assert errors == ["a line must be a JSON object, not an array", "a line must be a JSON object, not a string",
                      '"ask" must be the question as text, not a number',
                      "index_new_document: file_path is empty: name a file or folder to index"], errors
    home = str(tmp_path / "home")
    assert cli.main(["--data-dir", home, "index", str(write(tmp_path / "new\nline.md", "# N\n\nOpen the valve.\n"))]) == 0
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "docs"]) == 0
    assert '"new\\nline.md"' in capsys.readouterr().out
    assert cli.main(["--data-dir", home, "delete", "DOC1"]) == 0
    assert cli.main(["--data-dir", home, "delete", "DOC1"]) == 1
    assert capsys.readouterr().err.strip() == "error: unknown document DOC1 (the library holds no documents)"

    class InternalError(Exception):  # chromadb.errors.InternalError's name and message on a full disk
        pass

    assert one_line(InternalError("error returned from database: (code: 13) database or disk is full")) == (
        "the disk is full (the store said: error returned from database: (code: 13) database or disk is full); "
        "free some space and try again")
    import errno  # a file write's own ENOSPC (index on a full disk) says the same

    assert one_line(OSError(errno.ENOSPC, "No space left on device")) == (
        "the disk is full (No space left on device); free some space and try again")


def test_two_documents_of_one_name_are_told_apart_by_their_folders(tmp_path, capsys, no_env):
    """Two editions of a guide (amd64/install.en.pdf, arm64/install.en.pdf) were both "install.en.pdf" in `docs`,
    the chat's /docs and a comparison's header (a new user's trial)."""
    from thread_rag import cli, tools
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    home = str(tmp_path / "home")
    for arch in ("amd64", "arm64"):
        write(tmp_path / "guides" / arch / "install.md", f"# Install\n\nBoot the {arch} installer from USB.\n")
    write(tmp_path / "notes.md", "# Notes\n\nNothing here.\n")
    assert cli.main(["--data-dir", home, "index", str(tmp_path / "guides"), str(tmp_path / "notes.md")]) == 0
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "docs"]) == 0
    out = capsys.readouterr().out
    assert "install.md (amd64)" in out and "install.md (arm64)" in out and "notes.md" in out, out
    with Engine(load_settings({"HOME": home})) as e:
        docs = tools.list_available_documents(e)["documents"]
        assert [d["label"] for d in docs] == ["install.md (amd64)", "install.md (arm64)", "notes.md"]
        assert docs[0]["name"] == "install.md" and "path" not in docs[0]  # no home folders to a model or MCP client
        res = tools.compare_documents(e, "DOC1", "DOC2")
        assert (res["doc_a"]["label"], res["doc_b"]["label"]) == ("install.md (amd64)", "install.md (arm64)")
        assert res["doc_a"]["name"] == "install.md"
    from types import SimpleNamespace as Doc

    from thread_rag.records import distinct_names

    assert distinct_names([Doc(doc_id="DOC1", name="i.pdf", path="/x/i.pdf"),  # no "//x" for the root
                           Doc(doc_id="DOC2", name="i.pdf", path="/a/x/i.pdf")]) == {
        "DOC1": "i.pdf (x)", "DOC2": "i.pdf (a/x)"}
    assert distinct_names([Doc(doc_id="DOC1", name="T", path="bench://musique/12"),  # folders cannot tell them
                           Doc(doc_id="DOC2", name="T", path="bench://musique/13")]) == {"DOC1": "T", "DOC2": "T"}


def test_preheat_failures_are_partial_failures():
    from thread_rag.agent.tools import result_errors

    assert result_errors("pre_heat_summaries", {"made": 1, "cached": 0, "failed": 1, "errors": ["DOC1_003: boom"]}) \
        == ["DOC1_003: boom"]
    assert result_errors("pre_heat_summaries", {"made": 2, "cached": 0, "failed": 0,
                                                "errors": ["summary cache set aside"]}) == []  # a warning only


def test_a_pipe_is_not_read(make_engine, tmp_path):
    """A FIFO in a watched or indexed folder hung the watcher: reading it waits for a writer forever."""
    import signal

    from thread_rag.errors import IngestError

    engine = make_engine()
    fifo = tmp_path / "docs" / "pipe.md"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    write(tmp_path / "docs" / "guide.md", "# Guide\n\nOpen the valve.\n")
    signal.signal(signal.SIGALRM, lambda *a: pytest.fail("hung on the pipe"))
    signal.alarm(60)
    try:
        with pytest.raises(IngestError, match="not a regular file"):
            engine.index_file(fifo)
        assert [p.name for p in engine.expand_paths([tmp_path / "docs"])] == ["guide.md"]
    finally:
        signal.alarm(0)


def test_an_empty_token_cache_file_is_a_lost_cache(make_engine):
    """A token-cache file cut to 0 bytes made every search, doctor and doctor --repair fail with 'unexpected
    EOFError: No data left in file' (a file cut to 200 bytes was handled); now it is a damaged cache like that one:
    the search recomputes in memory, doctor names it, repair rebuilds it."""
    from thread_rag.doctor import checks, repair

    engine = make_engine()
    for name, text in (("a.md", "# Filters\n\nReplace the air filter behind the rear panel every spring.\n"),
                       ("b.md", "# Belts\n\nCheck the drive belt tension before each season.\n")):
        engine.index_file(write(engine.home.parent / "src" / name, text))
    before = [h["chunk_id"] for h in search_ids(engine, "replace air filter rear panel")]
    (engine.home / "tokcache" / "DOC1.g1" / "codes.npy").write_bytes(b"")
    (engine.home / "tokcache" / "DOC2.g1" / "offsets.npy").write_bytes(b"")
    (engine.home / "index" / "vectors.npy").write_bytes(b"")  # the merged search index too
    again = make_engine()
    assert [h["chunk_id"] for h in search_ids(again, "replace air filter rear panel")] == before
    rows = {r["check"]: r for r in checks(again.settings)}
    assert not rows["store consistency"]["ok"] and "DOC1" in rows["store consistency"]["detail"], rows
    fixed = repair(again.settings)
    assert fixed["ok"] and "DOC1" in fixed["detail"] and "DOC2" in fixed["detail"], fixed
    assert all(r["ok"] for r in checks(again.settings) if r["check"] == "store consistency")


def search_ids(engine, query):
    from thread_rag import tools

    return tools.rag_search(engine, query)["hits"]


def test_chat_index_takes_a_quoted_path(make_engine, tmp_path):
    """`/index "/path/src dir"` kept the quotes as part of the path (no such file); unquoted spaces still work."""
    from rich.console import Console

    from thread_rag.repl import Repl

    a = write(tmp_path / "src dir" / "a.md", "# A\n\nOpen the valve.\n")
    b = write(tmp_path / "other dir" / "b.md", "# B\n\nClose the valve.\n")
    buf = io.StringIO()
    repl = Repl(make_engine(), console=Console(file=buf, width=200), input_fn=lambda p: None, preload=False)
    repl.handle(f'/index "{a.parent}"')
    repl.handle(f"/index {b.parent}")
    out = buf.getvalue()
    assert f"indexed DOC1 (1 chunk) {a}" in out and f"indexed DOC2 (1 chunk) {b}" in out, out


def test_an_emptied_index_manifest_is_rebuilt_by_the_search_that_meets_it(make_engine):
    """The first search after the search index's manifest was emptied failed ("manifest.json is corrupt"; the next
    one worked): it is derived data, rebuilt in the same search."""
    engine = make_engine()
    engine.index_file(write(engine.home.parent / "src" / "a.md", "# Filters\n\nReplace the air filter every spring.\n"))
    before = [h["chunk_id"] for h in search_ids(engine, "air filter")]
    (engine.home / "index" / "manifest.json").write_bytes(b"")
    assert [h["chunk_id"] for h in search_ids(make_engine(), "air filter")] == before
    assert (engine.home / "index" / "manifest.json").stat().st_size > 0  # a new base, written with its manifest


def test_doctor_names_the_catalog_log_line_that_is_corrupt_not_the_snapshot(tmp_path):
    """A garbage line inside catalog.log was reported as "catalog.json is unreadable (CorruptFileError)": the user was
    sent to restore the wrong file."""
    from thread_rag.doctor import store_checks
    from thread_rag.records import DocumentRecord
    from thread_rag.settings import Settings
    from thread_rag.store.catalog import Catalog

    home = tmp_path / "d"
    home.mkdir()
    cat = Catalog(home / "catalog.json")
    for _ in range(2):
        serial = cat.allocate_serial()
        cat.commit(DocumentRecord(serial=serial, doc_id=f"DOC{serial}", name="f.md", path=f"/d/f{serial}.md",
                                  content_hash=f"h{serial}", kind="markdown", chunk_count=1, pages=None,
                                  indexed_at="2026-12-02T00:00:00+0000", generation=1, chunk_strategy="s", embedder="e"))
    lines = cat.log_path.read_bytes().splitlines()
    cat.log_path.write_bytes(b"\n".join([lines[0], b"garbage", *lines[1:]]) + b"\n")
    row = next(r for r in store_checks(Settings(HOME=str(home))) if r["check"] == "catalog")
    assert not row["ok"] and "catalog.log: line 2" in row["detail"] and "catalog.json is unreadable" not in row["detail"]
    assert "doctor --repair" in row["fix"] and "backup" in row["fix"]
    from thread_rag.doctor import repair

    fixed = repair(Settings(HOME=str(home)))                 # what the fix says works: the line goes, a copy stays
    assert fixed["ok"] and "line 2 did not read" in fixed["detail"], fixed
    rows = [r for r in store_checks(Settings(HOME=str(home))) if r["check"] == "catalog"]  # reads again: only the
    assert len(rows) == 1 and "is kept from a mended catalog log" in rows[0]["detail"], rows  # kept copy is named


def test_search_and_nested_on_an_empty_library_say_the_same_thing(tmp_path):
    """`nested` on an empty library said "error: no documents indexed" (exit 1) where `search` said "no results"
    (exit 0) and neither said what to do (a new user's trial)."""
    env = {**_env(tmp_path), "PYTHONPATH": str(REPO)}
    cli = [sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path / "d")]
    d = tmp_path / "d"
    hint = f"No documents indexed in {d}. Index a file or folder: thread-rag --data-dir {d} index PATH"
    for cmd in ("search", "nested"):
        r = subprocess.run([*cli, cmd, "how to install"], capture_output=True, text=True, timeout=180, env=env)
        assert r.returncode == 0 and r.stdout.splitlines()[0] == hint and r.stderr == "", (cmd, r)
        r = subprocess.run([*cli, cmd, "how to install", "--json"], capture_output=True, text=True, timeout=180,
                           env=env)
        assert r.returncode == 0 and json.loads(r.stdout)["hits"] == [], (cmd, r)
    r = subprocess.run([*cli, "preheat"], capture_output=True, text=True, timeout=180, env=env)  # it said "made 0"
    assert r.returncode == 0 and r.stdout.strip() == hint, r


BRACKETS = ("# Setup [/etc] paths\n\nCopy the files into the [/etc] folder and set the port in the [server] section "
            ":warning: first.\n")


def test_brackets_in_documents_names_questions_and_answers_are_printed_as_written(make_engine, tmp_path, monkeypatch,
                                                                                      capsys, no_env):
    """rich read "[/etc]" in a heading or a question as a closing style tag: the chat quit ("unexpected MarkupError",
    its own error line failing the same way) and `search` failed; "[server]" and a file name's "[red]" vanished."""
    from rich.console import Console

    from fakes import ScriptedChatModel
    from thread_rag import cli
    from thread_rag.agent.loop import Agent
    from thread_rag.repl import Repl

    f = write(tmp_path / "ini [red] notes.md", BRACKETS)
    engine = make_engine()
    buf = io.StringIO()
    model = ScriptedChatModel(answer=lambda msgs: "Set it in the [server] section [/x].")
    model.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
    repl = Repl(engine, console=Console(file=buf, width=200), input_fn=lambda p: None, preload=False,
                agent=Agent(engine, chat_model=model))
    for line in (f"/index {f}", "/search copy files etc", "/docs", "which [/x] section sets the port?", "/bogus [/y]",
                 "/stats"):
        assert repl.handle(line) is True, line
    out = buf.getvalue()
    assert "ini [red] notes.md" in out and "Setup [/etc] paths" in out and "the [server] section [/x]." in out, out
    assert "error: unknown command /bogus" in out and "document, 1 chunk" in out and "MarkupError" not in out, out
    monkeypatch.setenv("COLUMNS", "200")  # the CLI in-process (a process per command took 14 s)
    data_dir = ["--data-dir", str(tmp_path / "cli")]
    for cmd, shown in ((["index", str(f)], str(f)),
                       (["search", "copy files etc"], "[/etc] folder and set the port in the [server] section :warning:"),
                       (["docs"], "ini [red] notes.md"), (["nested", "copy files"], "[server] section :warning:"),
                       (["delete", "DOC1"], "ini [red] notes.md")):
        capsys.readouterr()
        assert cli.main([*data_dir, *cmd]) == 0, cmd
        out, err = capsys.readouterr()
        assert shown in out and "MarkupError" not in out + err, (cmd, out, err)


def test_chat_search_and_nested_take_the_cli_options(manual_engine):
    """`/search port --doc DOC9` searched every document and `--k 1` was searched as words (the top score fell
    from 0.98 to 0.07); `/nested port --limit 1` gave 3 passages. A `--word` the command does not take stays text."""
    from rich.console import Console

    from thread_rag.repl import Repl

    buf = io.StringIO()
    repl = Repl(manual_engine, console=Console(file=buf, width=200), input_fn=lambda p: None, preload=False)
    repl.handle("/search pre-heat summaries --k 1")
    hits = [x for x in buf.getvalue().splitlines() if x.startswith("DOC")]
    want = search_ids(manual_engine, "pre-heat summaries")[0]
    assert len(hits) == 1 and hits[0].startswith(want["chunk_id"]), buf.getvalue()
    buf.truncate(0), buf.seek(0)
    repl.handle("/search pre-heat summaries --doc DOC99")
    assert "error: unknown document DOC99" in buf.getvalue(), buf.getvalue()
    buf.truncate(0), buf.seek(0)
    repl.handle("/nested pre-heat summaries --limit 1")
    assert len([x for x in buf.getvalue().splitlines() if x.startswith("DOC")]) == 1, buf.getvalue()
    buf.truncate(0), buf.seek(0)
    repl.handle("/fetch DOC1_000")
    active = lambda out: out.split("[active]\n", 1)[1].split("\n[next", 1)[0]  # noqa: E731 - the chunk's own text
    whole = len(active(buf.getvalue()))
    buf.truncate(0), buf.seek(0)
    repl.handle("/fetch DOC1_000 --budget 40")
    assert "[...]" in buf.getvalue() and 0 < len(active(buf.getvalue())) < whole / 2, buf.getvalue()
    from thread_rag.repl import _options

    assert _options("pre-heat --k=3 --doc doc2", {"--k": r"[0-9]+", "--doc": r"(?i)doc[0-9]+"}) == (
        "pre-heat", {"--k": "3", "--doc": "doc2"})
    # every word after "--" is part of the query; an option of the command whose value does not fit is refused as
    # the CLI refuses it (it was searched as text: "/search hello --doc junk" searched every document)
    assert _options("set -- --k flag --doc DOC1", {"--k": r"[0-9]+", "--doc": r"(?i)doc[0-9]+"}) == (
        "set --k flag --doc DOC1", {})
    assert _options("what does -- --doc mean", {"--doc": r"(?i)doc[0-9]+"}) == ("what does --doc mean", {})
    hint = " (put -- before words that are part of the query)"
    for line, error in [("/search hello --doc junk", "--doc junk: expected a document id such as DOC1" + hint),
                        ("/search hello --k abc", "--k abc: expected a whole number, 0 or more" + hint),
                        ("/search hello --k", "--k: expected a whole number, 0 or more" + hint),
                        ("/search hello --pages=abc", "--pages=abc: expected a range like 10-20 (pages from 1, the first not after "
                         "the last)" + hint),
                        ("/nested hello --offset -1", "--offset -1: expected a whole number, 0 or more" + hint),
                        ("/compare DOC1 DOC2 --limit abc", "--limit abc: expected a whole number, 0 or more"
                         " (put -- before words that are part of the topic)"),
                        ("/search what does --doc mean", "--doc mean: expected a document id such as DOC1" + hint)]:
        buf.truncate(0), buf.seek(0)
        repl.handle(line)
        assert buf.getvalue().strip() == f"error: {error}", (line, buf.getvalue())
    buf.truncate(0), buf.seek(0)
    repl.handle("/search what does --force do")  # not an option of /search: part of the query
    lines = buf.getvalue().splitlines()
    assert not any(x.startswith("error:") for x in lines) and any(x.startswith("DOC") for x in lines), lines
    buf.truncate(0), buf.seek(0)
    repl.handle("/nested pre-heat --limit 0")  # it gave 5 passages, where the CLI refuses it
    assert buf.getvalue().strip() == "error: limit=0 must be an integer from 1 to 50", buf.getvalue()
    buf.truncate(0), buf.seek(0)
    repl.handle("/fetch DOC1_000 --budget x")  # it said "'--budget' is not a chunk id" and "'x' is not ..."
    assert buf.getvalue().strip() == "error: --budget x: expected a number of tokens", buf.getvalue()
    buf.truncate(0), buf.seek(0)
    repl.handle("/fetch DOC1_000 --budget=x")
    assert buf.getvalue().strip() == "error: --budget=x: expected a number of tokens", buf.getvalue()
    buf.truncate(0), buf.seek(0)
    repl.handle("/fetch DOC1_000 --budget 0")  # it said "token_budget=0" (the tool's name), where the CLI names --budget
    assert buf.getvalue().strip() == "error: --budget 0: must be a positive number of tokens", buf.getvalue()


def test_ctrl_c_during_index_keeps_the_lines_of_what_was_committed_and_leaves_no_orphans(tmp_path):
    """`thread-rag index DIR` printed every line at the end: a Ctrl-C part-way printed nothing although files
    had been committed, and the interrupted group's rows stayed until the next start (doctor: orphan chunks)."""
    import signal

    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    files = 400  # far more than can be committed between the first line and the signal, on any machine
    for i in range(files):
        write(tmp_path / "many" / f"f{i:03d}.md", f"# Note {i}\n\nThe valve number {i} turns clockwise. " * 8)
    env = {**_env(tmp_path), "PYTHONPATH": str(REPO), "THREAD_RAG_STORE_GROUP_CHUNKS": "1"}
    # SIGINT as a terminal's Ctrl-C sends it: a suite started in the background (`pytest &`, nohup, some CI runners)
    # passes its children SIGINT ignored, and Python then installs no KeyboardInterrupt handler at all (the "race" of
    # issue 47: exit 0 after the signal, because the signal was never seen)
    p = subprocess.Popen([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(tmp_path / "d"), "index",
                          str(tmp_path / "many")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    first = p.stdout.readline()  # the first file's line comes as it is committed, not at the end
    assert first.startswith("indexed   DOC1"), (first, p.stderr.read() if p.poll() is not None else "")
    p.send_signal(signal.SIGINT)  # at once: a state seen (a file committed), no sleep (issue 47: a race once)
    rest, err = p.communicate(timeout=120)
    said = [first] + rest.splitlines()
    assert p.returncode == 130 and err.strip().endswith("interrupted"), (p.returncode, err)
    engine = Engine(load_settings({"HOME": str(tmp_path / "d")}, env={}, config_file=False))
    assert engine.check_consistency() == []  # nothing left for the next start to clean
    # a file committed as the interrupt came may not have had its line printed yet: at most one
    assert len(said) <= len(engine.documents()) <= len(said) + 1 and len(said) < files, (len(engine.documents()), said)


def test_reading_commands_on_a_data_dir_with_no_library_make_nothing_there(tmp_path, monkeypatch, capsys, no_env):
    """A mistyped `--data-dir` on `docs`, `search`, `stats`... made an empty library there (a write.lock; `search`
    an empty index) and the hint did not name the folder, nor the --data-dir its `thread-rag index` would need."""
    from thread_rag import cli

    typo = tmp_path / "libary"  # the summary cache's default is inside it too (<data dir>/doc_cache)
    hint = f"No documents indexed in {typo}. Index a file or folder: thread-rag --data-dir {typo} index PATH"
    for argv, rc in ((["docs"], 0), (["stats"], 0), (["search", "x"], 0), (["nested", "x"], 0), (["preheat"], 0),
                     (["fetch", "DOC1_000"], 1), (["delete", "DOC1"], 1), (["compare", "DOC1", "DOC2"], 1),
                     (["ask", "how do I install it?"], 1)):
        assert cli.main(["--data-dir", str(typo), *argv]) == rc, argv
        out, err = capsys.readouterr()
        assert not typo.exists(), argv
        if argv[0] in ("docs", "search", "nested", "preheat"):
            assert out.splitlines()[0] == hint, (argv, out)
        if argv[0] == "search":  # no "stages ; early exit False; 0 ms" for a search that searched nothing
            assert out.splitlines()[1:] == ["no results"], out
        if argv[0] == "stats":
            assert out.strip() == f"0 documents, 0 chunks, data dir {typo} (nothing indexed there)"
        if argv[0] == "ask":  # said so before any model was loaded, and named the shell's command, not the chat's
            assert err.strip() == f"error: {hint}" and not out, err
        assert cli.main(["--data-dir", str(typo), *argv, "--json"]) == rc, argv
        capsys.readouterr()
        assert not typo.exists(), argv
    typo.mkdir()  # a folder that is not a library (someone's documents): nothing written into it either
    assert cli.main(["--data-dir", str(typo), "search", "x"]) == 0
    assert list(typo.iterdir()) == []


def test_a_search_hit_shows_every_page_it_spans():
    """`search --pages 3` listed "DOC12_001 p.2" for a chunk of pages 2-7: it looked as if the filter were broken."""
    from rich.console import Console

    from thread_rag.render import render_search

    buf = io.StringIO()
    hit = {"chunk_id": "DOC12_001", "page_start": 2, "page_end": 7, "score": 0.5, "heading_path": [], "text": "x"}
    render_search(Console(file=buf, width=100), {"hits": [hit], "stages_run": ["stage1"], "timings_ms": {}})
    assert buf.getvalue().startswith("DOC12_001 pp.2-7  0.500"), buf.getvalue()
    buf = io.StringIO()  # chunks keep their lines and indentation now; a hit's one-line snippet collapses them
    hit = dict(hit, text="Run:\n    curl -LO x\n        tar xzf y")
    render_search(Console(file=buf, width=100), {"hits": [hit], "stages_run": ["stage1"], "timings_ms": {}})
    assert "   Run: curl -LO x tar xzf y" in buf.getvalue(), buf.getvalue()


def test_preheat_says_why_its_summaries_failed(tmp_path, monkeypatch, capsys, no_env):
    """With the summary model's server down, `preheat` said "failed 4" and nothing more; --json cut each reason
    mid-word ("is `ollama ser") and named CHAT_BACKEND, where SUMMARY_BACKEND chooses the summarizer."""
    from thread_rag import cli

    home = _indexed_home(cli, tmp_path)
    monkeypatch.setenv("THREAD_RAG_SUMMARY_BACKEND", "ollama")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "preheat"]) == 1
    out, err = capsys.readouterr()
    assert "failed 1" in out
    (line,) = err.splitlines()  # each distinct reason once
    assert line.startswith("error: DOC1_000: Ollama request failed at http://127.0.0.1:9 (") and "SUMMARY_BACKEND=extractive" in line, err
    assert cli.main(["--data-dir", home, "preheat", "--json"]) == 1
    (reason,) = json.loads(capsys.readouterr().out)["errors"]
    assert reason == line[len("error: "):]  # whole, not cut at 160 characters


def test_fetch_with_the_summary_server_down_prints_its_windows_with_extractive_summaries(tmp_path, monkeypatch,
                                                                                          capsys, no_env):
    """With SUMMARY_BACKEND=ollama and Ollama down, `fetch` printed one error line and no window at all (the
    chunks were there; only their neighbours' summaries were not); the summary server is asked once per fetch."""
    from thread_rag import cli
    from thread_rag.threads import summarizers

    home = str(tmp_path / "home")
    text = "# G\n\n" + "\n\n".join(f"Step {i}: open valve {i} slowly and check the gauge reads {i} bar. " * 12
                                     for i in range(8))
    assert cli.main(["--data-dir", home, "index", str(write(tmp_path / "g.md", text))]) == 0
    monkeypatch.setenv("THREAD_RAG_SUMMARY_BACKEND", "ollama")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    calls = []
    real = summarizers.OllamaSummarizer.summarize
    monkeypatch.setattr(summarizers.OllamaSummarizer, "summarize", lambda *a, **k: calls.append(1) or real(*a, **k))
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "fetch", "DOC1_001", "DOC1_003"]) == 0
    out, err = capsys.readouterr()
    assert out.count("[active]") == 2 and "[previous DOC1_000] Step 0" in out, out
    (line,) = err.splitlines()
    assert line.startswith("warning: summaries: Ollama request failed at http://127.0.0.1:9 (") and line.endswith(
        "; extractive summaries shown instead"), line
    assert len(calls) == 1
    assert cli.main(["--data-dir", home, "fetch", "DOC1_001", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["windows"] and res["errors"] == [] and res["notes"] == [line[len("warning: "):]]
    assert len(calls) == 2  # one per command: a fresh engine asks again
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    with Engine(load_settings({"HOME": home})) as e:  # within a minute of a failure the server is not asked again:
        for _ in range(3):  # a hanging one costs its timeout once, not once per fetch of an answer's walk
            assert e.windows.fetch(["DOC1_002"]).notes == res["notes"]
    assert len(calls) == 3


def test_an_empty_question_is_named_before_a_model_is_reached(tmp_path, monkeypatch, capsys, no_env):
    """`ask ""` with Ollama down said "Ollama is not reachable": the model was reached for before the question was
    looked at."""
    from thread_rag import cli

    home = _indexed_home(cli, tmp_path)
    monkeypatch.setenv("THREAD_RAG_CHAT_BACKEND", "ollama")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "ask", "  "]) == 1
    assert capsys.readouterr().err.strip() == "error: empty question"


def test_a_script_can_come_from_stdin_or_a_pipe(tmp_path, monkeypatch, capsys, no_env):
    """`script -`, `script /dev/stdin` and a named pipe said "no such script file"."""
    import threading

    from thread_rag import cli

    line = b'{"tool": "list_available_documents", "args": {}}\n'
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(line)))
    assert cli.main(["--data-dir", str(tmp_path / "h"), "script", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    fifo = tmp_path / "lines"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(line))
    writer.start()
    assert cli.main(["--data-dir", str(tmp_path / "h"), "script", str(fifo)]) == 0
    writer.join(10)
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_a_name_with_a_line_break_stays_on_its_line(tmp_path, monkeypatch, capsys, no_env):
    """`index`, `delete` and an answer's sources printed a file name holding a line break as it was: one result on
    two lines (the watcher quotes such a name)."""
    from thread_rag import cli
    from thread_rag.render import sources_line

    odd = write(tmp_path / "two\nlines.md", "# G\n\nOpen the valve first.\n")
    home = str(tmp_path / "home")
    assert cli.main(["--data-dir", home, "index", str(odd)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.rstrip().endswith(json.dumps(str(odd))), out
    assert cli.main(["--data-dir", home, "delete", "DOC1"]) == 0
    assert capsys.readouterr().out == 'deleted DOC1 ("two\\nlines.md")\n'

    class Cite:
        source, chunk_id, doc_name, pages, how = 1, "DOC1_000", "two\nlines.md", "", "written"

    assert sources_line(type("A", (), {"citations": [Cite]})) == '[1] DOC1_000 "two\\nlines.md"'


def test_a_copy_of_an_indexed_file_is_named_as_a_copy(tmp_path, monkeypatch, capsys, no_env):
    """Indexing a copy (or a renamed file, its old path still indexed) said "unchanged DOC1 ... copy.md" and nothing
    more, as if copy.md were DOC1's file; the watcher says "duplicate ... (same content as ...)"."""
    import shutil

    from thread_rag import cli

    first = write(tmp_path / "first.md", "# G\n\nOpen the valve first.\n")
    copy = tmp_path / "copy.md"
    shutil.copy(first, copy)
    home = str(tmp_path / "home")
    assert cli.main(["--data-dir", home, "index", str(first)]) == 0
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "index", str(copy)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("unchanged DOC1") and line.endswith(f"{copy} (same content as {first})"), line
    assert cli.main(["--data-dir", home, "--json", "index", str(copy)]) == 0
    (r,) = json.loads(capsys.readouterr().out)["results"]
    assert r["same_as"] == str(first)
    assert cli.main(["--data-dir", home, "--json", "index", str(first)]) == 0  # its own file: no same_as
    assert json.loads(capsys.readouterr().out)["results"][0]["same_as"] is None


def test_script_from_standard_input_that_is_closed_or_a_terminal(tmp_path, monkeypatch, capsys, no_env):
    """`script -` with stdin closed said "unexpected AttributeError"; on a terminal it waited without a word."""
    from thread_rag import cli

    monkeypatch.setattr("sys.stdin", None)
    assert cli.main(["--data-dir", str(tmp_path / "h"), "script", "-"]) == 1
    assert capsys.readouterr().err.strip() == "error: script -: standard input is closed"

    class Tty(io.TextIOWrapper):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdin", Tty(io.BytesIO(b'{"tool": "list_available_documents"}\n')))
    assert cli.main(["--data-dir", str(tmp_path / "h"), "script", "-"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["ok"] and "end with Ctrl-D" in err


def test_the_cli_names_its_own_option_and_a_script_echoes_the_args_given(tmp_path, capsys, no_env):
    """`fetch --budget 0` said "token_budget=0" (the tool's name, not the option typed); a script line whose "args"
    was "x" came back as "args": {}."""
    from thread_rag import cli

    home = _indexed_home(cli, tmp_path)
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "fetch", "DOC1_000", "--budget", "0"]) == 1
    assert capsys.readouterr().err.strip() == "error: --budget 0: must be a positive number of tokens"
    script = write(tmp_path / "s.jsonl", '{"tool": "list_available_documents", "args": "x"}\n')
    assert cli.main(["--data-dir", home, "script", str(script)]) == 1
    row = json.loads(capsys.readouterr().out)
    assert row["args"] == "x" and "must be a JSON object, not a string" in row["error"], row


def test_search_page_range_and_heading_are_checked_as_typed(tmp_path, capsys, no_env):
    """`search --pages 20-10` said "pages=(20, 10): expected 1 <= first <= last" (the engine's tuple, not the option
    typed; the chat said the same); `--pages ''` and `--heading ''` searched everything, where `compare --topic ''`
    says the topic is empty."""
    from thread_rag import cli

    home = _indexed_home(cli, tmp_path)
    range_error = "expected a range like 10-20 (pages from 1, the first not after the last)"
    for args, error in [(["--pages", "20-10"], f"--pages '20-10': {range_error}"),
                        (["--pages", "0-3"], f"--pages '0-3': {range_error}"),
                        (["--pages", "x"], f"--pages 'x': {range_error}"),
                        (["--pages", "5-"], f"--pages '5-': {range_error}"),  # it searched page 5 alone
                        (["--pages", "1_0"], f"--pages '1_0': {range_error}"),  # it searched page 10
                        (["--pages", ""], "--pages is empty: leave it out to search every page"),
                        (["--heading", " "], "--heading is empty: leave it out to search every section")]:
        capsys.readouterr()
        assert cli.main(["--data-dir", home, "search", "valve", *args]) == 1, args
        assert capsys.readouterr().err.strip() == f"error: {error}", args
    assert cli.main(["--data-dir", home, "search", "valve", "--heading", "g"]) == 0  # a Markdown file has no pages
    assert "Open the valve first." in capsys.readouterr().out


def test_chat_search_page_range_is_checked_as_the_cli_checks_it(manual_engine):
    from thread_rag.repl import Repl

    buf = io.StringIO()
    from rich.console import Console

    repl = Repl(manual_engine, console=Console(file=buf, width=200), preload=False)
    repl.handle("/search pre-heat --pages 20-10")
    assert buf.getvalue().strip() == ("error: --pages '20-10': expected a range like 10-20 (pages from 1, the first "
                                      "not after the last)"), buf.getvalue()


def test_one_document_commands_refuse_what_they_would_not_do(tmp_path, capsys, no_env, make_engine):
    """`/delete DOC1 DOC2` in the chat deleted DOC1 and said nothing of DOC2 (the CLI refuses the extra id); `preheat ""`
    summarised every document, where `delete ""` says '' is not a document id."""
    from rich.console import Console

    from thread_rag import cli
    from thread_rag.repl import Repl

    home = _indexed_home(cli, tmp_path)
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "preheat", ""]) == 1
    assert capsys.readouterr().err.strip() == "error: '' is not a document id (expected e.g. DOC1)"
    engine = make_engine()
    engine.index_file(write(tmp_path / "b.md", "# B\n\nClose the valve last.\n"))
    before = [d.doc_id for d in engine.documents()]
    buf = io.StringIO()
    repl = Repl(engine, console=Console(file=buf, width=200), preload=False)
    for line in ("/delete DOC1 DOC2", "/preheat DOC1 DOC2"):
        buf.truncate(0), buf.seek(0)
        repl.handle(line)
        assert buf.getvalue().strip() == f"error: usage: {line.split()[0]} DOC1 (one document)", buf.getvalue()
    assert [d.doc_id for d in engine.documents()] == before and len(before) >= 2


def test_a_moved_file_is_its_document_under_the_new_name(tmp_path, capsys, no_env):
    """`mv a.txt b.txt; thread-rag index b.txt` said "unchanged DOC1 ... b.txt (same content as a.txt)" with a.txt
    gone, and the document kept a.txt's name; after b.txt was edited, indexing it made DOC2, and DOC1 (the old text
    of a file that no longer exists) stayed searchable (a trial). A file whose indexed twin's path is gone is that
    document moved: its record takes the new path and name, nothing is embedded again."""
    from thread_rag import cli
    from thread_rag.engine import Engine
    from thread_rag.settings import load_settings

    folder = tmp_path / "mv"
    a = write(folder / "a.txt", "Omega: the flux capacitor needs 1.21 gigawatts.\n")
    home = str(tmp_path / "home")
    assert cli.main(["--data-dir", home, "index", str(a)]) == 0
    b = folder / "b.txt"
    a.rename(b)
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "index", str(folder)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("unchanged DOC1") and line.endswith(f"{b} (moved from {a})"), line
    assert cli.main(["--data-dir", home, "--json", "index", str(b)]) == 0  # now its own file
    (r,) = json.loads(capsys.readouterr().out)["results"]
    assert r["status"] == "unchanged" and r["same_as"] is None and r["moved_from"] is None, r
    b.write_text("Omega: the flux capacitor needs 2.42 gigawatts.\n")
    assert cli.main(["--data-dir", home, "--json", "index", str(b)]) == 0
    (r,) = json.loads(capsys.readouterr().out)["results"]
    assert r["status"] == "replaced" and r["doc_id"] == "DOC1", r
    with Engine(load_settings({"HOME": home}, env={}, config_file=False)) as e:
        (doc,) = e.documents()
        assert (doc.name, doc.path) == ("b.txt", str(b))
    c = write(tmp_path / "c.txt", "Omega: the flux capacitor needs 2.42 gigawatts.\n")  # a copy, b.txt still there
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "index", str(c)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"{c} (same content as {b})")
    import shutil

    d = write(tmp_path / "drive" / "d.txt", "Delta: the other manual.\n")  # its folder goes too (an unmounted drive):
    copy = tmp_path / "d-copy.txt"
    shutil.copy(d, copy)
    assert cli.main(["--data-dir", home, "index", str(d)]) == 0
    shutil.rmtree(d.parent)
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "index", str(copy)]) == 0  # not taken for a move
    assert capsys.readouterr().out.strip().endswith(f"{copy} (same content as {d})")


def test_docs_json_names_each_documents_file(tmp_path, capsys, no_env):
    """`docs` and `docs --json` could not say which file a document came from (two documents of one name, or a
    file since renamed: a trial). The CLI's JSON says it; the list tool does not (models and MCP clients are not
    told home folders: test_two_documents_of_one_name_are_told_apart_by_their_folders)."""
    from thread_rag import cli

    home = _indexed_home(cli, tmp_path)
    capsys.readouterr()
    assert cli.main(["--data-dir", home, "--json", "docs"]) == 0
    (d,) = json.loads(capsys.readouterr().out)["documents"]
    assert d["path"] == str((tmp_path / "g.md").resolve()), d


def test_a_filter_nothing_passes_says_why(tmp_path, capsys, no_env):
    """`search memory --doc DOC49 --pages 1-10` on a text file, or `--pages 5000-6000` on a 113-page PDF, said
    "no results" and nothing more (a trial)."""
    from thread_rag import cli

    home = _indexed_home(cli, tmp_path)
    for args, why in [(["--pages", "1-10"], "no results: no chunk of DOC1 has page numbers (only PDFs have pages)"),
                      (["--heading", "nowhere"], "no results: no chunk of DOC1 has a heading containing 'nowhere'")]:
        capsys.readouterr()
        assert cli.main(["--data-dir", home, "search", "valve", "--doc", "DOC1", *args]) == 0
        assert capsys.readouterr().out.splitlines()[0] == why, args
    assert cli.main(["--data-dir", home, "--json", "search", "valve", "--pages", "2"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["hits"] == [] and res["note"] == "no chunk of the library has page numbers (only PDFs have pages)"


@needs_shared
def test_a_page_range_past_the_end_names_the_pages_there_are(debian_library, embedder):
    from thread_rag.engine import Engine

    settings, _ = debian_library
    with Engine(settings, embedder=embedder) as e:
        res = e.retriever.search("disk space", doc_id="DOC1", pages=(5000, 6000))
        assert not res.hits and res.note == "no chunk of DOC1 is on pages 5000-6000 (its chunks are on pp.1-113)"
        assert not e.retriever.search("disk space", doc_id="DOC1", pages=(99, 99)).note  # hits: no note


def test_every_command_of_the_parser_has_one_function_in_the_table():
    """The CLI is a table of small commands (issue 46): each subcommand the parser offers has exactly one function,
    and the table names no command the parser lacks."""
    from thread_rag import cli

    offered = set(cli.build_parser().commands)
    assert not set(cli.COMMANDS) & set(cli.WITHOUT_ENGINE)
    assert set(cli.COMMANDS) | set(cli.WITHOUT_ENGINE) == offered



def test_thread_rag_bench_hands_its_whole_command_line_to_the_lab(capsys, no_env):
    """`thread-rag bench ...` is the lab's own command line (options before or after the kind, the global ones
    before `bench`), with the lab's one-line errors under the name the user typed."""
    from thread_rag import cli

    for argv in (["bench"], ["--data-dir", "/nowhere", "bench", "--limit", "1", "nope"]):
        with pytest.raises(SystemExit) as stop:
            cli.main(argv)
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.startswith("error: ") and "see `thread-rag bench --help`" in err, err
    assert cli._bench_args(["--json", "--data-dir=/d", "bench", "--limit", "2", "answers"]) == \
        ["--limit", "2", "answers", "--json", "--data-dir=/d"]
    assert cli._bench_args(["search", "bench"]) is None and cli._bench_args(["--debug"]) is None


def test_preheat_counts_a_model_failure_and_lets_a_bug_surface_keeping_what_it_made(manual_engine):
    """A summarizer's model failing on one chunk is one error line and the run goes on; a bug of ours (a TypeError)
    is not counted as a summary that failed: it surfaces (the door prints it, with --debug its traceback), and the
    summaries made before it are kept."""
    from thread_rag.errors import ModelCallError
    from thread_rag.threads.preheat import preheat
    from thread_rag.threads.summary_cache import SummaryCache

    class Flaky:
        id = "flaky-v1"

        def __init__(self, fail):
            self.fail, self.calls = fail, 0

        def summarize(self, text, heading=""):
            self.calls += 1
            if self.calls == 2:
                raise self.fail
            return text.split(".")[0][:60]

    e = manual_engine
    r = preheat(e.library, lambda: Flaky(ModelCallError("llama.cpp failed: out of memory")), e.settings.cache_path,
                "DOC4")
    assert r.failed == 1 and r.errors[0].endswith("llama.cpp failed: out of memory") and r.made >= 1
    cache = e.settings.cache_path / "bug"
    with pytest.raises(TypeError, match="a bug"):
        preheat(e.library, lambda: Flaky(TypeError("a bug")), cache, "DOC4")
    rec, first = e.library.document("DOC4"), e.thread("DOC4").chunks[0]
    assert SummaryCache(cache).get(rec.content_hash, "flaky-v1", first.text) is not None  # made before the bug
