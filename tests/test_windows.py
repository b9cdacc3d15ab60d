"""Windows, summaries, the summary cache and pre-heat."""
import json
import os
import subprocess
import sys


from conftest import REPO
from thread_rag.threads.summarizers import ExtractiveSummarizer
from thread_rag.threads.summary_cache import SummaryCache
from thread_rag.threads.passages import strip_overlap
from thread_rag.threads.windows import END, START


def test_window_format_and_ends(manual_engine):
    d = manual_engine.documents()[0]
    last = f"{d.doc_id}_{d.chunk_count - 1:03d}"
    res = manual_engine.windows.fetch([f"{d.doc_id}_000", last])
    first_w, last_w = res.windows
    assert first_w.prev_summary == START and first_w.prev_id is None and first_w.next_id == f"{d.doc_id}_001"
    assert last_w.next_summary == END and last_w.next_id is None
    assert "[active]" in first_w.rendered and first_w.text in first_w.rendered
    assert first_w.heading_path and first_w.tokens > 0


def test_consecutive_ids_merge_without_repeating_text(manual_engine):
    # three neighbours of the manual with overlapping text (the chunker repeats whole sentences across a boundary)
    d, i = next((d, i) for d in sorted(manual_engine.documents(), key=lambda x: -x.chunk_count)
                for i in range(1, d.chunk_count - 2)
                if _overlaps(*manual_engine.thread(d.doc_id).chunks[i:i + 3]))
    ids = [f"{d.doc_id}_{j:03d}" for j in (i + 1, i, i + 2)]
    res = manual_engine.windows.fetch(ids)
    assert len(res.windows) == 1
    w = res.windows[0]
    assert w.chunk_ids == [f"{d.doc_id}_{j:03d}" for j in (i, i + 1, i + 2)]
    chunks = manual_engine.thread(d.doc_id).chunks[i:i + 3]
    import re

    sentences = [s for c in chunks for line in c.text.split("\n") for s in re.split(r"(?<=[.!?])\s+", line)
                 if len(s) > 30]
    for s in set(sentences):
        assert w.text.count(s) == 1, s  # every sentence present, none repeated
    assert len(w.text) < sum(len(c.text) for c in chunks)  # the overlap was removed


def _overlaps(a, b, c) -> bool:
    """Whether the three chunks repeat more than a few words across their two boundaries."""
    return sum(len(y.text.lstrip()) - len(strip_overlap(x.text, y.text)) for x, y in ((a, b), (b, c))) > 20


def test_strip_overlap():
    assert strip_overlap("A one. B two. C three.", "B two. C three. D four.") == "D four."
    assert strip_overlap("nothing shared.", "Fresh start here.") == "Fresh start here."


def test_bad_ids_are_reported_valid_ids_still_returned(manual_engine):
    res = manual_engine.windows.fetch(["DOC1_000", "DOC1_", "DOC1_-1", "DOC99_000", "../x", "DOC1_999"])
    assert [w.chunk_ids[0] for w in res.windows] == ["DOC1_000"]
    errs = {e["chunk_id"]: e["error"] for e in res.errors}
    assert set(errs) == {"DOC1_", "DOC1_-1", "DOC99_000", "../x", "DOC1_999"}
    assert "DOC1 has chunks DOC1_000.." in errs["DOC1_999"] and "unknown document DOC99" in errs["DOC99_000"]


def test_token_budget_caps_total(manual_engine):
    d = manual_engine.documents()
    ids = [f"{x.doc_id}_000" for x in d]
    res = manual_engine.windows.fetch(ids, token_budget=400)
    assert res.tokens <= 400 and res.truncated and res.omitted
    assert any(n.startswith(f"left out {res.omitted[0]}") and "token budget (400)" in n for n in res.notes), res.notes


def test_a_window_cut_to_the_budget_says_so(manual_engine):
    """One window over the budget was cut (" [...]") with "truncated": false and no note: an MCP client, or a user
    of `fetch DOC1_050 ... DOC1_099`, took the head of the window for all of it."""
    d = max(manual_engine.documents(), key=lambda x: x.chunk_count)
    ids = [f"{d.doc_id}_{p:03d}" for p in range(min(d.chunk_count, 6))]
    res = manual_engine.windows.fetch(ids, token_budget=60)
    (w,) = res.windows
    assert w.text.endswith(" [...]") and res.truncated and res.tokens <= 60
    assert res.notes == [f"{ids[0]}..{ids[-1]} cut to the token budget (60): a larger budget reads all of it"], res.notes


def test_walk_signal_is_a_similarity(manual_engine):
    d = max(manual_engine.documents(), key=lambda x: x.chunk_count)
    w = manual_engine.windows.fetch([f"{d.doc_id}_001"], query="pre-heat").windows[0]
    assert -1 <= w.walk.next_similarity <= 1 and -1 <= w.walk.prev_similarity <= 1
    assert w.walk.continues_next == (w.walk.next_similarity >= manual_engine.settings.WALK_THRESHOLD)
    assert w.walk.next_query_similarity is not None


