"""Every setting acts (issue 46): each field of Settings has a witness, a test that moves it from its default and
asserts what changes on the path it belongs to. Settings whose change another test already shows name that test in
ELSEWHERE (checked to exist and to name the setting); the rest are moved here, one table per part of the path. A
setting added without a witness fails ``test_every_setting_has_a_witness``; a witness whose setting stops acting
fails its own test."""
import ast
import json
from dataclasses import fields
from pathlib import Path


from conftest import DOCS
from fakes import ScriptedChatModel
from thread_rag.agent.loop import Agent
from thread_rag.embedder import cpu_has_bf16
from thread_rag.settings import Settings, load_settings

TESTS = Path(__file__).parent
QUESTION = "how do I pre-heat summaries?"

# settings whose change a test elsewhere shows: file::test
ELSEWHERE = {
    "HOME": "test_paths.py::test_explicit_paths",
    "CACHE_PATH": "test_paths.py::test_explicit_paths",
    "MODEL_DIR": "test_paths.py::test_explicit_paths",
    "ALLOWED_ROOTS": "test_mcp_server.py::test_allow_writes_offers_indexing_inside_allowed_roots_only",
    "CHROMA_HOST": "test_chroma_server.py::test_library_on_server_survives_restart",
    "CHROMA_LIBRARY": "test_chroma_server.py::test_two_data_dirs_share_one_library",
    "CHROMA_TOKEN": "test_chroma_server.py::test_a_server_on_another_machine_needs_a_token_and_one_behind_a_token_proxy_works",
    "STATEMENTS": "test_statements.py::test_a_question_naming_the_income_statement_reads_it_first",
    "CHROMA_INSECURE": "test_chroma_server.py::test_a_server_on_another_machine_needs_a_token_and_one_behind_a_token_proxy_works",
    "EMBEDDER_MODEL": "test_stage_models.py::test_search_stops_on_an_embedder_the_store_was_not_built_with",
    "QUERY_EMBEDDER": "test_query_embedder.py::test_query_embedder_choice",
    "OCR": "test_ocr.py::test_a_scanned_pdf_page_is_read_by_the_packaged_models",
    "STAGE1_K": "test_stage_models.py::test_lexical_floor_moves_candidates_bm25_barely_scores_after_the_rest",
    "STAGE2_K": "test_stage_models.py::test_a_stage_reorders_its_pool_and_keeps_the_rest",
    "RERANKER": "test_stage_models.py::test_packaged_reranker_runs_as_stage_3",
    "STAGE3_K": "test_stage_models.py::test_a_stage_reorders_its_pool_and_keeps_the_rest",
    "STAGE3_WEIGHT": "test_stage_models.py::test_stage3_weight_blends_the_reranker_with_the_stage2_order",
    "STAGE3_PRIOR": "test_stage_models.py::test_stage3_weight_blends_the_reranker_with_the_stage2_order",
    "STAGE3_LEXICAL_FLOOR": "test_stage_models.py::test_lexical_floor_moves_candidates_bm25_barely_scores_after_the_rest",
    "HOP_K": "test_stage_models.py::test_second_hop_places_what_the_top_hit_leads_to_after_it",
    "HOP_RESCORE": "test_stage_models.py::test_second_hop_places_what_the_top_hit_leads_to_after_it",
    "HOP_PICKS": "test_stage_models.py::test_second_hop_places_what_the_top_hit_leads_to_after_it",
    "HOP_MIN_SCORE": "test_stage_models.py::test_second_hop_places_what_the_top_hit_leads_to_after_it",
    "HOP_MAX_TOKENS": "test_stage_models.py::test_second_hop_places_what_the_top_hit_leads_to_after_it",
    "HOP_DEPTH": "test_stage_models.py::test_hop_chain_seeds_each_link_with_the_first_pick_of_the_last",
    "QUESTION_STEPS": "test_steps.py::test_the_agent_searches_the_lookups_answers_and_traces_them",
    "EARLY_EXIT_MARGIN": "test_stage_models.py::test_early_exit_skips_stage3_and_schema_stays_the_same",
    "HNSW_THRESHOLD": "test_retrieval.py::test_hnsw_switch_gives_same_top_hits",
    "CACHE_DOCUMENTS": "test_resources.py::test_per_document_caches_are_bounded",
    "STORE_GROUP_CHUNKS": "test_store.py::test_a_folder_of_small_files_shares_chroma_writes_and_stores_what_one_by_one_does",
    "SUMMARY_BACKEND": "test_doors.py::test_preheat_says_why_its_summaries_failed",
    "SUMMARY_MODEL": "test_repl_script.py::test_ollama_summarizer_against_standin",
    "SUMMARY_LLM": "test_paths.py::test_doctor_checks_parts_and_says_when_a_model_is_joined",
    "NESTED_MIN_CHUNKS": "test_integrity.py::test_the_doctor_names_a_deleted_tree_and_the_repair_rebuilds_it",
    "OLLAMA_HOST": "test_repl_script.py::test_ollama_backend_against_standin",
    "OLLAMA_NUM_CTX": "test_repl_script.py::test_ollama_backend_against_standin",
    "INTENTS": "test_fast_path.py::test_an_unmistakable_request_is_carried_out_without_asking_the_model",
    "WALK_BACK": "test_fast_path.py::test_walk_respects_budget_and_signals",
    "DECIDE": "test_fast_path.py::test_post_reading_decision_searches_once_more_under_the_same_budget",
    "CITE_FOLLOWUP": "test_ids_settings.py::test_the_explanation_settings_do_nothing_when_the_answer_is_the_quote_alone",
    "WEAK_MATCH": "test_fast_path.py::test_a_weak_match_says_so_and_may_let_the_model_refuse",
    "ANSWER_MODE": "test_answer_quote.py::test_quote_mode_answers_without_a_model",
    "EXPLAIN_FROM": "test_fast_path.py::test_plain_question_costs_one_llm_call_and_cites_what_it_read",
    "UNSUPPORTED": "test_answer_quote.py::test_what_the_explanation_adds_is_marked_listed_or_left_out",
    "CALIBRATION": "test_outcome.py::test_a_small_library_is_calibrated_deterministically_and_the_answer_path_uses_it",
    "QUOTE_MIN": "test_answer_quote.py::test_no_line_that_answers_is_a_refusal_with_related_lines_and_no_llm_call",
}

