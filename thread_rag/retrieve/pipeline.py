"""The three-stage retriever behind ``rag_search``.

stage 1: dense (FAISS over raw-chunk embeddings) + BM25 (bm25s), ``STAGE1_K`` each, fused by
         weighted RRF (``RRF_K``);
stage 2: MaxSim over the int8 token cache for the top ``STAGE2_K``, blended with the stage-1
         fused score (``STAGE2_WEIGHT`` = weight of MaxSim; min-max normalised within the pool);
stage 3: reranker (the packaged ONNX cross-encoder, a local cross-encoder path, or the LLM) on the top
         ``STAGE3_K`` unless stage 2 is decisive (top1 - median > ``EARLY_EXIT_MARGIN``), blended with a prior,
         the stage-2 or the BM25 score (``STAGE3_WEIGHT`` = weight of the reranker, ``STAGE3_PRIOR``; min-max
         normalised within the pool); candidates whose BM25 score is below ``STAGE3_LEXICAL_FLOOR`` x the pool's
         best follow the others;
hop (``HOP_K`` > 0, the packaged cross-encoder; off by default): a second hop from the top hit for questions
         whose answer takes two passages (the second shares few words with the question): what the top hit leads
         to, scored by the reranker against the query followed by the top hit, may take up to ``HOP_PICKS`` places
         after it;
         with ``HOP_DEPTH`` > 1 the first pick seeds a further link (questions of three or four steps).
A stage reorders only its pool; candidates below the pool follow in the previous stage's order (their
``score`` is that stage's, named by ``ranked_by``), so ``k`` larger than a pool still returns ``k`` hits.
Every result uses one schema (:class:`SearchResult`), whatever ran.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import LibraryChangedError, ThreadRagError, UnknownDocumentError
from ..ids import ChunkId, format_doc_id
from ..lru import LRU
from .fusion import rrf
from .maxsim import maxsim_many
from .rerank import rerank_passage
from .search_index import SearchIndex, bm25_tokenize
from .statements import STATEMENTS, longest_runs, named, printed_labels, row_labelled, under

MAX_QUERY_CHARS = 2000
MAX_K = 100  # the most hits one search returns
SEARCH_ATTEMPTS = 5  # a search another process's commits keep overtaking is ranked again, on the new index, this often
SECTION_FIRST = 3  # hits of a statement the question names that go first (``statements``)
NEVER_EXIT = 2.0  # an EARLY_EXIT_MARGIN at or above this never skips stage 3: MaxSim lies in -1..1


def plain_query(text: str, limit: int | None = MAX_QUERY_CHARS) -> str:
    """A query or question as the models take it: one line of valid text (a lone surrogate, from a command line's
    undecodable bytes or a JSON escape, becomes "?"), at most ``limit`` characters (None: whole)."""
    return " ".join(text.encode("utf-8", "replace").decode("utf-8").split())[:limit]


@dataclass
class SearchHit:
    chunk_id: str
    doc_id: str
    rank: int
    score: float
    text: str
    page_start: int | None
    page_end: int | None
    heading_path: list
    scores: dict  # dense, bm25, rrf, maxsim, rerank, hop: float or None
    ranked_by: str = "stage1"  # the stage whose score ``score`` is (stage1/2/3, or hop for a second-hop pick: its
    # reranker probability against query + top hit, not blended or floored; statement for a hit the search of a
    # statement the query names placed: that search's score): scores order hits within one stage only
    generation: int | None = None  # the document generation the search ranked (readers stay on it)


@dataclass
class SearchResult:
    query: str
    doc_id: str | None
    k: int
    hits: list
    stages_run: list
    early_exit: bool
    candidates: int
    timings_ms: dict = field(default_factory=dict)
    note: str = ""                  # why there are no hits when the filters leave no chunk (pages, heading, doc)


@dataclass
class Pipeline:
    """Which stages run; the benchmark compares these side by side."""

    dense: bool = True
    bm25: bool = True
    maxsim: bool = True
    rerank: bool = True
    statements: bool = True  # a financial statement the query names goes first (``statements``)


@dataclass
class _Ranked:
    """One ranking: the candidates in order, the score each ends with, and each stage's own scores by row."""

    cand: list
    final: dict
    dense: dict
    lex: dict
    fused: dict
    maxsim: dict = field(default_factory=dict)
    rerank: dict = field(default_factory=dict)
    hop: dict = field(default_factory=dict)
    picks: list = field(default_factory=list)
    stages: list = field(default_factory=lambda: ["stage1"])
    early_exit: bool = False
    statement: list = field(default_factory=list)  # rows a named statement's own ranking placed (``before``)

    def before(self, other: "_Ranked", n: int, after: int = 0) -> "_Ranked":
        """``other``'s first ``after`` rows, this ranking's first ``n`` rows (those not placed yet), then the rest of
        ``other``'s in its order; each row keeps the scores of the ranking that placed it."""
        lead = other.cand[:after]
        first = [r for r in self.cand[:n] if r not in lead]
        out = _Ranked(lead + first + [r for r in other.cand if r not in first and r not in lead], {}, {}, {}, {},
                      stages=list(dict.fromkeys(other.stages + self.stages)), early_exit=other.early_exit)
        for name in ("final", "dense", "lex", "fused", "maxsim", "rerank", "hop"):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(out, name, {**{r: v for r, v in theirs.items() if r not in first},
                                **{r: mine[r] for r in first if r in mine}})
        out.picks = [r for r in other.picks if r not in first] + [r for r in self.picks if r in first]
        out.statement = first
        return out


