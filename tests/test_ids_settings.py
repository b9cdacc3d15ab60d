import pytest

from thread_rag.errors import ChunkIdError, SettingsError, UnknownDocumentError
from thread_rag.ids import ChunkId, format_doc_id, parse_doc_id
from thread_rag.settings import load_settings, read_config_file


def test_format_and_parse_round_trip():
    assert str(ChunkId(1, 6)) == "DOC1_006"
    assert ChunkId.parse("DOC12_045") == ChunkId(12, 45)
    assert ChunkId.parse(" doc3_007 ") == ChunkId(3, 7)


def test_past_999_and_ends():
    c = ChunkId(1, 999)
    assert str(c.neighbour(+1, 1500)) == "DOC1_1000"
    assert ChunkId.parse("DOC1_1000").neighbour(-1, 1500) == c
    assert ChunkId(1, 0).neighbour(-1, 10) is None
    assert ChunkId(1, 9).neighbour(+1, 10) is None
    assert ChunkId(1, 9).neighbour(-1, 10) == ChunkId(1, 8)


@pytest.mark.parametrize("bad", ["DOC1_", "DOC1_-1", "DOC0_001", "../x", "DOC1_01", "DOC1_0100", "", "DOC1",
                                 "DOC1_abc", "DOC_001"])
def test_malformed_chunk_ids(bad):
    with pytest.raises(ChunkIdError) as e:
        ChunkId.parse(bad)
    assert "\n" not in str(e.value)


def test_doc_ids():
    assert parse_doc_id("doc7") == 7 and format_doc_id(7) == "DOC7"
    with pytest.raises(UnknownDocumentError):
        parse_doc_id("DOC1_000")


def test_env_overrides_and_validation(tmp_path):
    s = load_settings(env={"THREAD_RAG_CHUNK_TOKENS": "240", "THREAD_RAG_STAGE2": "false",
                           "THREAD_RAG_HOME": str(tmp_path)}, config_file=False)
    assert s.CHUNK_TOKENS == 240 and s.STAGE2 is False and s.home == tmp_path
    with pytest.raises(SettingsError, match="CHUNK_TOKENS"):
        load_settings(env={"THREAD_RAG_CHUNK_TOKENS": "many"}, config_file=False)
    with pytest.raises(SettingsError, match="CHUNK_OVERLAP"):
        load_settings(env={"THREAD_RAG_CHUNK_OVERLAP": "5000"}, config_file=False)
    with pytest.raises(SettingsError, match="SUMMARY_BACKEND"):
        load_settings({"SUMMARY_BACKEND": "gpt"}, env={}, config_file=False)


def test_a_misspelt_environment_setting_is_refused_like_one_in_the_config_file():
    """THREAD_RAG_CHUNK_TOKEN=500 (no S) was ignored without a word; the config file refuses an unknown name."""
    with pytest.raises(SettingsError, match=r"^unknown setting THREAD_RAG_CHUNK_TOKEN in the environment "
                                            r"\(did you mean THREAD_RAG_CHUNK_TOKENS\?\); unset it$"):
        load_settings(env={"THREAD_RAG_CHUNK_TOKEN": "500"}, config_file=False)
    with pytest.raises(SettingsError, match=r"^unknown setting THREAD_RAG_COLBERT_MODEL in the environment \(removed"):
        load_settings(env={"THREAD_RAG_COLBERT_MODEL": "x"}, config_file=False)
    with pytest.raises(SettingsError, match=r"THREAD_RAG_ZZZ in the environment; unset it$"):
        load_settings(env={"THREAD_RAG_ZZZ": "1"}, config_file=False)
    # the names that are not settings: the config file's path, the crash-point switch and the suite's own
    load_settings(env={"THREAD_RAG_CONFIG": "", "THREAD_RAG_CRASH_AT": "x", "THREAD_RAG_KILL_TRIALS": "3",
                       "THREAD_RAG_TEST_SHARED": "/x", "OTHER_THREAD_RAG_X": "1"}, config_file=False)
    # THREAD_RAG_DEBUG=1 (the traceback switch, issue 46) was refused as an unknown setting by every command
    load_settings(env={"THREAD_RAG_DEBUG": "1"}, config_file=False)


