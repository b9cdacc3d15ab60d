"""``thread-rag serve``: the HTTP API on a real uvicorn server on loopback, over the project's own manual, with a
deterministic fake chat model for full answers (the quote path runs no model)."""
from __future__ import annotations

import contextlib
import json
import re
import time
from pathlib import Path

import httpx
import pytest

from conftest import DATA, REPO, needs_shared
from fakes import ScriptedChatModel
from thread_rag.errors import ThreadRagError
from bench.serve_load import heading_questions, serving, throughput
from thread_rag.serve import CLEAR_CONFIRM, build_app, serve


@contextlib.contextmanager
def running(app):
    """The app on 127.0.0.1 at a free port, stopped at the end: an httpx client on it."""
    with serving(app) as base, httpx.Client(base_url=base, timeout=60) as client:
        yield client


REPO_DOCS = REPO / "docs"
VALVE = b"# Valve\n\nOpen the inlet valve before the pump.\n"  # a one-chunk upload


def uploading(c, name: str, body: bytes):
    """``body`` posted as the upload ``name`` on a thread of its own: an event set when the request has ended."""
    import threading

    done = threading.Event()

    def upload():
        try:
            c.post("/upload", files={"file": (name, body)}, timeout=600)
        finally:
            done.set()
    threading.Thread(target=upload, daemon=True).start()
    return done


@contextlib.contextmanager
def held_elsewhere(lock):
    """``lock`` (a context manager) held on a thread of its own for the block, as a streaming answer or another
    process holds it."""
    import threading

    held, release = threading.Event(), threading.Event()

    def hold():
        with lock:
            held.set()
            release.wait(120)
    threading.Thread(target=hold, daemon=True).start()
    assert held.wait(10)
    try:
        yield
    finally:
        release.set()


def fake_model(**kw):
    model = ScriptedChatModel(**kw)
    model.calls = []
    return model


class SlowModel(ScriptedChatModel):
    """Streams its answer one word every 50 ms and counts the words it got out."""
    sent: int = 0

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        for chunk in super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs):
            time.sleep(0.05)
            self.sent += 1
            yield chunk


def events_of(response) -> list[tuple[str, dict]]:
    out, kind = [], None
    for line in response.iter_lines():
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            out.append((kind, json.loads(line[5:].strip())))
    return out


def test_read_endpoints_and_errors_as_one_json_line(manual_engine):
    with running(build_app(manual_engine, chat_model=fake_model())) as c:
        h = c.get("/health").json()
        assert h["status"] == "ok" and h["documents"] == len(manual_engine.documents()) and h["writes"] is False
        assert c.get("/stats").json()["chunks"] == sum(d.chunk_count for d in manual_engine.documents())
        docs = c.get("/documents").json()["documents"]
        assert docs[0]["doc_id"] == "DOC1"
        assert "markdown" in c.get("/metadata-values").json()["file_types"]
        paths = c.get("/openapi.json").json()["paths"]
        assert {"/health", "/query", "/query-stream", "/upload", "/clear", "/search"} <= set(paths)
        hits = c.post("/search", json={"query": "how do I pre-heat summaries?", "k": 3}).json()["hits"]
        assert len(hits) == 3 and hits[0]["chunk_id"].startswith("DOC")
        windows = c.post("/fetch", json={"chunk_ids": [hits[0]["chunk_id"]]}).json()["windows"]
        assert windows and windows[0]["chunk_ids"]
        assert c.post("/nested", json={"query": "pre-heat", "limit": 2}).status_code == 200
        some = c.post("/search", json={"query": "pre-heat", "heading": "Pre-heat", "k": 5}).json()["hits"]
        assert some and all("pre-heat" in " / ".join(h["heading_path"]).lower() for h in some)
        for path, body, status in [
                ("/search", b"{not json", 400), ("/search", json.dumps({"query": "x", "evil": 1}).encode(), 400),
                ("/search", json.dumps({"query": "x", "k": 0}).encode(), 400),
                ("/search", json.dumps({"query": "x", "pages": "5-"}).encode(), 400),
                ("/search", json.dumps({"query": "x", "doc": "DOC99"}).encode(), 404),
                ("/search", json.dumps({"query": "x", "doc": "DOC-unknown"}).encode(), 400),  # not an id at all
                ("/search", json.dumps({"query": "unknown " * 300}).encode(), 400),  # too long: refused, never cut
                ("/search", json.dumps([1, 2]).encode(), 400), ("/fetch", json.dumps({"chunk_ids": "DOC1_000"}).encode(), 400),
                ("/query", json.dumps({"question": "  "}).encode(), 400),
                ("/query", json.dumps({"question": "x", "mode": "loud"}).encode(), 400),
                ("/query", json.dumps({"question": "x", "history": [1]}).encode(), 400),
                ("/search", b"x" * (70 * 1024), 413)]:
            r = c.post(path, content=body, headers={"Content-Type": "application/json"})
            assert r.status_code == status, (path, body[:40], r.text)
            assert set(r.json()) == {"error"} and "\n" not in r.json()["error"]
        for headers, status in [({"Host": "evil.example"}, 403), ({"Origin": "http://evil.example"}, 403),
                                ({"Origin": "null"}, 403), ({"Origin": str(c.base_url).rstrip("/")}, 200)]:
            r = c.post("/search", json={"query": "pre-heat"}, headers=headers)  # DNS rebinding, another site's page
            assert r.status_code == status, (headers, r.text)
        for body, ctype, status in [(b'{"query": "x"}', "text/plain", 415), (b"[" * 5000, "application/json", 400)]:
            assert c.post("/search", content=body, headers={"Content-Type": ctype}).status_code == status
        assert c.post("/fetch", json={"chunk_ids": ["DOC1_000"], "budget": "x"}).status_code == 400
        assert c.get("/nowhere").status_code == 404 and "error" in c.get("/nowhere").json()
        assert c.get("/query").status_code == 405 and "error" in c.get("/query").json()
        bad = c.post("/fetch", json={"chunk_ids": ["DOC1_9x"]})
        assert bad.status_code in (200, 400) and ("error" in bad.json() or bad.json().get("errors"))


