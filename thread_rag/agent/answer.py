"""The answer call: numbered sources in, one streamed answer out, citations mapped back to chunk ids.

Every answering strategy (the agent's fast path, and each fixed pipeline in ``thread-rag bench answers``)
goes through these functions, so they share the prompt, the refusal policy and the token caps; only the
sources differ.

- ``render_sources``: ``[1] name p.19 - heading`` + text, one block per source;
- ``answer_messages``: the one answer prompt;
- ``stream_answer``: streams the reply, measures first-token time, stops cleanly on Ctrl-C, knows a reply the
  token limit cut;
- ``written_citations``: the ``[1]`` / ``[1, 3]`` / ``[DOC1_052]`` markers the model wrote, mapped to sources;
- ``decide_messages``: the optional post-reading decision (answer now, or search once more);
- ``ask_sources``: when the model wrote none, one short grammar-constrained follow-up on the same prompt
  (llama.cpp reuses the evaluated prefix) asks which numbered sources support the answer.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from langchain_core.messages import AIMessage, HumanMessage

from ..errors import ChunkIdError
from ..ids import ChunkId
from ..llm.backends import limit
from .result import Citation

ANSWER_PROMPT = """Answer the question from the numbered sources below.
- Use only facts stated in the sources; never invent steps, values or commands.
- After each fact, cite its source number in square brackets, e.g. [1] or [2].
- For a procedure give numbered steps. Be concise; start directly with the answer.

{sources}

Question: {question}"""

EXPLAIN_PROMPT = """The numbered quotes below are the manual's own words; the user has them on screen already. Answer the \
question from them.
- Use only what the quotes say. Copy every command, path, option and value exactly as quoted; never add a step, a \
command or a value the quotes do not hold.
- After each fact, cite its quote number in square brackets, e.g. [1] or [2].
- Be concise; start directly with the answer.

{sources}

Question: {question}"""
PROMPTS = {"sources": ANSWER_PROMPT, "quote": EXPLAIN_PROMPT}  # EXPLAIN_FROM: what the model reads

NOT_IN_DOCS = "NOT IN DOCUMENTS"
MAY_REFUSE = f"\n\nIf the sources do not answer the question, reply only: {NOT_IN_DOCS}"


def said_not_in_docs(text: str) -> bool:
    """The model's reply is the refusal marker (at its start, any case)."""
    return NOT_IN_DOCS.lower() in text.lower()[:80]


def parse_json_lenient(text: str):
    """Parse a model's JSON reply, tolerating code fences and doubled braces."""
    t = text.strip()
    t = re.sub(r"^```(?:json)?\s*|\s*```$", "", t)
    for cand in (t, t.replace("{{", "{").replace("}}", "}")):
        try:
            return json.loads(cand)
        except (json.JSONDecodeError, ValueError):
            m = re.search(r"\{.*\}", cand, flags=re.S)
            if m:
                try:
                    return json.loads(m.group(0))
                except (json.JSONDecodeError, ValueError):
                    pass
    raise ValueError(f"not JSON: {text[:80]!r}")


def json_reply(model, messages: list, schema: dict, max_tokens: int) -> tuple[dict, dict]:
    """One constrained call: the model's reply as a JSON object (``ValueError`` when it is not one) and its token
    usage (``usage_metadata``; empty when the backend reports none)."""
    r = model.invoke(messages, format=schema, **limit(model, max_tokens))
    got = parse_json_lenient(r.content if isinstance(r.content, str) else str(r.content))
    if not isinstance(got, dict):
        raise ValueError(f"not a JSON object: {str(got)[:80]!r}")
    return got, r.usage_metadata or {}


DECIDE_PROMPT = """

Do not answer yet. If the sources above hold the facts the question needs, reply {"decision": "answer"}. If a \
needed fact is missing, reply {"decision": "search", "query": "<words to search the documents for it>"}."""
DECIDE_SCHEMA = {"type": "object", "properties": {"decision": {"enum": ["answer", "search"]},
                                                  "query": {"type": "string", "maxLength": 160}},
                 "required": ["decision"]}

SOURCES_PROMPT = "Which numbered sources support your answer? Reply with JSON {\"sources\": [numbers]}."