# the settings moved here: name -> (moved value, other settings the move needs)
CHUNKING = {
    "CHUNK_TOKENS": (120, {}), "CHUNK_OVERLAP": (0, {"CHUNK_TOKENS": 60}), "CHUNK_MIN_TOKENS": (0, {}),
    "CHUNK_STRATEGY": ("parent_child", {}),
    "PARENT_TOKENS": (400, {"CHUNK_STRATEGY": "parent_child"}),
    "SEMANTIC_PERCENTILE": (50.0, {"CHUNK_STRATEGY": "semantic"}),
    "SENTENCE_SPLIT_REGEX": (r"(?<=,)\s+", {}),
}
TREE = {"NUM_SEMANTIC_CHUNKS": (4, {}), "MAX_DEPTH": (1, {}), "NESTED_MIN_WORDS": (400, {})}
SEARCH = {"DENSE_WEIGHT": (0.2, {}), "BM25_WEIGHT": (0.2, {}), "STAGE2": (False, {}), "STAGE2_WEIGHT": (0.0, {}),
          "SEARCH_K": (2, {}), "RRF_K": (5, {}), "FUSION": ("bm25", {})}
RERANKED = {"RERANK_MAX_TOKENS": (32, {"RERANKER": "packaged:ms-marco-MiniLM-L-12-v2", "EARLY_EXIT_MARGIN": 100.0}),
            "RERANK_CONTEXT": ("text", {"RERANKER": "packaged:ms-marco-MiniLM-L-12-v2", "EARLY_EXIT_MARGIN": 100.0})}