def test_an_infinite_number_is_refused_like_nan():
    """BM25_WEIGHT=inf was taken (every hit after the first scored 0.000, with a numpy warning); nan was refused."""
    for raw in ("inf", "-inf", "nan", "1e999"):
        with pytest.raises(SettingsError, match="BM25_WEIGHT"):
            load_settings(env={"THREAD_RAG_BM25_WEIGHT": raw}, config_file=False)


def test_config_file_is_read_not_executed(tmp_path):
    cfg = tmp_path / "config.py"
    cfg.write_text('"""My settings."""\nCHUNK_TOKENS = 150\nRERANKER = \'none\'\n')
    assert read_config_file(cfg) == {"CHUNK_TOKENS": 150, "RERANKER": "none"}
    s = load_settings(env={"THREAD_RAG_CONFIG": str(cfg), "THREAD_RAG_CHUNK_OVERLAP": "20"})
    assert s.CHUNK_TOKENS == 150 and s.CHUNK_OVERLAP == 20
    cfg.write_text("CHUNK_TOKENS = os.environ['X']\n")
    with pytest.raises(SettingsError, match="literal"):
        read_config_file(cfg)
    cfg.write_text("NOT_A_SETTING = 1\n")
    with pytest.raises(SettingsError, match="unknown setting"):
        read_config_file(cfg)
    # a line the reader would have skipped is refused, naming it (a typed, chained, tuple or augmented assignment,
    # a lower-case name, an if, an import: CHUNK_TOKENS = 5000 inside them went unapplied and unrefused)
    for text in ("CHUNK_TOKENS: int = 5000", "if True:\n    CHUNK_TOKENS = 5000", "CHUNK_TOKENS = CHUNK_OVERLAP = 5",
                 "CHUNK_TOKENS, STAGE1_K = 5000, 3", "CHUNK_TOKENS += 5000", "chunk_tokens = 5000", "import os"):
        cfg.write_text("RERANKER = 'none'\n" + text + "\n")
        with pytest.raises(SettingsError) as exc:
            read_config_file(cfg)
        assert str(exc.value).startswith(f"config file {cfg} line 2: only NAME = value lines are read"), str(exc.value)
    cfg.write_text("CHUNK_TOKENS = {[1]: 2}\n")  # literal_eval's TypeError named the file and setting neither
    with pytest.raises(SettingsError, match="CHUNK_TOKENS must be a literal value"):
        read_config_file(cfg)


def test_repo_config_file_parses():
    from pathlib import Path

    read_config_file(Path(__file__).resolve().parents[1] / "config.py")


def test_chunk_size_must_fit_the_embedder_window():
    from thread_rag.errors import SettingsError
    from thread_rag.settings import load_settings

    with pytest.raises(SettingsError, match=r"CHUNK_TOKENS=300: must fit the embedder's window: "
                                            r"packaged:all-MiniLM-L6-v2 reads 256"):
        load_settings({"CHUNK_TOKENS": 300}, env={}, config_file=False)
    assert load_settings({"CHUNK_TOKENS": 254}, env={}, config_file=False).CHUNK_TOKENS == 254
    s = load_settings({"CHUNK_TOKENS": 500, "EMBEDDER_MODEL": "packaged:bge-small-en-v1.5"}, env={}, config_file=False)
    assert s.CHUNK_TOKENS == 500  # bge-small reads 512
    with pytest.raises(SettingsError, match="CHUNK_TOKENS"):
        load_settings({"CHUNK_TOKENS": 600, "EMBEDDER_MODEL": "packaged:bge-small-en-v1.5"}, env={}, config_file=False)
    with pytest.raises(SettingsError, match="RERANKER"):
        load_settings({"RERANKER": "packaged:ms-marco-MiniLM-L6-v2"}, env={}, config_file=False)


