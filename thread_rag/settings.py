"""Settings: one dataclass holding every tunable.

Precedence (later wins): the defaults below -> the user's ``config.py`` (top-level assignments
such as ``CHUNK_TOKENS = 200``, read as literals, never executed) -> environment variables
``THREAD_RAG_<NAME>`` -> explicit overrides (``--data-dir``). ``HOME`` is the data directory
(``THREAD_RAG_HOME``). An invalid value fails at start with one line naming the setting.
"""
from __future__ import annotations

import ast
import dataclasses
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .errors import SettingsError

ENV_PREFIX = "THREAD_RAG_"
# what the fast path can read (agent/reading.py): the walk, the walk framed by neighbour summaries, and the
# baselines it is compared with on equal terms (plain top-k, sentence window, parent document, nested)
READERS = ("walk", "windows", "topk", "sentence_window", "parent_doc", "nested")


@dataclass
class Settings:
    # --- paths ---------------------------------------------------------------------------
    HOME: str = "./local_rag_db"            # data dir: catalog, Chroma, indexes, token cache, tree
    CACHE_PATH: str = "./doc_cache"         # summary cache (JSON, one file per document)
    MODEL_DIR: str = ""                     # where joined GGUF files are cached ("" = <HOME>/models)
    SHARED_DATA: str = "../shared/data"     # benchmark data sets
    ALLOWED_ROOTS: list = field(default_factory=list)  # index_new_document roots ([] = cwd + HOME)
    CHROMA_HOST: str = ""                   # Chroma server for chunks/vectors, host:port or http://host:port ("" = <HOME>/chroma)
    # --- embedder -------------------------------------------------------------------------
    EMBEDDER_MODEL: str = "packaged:all-MiniLM-L6-v2"  # | packaged:bge-small-en-v1.5 | a local sentence-transformers path
    EMBEDDER_DTYPE: str = "auto"            # auto | float32 | bfloat16
    EMBED_BATCH: int = 32
    TORCH_THREADS: int = 0                  # 0 = number of cores
    # --- chunking -------------------------------------------------------------------------
    CHUNK_STRATEGY: str = "sentence"        # sentence | semantic | parent_child
    CHUNK_TOKENS: int = 200                 # target chunk size in embedder tokens (MiniLM reads 256)
    CHUNK_OVERLAP: int = 32                 # overlap in embedder tokens (whole sentences)
    CHUNK_MIN_TOKENS: int = 48              # a heading starts a new chunk once this many are packed
    PARENT_TOKENS: int = 800                # parent size for parent_child
    SEMANTIC_PERCENTILE: float = 85.0       # breakpoint percentile of neighbour distance
    # --- retrieval ------------------------------------------------------------------------
    STAGE1_K: int = 200                     # candidates from each of dense and BM25
    RRF_K: int = 60
    DENSE_WEIGHT: float = 1.0
    BM25_WEIGHT: float = 1.0
    FUSION: str = "rrf"                     # rrf | dense | bm25
    STAGE2: bool = True                     # MaxSim rescoring from the int8 token cache
    STAGE2_K: int = 50
    STAGE2_WEIGHT: float = 0.5              # blend of MaxSim with the stage-1 fused rank
    RERANKER: str = "packaged:ms-marco-MiniLM-L-12-v2"  # | none | llm | <local CrossEncoder path>
    RERANK_MAX_TOKENS: int = 256            # packaged cross-encoder: (query, passage) pairs truncated to this
    STAGE3_K: int = 20
    EARLY_EXIT_MARGIN: float = 2.0          # skip stage 3 when top1 - median(stage 2) > margin; >= 2 never
                                            # (MaxSim lies in -1..1); 0.15 lost nDCG on the dev split
    HNSW_THRESHOLD: int = 50000             # exact FAISS below, HNSW at or above
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
    AGENT_MODE: str = "fast"                # fast: code jumps + walks, one LLM call | routed: model-driven loop
    INTENTS: bool = True                    # recognise actions (list/index/pre-heat/nested) in chat messages
    READER: str = "walk"                    # what the fast path reads: one of READERS above
    READ_K: int = 3                         # entry chunks from the search
    READ_BUDGET: int = 900                  # LLM tokens of source text the fast path may put in the prompt
    WALK_MAX: int = 2                       # chunks walked forward from each entry chunk
    WALK_QUERY_MIN: float = 0.2             # a walked chunk must still have this cosine to the question
    DECIDE: bool = False                    # after reading, one constrained call: answer, or search once more
    CITE_FOLLOWUP: bool = True              # ask for the sources (constrained) when the answer cites none
    MAX_STEPS: int = 4                      # routed mode: routing steps per question (the first is the search)
    RELEVANCE_MIN: float = 0.35             # refuse when no entry chunk has cosine >= this to the question
                                            # (calibrated on the dev split: `thread-rag bench refusal`)
    MAX_ANSWER_TOKENS: int = 400
    HYDE: bool = False
    LOST_IN_MIDDLE: bool = False
    CONDENSE_FOLLOWUPS: bool = True

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
            if f.type == "float" and (not isinstance(v, (int, float)) or isinstance(v, bool)):
                raise SettingsError(f"invalid setting {f.name}={v!r}: must be a number")
            if f.type == "bool" and not isinstance(v, bool):
                raise SettingsError(f"invalid setting {f.name}={v!r}: must be true or false")
            if f.type == "str" and not isinstance(v, str):
                raise SettingsError(f"invalid setting {f.name}={v!r}: must be a string")
        need(self.EMBEDDER_DTYPE in ("auto", "float32", "bfloat16"), "EMBEDDER_DTYPE", "use auto, float32 or bfloat16")
        need(self.CHUNK_STRATEGY in ("sentence", "semantic", "parent_child"), "CHUNK_STRATEGY",
             "use sentence, semantic or parent_child")
        need(16 <= self.CHUNK_TOKENS <= 4096, "CHUNK_TOKENS", "must be between 16 and 4096")
        from .embedder import embedder_window

        window = embedder_window(self.EMBEDDER_MODEL)
        need(window is None or self.CHUNK_TOKENS <= window - 2, "CHUNK_TOKENS",
             f"must fit the embedder's window: {self.EMBEDDER_MODEL} reads {window} word pieces "
             f"(incl. 2 markers), so at most {(window or 2) - 2}")
        need(0 <= self.CHUNK_OVERLAP < self.CHUNK_TOKENS, "CHUNK_OVERLAP", "must be >= 0 and < CHUNK_TOKENS")
        need(0 <= self.CHUNK_MIN_TOKENS <= self.CHUNK_TOKENS, "CHUNK_MIN_TOKENS", "must be between 0 and CHUNK_TOKENS")
        need(self.PARENT_TOKENS >= self.CHUNK_TOKENS, "PARENT_TOKENS", "must be >= CHUNK_TOKENS")
        need(0 < self.SEMANTIC_PERCENTILE < 100, "SEMANTIC_PERCENTILE", "must be between 0 and 100")
        for name in ("STAGE1_K", "STAGE2_K", "STAGE3_K", "RRF_K", "SEARCH_K", "EMBED_BATCH", "MAX_STEPS",
                     "READ_K", "READ_BUDGET", "LLM_BATCH", "LLM_CTX", "OLLAMA_NUM_CTX", "MAX_ANSWER_TOKENS", "SUMMARY_MAX_WORDS", "WINDOW_TOKEN_BUDGET",
                     "NUM_SEMANTIC_CHUNKS", "MAX_DEPTH", "HNSW_THRESHOLD"):
            need(getattr(self, name) > 0, name, "must be > 0")
        need(self.NUM_SEMANTIC_CHUNKS >= 2, "NUM_SEMANTIC_CHUNKS", "must be >= 2")
        for name in ("TORCH_THREADS", "LLM_THREADS", "NESTED_MIN_CHUNKS", "NESTED_MIN_WORDS", "WALK_MAX"):
            need(getattr(self, name) >= 0, name, "must be >= 0")
        for name in ("DENSE_WEIGHT", "BM25_WEIGHT", "STAGE2_WEIGHT", "EARLY_EXIT_MARGIN"):
            need(getattr(self, name) >= 0, name, "must be >= 0")
        need(self.STAGE2_WEIGHT <= 1, "STAGE2_WEIGHT", "must be between 0 and 1")
        need(self.DENSE_WEIGHT + self.BM25_WEIGHT > 0, "DENSE_WEIGHT", "DENSE_WEIGHT + BM25_WEIGHT must be > 0")
        need(self.FUSION in ("rrf", "dense", "bm25"), "FUSION", "use rrf, dense or bm25")
        need(-1 < self.WALK_THRESHOLD < 1, "WALK_THRESHOLD", "must be between -1 and 1")
        need(-1 <= self.RELEVANCE_MIN < 1, "RELEVANCE_MIN", "must be between -1 and 1")
        need(0 <= self.TEMPERATURE <= 2, "TEMPERATURE", "must be between 0 and 2")
        need(self.SUMMARY_BACKEND in ("extractive", "llm", "ollama"), "SUMMARY_BACKEND",
             "use extractive, llm or ollama")
        need(self.CHAT_BACKEND in ("auto", "embedded", "ollama"), "CHAT_BACKEND", "use auto, embedded or ollama")
        need(self.AGENT_MODE in ("fast", "routed"), "AGENT_MODE", "use fast or routed")
        need(self.READER in READERS, "READER", "use one of " + ", ".join(READERS))
        need(-1 <= self.WALK_QUERY_MIN < 1, "WALK_QUERY_MIN", "must be between -1 and 1")
        need(bool(self.HOME.strip()), "HOME", "must not be empty")
        if self.CHROMA_HOST.strip():
            from .store.chunk_store import parse_chroma_host

            try:
                parse_chroma_host(self.CHROMA_HOST)
            except ValueError as exc:
                raise SettingsError(f"invalid setting CHROMA_HOST={self.CHROMA_HOST!r}: {exc}") from None
        from .embedder import PACKAGED_EMBEDDERS
        from .onnx_models import PACKAGED, PACKAGED_RERANKERS

        need(bool(self.RERANKER.strip()) and (not self.RERANKER.startswith(PACKAGED)
                                               or self.RERANKER[len(PACKAGED):] in PACKAGED_RERANKERS), "RERANKER",
             "use none, packaged:ms-marco-MiniLM-L-12-v2, llm or a local CrossEncoder path")
        need(self.EMBEDDER_MODEL in PACKAGED_EMBEDDERS or (not self.EMBEDDER_MODEL.startswith(PACKAGED)
                                                           and bool(self.EMBEDDER_MODEL.strip())), "EMBEDDER_MODEL",
             f"use {' or '.join(PACKAGED_EMBEDDERS)}, or a local sentence-transformers directory")
        need(16 <= self.RERANK_MAX_TOKENS <= 512, "RERANK_MAX_TOKENS", "must be between 16 and 512")
        if not isinstance(self.ALLOWED_ROOTS, list) or not all(isinstance(x, str) for x in self.ALLOWED_ROOTS):
            raise SettingsError(f"invalid setting ALLOWED_ROOTS={self.ALLOWED_ROOTS!r}: must be a list of paths")
        import re

        try:
            re.compile(self.SENTENCE_SPLIT_REGEX)
        except re.error as exc:
            raise SettingsError(f"invalid setting SENTENCE_SPLIT_REGEX: {exc}") from None

    # ------------------------------------------------------------------------------------
    @property
    def home(self) -> Path:
        return Path(self.HOME).expanduser().resolve()

    @property
    def cache_path(self) -> Path:
        return Path(self.CACHE_PATH).expanduser().resolve()

    @property
    def model_dir(self) -> Path:
        return Path(self.MODEL_DIR).expanduser().resolve() if self.MODEL_DIR else self.home / "models"

    @property
    def shared_data(self) -> Path:
        return Path(self.SHARED_DATA).expanduser().resolve()

    @property
    def ollama_host(self) -> str:
        return self.OLLAMA_HOST or os.environ.get("OLLAMA_HOST", "")

    def replace(self, **changes: Any) -> "Settings":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