NUM_RE = re.compile(r"\[(\d{1,2}(?:\s*[,;]\s*\d{1,2})*)\]")
ID_RE = re.compile(r"\b(DOC[0-9]+_[0-9]+)\b", re.I)


@dataclass
class Source:
    """One numbered block of reading in the answer prompt: a run of consecutive chunks of one document."""

    chunk_ids: list
    doc_id: str
    doc_name: str
    pages: str
    heading: str
    text: str
    n: int = 0                      # its number in the prompt (1-based), set by ``number``
    tokens: int = 0                 # LLM tokens of its rendered block, where counted
    role: str = "entry"             # entry | walk (reached by walking from an entry chunk)
    chunk_pages: list = field(default_factory=list)  # each chunk's pages as read (a citation names one chunk's)
    chunk_texts: list = field(default_factory=list, metadata={"internal": True})  # which chunk holds a cited fact
                                                    # (not serialised: ``text`` holds them already)

    def header(self) -> str:
        loc = ", ".join(x for x in (self.doc_name, self.pages) if x)
        return f"[{self.n}] {loc}" + (f" - {self.heading}" if self.heading else "")

    def render(self) -> str:
        return f"{self.header()}\n{self.text.strip()}"


def number(sources: list[Source]) -> list[Source]:
    for i, s in enumerate(sources, 1):
        s.n = i
    return sources


def render_sources(sources: list[Source]) -> str:
    return "\n\n".join(s.render() for s in sources)


def answer_messages(question: str, sources: list[Source], may_refuse: bool = False, reads: str = "sources") -> list:
    """The answer prompt (``reads``: ``sources``, the walked sources; ``quote``, the quote's lines as numbered
    sources); ``may_refuse`` (a weak match with ``WEAK_MATCH = "refuse"``) ends it with leave to reply ``NOT_IN_DOCS``
    (after the question, so llama.cpp's evaluated head is the same)."""
    text = PROMPTS[reads].format(sources=render_sources(sources), question=question)
    return [HumanMessage(text + (MAY_REFUSE if may_refuse else ""))]


def quote_sources(quote_lines: list, sources: list[Source], count: Callable[[str], int]) -> list[Source]:
    """The quote as the model reads it: per source number, the quoted lines of that source (in document order, one
    per line, "..." where lines were skipped), with the chunk ids and pages of those lines only."""
    by_n = {s.n: s for s in sources}
    out = []
    for n in dict.fromkeys(x.source for x in quote_lines):
        src, lines = by_n[n], [x for x in quote_lines if x.source == n]
        chunk_ids = list(dict.fromkeys(x.chunk_id for x in lines))
        texts = ["\n".join(x.shown() for x in lines if x.chunk_id == c) for c in chunk_ids]
        pages = [next(x.pages for x in lines if x.chunk_id == c) for c in chunk_ids]
        label = pages[0] if len(set(pages)) == 1 else src.pages
        q = Source(chunk_ids=chunk_ids, doc_id=src.doc_id, doc_name=src.doc_name, pages=label, heading=src.heading,
                   text="\n".join(x.shown() for x in lines), n=n, role=src.role, chunk_pages=pages, chunk_texts=texts)
        q.tokens = count(q.render())
        out.append(q)
    return out


def warm_prefix(model, reads: str = "sources") -> int:
    """Evaluate the answer prompt's fixed head (chat template + instructions) in llama.cpp's context, so the next
    answer call evaluates only its sources and question (llama.cpp reuses the longest evaluated prefix). The REPL
    calls this right after loading the model; every later question reuses the head anyway. Returns the prompt
    tokens evaluated (0 for a backend without a local prompt cache)."""
    from ..llm.backends import EmbeddedChatModel

    if not isinstance(model, EmbeddedChatModel):
        return 0
    head = PROMPTS[reads].split("{sources}")[0]
    r = model.invoke([HumanMessage(head)], **limit(model, 1))
    return int((r.usage_metadata or {}).get("input_tokens", 0))