WINDOWS = {"SUMMARY_MAX_WORDS": (6, {}), "WINDOW_TOKEN_BUDGET": (120, {})}
ANSWER = {"READER": ("windows", {}), "WALK_MAX": (0, {}), "WALK_QUERY_MIN": (0.9, {}), "QUOTE_WORDS": (15, {}),
          "QUOTE_MARGIN": (0.2, {}), "QUOTE_TOKENS": (16, {}), "EXPLAIN_WORDS": (600, {}), "READ_K": (1, {}),
          "READ_BUDGET": (200, {}), "WALK_THRESHOLD": (0.95, {}), "RELEVANCE_MIN": (0.9, {}), "MATCH_MIN": (0.9, {}),
          "MAX_ANSWER_TOKENS": (50, {})}
# EMBEDDER_DTYPE "auto" is bfloat16 on a CPU with BF16, else float32: moved to the other one
PARTS = {"EMBEDDER_DTYPE": ("float32" if cpu_has_bf16() else "bfloat16", {}), "EMBED_BATCH": (4, {}), "TORCH_THREADS": (1, {}),
         "LLM_THREADS": (1, {}), "LLM_BATCH": (64, {}), "TEMPERATURE": (0.7, {}),
         "NESTED": (False, {}), "CONDENSE_FOLLOWUPS": (False, {}),
         "SMALL_INDEX_CHUNKS": (0, {}), "LLM_CTX": (4096, {}), "MAIN_MODEL": ("qwen2.5-coder-0.5b", {}),
         "CHAT_BACKEND": ("ollama", {})}
HERE = (CHUNKING, TREE, SEARCH, RERANKED, WINDOWS, ANSWER, PARTS)


def _test_source(file: str, name: str) -> str | None:
    src = (TESTS / file).read_text()
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(src, node)
    return None


def test_every_setting_has_a_witness():
    here = [n for table in HERE for n in table]
    assert len(here) == len(set(here)) and not set(here) & set(ELSEWHERE)
    assert set(here) | set(ELSEWHERE) == {f.name for f in fields(Settings)}, "a setting with no witness"
    for name, where in ELSEWHERE.items():
        file, test = where.split("::")
        source = _test_source(file, test)
        assert source is not None, f"{name}: {where} is gone"
        assert name in source, f"{name}: {where} does not name it"
    for table in HERE:  # a move that is no move, or a value validation refuses
        for name, (moved, need) in table.items():
            assert getattr(Settings(), name) != moved
            load_settings({name: moved, **need}, env={}, config_file=False)


def _moves(table, observe):
    """Each setting of ``table`` moved alone (its needs set on both sides): the names whose observation stayed.
    ``observe``: one function, or one per name; each unmoved observation is made once."""
    still, unmoved = [], {}
    for name, (moved, need) in table.items():
        fn = observe[name] if isinstance(observe, dict) else observe
        key = (fn, json.dumps(need, sort_keys=True))
        if key not in unmoved:
            unmoved[key] = fn(**need)
        if unmoved[key] == fn(**need, **{name: moved}):
            still.append(name)
    return still


def test_chunking_settings_change_the_chunks(settings_for, embedder):
    from thread_rag.ingest.chunker import make_chunker
    from thread_rag.ingest.loaders import load_document

    doc = load_document(DOCS / "01-getting-started.md")

    def observe(**over):
        chunker = make_chunker(settings_for(**over), embedder.count_tokens, embed=embedder.embed)
        return [(c.text, getattr(c, "parent", None)) for c in chunker.chunk(doc)]

    assert _moves(CHUNKING, observe) == []


def test_tree_settings_change_the_tree(manual_engine, make_engine):
    serial = manual_engine.documents()[0].serial

    def observe(**over):
        e = make_engine(**over)
        gen = e.library.document(serial).generation
        chunks = e.thread(serial).chunks
        return json.dumps(e.nested.build(serial, gen, chunks, persist=False), sort_keys=True, default=str)

    assert _moves(TREE, observe) == []


def test_search_settings_change_the_hits(manual_engine, make_engine):
    def observe(**over):
        e = make_engine(**over)
        out = []
        for q in (QUESTION, "where does the data dir live?", "OLLAMA_HOST"):
            r = e.retriever.search(q)
            out.append((r.stages_run, [(h.chunk_id, round(h.score, 5)) for h in r.hits]))
        return out

    assert _moves(SEARCH, observe) == []
    assert _moves(RERANKED, observe) == []  # stage 3 on, with no early exit