def test_cache_key_changes_with_text_and_summarizer(tmp_path):
    c = SummaryCache(tmp_path)
    c.put_many("h" * 64, [("s1", "text one", "DOC1_000", "sum A")])
    assert c.get("h" * 64, "s1", "text one") == "sum A"
    assert c.get("h" * 64, "s1", "text one, edited") is None
    assert c.get("h" * 64, "s2", "text one") is None


def test_lazy_summaries_are_cached_and_invalidated_on_summarizer_change(manual_engine):
    d = manual_engine.documents()[1]
    manual_engine.windows.fetch([f"{d.doc_id}_001"])
    files = list(manual_engine.settings.cache_path.glob("summaries-*.json"))
    assert files
    data = json.loads(files[0].read_text())["entries"]
    assert all(e["summarizer"] == manual_engine.summarizer.id for e in data.values())

    class Other(ExtractiveSummarizer):
        def summarize(self, text, heading=""):
            return "OTHER SUMMARY"

    manual_engine._summarizer = Other()
    manual_engine._summarizer.id = "other-v1"
    w = manual_engine.windows.fetch([f"{d.doc_id}_001"]).windows[0]
    assert w.prev_summary == "OTHER SUMMARY"


def test_corrupt_cache_is_set_aside_and_reported(tmp_path):
    c = SummaryCache(tmp_path)
    p = c.path_for("a" * 64)
    p.write_text("{not json")
    assert c.get("a" * 64, "s", "t") is None
    assert c.warnings and "corrupt" in c.warnings[0]
    assert list(tmp_path.glob("*.corrupt-*")) and not p.exists()


def test_preheat_report_and_rerun(manual_engine):
    from thread_rag.threads.preheat import preheat

    r1 = preheat(manual_engine.library, lambda: manual_engine.summarizer, manual_engine.settings.cache_path)
    total = sum(d.chunk_count for d in manual_engine.documents())
    assert r1.made + r1.cached == total and r1.failed == 0
    r2 = preheat(manual_engine.library, lambda: manual_engine.summarizer, manual_engine.settings.cache_path)
    assert r2.made == 0 and r2.cached == total


PREHEAT = """
import sys
sys.path.insert(0, {repo!r})
from thread_rag.settings import load_settings
from thread_rag.engine import Engine
from thread_rag.threads.preheat import preheat
from thread_rag.threads.summarizers import ExtractiveSummarizer
import time

class Slow(ExtractiveSummarizer):
    def summarize(self, text, heading=""):
        time.sleep({delay})
        return super().summarize(text, heading)

e = Engine(load_settings({{"HOME": {home!r}, "CACHE_PATH": {cache!r}}}, env={{}}, config_file=False), summarizer=Slow(40))
r = preheat(e.library, lambda: e.summarizer, e.settings.cache_path, {doc!r}, flush_every={flush})
print(r.made, r.cached)
"""


def _preheat_proc(engine, doc, delay=0.0, flush=64, crash=None):
    code = PREHEAT.format(repo=str(REPO), home=str(engine.settings.home), cache=str(engine.settings.cache_path),
                          doc=doc, delay=delay, flush=flush)
    env = dict(os.environ)
    env.pop("THREAD_RAG_CRASH_AT", None)
    if crash:
        env["THREAD_RAG_CRASH_AT"] = crash
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _cached(engine, rec):
    c = SummaryCache(engine.settings.cache_path)
    s = ExtractiveSummarizer(40)
    return sum(c.get(rec.content_hash, s.id, ch.text) is not None for ch in engine.thread(rec.doc_id).chunks)


def test_two_concurrent_preheats_lose_nothing(manual_engine):
    rec = max(manual_engine.documents(), key=lambda x: x.chunk_count)
    procs = [_preheat_proc(manual_engine, rec.doc_id, delay=0.01, flush=2) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    assert _cached(manual_engine, rec) == rec.chunk_count
    path = SummaryCache(manual_engine.settings.cache_path).path_for(rec.content_hash)
    json.loads(path.read_text())  # still valid JSON


def test_killed_preheat_resumes(manual_engine):
    rec = max(manual_engine.documents(), key=lambda x: x.chunk_count)
    p = _preheat_proc(manual_engine, rec.doc_id, flush=3, crash="preheat_after_flush")
    p.communicate(timeout=300)
    assert p.returncode == -9
    done = _cached(manual_engine, rec)
    assert 0 < done < rec.chunk_count
    from thread_rag.threads.preheat import preheat

    manual_engine._summarizer = ExtractiveSummarizer(40)
    r = preheat(manual_engine.library, lambda: manual_engine.summarizer, manual_engine.settings.cache_path, rec.doc_id)
    assert r.cached == done and r.made == rec.chunk_count - done