PIPELINES = {
    "dense_only": Pipeline(dense=True, bm25=False, maxsim=False, rerank=False),
    "bm25_only": Pipeline(dense=False, bm25=True, maxsim=False, rerank=False),
    "stage1_rrf": Pipeline(maxsim=False, rerank=False),
    "stage1_2": Pipeline(rerank=False),
    "stage1_3": Pipeline(maxsim=False),
    "three_stage": Pipeline(),
}


class Retriever:
    """The search: dense + BM25 fused by RRF, MaxSim rescoring, the cross-encoder (stages as settings say).

    Receives what it reads: the ``library`` (catalog and chunks), the ``token_cache`` (stage 2's token vectors),
    ``home`` (the folder of the derived search index) and two embedder providers, called on first need:
    ``query_embedder`` (queries; never imports torch on a default store) and ``embedder`` (the indexing model,
    only to recompute a lost token-cache file in memory)."""

    def __init__(self, library, settings, home: Path, token_cache, query_embedder: Callable, embedder: Callable):
        self.library, self.settings, self.home, self.token_cache = library, settings, home, token_cache
        self._query_embedder, self._embedder = query_embedder, embedder
        self._index: SearchIndex | None = None
        self._reranker = None
        self._reranker_checked = False
        self._quote_ce = None
        self._hit_chunks: LRU = LRU(4096)  # (serial, position, generation) -> Chunk read for a hit or stage 3
        self._hidden: frozenset = frozenset()  # (serial, position) of chunks hidden for calibration (``hiding``)
        self._hidden_view = None
        self._statements_at: LRU = LRU(256)  # (serial, generation) -> statement name -> positions of its chunks
        self._recomputed: LRU = LRU(8)  # (serial, generation) -> int8 token vectors of documents without a usable cache

    # -- index lifecycle ---------------------------------------------------------------------
    @property
    def index(self) -> SearchIndex:
        self.library.refresh()
        committed = self.library.committed_keys()
        if self._index is None or self._index.committed != committed:
            from ..embedder import check_recipe

            check_recipe(self.library.documents(), self.settings.EMBEDDER_MODEL)
            load = self.library.vectors
            if self._index is None:
                self._index = SearchIndex.open(self.home / "index", self.home / "index_parts", committed, load,
                                               self.settings.HNSW_THRESHOLD, persist=not self.library.read_only)
            else:  # only what changed is read
                self._index = self._index.updated(committed, load)
        if self._hidden:  # calibration: the library without the chunks that answer the question asked
            if self._hidden_view is None or self._hidden_view._index is not self._index:
                from .hidden import HiddenView

                self._hidden_view = HiddenView(self._index, self._hidden)
            return self._hidden_view
        return self._index

    @contextmanager
    def hiding(self, chunk_ids: list[str]):
        """Inside, search, the walk and the word check see the library without these chunks (``hidden.py``)."""
        before = self._hidden
        self._hidden = before | frozenset((c.serial, c.position) for c in map(ChunkId.parse, chunk_ids))
        self._hidden_view = None
        try:
            yield
        finally:
            self._hidden, self._hidden_view = before, None

    @property
    def reranker(self):
        if not self._reranker_checked:
            self._reranker_checked = True
            from .rerank import make_reranker

            s = self.settings

            def llama():
                from ..llm.model_files import load_llama

                return load_llama(s, s.MAIN_MODEL, n_ctx=1024)

            self._reranker = make_reranker(s.RERANKER, llama, threads=s.TORCH_THREADS, max_tokens=s.RERANK_MAX_TOKENS)
        return self._reranker

    @property
    def cross_encoder(self):
        """The packaged cross-encoder (ms-marco-MiniLM-L-12-v2, INT8 ONNX), stage 3's own instance when stage 3 uses
        it: the quote scores a reading's sentences with it whatever ``RERANKER`` says (its evidence floor,
        ``QUOTE_MIN``, is on this model's scale). ModelUnavailableError when the package is missing."""
        from .rerank import OnnxCrossEncoder

        if isinstance(self.reranker, OnnxCrossEncoder):
            return self.reranker
        if self._quote_ce is None:
            self._quote_ce = OnnxCrossEncoder(max_tokens=self.settings.RERANK_MAX_TOKENS,
                                              threads=self.settings.TORCH_THREADS)
        return self._quote_ce

    def query_tokens(self, query: str) -> np.ndarray:
        return self._query_embedder().embed_with_tokens([query])[1][0]

    def doc_tokens(self, index: SearchIndex, serial: int, position: int) -> np.ndarray:
        """A chunk's token vectors, of the generation ``index`` ranked, from a token cache made from its content."""
        cache, generation = self.token_cache, index.generation_of(serial)
        tokens = cache.get_made_from(serial, generation, index.content_key_of(serial), position)
        if tokens is not None:
            return tokens
        # a lost cache (or one made from other content; doctor reports it, doctor --repair rebuilds it) is
        # recomputed in memory, int8 like the file so scores match, the last 8 documents kept; never written
        # here: only indexing writes
        key = (serial, generation)
        if key not in self._recomputed:
            self.library.refresh()
            if dict(self.library.committed()).get(serial) != generation:
                raise LibraryChangedError  # its cache went with a newer generation: rank again, do not re-embed
            from ..ingest import text_for_embedding
            from ..store.token_cache import quantize

            chunks = self._chunks(serial, generation)
            toks = self._embedder().embed_with_tokens([text_for_embedding(c.text) for c in chunks])[1]
            self._recomputed[key] = [quantize(t) for t in toks]
        from ..store.token_cache import dequantize

        return dequantize(*self._recomputed[key][position])

    # -- search ------------------------------------------------------------------------------
    def search(self, query: str, doc_id: str | None = None, k: int | None = None, pages: tuple | None = None,
               heading: str | None = None, pipeline: Pipeline | str | None = None) -> SearchResult:
        s = self.settings
        if not isinstance(query, str) or not query.strip():
            raise ThreadRagError("search query is empty")
        query = plain_query(query)
        k = s.SEARCH_K if k is None else k
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise ThreadRagError(f"k={k!r}: must be an integer between 1 and {MAX_K}")
        if pages is not None:
            try:
                lo, hi = int(pages[0]), int(pages[1])
            except (TypeError, ValueError, IndexError):
                raise ThreadRagError(f"pages={pages!r}: expected (first, last)") from None
            if lo > hi or lo < 1:
                raise ThreadRagError(f"pages={pages!r}: expected 1 <= first <= last")
            pages = (lo, hi)
        if isinstance(pipeline, str):
            if pipeline not in PIPELINES:
                raise ThreadRagError(f"unknown pipeline {pipeline!r} (known: {', '.join(PIPELINES)})")
            pipeline = replace(PIPELINES[pipeline], statements=s.STATEMENTS)  # a named pipeline: the setting holds
        if pipeline is None:
            pipeline = Pipeline(dense=s.FUSION in ("rrf", "dense"), bm25=s.FUSION in ("rrf", "bm25"),
                                maxsim=s.STAGE2, rerank=s.RERANKER != "none", statements=s.STATEMENTS)
        serial = None
        if doc_id:
            serial = self.library.document(doc_id).serial  # raises a clear error for unknown ids
            doc_id = format_doc_id(serial)
        elif not self.library.documents():  # an empty library: no hits, and no index built for nothing
            return SearchResult(query=query, doc_id=None, k=k, hits=[], stages_run=[], early_exit=False, candidates=0,
                                timings_ms={})
        for _ in range(SEARCH_ATTEMPTS):
            try:
                return self._search(query, serial, doc_id, k, pages, heading, pipeline)
            except LibraryChangedError as exc:  # another process replaced a document mid-search: again, on the new index
                self._index, changed = None, exc
        raise self.library.missing(changed.generations) from None  # store-lost rows are named as such

    def _search(self, query: str, serial: int | None, doc_id: str | None, k: int, pages, heading,
                pipeline: Pipeline) -> SearchResult:
        """One search against one snapshot: the index it ranks with and the chunks of exactly the generations
        that index holds (``_chunks``), so hit texts always match their ranks. Each stage reorders only its pool."""
        timings = {}
        t = time.perf_counter()
        index = self.index
        rows = index.allowed_rows(serial, pages, heading)
        timings["load_ms"] = (time.perf_counter() - t) * 1000
        if rows is not None and not len(rows):
            return SearchResult(query=query, doc_id=doc_id, k=k, hits=[], stages_run=[], early_exit=False, candidates=0,
                                timings_ms=timings, note=index.empty_filter_note(serial, pages, heading))
        ranked = self._rank(index, query, rows, k, pipeline, timings)
        if pipeline.statements and not heading:  # a statement named outright goes first; one a metric implies
            t = time.perf_counter()                # after the best hit
            section, said = self._named_section(index, query, rows)
            after = 0 if said else 1
            if section is not None and k > after:
                own = self._labelled_first(index, query, section,
                                           self._rank(index, query, section, SECTION_FIRST, pipeline, {}, hop=False))
                ranked = own.before(ranked, SECTION_FIRST, after=after)
            timings["section_ms"] = (time.perf_counter() - t) * 1000
        hits = []
        self._fetch(index, ranked.cand[:k])
        for rank, r in enumerate(ranked.cand[:k], start=1):
            ser, pos = int(index.meta.serial[r]), int(index.meta.position[r])
            ch = self._chunk(index, r)
            hits.append(SearchHit(
                chunk_id=str(ChunkId(ser, pos)), doc_id=format_doc_id(ser), rank=rank, score=round(ranked.final[r], 6),
                text=ch.text, page_start=ch.page_start, page_end=ch.page_end, heading_path=ch.heading_path,
                scores={"dense": _r(ranked.dense.get(r)), "bm25": _r(ranked.lex.get(r)), "rrf": _r(ranked.fused.get(r)),
                        "maxsim": _r(ranked.maxsim.get(r)) if pipeline.maxsim else None,
                        "rerank": _r(ranked.rerank.get(r)) if ranked.rerank else None,
                        "hop": _r(ranked.hop.get(r)) if ranked.hop else None},
                ranked_by="statement" if r in ranked.statement else "hop" if r in ranked.picks else "stage3"
                if r in ranked.rerank else "stage2" if r in ranked.maxsim else "stage1",
                generation=index.generation_of(ser)))
        return SearchResult(query=query, doc_id=doc_id, k=k, hits=hits, stages_run=ranked.stages,
                            early_exit=ranked.early_exit, candidates=len(ranked.fused),
                            timings_ms={key: round(v, 3) for key, v in timings.items()})

    def _rank(self, index: SearchIndex, query: str, rows, k: int, pipeline: Pipeline, timings: dict,
              hop: bool = True) -> "_Ranked":
        """The stages over ``rows`` (None: every live row): the candidates in order and each stage's scores
        (``hop``: the second hop may run, as settings say)."""
        s = self.settings
        fused, dense_map, lex_map = self._stage1(index, query, rows, pipeline, timings)
        cand = sorted(fused, key=lambda r: (-fused[r], index.tiebreak[r]))
        cand = cand[: max(k, s.STAGE2_K if pipeline.maxsim else k, s.STAGE3_K if pipeline.rerank else k)]
        got = _Ranked(cand, {r: fused[r] for r in cand}, dense_map, lex_map, fused)
        if pipeline.maxsim and cand:
            got.cand, got.maxsim, got.early_exit = self._stage2(index, query, cand, got.final, timings)
            got.stages.append("stage2")
        if pipeline.rerank and got.cand and not got.early_exit and self.reranker is not None:
            got.cand, got.rerank = self._stage3(index, query, got.cand, got.final, lex_map, timings, pipeline.bm25)
            got.stages.append("stage3")
            if hop and s.hop_runs() and k > 1 and len(got.cand) > 1:
                got.cand, got.hop, got.picks = self._hop(index, query, got.cand, got.final, rows, pipeline, timings, k)
                got.stages.append("hop")
        return got

    def _named_section(self, index: SearchIndex, query: str, rows) -> tuple[np.ndarray | None, bool]:
        """The rows (within ``rows``, None: the library) of the financial statements the query names or implies
        (``statements``), or None when it names none or none is found; and whether it named them outright. A
        library-wide search looks in the documents with a chunk that holds one of a statement's ``terms`` (each
        read whole once per generation, ``_statement_positions``)."""
        asked, said = named(query)
        if not asked:
            return None, said
        if rows is None:
            hold = np.concatenate([index.term_rows(t) for st in asked for t in st.terms])
            serials = np.unique(index.meta.serial[hold])
        else:
            serials = np.unique(index.meta.serial[rows])
        found = []
        for serial in serials.tolist():
            at = self._statement_positions(index, serial)
            wanted = sorted({p for st in asked for p in at.get(st.name, ())})
            doc = index.doc_rows.get(serial, np.zeros(0, np.int64))
            found.append(doc[np.isin(index.meta.position[doc], wanted)])
        found = np.concatenate(found) if found else np.zeros(0, np.int64)
        if rows is not None:
            found = np.intersect1d(found, rows)
        return (np.sort(found) if len(found) else None), said

    def _labelled_first(self, index: SearchIndex, query: str, section, own: "_Ranked") -> "_Ranked":
        """A statement's own ranking with its chunks that print a row under a label of a metric the query names
        ("capital expenditure": "Purchases of property, plant and equipment"; ``statements.printed_labels``) first,
        the chunk with the most common label first, each keeping its score (the lowest of the ranking if it had
        none); the rest in the ranking's order."""
        labels = printed_labels(query)
        if not labels:
            return own
        rows = [int(r) for r in section]
        self._fetch(index, rows)
        at = {}
        for r in rows:
            found = [row_labelled(ln, labels) for ln in self._chunk(index, r).text.splitlines()
                     if ln.lstrip().startswith("|")]
            found = [i for i in found if i is not None]
            if found:
                at[r] = min(found)
        if not at:
            return own
        place = {r: i for i, r in enumerate(own.cand)}
        first = sorted(at, key=lambda r: (at[r], place.get(r, len(place))))
        low = min(own.final.values(), default=0.0)
        own.final.update({r: low for r in first if r not in own.final})
        own.cand = first + [r for r in own.cand if r not in at]
        return own

    def _statement_positions(self, index: SearchIndex, serial: int) -> dict[str, tuple]:
        """Statement name -> the positions of its chunks in one document generation (``statements.longest_runs``),
        read once per generation (the whole document's chunks, from its thread)."""
        key = (serial, index.generation_of(serial))
        if key not in self._statements_at:
            chunks = self._chunks(*key)
            self._statements_at[key] = {
                st.name: tuple(longest_runs([(serial, c.position, c.position) for c in chunks
                                             if under(st, c.heading_path, c.text)]))
                for st in STATEMENTS}
        return self._statements_at[key]

    def _stage1(self, index: SearchIndex, query: str, rows, pipeline: Pipeline, timings: dict):
        """Dense and BM25 candidates (``STAGE1_K`` each), fused by weighted RRF: (fused, dense, bm25) by row."""
        s, t = self.settings, time.perf_counter()
        dense: dict[int, float] = {}
        lex: dict[int, float] = {}
        if pipeline.dense:
            qvec = self._query_embedder().embed_queries([query])[0]
            dense = dict(zip(*(x.tolist() for x in index.dense(qvec, s.STAGE1_K, rows))))
        if pipeline.bm25:
            lex = dict(zip(*(x.tolist() for x in index.lexical(query, s.STAGE1_K, rows))))
        if pipeline.dense and pipeline.bm25:
            fused = rrf([list(dense), list(lex)], [s.DENSE_WEIGHT, s.BM25_WEIGHT], k=s.RRF_K)
        else:
            fused = dict(dense if pipeline.dense else lex)
        timings["stage1_ms"] = (time.perf_counter() - t) * 1000
        return fused, dense, lex

    def _stage2(self, index: SearchIndex, query: str, cand: list, final: dict, timings: dict):
        """MaxSim over the token cache for the top ``STAGE2_K``, blended with the fused score; early exit when
        the leader's MaxSim stands out from the pool's median by ``EARLY_EXIT_MARGIN``."""
        s, t = self.settings, time.perf_counter()
        pool = cand[: s.STAGE2_K]
        qtok = self.query_tokens(query)
        docs = [self.doc_tokens(index, int(index.meta.serial[r]), int(index.meta.position[r])) for r in pool]
        ms = maxsim_many(qtok, docs)
        maxsim_map = dict(zip(pool, ms.tolist()))
        final.update({r: float(b) for r, b in zip(pool, _blend(ms, [final[r] for r in pool], s.STAGE2_WEIGHT))})
        cand = sorted(pool, key=lambda r: (-final[r], index.tiebreak[r])) + cand[len(pool):]  # the rest keep their order
        timings["stage2_ms"] = (time.perf_counter() - t) * 1000
        early_exit = len(ms) > 1 and float(maxsim_map[cand[0]] - np.median(ms)) > s.EARLY_EXIT_MARGIN
        return cand, maxsim_map, early_exit

    def _stage3(self, index: SearchIndex, query: str, cand: list, final: dict, lex: dict, timings: dict,
                lexical: bool = True):
        """The reranker's scores for the top ``STAGE3_K``, blended with a prior unless ``STAGE3_WEIGHT`` is 1:
        the score before stage 3 (``STAGE3_PRIOR="stage2"``) or the BM25 score (``"bm25"``; 0 outside BM25's
        candidates); then the lexical floor (``STAGE3_LEXICAL_FLOOR``, on each candidate's own BM25 score; not
        where BM25 is off, ``lexical`` False)."""
        s, t = self.settings, time.perf_counter()
        pool = cand[: s.STAGE3_K]
        self._fetch(index, pool)
        rs = self.reranker.score(query, [self._passage(index, r) for r in pool])
        rerank_map = dict(zip(pool, rs.tolist()))
        if s.STAGE3_WEIGHT < 1:
            prior = [lex.get(r, 0.0) if s.STAGE3_PRIOR == "bm25" else final[r] for r in pool]
            rs = _blend(rs, prior, s.STAGE3_WEIGHT)
        if s.STAGE3_LEXICAL_FLOOR > 0 and lexical:
            rs = _lexical_floor(rs, index.lexical_scores(query, pool), s.STAGE3_LEXICAL_FLOOR)
        final.update({r: float(v) for r, v in zip(pool, rs)})
        cand = sorted(pool, key=lambda r: (-final[r], index.tiebreak[r])) + cand[len(pool):]
        timings["stage3_ms"] = (time.perf_counter() - t) * 1000
        return cand, rerank_map

    def _hop(self, index: SearchIndex, query: str, cand: list, final: dict, rows, pipeline: Pipeline, timings: dict,
             k: int):
        """The second hop, ``HOP_DEPTH`` links long (fewer once the top ``k`` are placed): the top hit seeds the
        first link (:meth:`_link`), each link's first pick the next. Picks follow the top hit in the order found,
        the rest keep stage 3's order. Returns (cand, hop scores by row, picks)."""
        s, t = self.settings, time.perf_counter()
        seeds, hop_map, picks = [cand[0]], {}, []  # the top hit is read already: stage 3 read it
        for _ in range(s.HOP_DEPTH):
            if 1 + len(picks) >= k:  # the top k are placed: a further link could not show
                break
            rest = [r for r in cand[1:] if r not in picks]
            scores, got = self._link(index, query, seeds, set(seeds + picks), rest, rows, pipeline)
            for r, v in scores.items():  # a row read again by a later link keeps its first score
                hop_map.setdefault(r, v)
            picks += got
            if not got:
                break
            seeds.append(got[0])
        final.update({r: hop_map[r] for r in picks})
        cand = [cand[0]] + picks + [r for r in cand[1:] if r not in picks]
        timings["hop_ms"] = (time.perf_counter() - t) * 1000
        return cand, hop_map, picks

    def _link(self, index: SearchIndex, query: str, seeds: list, placed: set, rest: list, rows, pipeline: Pipeline):
        """One link of the hop from its last seed: ``HOP_K`` candidates from the RRF of the seed's dense neighbours
        and of BM25 on its words the query and the earlier seeds lack, with the next ``HOP_RESCORE`` of ``rest``
        (stage 3's order less the picks; ``placed`` rows never return), scored by the reranker against the query
        followed by the seeds' passages, the newest first (``HOP_MAX_TOKENS``; truncation cuts the end of the longer
        side: the oldest seed goes first); up to ``HOP_PICKS`` scoring at least ``HOP_MIN_SCORE``, best first.
        Returns (scores by row, picks)."""
        s, seed = self.settings, seeds[-1]
        lists, deep = [], s.HOP_K + len(placed)
        if pipeline.dense:
            lists.append(index.dense(np.asarray(index.vectors[seed], np.float32), deep, rows)[0].tolist())
        asked = set(bm25_tokenize([" ".join([query] + [self._chunk(index, r).text for r in seeds[:-1]])])[0])
        novel = [w for w in bm25_tokenize([self._chunk(index, seed).text])[0] if w not in asked]  # repeats weigh
        if pipeline.bm25 and novel:
            lists.append(index.lexical(" ".join(novel), deep, rows)[0].tolist())
        led = rrf(lists, [1.0] * len(lists), k=s.RRF_K)
        led = [r for r in sorted(led, key=lambda r: (-led[r], index.tiebreak[r])) if r not in placed][: s.HOP_K]
        pool = list(dict.fromkeys(rest[: s.HOP_RESCORE] + led))
        self._fetch(index, pool)
        asked_text = " ".join([query] + [self._passage(index, r) for r in reversed(seeds)])
        scores = self.reranker.score(asked_text, [self._passage(index, r) for r in pool], max_tokens=s.HOP_MAX_TOKENS)
        hop_map = dict(zip(pool, (float(v) for v in scores)))
        best = sorted(pool, key=lambda r: (-hop_map[r], index.tiebreak[r]))
        return hop_map, [r for r in best if hop_map[r] >= s.HOP_MIN_SCORE][: s.HOP_PICKS]

    def _passage(self, index: SearchIndex, row: int) -> str:
        """What the reranker reads of a row's chunk (``RERANK_CONTEXT``)."""
        ch, context, name = self._chunk(index, row), self.settings.RERANK_CONTEXT, ""
        if context == "title":
            try:
                name = self.library.catalog.get(int(index.meta.serial[row])).name
            except UnknownDocumentError:  # removed by another process since the index was read
                raise LibraryChangedError from None
        return rerank_passage(ch.text, ch.heading_path, name, context)

    def _key(self, index: SearchIndex, row: int) -> tuple[int, int, int | None]:
        serial = int(index.meta.serial[row])
        return serial, int(index.meta.position[row]), index.generation_of(serial)

    def _fetch(self, index: SearchIndex, rows: list) -> None:
        """Read the rows' chunks of the generations the index holds, by id, those not read before; a generation
        gone from the store (another process replaced it) is a stale snapshot."""
        keys = [key for key in (self._key(index, r) for r in rows) if key not in self._hit_chunks]
        if not keys:
            return
        got = self.library.get_chunks(keys)
        if len(got) < len(set(keys)):
            raise LibraryChangedError(generations={(s, g) for s, _, g in set(keys) - set(got)})
        for key, chunk in got.items():
            self._hit_chunks[key] = chunk

    def _chunk(self, index: SearchIndex, row: int):
        key = self._key(index, row)
        chunk = self._hit_chunks.get(key)
        if chunk is None:
            self._fetch(index, [row])
            chunk = self._hit_chunks[key]
        return chunk

    def _chunks(self, serial: int, generation: int | None) -> list:
        chunks = None if generation is None else self.library.chunks_at(serial, generation)
        if chunks is None:
            raise LibraryChangedError(generations={(serial, generation)})
        return chunks


def _blend(scores, prior, w: float) -> np.ndarray:
    """A stage's scores blended with the scores it reorders: ``w`` * minmax(scores) + (1 - ``w``) * minmax(prior)."""
    return w * _minmax(scores) + (1 - w) * _minmax(np.asarray(prior))


def _lexical_floor(scores, lexical: list, floor: float) -> np.ndarray:
    """``scores`` with those of candidates whose BM25 score is below ``floor`` x the pool's best moved below every
    other candidate's (their spread and order kept): a candidate sharing next to nothing with the query's words
    does not lead on the reranker's word alone."""
    scores, lex = np.asarray(scores, np.float64), np.asarray(lexical, np.float64)
    if len(lex) == 0:
        return scores
    low = lex < floor * lex.max()  # never every candidate: the best is not below a fraction (<= 1) of itself
    if not low.any():
        return scores
    gap = scores[low].max() - scores[~low].min()
    return scores if gap < 0 else np.where(low, scores - gap - 1.0, scores)


def _minmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if len(x) == 0:
        return x
    lo, hi = x.min(), x.max()
    return np.zeros_like(x) if hi - lo < 1e-12 else (x - lo) / (hi - lo)


def _r(v):
    return None if v is None else round(float(v), 6)