def test_packaged_model_names_are_checked_per_role_up_front():
    from thread_rag.errors import SettingsError
    from thread_rag.settings import load_settings

    with pytest.raises(SettingsError, match="EMBEDDER_MODEL='packaged:bge-small'"):
        load_settings({"EMBEDDER_MODEL": "packaged:bge-small"}, env={}, config_file=False)
    with pytest.raises(SettingsError, match="RERANKER"):  # an embedder is not a reranker
        load_settings({"RERANKER": "packaged:bge-small-en-v1.5"}, env={}, config_file=False)
    with pytest.raises(SettingsError, match=r"unknown setting COLBERT_MODEL \(removed: "):
        load_settings({"COLBERT_MODEL": "/models/colbert"}, env={}, config_file=False)


def test_the_shared_data_sets_are_the_labs_not_a_setting(tmp_path):
    """SHARED_DATA (where the benchmark data sets are) was a setting of the product; the lab reads
    THREAD_RAG_SHARED_DATA itself, and the product refuses the old name with where it went."""
    from bench.datasets import shared_data
    from thread_rag.errors import SettingsError
    from thread_rag.settings import load_settings

    with pytest.raises(SettingsError, match=r"unknown setting SHARED_DATA \(moved to the benchmark lab: set "
                                            r"THREAD_RAG_SHARED_DATA"):
        load_settings({"SHARED_DATA": "/data"}, env={}, config_file=False)
    load_settings(env={"THREAD_RAG_SHARED_DATA": str(tmp_path)}, config_file=False)  # not taken for a setting
    import os
    from unittest import mock

    with mock.patch.dict(os.environ, {"THREAD_RAG_SHARED_DATA": str(tmp_path)}):
        assert shared_data() == tmp_path.resolve()


def test_generation_names_have_one_home():
    from thread_rag.ids import generation_name, parse_generation_name

    assert generation_name(3, 12) == "DOC3.g12" and generation_name(3, 12, ".json") == "DOC3.g12.json"
    assert parse_generation_name("DOC3.g12") == (3, 12)
    assert parse_generation_name("DOC3.g12.json") is None  # a suffix counts only where it is expected
    assert parse_generation_name("DOC3.g12.json", (".json", ".npy")) == (3, 12)
    assert parse_generation_name("DOC3.g12.npy", (".json", ".npy")) == (3, 12)
    for other in (".DOC3.g12.tmp", "DOC3.g", "DOC3.gx", "DOCx.g1", "DOC3.g12.1234.tmp", "catalog.json", "DOC3.g12 "):
        assert parse_generation_name(other, ("", ".json", ".npy")) is None, other


def test_ollama_host_is_read_as_the_ollama_client_reads_it(monkeypatch, no_env):
    """OLLAMA_HOST=127.0.0.1 (the Ollama client's own form, port 11434) was asked on port 80, so a running Ollama was
    "not reachable"; "localhost:abc" or a value with a space gave "unexpected InvalidURL" at the first question."""
    from thread_rag.settings import Settings

    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    for given, url in [("127.0.0.1", "http://127.0.0.1:11434"), (":56789", "http://127.0.0.1:56789"),
                       ("example.com:56789/path/", "http://example.com:56789/path"), ("http://h", "http://h:80"),
                       ("https://h", "https://h:443"), ("HTTP://Box:8080/", "http://box:8080"),
                       ("[::1]", "http://[::1]:11434"), (" http://127.0.0.1:9 ", "http://127.0.0.1:9")]:
        assert Settings(OLLAMA_HOST=given).ollama_host == url, given
    for bad, why in [("not a url::", "no spaces"), ("localhost:abc", "port"), ("127.0.0.1:99999", "port"),
                     ("::1", r"in brackets: \[::1\]"), ("http:/h", "http:// with two slashes"),
                     ("ftp://127.0.0.1:9", "ftp:// is not http:// or https://")]:
        with pytest.raises(SettingsError, match=rf"^invalid setting OLLAMA_HOST={bad!r}: .*{why}"):
            Settings(OLLAMA_HOST=bad)
    assert Settings().ollama_host == ""
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0")  # as `ollama serve` takes it
    assert Settings().ollama_host == "http://0.0.0.0:11434"
    monkeypatch.setenv("OLLAMA_HOST", "localhost:abc")
    with pytest.raises(SettingsError, match=r"^invalid OLLAMA_HOST='localhost:abc' in the environment: .*port"):
        Settings().ollama_host
    from thread_rag.doctor import ollama_check
    from thread_rag.llm.backends import make_chat_model

    row = ollama_check(Settings())  # the doctor names it as a check, not as its own failure
    assert not row["ok"] and row["detail"].startswith("invalid OLLAMA_HOST='localhost:abc'"), row
    # nothing that uses Ollama reads it: the embedded model is the way out every Ollama error names
    assert ollama_check(Settings(CHAT_BACKEND="embedded")) is None
    assert "embedded" in make_chat_model(Settings(CHAT_BACKEND="embedded")).metadata["backend"]
    auto = make_chat_model(Settings(CHAT_BACKEND="auto")).metadata["backend"]  # passed over, and the banner says why
    assert "embedded" in auto and "invalid OLLAMA_HOST='localhost:abc'" in auto, auto
    with pytest.raises(SettingsError, match="invalid OLLAMA_HOST"):
        make_chat_model(Settings(CHAT_BACKEND="ollama"))