def decide_messages(question: str, sources: list[Source]) -> list:
    """The post-reading decision prompt: the answer prompt's text (so llama.cpp reuses its evaluated prefix
    for the answer call) followed by the decision request."""
    return [HumanMessage(ANSWER_PROMPT.format(sources=render_sources(sources), question=question) + DECIDE_PROMPT)]


class Streamed(NamedTuple):
    text: str
    first_s: float | None  # seconds to the first token
    interrupted: bool      # Ctrl-C
    cut: bool              # stopped by ``max_tokens`` (the backend's finish reason "length")


def stream_answer(model, messages: list, max_tokens: int,
                  on_token: Callable[[str], None] | None = None, stop: Callable[[], bool] | None = None) -> Streamed:
    """Stream a reply. Ctrl-C, or ``stop()`` turning true (a client that went away), stops the answer and keeps
    what came."""
    t0, t_first, text, cut = time.perf_counter(), None, "", False
    try:
        for chunk in model.stream(messages, **limit(model, max_tokens)):
            if stop is not None and stop():
                return Streamed(text, t_first, True, False)
            meta = chunk.response_metadata or {}  # llama.cpp: finish_reason; Ollama: done_reason
            cut = cut or "length" in (meta.get("finish_reason"), meta.get("done_reason"))
            piece = chunk.content if isinstance(chunk.content, str) else ""
            if not piece:
                continue
            if t_first is None:
                t_first = time.perf_counter() - t0
            text += piece
            if on_token:
                on_token(piece)
    except KeyboardInterrupt:
        return Streamed(text, t_first, True, False)
    return Streamed(text, t_first, False, cut)


def sentences(text: str) -> list[str]:
    """An answer cut into sentences (at ., ! or ? before a space, and at line breaks)."""
    return re.split(r"(?<=[.!?])\s+|\n+", text)


def _marker_numbers(marker: re.Match) -> list[int]:
    """The source numbers of one ``[1]`` / ``[1, 2]`` marker."""
    return [int(part) for part in re.split(r"\s*[,;]\s*", marker.group(1))]


def cited_text(text: str, n: int) -> str:
    """The sentences of an answer whose markers name source ``n`` (``[1]``, ``[1, 2]``); the whole answer when none
    does (a source named in the follow-up call)."""
    picked = [x for x in sentences(text.strip()) if any(n in _marker_numbers(m) for m in NUM_RE.finditer(x))]
    return " ".join(picked) if picked else text


_TERM = re.compile(r"[a-z]+|[0-9]+")


def _terms(text: str) -> set:
    from bm25s.stopwords import STOPWORDS_EN

    return {t for t in _TERM.findall(text.lower()) if t.isdigit() or (len(t) > 2 and t not in STOPWORDS_EN)}


def holding_chunks(answer: str, texts: list[str]) -> list[int]:
    """Which of a source's chunks hold what the answer says: those sharing the most words with it (a number counts
    twice: "64 and 128 MB" is in the chunk that says "(64-128MB)", not in the one nearest by embedding); every
    chunk when none shares a word."""
    want = _terms(ID_RE.sub(" ", NUM_RE.sub(" ", answer)))  # "[1]" or "[DOC1_012]" is no word of the answer
    shared = [sum(2 if t.isdigit() else 1 for t in want & _terms(x)) for x in texts]
    best = max(shared, default=0)
    return [i for i, n in enumerate(shared) if n == best] if best else list(range(len(texts)))


def written_citations(text: str, sources: list[Source]) -> tuple[list[int], list[str]]:
    """Source numbers the model wrote (in order of first mention) and the markers that name no source.
    ``[DOC1_052]`` style ids count when they name a chunk of a source; malformed ids are invalid, never
    an error."""
    by_chunk = {c: s.n for s in sources for c in s.chunk_ids}
    cited: list[int] = []
    invalid: list[str] = []
    for m in NUM_RE.finditer(text):
        for n in _marker_numbers(m):
            if 1 <= n <= len(sources):
                cited.append(n) if n not in cited else None
            elif f"[{n}]" not in invalid:
                invalid.append(f"[{n}]")
    ids, bad = cited_ids(text, by_chunk)
    for cid in ids:
        cited.append(by_chunk[cid]) if by_chunk[cid] not in cited else None
    return cited, invalid + [b for b in bad if b not in invalid]