def test_the_quote_comes_first_then_the_explanation_checked_and_its_sources(manual_engine):
    model = fake_model(answer=lambda m: "Run `thread-rag preheat` to summarise every chunk [1].")
    with running(build_app(manual_engine, chat_model=model)) as c:
        quote = c.post("/query", json={"question": "How do I pre-heat summaries?", "mode": "quote"}).json()
        assert quote["quote"] and quote["outcome"]["kind"] == "answered" and not model.calls  # no model in quote mode
        full = c.post("/query", json={"question": "How do I pre-heat summaries?"}).json()
        assert full["quote"] and full["answer"] and full["outcome"]["kind"] == "answered"
        with c.stream("POST", "/query-stream", json={"question": "How do I pre-heat summaries?"}) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            events = events_of(r)
        kinds = [k for k, _ in events]
        assert kinds[0] == "quote" and "token" in kinds and kinds[-1] == "done"
        assert kinds.index("quote") < kinds.index("token") < kinds.index("checked") < kinds.index("sources")
        assert events[0][1]["lines"][0]["chunk_id"].startswith("DOC")
        assert "".join(d["text"] for k, d in events if k == "token").strip() == events[-1][1]["answer"]
        # a follow-up carries the conversation
        follow = c.post("/query", json={"question": "and how long does it take?", "mode": "quote",
                                        "history": [{"question": "How do I pre-heat summaries?", "answer": "x"}]})
        assert follow.status_code == 200


def test_a_question_the_documents_do_not_answer_streams_as_not_answered(manual_engine):
    model = fake_model()
    with running(build_app(manual_engine, chat_model=model)) as c:
        with c.stream("POST", "/query-stream", json={"question": "What is the boiling point of tungsten?"}) as r:
            events = events_of(r)
    kinds = [k for k, _ in events]
    assert "token" not in kinds and kinds[-1] == "done" and not model.calls
    outcome = [d for k, d in events if k == "outcome"]
    assert len(outcome) == 1 and outcome[0]["kind"] == "not_answered"
    assert outcome[0]["line"].startswith("The documents do not say")
    done = events[-1][1]
    assert done["refused"] and done["answer"] == outcome[0]["line"]
    with running(build_app(manual_engine, chat_model=model)) as c:  # quote only: the nearest lines, labelled related
        with c.stream("POST", "/query-stream", json={"question": "What is the boiling point of tungsten?",
                                                     "mode": "quote"}) as r:
            kinds = [k for k, _ in events_of(r)]
    assert kinds[0] == "related" and "quote" not in kinds