def test_an_ollama_error_names_the_host_and_a_server_that_is_not_ollama():
    from thread_rag.llm.backends import ollama_error

    web = ollama_error(Exception("<!DOCTYPE HTML>\n<html>"), "http://127.0.0.1:8000", "m", "SUMMARY_BACKEND=extractive")
    assert str(web) == ("the server at http://127.0.0.1:8000 is not Ollama (it answered with a web page); check "
                        "OLLAMA_HOST, or set SUMMARY_BACKEND=extractive")
    assert str(ollama_error(Exception("model 'm' not found"), "http://h:1", "m", "X=y")) == (
        "Ollama at http://h:1 has no model 'm': run `ollama pull m`")


def test_an_empty_path_variable_is_refused_like_an_empty_data_dir_option():
    """`THREAD_RAG_HOME=$UNSET thread-rag index ...` used the default library without a word, where
    `--data-dir ""` is refused; the same for the other folders."""
    for name in ("HOME", "CACHE_PATH", "MODEL_DIR"):
        with pytest.raises(SettingsError, match=rf"^THREAD_RAG_{name} is empty: give a folder, or unset it for the "
                                                rf"default$"):
            load_settings(env={f"THREAD_RAG_{name}": " "}, config_file=False)
        # an option given for it wins (`THREAD_RAG_HOME= thread-rag --data-dir /x stats`)
        assert getattr(load_settings({name: "/x"}, env={f"THREAD_RAG_{name}": ""}, config_file=False), name) == "/x"


