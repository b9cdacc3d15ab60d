"""Index a benchmark corpus once into its own data dir (reused by later runs)."""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

from thread_rag.engine import Engine
from thread_rag.errors import ThreadRagError
from thread_rag.ingest.text import parse_text
from thread_rag.settings import Settings


def bench_home(settings: Settings, dataset: str) -> Path:
    s = settings
    from thread_rag.ingest.loaders import LOADER_VERSION

    from thread_rag.packaged import PACKAGED_MINILM

    recipe = f"{s.CHUNK_STRATEGY}-{s.CHUNK_TOKENS}-{s.CHUNK_OVERLAP}-L{LOADER_VERSION}"
    if s.EMBEDDER_MODEL != PACKAGED_MINILM:  # vectors of another embedder live in their own corpus home
        recipe += "-" + "".join(c if c.isalnum() or c in "._-" else "_" for c in s.EMBEDDER_MODEL.split(":")[-1])
    return Path("bench_out") / f"{dataset}-{recipe}"


def open_corpus_engine(settings: Settings, ds, progress=None, home: Path | None = None) -> tuple[Engine, dict, float]:
    """Engine over the data set's corpus; returns (engine, doc key -> doc id, seconds spent indexing)."""
    home = home or bench_home(settings, ds.corpus_name or ds.name)
    engine = Engine(settings.replace(HOME=str(home), CACHE_PATH=str(Path(home) / "doc_cache")))
    have = {d.path: d for d in engine.documents()}
    t0 = time.perf_counter()

    def missing():  # stored in groups (one Chroma write for many small documents)
        for i, doc in enumerate(ds.corpus):
            key = f"bench://{ds.corpus_name or ds.name}/{doc.key}"  # one key per corpus document, whichever half asks
            if progress:
                progress("index", i + 1, len(ds.corpus))
            if key not in have and _still_missing(engine, key):
                loaded = parse_text(doc.text, key, markdown=(doc.kind == "markdown"))
                if loaded.blocks:
                    yield loaded, key, doc.title or doc.key, hashlib.sha256(doc.text.encode("utf-8")).hexdigest()

    for r in engine.index_loaded_many(missing()):
        if r.status == "failed":
            raise ThreadRagError(f"bench corpus {ds.name}: {r.path}: {r.error}")
    keymap = {d.doc_id: d.path.split("/", 3)[-1] for d in engine.documents()}
    return engine, keymap, time.perf_counter() - t0


def _still_missing(engine, key: str) -> bool:
    """Another process may be filling the same corpus home: look again before paying for the embedding."""
    engine.refresh()
    return engine.catalog.find_by_path(key) is None