def test_read_only_by_default_and_writes_when_allowed(manual_engine, tmp_path):
    with running(build_app(manual_engine, chat_model=fake_model())) as c:
        for r in (c.post("/upload", files={"file": ("a.md", b"# A\n\ntext")}),
                  c.request("DELETE", "/clear", json={"confirm": CLEAR_CONFIRM}), c.delete("/documents/DOC1")):
            assert r.status_code == 403 and "read-only" in r.json()["error"]
    n = len(manual_engine.documents())
    with running(build_app(manual_engine, allow_writes=True, chat_model=fake_model())) as c:
        r = c.post("/upload", files={"file": ("../../evil name.md", b"# Widget\n\nTo reset the widget, hold the button.")})
        assert r.status_code == 200, r.text
        stored = r.json()["stored_as"]
        assert ".." not in stored and stored.count("/") == 1 and stored.endswith("/evil_name.md")
        assert (manual_engine.home / "uploads" / stored).is_file() and not (tmp_path / "evil name.md").exists()
        assert c.get("/stats").json()["documents"] == n + 1
        assert c.post("/upload", files={"file": ("x.exe", b"MZ")}).status_code == 415
        assert c.post("/upload", files={"file": ("e.md", b"")}).status_code == 400
        assert c.post("/upload", content=b"plain", headers={"Content-Type": "text/plain"}).status_code == 400
        broken = c.post("/upload", files={"file": ("broken.pdf", b"%PDF-1.4 not really a pdf")})
        assert broken.status_code == 400 and broken.json()["error"].startswith("broken.pdf: ")
        assert not list((manual_engine.home / "uploads").glob("*/broken*"))  # no file kept for it
        again = c.post("/upload", files={"file": ("again.md", b"# Widget\n\nTo reset the widget, hold the button.")})
        assert again.json()["status"] == "unchanged" and again.json()["stored_as"] is None
        assert c.get("/health").json()["status"] == "ok"  # still serving
        assert c.get("/stats").json()["documents"] == n + 1  # nothing half-added
        chunked = c.post("/upload", content=iter([b"--x\r\n"]), headers={"Content-Type": "multipart/form-data; boundary=x"})
        assert chunked.status_code == 411  # no length: the file would not be bounded
        new = [d for d in manual_engine.documents() if d.name.startswith("evil_name")][0]
        for message in (f"please delete {new.doc_id} from the library", "index ./pump.md please"):  # never from /query
            r = c.post("/query", json={"question": message})
            assert r.status_code == 200 and "never changes the library" in r.json()["answer"], r.text
            assert "never changes the library" in c.post("/query-stream", json={"question": message}).text
        assert c.get("/stats").json()["documents"] == n + 1
        assert c.delete(f"/documents/{new.doc_id}").status_code == 200
        assert not (manual_engine.home / "uploads" / stored).exists()  # its uploaded file went with it
        assert c.delete("/documents/DOC99").status_code == 404
        assert c.request("DELETE", "/clear", json={}).status_code == 400
        assert c.request("DELETE", "/clear", json={"confirm": CLEAR_CONFIRM}).json()["deleted"]
        assert c.get("/stats").json()["documents"] == 0