def test_a_setting_that_does_nothing_on_this_path_is_named(tmp_path, capsys, monkeypatch, no_env):
    """The second hop's settings act only with HOP_K > 0: set without it, one note line says so at every command (and
    doctor lists them). The settings of the removed routed loop are refused with the reason (docs/05)."""
    from thread_rag.cli import main
    from thread_rag.settings import Settings, inert_settings

    assert inert_settings(Settings()) == []
    assert [n.split()[0] for n in inert_settings(Settings(HOP_PICKS=3, HOP_DEPTH=2))] == ["HOP_PICKS", "HOP_DEPTH"]
    assert inert_settings(Settings(HOP_PICKS=3, HOP_K=10)) == []
    monkeypatch.setenv("THREAD_RAG_HOP_PICKS", "3")
    assert main(["--data-dir", str(tmp_path / "d"), "stats"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("note: HOP_PICKS does nothing: it acts only with HOP_K > 0"), err
    monkeypatch.delenv("THREAD_RAG_HOP_PICKS")
    monkeypatch.setenv("THREAD_RAG_AGENT_MODE", "routed")
    assert main(["--data-dir", str(tmp_path / "d"), "stats"]) == 1
    err = capsys.readouterr().err
    assert "unknown setting THREAD_RAG_AGENT_MODE" in err and "removed with the model-driven loop" in err, err
    monkeypatch.setenv("THREAD_RAG_AGENT_MODE", "fast")  # what it was by default: changes nothing, stops nothing
    assert main(["--data-dir", str(tmp_path / "d"), "stats"]) == 0


def test_settings_lists_each_value_where_it_came_from_and_whether_it_acts(tmp_path, capsys, no_env, monkeypatch):
    """Issue 46: `thread-rag settings` names every setting's value and source (default, the config file, the
    environment, the command line), and flags one that does nothing in the current mode."""
    import json

    from thread_rag import cli
    from thread_rag.settings import describe_settings

    cfg = tmp_path / "config.py"
    cfg.write_text('READ_K = 4\nHOP_PICKS = 3\n')
    env = {"THREAD_RAG_WALK_MAX": "3", "THREAD_RAG_CONFIG": str(cfg), "THREAD_RAG_CHROMA_TOKEN": "s3cret"}
    s = load_settings({"STAGE1_K": 150}, env=env)
    rows = {r["name"]: r for r in describe_settings(s, env=env)}
    assert (rows["READ_K"]["value"], rows["READ_K"]["source"]) == (4, str(cfg))
    assert (rows["WALK_MAX"]["value"], rows["WALK_MAX"]["source"]) == (3, "THREAD_RAG_WALK_MAX")
    assert (rows["STAGE1_K"]["value"], rows["STAGE1_K"]["source"]) == (150, "command line")
    assert rows["RRF_K"]["source"] == "default" and rows["RRF_K"]["acts"]
    assert not rows["HOP_PICKS"]["acts"] and "HOP_K" in rows["HOP_PICKS"]["note"]
    assert rows["CHROMA_TOKEN"]["value"] == "(set)"  # a secret is never printed
    assert len(rows) > 60 and all(isinstance(r["value"], (bool, int, float, str, list)) for r in rows.values())
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert cli.main(["--data-dir", str(tmp_path / "d"), "settings", "--json"]) == 0
    shown = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert shown["HOME"]["value"] == str(tmp_path / "d") and shown["WALK_MAX"]["source"] == "THREAD_RAG_WALK_MAX"
    assert cli.main(["settings"]) == 0
    assert "(inert: it acts only with" in next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("HOP_PICKS"))


def test_the_explanation_settings_do_nothing_when_the_answer_is_the_quote_alone(manual_engine):
    """With ANSWER_MODE = "quote" the model is never asked (every door: the answer path returns the quote): what the explanation reads, how unsupported spans are shown, the sources follow-up and
    the weak-match leave are named as doing nothing, and they act again with the explanation on. Shown on the answer
    path too: a quote-mode answer comes out the same whatever they are set to."""
    from fakes import ScriptedChatModel
    from thread_rag.agent.loop import Agent
    from thread_rag.settings import Settings, inert_settings

    moved = dict(EXPLAIN_FROM="sources", UNSUPPORTED="drop", CITE_FOLLOWUP=False, WEAK_MATCH="refuse")
    assert [n.split()[0] for n in inert_settings(Settings(ANSWER_MODE="quote", **moved))] == list(moved)
    assert inert_settings(Settings(ANSWER_MODE="explain", **moved)) == []
    assert inert_settings(Settings(ANSWER_MODE="quote")) == []
    answers = []
    for changes in ({}, moved):
        model = ScriptedChatModel(answer=lambda m: "never asked")
        model.calls = []
        agent = Agent(manual_engine, chat_model=model)
        agent.settings = manual_engine.settings.replace(ANSWER_MODE="quote", **changes)
        ans = agent.ask("how do I pre-heat summaries?")
        answers.append((ans.answer, ans.quote, ans.refused))
        assert model.calls == [] and not ans.refused and ans.quote
    assert answers[0] == answers[1]