_FIELD_TYPES = {f.name: f.type for f in fields(Settings)}


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
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise SettingsError(f"config file {path} cannot be read: {exc}") from None
    values: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if not name.isupper():
                continue
            if name not in _FIELD_TYPES:
                raise SettingsError(f"config file {path}: unknown setting {name}{_removed(name)}")
            try:
                values[name] = ast.literal_eval(node.value)
            except ValueError:
                raise SettingsError(f"config file {path}: {name} must be a literal value") from None
    return values


REMOVED = {"COLBERT_MODEL": "removed: stage 2 uses the embedder's own token vectors (a ColBERT checkpoint would "
                            "need its document side encoded at index time, and none ships offline)"}


def _removed(name: str) -> str:
    return f" ({REMOVED[name]})" if name in REMOVED else ""


def find_config_file(env: Mapping[str, str]) -> Path | None:
    explicit = env.get(ENV_PREFIX + "CONFIG")
    if explicit:
        p = Path(explicit).expanduser()
        if not p.is_file():
            raise SettingsError(f"invalid setting THREAD_RAG_CONFIG={explicit!r}: no such file")
        return p
    cwd = Path.cwd() / "config.py"
    if cwd.is_file():
        return cwd
    return None


def load_settings(overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
                  config_file: Path | None | bool = None) -> Settings:
    """Build Settings from defaults, config.py, ``THREAD_RAG_*`` environment and overrides.

    ``config_file=False`` skips config.py; ``None`` looks for ``$THREAD_RAG_CONFIG`` or ./config.py.
    """
    env = os.environ if env is None else env
    values: dict = {}
    if config_file is not False:
        path = config_file if isinstance(config_file, Path) else find_config_file(env)
        if path is not None:
            values.update(read_config_file(path))
    for name in _FIELD_TYPES:
        key = ENV_PREFIX + name
        if key in env and key != ENV_PREFIX + "CONFIG":
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