def cited_ids(text: str, known) -> tuple[list[str], list[str]]:
    """The chunk ids written in ``text`` (``DOC1_052``, any case) that name a chunk in ``known``, in order of first
    mention, and those that name none (malformed or unknown): never an error. The one reading of written chunk ids
    (the fast path's sources and the routed loop's windows)."""
    ids: list[str] = []
    invalid: list[str] = []
    for m in ID_RE.finditer(text):
        try:
            cid = str(ChunkId.parse(m.group(1)))
        except ChunkIdError:  # e.g. [DOC1_0052]: reported, never a crash after the answer streamed
            invalid.append(m.group(1)) if m.group(1) not in invalid else None
            continue
        if cid in known:
            ids.append(cid) if cid not in ids else None
        elif cid not in invalid:
            invalid.append(cid)
    return ids, invalid


def sources_schema(n: int) -> dict:
    return {"type": "object", "properties": {"sources": {"type": "array", "items": {"enum": list(range(1, n + 1))},
                                                         "minItems": 1, "maxItems": min(3, n)}},
            "required": ["sources"]}


def ask_sources(model, messages: list, answer: str, n: int) -> list[int]:
    """One constrained follow-up on the answer prompt: which of the ``n`` sources support the answer."""
    r = model.invoke(messages + [AIMessage(answer), HumanMessage(SOURCES_PROMPT)], format=sources_schema(n),
                     **limit(model, 16))
    parsed = parse_json_lenient(r.content if isinstance(r.content, str) else str(r.content))
    got = parsed.get("sources", []) if isinstance(parsed, dict) else []
    out: list[int] = []
    for x in got if isinstance(got, list) else []:
        if isinstance(x, int) and 1 <= x <= n and x not in out:
            out.append(x)
    return out


def strip_markers(text: str) -> str:
    """The answer without ``[1]`` / ``[DOC1_052 p.3]`` markers (for scoring against gold text)."""
    text = NUM_RE.sub(" ", text)
    return re.sub(r"\[[^\]]*\bDOC\d+_\d+[^\]]*\]", " ", text)


class HoldBack:
    """Passes streamed pieces on, holding them back while the text could still be the refusal marker."""

    def __init__(self, on_token: Callable[[str], None] | None):
        self.on_token, self.text, self.shown, self.pieces = on_token, "", 0, 0

    def __call__(self, piece: str) -> None:
        self.text += piece
        self.pieces += 1
        head = self.text.lstrip().upper()
        if not (NOT_IN_DOCS.startswith(head[:len(NOT_IN_DOCS)]) or head.startswith(NOT_IN_DOCS)):
            self.flush()

    def flush(self) -> None:
        if self.on_token and self.shown < len(self.text):
            self.on_token(self.text[self.shown:])
            self.shown = len(self.text)


def matched_citations(text: str, windows: list[dict], already: set, chunk_of: Callable, embed: Callable) -> list:
    """Citations the model did not write: each answer sentence (of 4+ words) matched to the most similar chunk it
    was given (``windows``: dicts with ``chunk_ids``, ``doc_id``, ``doc_name``; embedder cosine >= 0.5), each chunk
    once and none of ``already``; marked ``inferred``. ``chunk_of(id)``: the chunk; ``embed(texts)``: unit vectors."""
    said = [x.strip() for x in sentences(text) if len(x.split()) >= 4]
    chunk_ids = [c for w in windows for c in w["chunk_ids"]]
    if not said or not chunk_ids:
        return []
    chunks = [chunk_of(c) for c in chunk_ids]
    sims = embed(said) @ embed([c.text for c in chunks]).T
    out, seen = [], set(already)
    by_chunk = {c: w for w in windows for c in w["chunk_ids"]}
    for row in sims:
        j = int(row.argmax())
        cid = chunk_ids[j]
        if row[j] >= 0.5 and cid not in seen:
            seen.add(cid)
            w = by_chunk[cid]
            out.append(Citation(cid, w["doc_id"], w["doc_name"], chunks[j].pages_label, inferred=True))
    return out