def test_window_settings_change_the_windows(manual_engine, make_engine):
    def observe(**over):
        r = make_engine(**over).windows.fetch(["DOC1_002", "DOC2_003"])
        return repr(r.windows), r.truncated

    assert _moves(WINDOWS, observe) == []


def test_answer_settings_change_what_is_read_quoted_or_prompted(manual_engine):
    model = ScriptedChatModel(answer=lambda m: prompts.append(m[-1].content) or "Run thread-rag preheat [1].")
    from thread_rag.render import answer_notes

    model.calls, prompts = [], []
    model.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
    agent = Agent(manual_engine, chat_model=model)
    default = agent.settings

    def observe(**over):
        agent.settings = default.replace(**over)
        ans = agent.ask("how do I index a folder of PDFs?")  # one whose walk reads past its entry
        return ([t["tool"] for t in ans.tool_trace], [s["text"] for s in ans.sources], ans.answer,
                [(q["chunk_id"], q["text"]) for q in ans.quote], answer_notes(ans, agent.settings),
                [(c["last"], c["max_tokens"]) for c in model.calls])

    assert _moves(ANSWER, observe) == []


def test_part_settings_reach_the_parts_they_configure(manual_engine, settings_for, make_engine, monkeypatch, tmp_path):
    """What each part receives: the embedder's dtype, batch and threads; llama.cpp's threads and batch; the chat
    model's temperature; the bench's data sets; whether indexing builds a tree; whether a follow-up is rewritten."""
    from langchain_core.messages import HumanMessage

    from thread_rag.embedder import make_embedder
    from thread_rag.llm import model_files
    from thread_rag.llm.backends import make_chat_model

    made = []
    monkeypatch.setattr("llama_cpp.Llama", lambda **kw: made.append(kw) or object())
    gguf = tmp_path / "x.gguf"
    gguf.write_bytes(b"GGUF")

    def llama(**over):
        model_files._llamas.clear()
        model_files.load_llama(settings_for(**over), str(gguf))
        return made[-1]

    def tree(**over):
        e = make_engine(**over, HOME=str(tmp_path / f"home-{len(over)}"))
        e.index_paths([DOCS / "01-getting-started.md"])
        return sorted(p.name for p in (e.home).rglob("*.json") if "tree" in str(p.parent))

    def followup(**over):
        model = ScriptedChatModel(answer=lambda m: "Set it [1].", standalone="how do I set OLLAMA_HOST?")
        model.calls = []
        model.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
        agent = Agent(make_engine(**over), chat_model=model)
        agent.ask("how do I use an Ollama model?")
        agent.ask("and what about it?")
        return [c["last"][:40] for c in model.calls]

    def chat_model(**over):  # what the answer's model is made with (llama.cpp is loaded on first use)
        from thread_rag.errors import ThreadRagError

        try:
            m = make_chat_model(settings_for(**over))
        except ThreadRagError as exc:
            return str(exc)
        return m.model_name, m.n_ctx, m._params([HumanMessage("x")], None, {})

    def indexing_embedder(**over):  # a one-page job's embedder: the ONNX MiniLM while the torch one is not loaded
        from thread_rag.engine import Engine

        return type(Engine(settings_for(**over)).indexer._indexing_embedder(3)).__name__

    def embedding(**over):
        e = make_embedder(settings_for(**over))
        return e.dtype, e.batch_size, e._threads

    observe = {"EMBEDDER_DTYPE": embedding, "EMBED_BATCH": embedding, "TORCH_THREADS": embedding,
               "LLM_THREADS": llama, "LLM_BATCH": llama,
               "TEMPERATURE": chat_model, "LLM_CTX": chat_model, "MAIN_MODEL": chat_model, "CHAT_BACKEND": chat_model,
               "SMALL_INDEX_CHUNKS": indexing_embedder,
               "NESTED": tree, "CONDENSE_FOLLOWUPS": followup}
    assert set(observe) == set(PARTS)
    assert _moves(PARTS, observe) == []