def test_a_token_is_checked_on_every_request_and_other_hosts_need_one(manual_engine, monkeypatch):
    with running(build_app(manual_engine, token="s3cret", chat_model=fake_model())) as c:
        assert c.get("/health").status_code == 401
        assert c.get("/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/health", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert c.post("/search", json={"query": "x"}).status_code == 401
    monkeypatch.delenv("THREAD_RAG_SERVE_TOKEN", raising=False)
    with pytest.raises(ThreadRagError, match="THREAD_RAG_SERVE_TOKEN"):
        serve(manual_engine, host="0.0.0.0", port=0)


def test_full_answers_past_the_bound_are_busy_but_a_quote_is_not(manual_engine):
    with running(build_app(manual_engine, chat_model=fake_model(), max_waiting=0)) as c:
        r = c.post("/query", json={"question": "How do I pre-heat summaries?"})
        assert r.status_code == 503 and int(r.headers["Retry-After"]) >= 0 and "busy" in r.json()["error"]
        assert c.post("/query", json={"question": "How do I pre-heat summaries?", "mode": "quote"}).status_code == 200


def test_a_client_that_goes_away_stops_its_generation(manual_engine):
    model = SlowModel(answer=lambda m: " ".join(["Run the step now."] * 50))  # 200 words; tokens go out by sentence
    model.calls = []
    app = build_app(manual_engine, chat_model=model)
    with running(app) as c:
        with c.stream("POST", "/query-stream", json={"question": "How do I pre-heat summaries?"}) as r:
            for line in r.iter_lines():
                if line.startswith("event: token"):
                    break  # leave after the first token
        left = time.time()
        while app.state.door.waiting and time.time() < left + 5:
            time.sleep(0.02)
        assert app.state.door.waiting == 0 and time.time() - left < 1.5  # the model is free within about a second
        assert 0 < model.sent < 100  # stopped well before its 200 words (10 s at 50 ms a word)


def test_a_query_whose_client_leaves_before_the_answer_stops_its_generation(manual_engine):
    """``/query`` sends the whole answer at its end, so a client that gave up before (a timeout, a closed tab) left
    its generation running to the end, holding the model. It stops within about two seconds of the client leaving."""
    model = SlowModel(answer=lambda m: " ".join(["Run the step now."] * 100))  # 400 words: 20 s at 50 ms a word
    model.calls = []
    app = build_app(manual_engine, chat_model=model)
    with running(app) as c:
        with pytest.raises(httpx.ReadTimeout):
            c.post("/query", json={"question": "How do I pre-heat summaries?"}, timeout=httpx.Timeout(60, read=8.0))
        left = time.time()
        while app.state.door.waiting and time.time() < left + 20:
            time.sleep(0.02)
        assert app.state.door.waiting == 0 and time.time() - left < 2  # the model is free soon after
        assert 0 < model.sent < 300, model.sent  # it had begun, and stopped well before its 400 words


def test_quotes_and_searches_answer_while_a_generation_streams(manual_engine):
    model = SlowModel(answer=lambda m: " ".join(["Run the step now."] * 50))  # 10 s of explanation
    model.calls = []
    app = build_app(manual_engine, chat_model=model)
    with running(app) as c:
        with c.stream("POST", "/query-stream", json={"question": "How do I pre-heat summaries?"}) as r:
            lines = r.iter_lines()  # held: a dropped line iterator closes the stream, which stops the generation
            for line in lines:
                if line.startswith("event: token"):
                    break  # the generation is under way
            start = time.time()
            quote = c.post("/query", json={"question": "How do I delete a document?", "mode": "quote"})
            hits = c.post("/search", json={"query": "delete a document", "k": 2})
            took = time.time() - start
            generating = app.state.door.waiting
        assert quote.status_code == 200 and quote.json()["quote"] and hits.status_code == 200
        assert generating == 1 and took < 5 and model.sent < 150  # answered beside it, not after its 10 s


def test_the_page_is_served_whole_with_nothing_from_elsewhere(manual_engine):
    with running(build_app(manual_engine, chat_model=fake_model())) as c:
        page = c.get("/").text
    assert "<form id=\"ask\"" in page and "query-stream" in page
    assert "http://" not in page and "https://" not in page and "<script src" not in page  # no CDN


ZEN_PDF = "docfixtures-pypdf-samples/011-google-doc-document/google-doc-document.pdf"


def pypdf_baseline(path, text: str) -> float:
    """Where pypdf puts the run of text that starts with ``text``: its baseline, as a fraction of the page from the top
    (a reference independent of pdfium)."""
    import pypdf

    page = pypdf.PdfReader(path).pages[0]
    height, found = float(page.mediabox.height), []
    page.extract_text(visitor_text=lambda t, cm, tm, font, size: found.append(tm[5] * cm[3] + cm[5])
                      if t.strip().startswith(text) else None)
    assert found, text
    return (height - found[0]) / height


@needs_shared
def test_a_quoted_pdf_line_is_boxed_where_it_stands_on_its_page_image(manual_engine, tmp_path):
    import shutil

    pdf = shutil.copy(DATA / ZEN_PDF, tmp_path / "zen.pdf")
    with running(build_app(manual_engine, allow_writes=True, chat_model=fake_model())) as c:
        doc = c.post("/upload", files={"file": ("zen.pdf", open(pdf, "rb").read())}).json()["doc_id"]
        lines = ["Errors should never pass silently.", "Unless explicitly silenced.", "Not a line of this page at all."]
        got = c.post(f"/documents/{doc}/locate", json={"lines": lines, "pages": "1"}).json()
        assert got["missing"] == [2] and [f["line"] for f in got["found"]] == [0, 1]
        for f in got["found"]:
            (box,) = f["boxes"]  # one line of print each
            base = pypdf_baseline(str(pdf), lines[f["line"]].split()[0])
            assert box["y0"] < base <= box["y1"] + 0.01 and 0 < box["x0"] < box["x1"] < 1  # pypdf puts it there too
        assert got["found"][0]["boxes"][0]["y1"] <= got["found"][1]["boxes"][0]["y0"] + 0.005  # in reading order
        image = c.get(f"/documents/{doc}/pages/1")
        assert image.headers["content-type"] == "image/png" and image.content.startswith(b"\x89PNG")
        assert c.get(f"/documents/{doc}/pages/2").status_code == 400  # a one-page document
        assert c.get("/documents/DOC99/pages/1").status_code == 404
        assert c.get("/documents/DOC1/pages/1").status_code == 400  # markdown: no pages to show
        assert c.post(f"/documents/{doc}/locate", json={"lines": "x"}).status_code == 400
        stored = manual_engine.document(doc).path
        with open(stored, "ab") as fh:
            fh.write(b"\n%changed")
        assert "changed since it was indexed" in c.get(f"/documents/{doc}/pages/1").json()["error"]


def test_three_clients_get_every_quote_and_the_server_adds_no_queue_of_its_own(manual_engine):
    """The suite's small version of ``thread-rag bench serve``: quote-only, one client then three at once."""
    questions = heading_questions(manual_engine, 12)
    app = build_app(manual_engine, chat_model=fake_model())
    with serving(app) as base:
        throughput(base, questions[:2], 1, 2)  # warm
        one = throughput(base, questions, 1, 12)
        three = throughput(base, questions, 3, 12)
    assert one["quote_failed"] == three["quote_failed"] == 0 and three["quote_s"]["n"] == 12
    # one reading thread does the work either way: three clients at once get about what one gets, not less
    # (a loose floor: the test machine is shared; the benchmark holds the 80% goal)
    assert three["quotes_per_s"] >= 0.5 * one["quotes_per_s"], (one, three)


def test_the_token_variable_is_not_taken_for_an_unknown_setting():
    from thread_rag.settings import load_settings

    load_settings(env={"THREAD_RAG_SERVE_TOKEN": "s3cret"}, config_file=False)  # raised "unknown setting" before


def test_a_pdf_is_hashed_once_per_version_of_the_file_not_per_click(tmp_path, monkeypatch):
    import hashlib
    import os

    from thread_rag import page_view

    f = tmp_path / "a.pdf"
    f.write_bytes(b"%PDF-1.4 one")
    good = hashlib.sha256(b"%PDF-1.4 one").hexdigest()
    calls = []
    real = page_view.sha256_file
    monkeypatch.setattr(page_view, "sha256_file", lambda p: calls.append(p) or real(p))
    for _ in range(3):  # the page image, then where the lines stand, then again
        assert page_view.checked_file(str(f), good) == f
    assert len(calls) == 1
    f.write_bytes(b"%PDF-1.4 two")  # same size: the modification time tells
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    with pytest.raises(ThreadRagError, match="changed since it was indexed"):
        page_view.checked_file(str(f), good)
    assert len(calls) == 2
    f.unlink()
    with pytest.raises(ThreadRagError, match="no longer there"):
        page_view.checked_file(str(f), good)


def test_query_takes_the_page_and_heading_filters_search_takes(manual_engine):
    """/query and /query-stream took only ``doc``: the page and heading filters of the issue's API existed on /search
    alone. They narrow where the answer path's search enters (the walk reads on from there), at every door: /query,
    /query-stream, ``ask --pages/--heading``; a bad range is one 400 line."""
    question = "How do I pre-heat the summaries before going offline?"
    with running(build_app(manual_engine, chat_model=fake_model())) as c:
        d = c.post("/query", json={"question": question, "mode": "quote", "heading": "Pre-heat"}).json()
        assert d["quote"] and not d["refused"], d
        elsewhere = c.post("/query", json={"question": question, "mode": "quote", "heading": "Searching"}).json()
        assert {x["chunk_id"] for x in elsewhere["quote"]} != {x["chunk_id"] for x in d["quote"]}
        for body in ({"question": question, "pages": "5-"}, {"question": question, "heading": 3}):
            r = c.post("/query", json=body)
            assert r.status_code == 400 and set(r.json()) == {"error"}, r.text
        events = c.post("/query-stream", json={"question": question, "mode": "quote", "heading": "Searching"}).text
        assert "event: done" in events and "event: error" not in events
    from thread_rag.agent.loop import Agent

    agent = Agent(manual_engine)
    agent.settings = manual_engine.settings.replace(ANSWER_MODE="quote")
    ans = agent.ask(question, heading="Pre-heat")
    hits = [x.split(" ")[0] for x in ans.tool_trace[0]["result"]]
    assert hits and all("pre-heat" in " / ".join(manual_engine.chunk(h).heading_path).lower() for h in hits), hits
    assert ans.tool_trace[0]["args"]["heading"] == "Pre-heat"  # the trace says where the search entered
    with pytest.raises(ThreadRagError, match="nested passages"):
        agent.ask(question, heading="Pre-heat", reader="nested")


def test_compare_over_http_is_the_tool_with_its_errors_as_lines(manual_engine):
    """compare was the one tool not offered over HTTP. POST /compare is ``compare_documents`` (the same JSON as the
    MCP tool and ``compare --json``): no model unless ``explain``, which then queues as a full answer does."""
    from thread_rag import tools

    with running(build_app(manual_engine, chat_model=fake_model())) as c:
        got = c.post("/compare", json={"doc_a": "DOC1", "doc_b": "DOC2", "limit": 3})
        assert got.status_code == 200, got.text
        want = tools.compare_documents(manual_engine, "DOC1", "DOC2", limit=3)
        assert got.json()["counts"] == want["counts"] and len(got.json()["rows"]) == len(want["rows"])
        for body, status in [({"doc_a": "DOC1", "doc_b": "DOC1"}, 400), ({"doc_a": "DOC1", "doc_b": "DOC99"}, 404),
                             ({"doc_a": "DOC1"}, 400), ({"doc_a": "DOC1", "doc_b": "DOC2", "explain": "yes"}, 400),
                             ({"doc_a": "DOC1", "doc_b": "DOC2", "limit": 0}, 400)]:
            r = c.post("/compare", json=body)
            assert r.status_code == status and set(r.json()) == {"error"}, (body, r.text)
        assert "/compare" in c.get("/openapi.json").json()["paths"]


def test_the_openapi_document_describes_each_request_body_the_endpoint_takes(manual_engine):
    """/openapi.json listed paths and summaries only. Each JSON endpoint's body is described from the same table the
    endpoint checks its fields against (one home): the fields, their types, the required ones, nothing else allowed;
    /upload as a multipart file; errors as {"error"}."""
    with running(build_app(manual_engine, chat_model=fake_model())) as c:
        spec = c.get("/openapi.json").json()
        for path, required in [("/search", ["query"]), ("/query", ["question"]), ("/query-stream", ["question"]),
                               ("/compare", ["doc_a", "doc_b"]), ("/fetch", ["chunk_ids"]), ("/nested", ["query"])]:
            op = spec["paths"][path]["post"]
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            assert schema["required"] == required and schema["additionalProperties"] is False, (path, schema)
            fields = set(schema["properties"])
            r = c.post(path, json={"nonsense": 1, **{k: "x" for k in required}})
            assert r.status_code == 400 and sorted(fields) == sorted(r.json()["error"].split("takes ")[1].split(", "))
            assert op["responses"]["400"]["content"]["application/json"]["schema"]["required"] == ["error"]
        assert spec["paths"]["/query"]["post"]["requestBody"]["content"]["application/json"]["schema"][
            "properties"]["mode"]["enum"] == ["quote", "full"]
        upload = spec["paths"]["/upload"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
        assert upload["required"] == ["file"]


PIDS: dict = {}  # base URL -> the serve process's pid


@contextlib.contextmanager
def serve_process(home, *extra):
    """``thread-rag serve`` in its own process on a free loopback port, on the library ``home``; stopped at the end."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(Path(home).parent / f"serve-{port}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "thread_rag.cli", "--data-dir", str(home), "serve", "--port", str(port),
                             *extra], stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"
    PIDS[base] = proc.pid
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
            assert proc.poll() is None, Path(log.name).read_text()
        yield base
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


@pytest.mark.slow
def test_two_serve_processes_on_one_library_answer_while_one_indexes(make_engine, tmp_path):
    """Two ``serve`` processes on one data dir, one with writes: while the first indexes an upload, every search the
    second answers is whole (200, no error), and afterwards the second serves the new document too."""
    import threading

    from conftest import REPO as ROOT

    e = make_engine()
    e.index_paths([ROOT / "docs" / "01-getting-started.md"])
    home = e.home
    e.close()
    question = {"query": "how do I compare two editions of a manual?", "k": 3}
    with serve_process(home, "--allow-writes") as a, serve_process(home) as b:
        codes, done = [], threading.Event()

        def ask_b():
            with httpx.Client(base_url=b, timeout=60) as c:
                while not done.is_set():
                    codes.append(c.post("/search", json=question).status_code)
        asker = threading.Thread(target=ask_b)
        asker.start()
        try:
            with open(ROOT / "docs" / "03-searching.md", "rb") as f:
                up = httpx.post(a + "/upload", files={"file": ("searching.md", f)}, timeout=120)
        finally:
            done.set()
            asker.join(60)
        assert up.status_code == 200 and up.json()["status"] == "indexed", up.text
        assert codes and set(codes) == {200}, codes
        assert [d["doc_id"] for d in httpx.get(b + "/documents").json()["documents"]] == ["DOC1", "DOC2"]
        hits = httpx.post(b + "/search", json=question, timeout=60).json()["hits"]
        assert hits[0]["doc_id"] == "DOC2", hits[0]


@pytest.mark.slow
def test_a_server_killed_during_an_upload_leaves_a_whole_library_and_names_the_file(make_engine, tmp_path):
    """``serve`` killed (SIGKILL) while it indexes an upload: the library opens whole, without the half-indexed
    document, and the uploaded file, kept, is named by ``doctor`` with what to do (it was in no document, so nobody
    would have known it was there)."""
    import signal

    from thread_rag.doctor import checks
    from thread_rag.engine import Engine

    big = tmp_path / "big.md"
    words = (REPO_DOCS / "03-searching.md").read_text().split()
    big.write_text("".join(f"## Section {s}\n\n" + " ".join(words[(s * 37) % 900:(s * 37) % 900 + 300]) + "\n\n"
                           for s in range(300)))
    e = make_engine()
    e.index_paths([REPO_DOCS / "01-getting-started.md"])
    settings, home = e.settings, e.home
    e.close()
    with serve_process(home, "--allow-writes") as a:
        import threading

        def upload():
            with contextlib.suppress(httpx.HTTPError):  # the server dies under it
                httpx.post(a + "/upload", files={"file": ("big.md", big.read_bytes())}, timeout=120)
        threading.Thread(target=upload, daemon=True).start()
        deadline = time.time() + 60
        while not httpx.get(a + "/health", timeout=5).json()["writing"] and time.time() < deadline:
            time.sleep(0.05)  # /health answers at once, and says when the upload's indexing has begun
        time.sleep(0.3)
        import os

        os.kill(PIDS[a], signal.SIGKILL)
    kept = list((home / "uploads").glob("*/big.md"))
    assert kept and kept[0].stat().st_size == big.stat().st_size
    with Engine(settings) as again:
        assert [d.name for d in again.documents()] == ["01-getting-started.md"] and not again.check_consistency()
    row = next(r for r in checks(settings) if r["check"] == "uploads")
    assert not row["ok"] and str(kept[0]) in row["detail"] and "thread-rag index" in row["fix"], row


def test_an_upload_of_a_moved_documents_bytes_keeps_the_file_the_record_now_names(make_engine, tmp_path):
    """A document whose file was moved away (its folder still there) is taken over by a file with the same bytes: its
    record takes the new path. An upload is such a file, and the server then deleted it as a copy ("unchanged"), so
    the record named a file that no longer existed."""
    from conftest import write

    e = make_engine()
    text = "# Zebra care\n\nFeed the zebra twice a day with hay.\n"
    original = write(tmp_path / "docs" / "zebra.md", text)
    assert e.index_file(original).status == "indexed"
    original.unlink()  # moved away; its folder stays
    with running(build_app(e, allow_writes=True, chat_model=fake_model())) as c:
        r = c.post("/upload", files={"file": ("zebra.md", text.encode())}, timeout=120).json()
    assert r["status"] == "unchanged" and r["moved_from"] == str(original), r
    (doc,) = e.documents()
    assert r["stored_as"] and Path(doc.path).is_file() and doc.path.endswith(r["stored_as"]), (r, doc.path)


def test_searches_and_quotes_answer_while_an_upload_is_embedded(manual_engine):
    """Issue 60: an upload held the library for its whole indexing (load, chunk, embed, store), so every search,
    quote and document list waited behind it. It holds the library only while it stores: while its chunks are
    embedded, a search and a quote answer, from the library as it was."""
    words = (REPO_DOCS / "05-agent-and-chat.md").read_text().split()
    body = "".join(f"## Step {s}\n\n" + " ".join(words[(s * 41) % 900:(s * 41) % 900 + 300]) + "\n\n"
                   for s in range(120))
    with running(build_app(manual_engine, allow_writes=True, chat_model=fake_model())) as c:
        before = c.get("/documents").json()
        started = time.perf_counter()
        done = uploading(c, "steps.md", body.encode())
        answered = []
        while not done.is_set():
            step = [x["step"] for x in c.get("/health", timeout=5).json()["indexing"]]
            if step and re.fullmatch(r"embed [1-9]\d*/\d+", step[0]):  # its chunks are being embedded
                t = time.perf_counter()
                r = c.post("/search", json={"query": "how are summaries cached", "k": 3}, timeout=600)
                q = c.post("/query", json={"question": "How are summaries cached?", "mode": "quote"}, timeout=600)
                answered.append((r.status_code, q.status_code, time.perf_counter() - t, done.is_set()))
                break
            time.sleep(0.05)
        done.wait(600)
        upload_s = time.perf_counter() - started
        assert answered, "the upload ended before its embedding was seen"
        (search, quote, took, upload_over), = answered
        assert search == quote == 200 and not upload_over and took < upload_s / 3, (answered, upload_s)
        assert len(c.get("/documents").json()["documents"]) == len(before["documents"]) + 1


def test_an_upload_that_waits_for_a_reading_answer_to_store_says_so(manual_engine):
    """Issue 60: an upload whose chunks were embedded while a full answer read the library waited for the answer to
    end before it stored, and /health showed its last step ("embed 12/12") all that time. It says "waiting to store"
    until it has the library, then "store"."""
    app = build_app(manual_engine, allow_writes=True, chat_model=fake_model())
    with running(app) as c:
        before = c.get("/health").json()["documents"]
        with held_elsewhere(app.state.door.library.reading()):  # what a full answer does while it streams
            done = uploading(c, "valve.md", VALVE)
            steps, deadline = [], time.time() + 60
            while "waiting to store" not in steps and not done.is_set() and time.time() < deadline:
                steps += [x["step"] for x in c.get("/health", timeout=5).json()["indexing"]]
                time.sleep(0.05)
        assert "waiting to store" in steps, steps
        assert done.wait(120)
        after = c.get("/health").json()
        assert after["documents"] == before + 1 and after["indexing"] == []


def test_reads_go_on_while_an_upload_waits_for_another_process_writing_the_library(manual_engine):
    """Issue 60: an upload took the server's own write lock, then waited there for the library's file lock while
    another process (a `thread-rag index` of a big folder) wrote: every search and quote of the server waited with
    it. It waits for the file lock first, holding nothing of the server's, and reads answer meanwhile."""
    from thread_rag.atomic import file_lock

    app = build_app(manual_engine, allow_writes=True, chat_model=fake_model())
    with running(app) as c:
        before = c.get("/health").json()["documents"]
        # a lock of its own on the file (flock: per open file, as another process's would be)
        with held_elsewhere(file_lock(manual_engine.home / "write.lock")):
            done = uploading(c, "valve.md", VALVE)
            deadline = time.time() + 60
            while not any(x["step"] in ("waiting to store", "store") for x in c.get("/health").json()["indexing"]):
                assert time.time() < deadline and not done.is_set()
                time.sleep(0.05)
            time.sleep(0.5)  # the upload is waiting for the other process
            t = time.perf_counter()
            r = c.post("/search", json={"query": "how are summaries cached", "k": 3}, timeout=10)
            q = c.post("/query", json={"question": "How are summaries cached?", "mode": "quote"}, timeout=10)
            took = time.perf_counter() - t
        assert r.status_code == q.status_code == 200 and took < 10 and not done.is_set()
        assert done.wait(120)
        assert c.get("/health").json()["documents"] == before + 1


def test_health_answers_at_once_while_an_upload_is_indexed(manual_engine, tmp_path):
    """/health counted the documents on the reading thread under the library lock, so while an upload was indexed it
    waited for the whole indexing (a monitor would take the server for dead). It answers at once, with the count
    as last read, ``writing`` true while a change is under way and ``indexing``: the upload's file, stage and
    progress (the page said "indexing ..." and nothing more until the end)."""
    words = (REPO_DOCS / "03-searching.md").read_text().split()
    body = "".join(f"## Part {s}\n\n" + " ".join(words[(s * 37) % 900:(s * 37) % 900 + 300]) + "\n\n" for s in range(120))
    with running(build_app(manual_engine, allow_writes=True, chat_model=fake_model())) as c:
        before = c.get("/health").json()
        started = time.perf_counter()
        done = uploading(c, "parts.md", body.encode())
        seen, stages = [], []
        while not seen or not done.is_set():
            t = time.perf_counter()
            h = c.get("/health", timeout=5).json()
            seen.append((h["writing"], time.perf_counter() - t))
            stages += h["indexing"]
            time.sleep(0.1)
        upload_s = time.perf_counter() - started
        # waiting on the lock made /health as slow as the whole upload; at the end of the full suite on an AVX2
        # machine one answer took 1.03 s (the indexing thread held the interpreter), so the bound is the smaller
        # of 2 s and a fifth of the upload, not 1 s
        assert any(w for w, _ in seen) and max(s for _, s in seen) < min(2.0, upload_s / 5), (upload_s, seen)
        after = c.get("/health").json()
        assert after["documents"] == before["documents"] + 1 and after["writing"] is False
        # the upload's progress, for a page to show: its file, the stage and how far it is
        embedding = [x for x in stages if x and re.fullmatch(r"embed \d+/\d+", x["step"])]
        assert embedding and all(x["file"] == "parts.md" and 0 <= x["share"] <= 1 for x in embedding), stages
        assert any(x["share"] > 0 for x in embedding), stages
        assert before["indexing"] == [] and after["indexing"] == []
