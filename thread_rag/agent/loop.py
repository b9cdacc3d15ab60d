"""The agent, designed for small local models.

Per message (the chat, ``ask``, scripts, the HTTP ``/query``; MCP's ``quote_answer`` and the benchmarks pass a
reader and skip step 1: what they send is a question), on one answer path:
1. requests (list, index, remove, pre-heat, nested passages, compare, settings, statistics, help) are told from
   questions by what the message means (``intent``: its vector and cue words against example requests, the model
   asked only on a close call) and carried out by ``actions``; "index X and tell me Y" does the request, then
   answers the question;
2. (follow-ups) the question is condensed into a standalone query from the conversation;
3. code JUMPS (one search) and applies the relevance floor: an off-topic question is refused before any
   LLM call;
4. code WALKS (``reading.walk_sources``: neighbours while the walk signals hold, under a budget in LLM
   tokens) and numbers what it read;
5. the model is called ONCE, streamed; the ``[n]`` citations it writes map back to chunk ids and pages
   (one short constrained follow-up asks for them when it wrote none; similarity matching is the last
   resort, marked).
The model-driven tool loop this replaced (``AGENT_MODE = "routed"``) was removed: the packaged model picked the right
tool for 0.30 of 30 requests (bench_results/routing.json) and that path had no quote and no span check.
"""
from __future__ import annotations

import re
import time
from functools import partial
from typing import Callable

from langchain_core.messages import HumanMessage, SystemMessage

from ..errors import ModelCallError, ModelUnavailableError, ThreadRagError
from ..ids import ChunkId
from ..llm.backends import EmbeddedChatModel
from ..records import Thread, distinct_names, to_dict
from ..retrieve.pipeline import plain_query
from .steps import QuestionSteps, interleave
from ..settings import READERS
from .answer import (DECIDE_SCHEMA, HoldBack, Source, answer_messages, ask_sources, cited_text, decide_messages,
                     holding_chunks, json_reply, matched_citations, quote_sources, said_not_in_docs,
                     stream_answer, written_citations)
from .check import CheckedStream, SourceText, citations_hold, unsupported
from .outcome import (NOT_ANSWERED, PART_UNITS, PARTLY, Evidence, Judge, Outcome, lowered, parts, stand_out,
                      word_evidence)
from .quote import Quote, QuoteSettings, choose_quote, quote_lines, reading, score_units, top_units
from .actions import act
from .intent import QUESTION, Examples, Intent, Recogniser
from .reading import best_similarity, closest, nested_sources, walk_sources
from .result import Answer, Citation
from .tools import make_tools

MAX_QUESTION_CHARS = 4000  # the agent tools' question field says the same (agent/tools.py)


QUESTION_WORD = re.compile(r"\b(?:how|what|why|when|where|which|who|can|could|is|are|does|do|should|will|would)\b", re.I)
# "2.5", "./a.md" and "e.g." do not end a sentence
SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)(?<!etc)(?<!\bvs)(?<!\bcf)[.!?](?=\s)|\n")
QUESTION_REACH = 300  # the question's own words: at most this many characters before its "?"


def last_question(message: str) -> str:
    """The message's last question: the sentence before its last "?", from its first question word that leaves at most
    ``QUESTION_REACH`` characters (padding before it is not part of it); with no "?", its last sentence."""
    text = message.strip()
    end = text.rfind("?")
    if end < 0:
        return SENTENCE_END.split(text)[-1].strip()
    start = max((m.end() for m in SENTENCE_END.finditer(text, 0, end)), default=0)
    words = [m.start() for m in QUESTION_WORD.finditer(text, start, end)]
    near = [w for w in words if end - w <= QUESTION_REACH]
    return text[near[0] if near else (words[-1] if words else start):end + 1].strip()


def over_the_limit(message: str) -> tuple[str, str]:
    """A message longer than ``MAX_QUESTION_CHARS`` is answered from its last question (``last_question``), and says
    so in one line; never cut blindly (what is left
    may be padding, and the question lost). Returns the text to answer and that line ("" when within the limit)."""
    if len(message) <= MAX_QUESTION_CHARS:
        return message, ""
    last = last_question(message)
    if not last or len(last) > 1000:
        raise ThreadRagError(f"the message is {len(message):,} characters and has no question of under 1,000 to read "
                             f"(at most {MAX_QUESTION_CHARS:,} are read): ask it in fewer words (a long text belongs "
                             "in a document: index it)")
    return last, (f"the message was {len(message):,} characters, over the {MAX_QUESTION_CHARS:,} read: only its last "
                  f"question was answered: {last[:120]!r}")


class _GenerationGone(Exception):
    """A document's generation the search ranked was replaced and removed before it was read."""


CONDENSE = ("Rewrite the user's last message as one standalone question that can be understood without the "
            "conversation. Reply with JSON {\"question\": \"...\"}.")
CONDENSE_SCHEMA = {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}

# A message that may lean on the conversation: it starts like a continuation, refers back, or is too short
# to stand alone. Only such a message costs the rewrite call (a false alarm costs one call, not an answer).
FOLLOWUP_RE = re.compile(
    r"^\s*(?:and|but|or|so|then|also|what about|how about|what else|why|why not)\b"
    r"|\b(?:it|its|it's|that|this|these|those|they|them|their|there|he|she|his|her|one|ones|same|above|"
    r"previous|earlier|former|latter|else)\b", re.I)


def looks_like_followup(question: str) -> bool:
    return len(question.split()) <= 3 or bool(FOLLOWUP_RE.search(question))


def best_match(hits: list) -> float | None:
    """The best cross-encoder probability among the entry hits (None when stage 3 scored none: off, or early exit).
    Under ``MATCH_MIN`` the match is weak: the answer says so (``WEAK_MATCH = "refuse"``: the model may refuse)."""
    probs = [h.scores["rerank"] for h in hits if h.scores.get("rerank") is not None]
    return max(probs) if probs else None


def unmentioned_terms(engine, question: str) -> list[str]:
    """The question's rare words (more than one word piece to the embedder's tokenizer: no everyday word) that no
    indexed chunk holds: "zfs" asked of the Debian guide, whose chunks the cross-encoder still scored 0.99. An answer
    about them may not come from the documents (they may say it in other words: "carve-out" for "carveouts"); the
    answer says so after it (a trial: a made-up ZFS procedure, no word of warning). A note, not a refusal."""
    try:
        terms = engine.retriever.index.unmentioned(question)
        pieces = engine.query_embedder.count_tokens(terms) if terms else []
        return [t for t, n in zip(terms, pieces) if n > 1]
    except (ThreadRagError, OSError, ValueError):  # the query embedder or the index failed: a note, never a
        return []                                     # reason for the answer to fail


class Agent:
    before_model = None  # called before the model is used (the chat: wait for its background load)

    def __init__(self, engine, chat_model=None, on_event: Callable[[str, dict], None] | None = None,
                 before_model: Callable[[], None] | None = None, readers: dict[str, Callable] | None = None):
        """``readers``: readings by name beside the answer path's own (``READERS``), each a function
        ``(hits, k, thread_of, count, budget) -> sources`` (the benchmark lab composes its baselines in so)."""
        self.engine = engine
        self.readers = dict(readers or {})
        if set(self.readers) & set(READERS):
            raise ValueError(f"readers {sorted(set(self.readers) & set(READERS))} are the answer path's own names")
        self.settings = engine.settings
        self._model = chat_model  # the engine's is reached for at the first call (a bad question is named first)
        self.before_model = before_model
        self.tools = all_tools(engine)
        self.history: list[tuple[str, str]] = []  # (question, answer)
        self.where: dict = {}  # this question's pages and heading filters (``ask``)
        self.on_event = on_event or (lambda kind, data: None)
        self.stop: Callable[[], bool] | None = None  # true when whoever asked has gone (the HTTP door's client)
        self.confirm: Callable[[str], bool] | None = None  # asks the person before a removal (the chat); None: no
        self._recogniser: Recogniser | None = None            # one to ask, so nothing is removed

    @property
    def chat(self):
        """The chat model object, its weights not needed (describing it, counting tokens)."""
        if self._model is None:
            self._model = self.engine.chat_model
        return self._model

    @property
    def model(self):
        """The chat model, to be called: after ``before_model`` (the chat's background load)."""
        if self.before_model is not None:
            self.before_model()
        return self.chat

    @model.setter
    def model(self, model) -> None:
        self._model = model

    @property
    def backend(self) -> str:
        from ..llm.backends import describe

        return describe(self.chat)

    def clear(self) -> None:
        self.history.clear()

    # ------------------------------------------------------------------------------------
    def invoke_json(self, messages, schema, max_tokens=200):
        self._calls += 1
        got, usage = json_reply(self.model, messages, schema, max_tokens)
        self.tok_in += usage.get("input_tokens", 0)
        self.tok_out += usage.get("output_tokens", 0)
        return got

    def condense(self, question: str) -> str:
        if not self.history or not self.settings.CONDENSE_FOLLOWUPS or not looks_like_followup(question):
            return question
        convo = "\n".join(f"User: {q}\nAssistant: {a[:400]}" for q, a in self.history[-3:])
        try:
            out = self.invoke_json([SystemMessage("You rewrite follow-up questions."),
                                     HumanMessage(f"Conversation:\n{convo}\n\nUser's last message: {question}\n\n{CONDENSE}")],
                                    CONDENSE_SCHEMA, max_tokens=80)
            q = str(out.get("question", "")).strip()
            return q or question
        except (ThreadRagError, ValueError):  # the model failed, or its reply was no JSON object: optional
            return question

    def ask(self, question: str, on_token: Callable[[str], None] | None = None, doc_id: str | None = None,
            reader: str | None = None, anyway: bool = False, changes: bool = True,
            pages: tuple | None = None, heading: str | None = None) -> Answer:
        """Answer one message. ``doc_id`` scopes it to one document. ``reader`` picks what the model reads
        (``walk``: the budgeted walk, the default; ``windows``: the walk framed by neighbour summaries; ``nested``:
        nested_retrieve passages; or one of the ``readers`` this agent was made with). Requests (list, index,
        remove, ...) are recognised first (``intent``) and carried out (``actions``); ``changes`` False (the HTTP
        ``/query``): none that changes the library. ``anyway``: a question the documents do not answer is explained
        all the same (its outcome stays *not answered*). ``pages`` (first, last) and ``heading`` (a text the heading
        path holds) narrow where the search enters, as ``search --pages/--heading`` do; the walk reads on from there."""
        if not isinstance(question, str) or not question.strip():
            raise ThreadRagError("empty question")
        self.where = {k: v for k, v in (("pages", pages), ("heading", heading)) if v is not None}
        question, cut = over_the_limit(plain_query(question, limit=None))
        t0 = time.perf_counter()
        self.tok_in = self.tok_out = self._calls = 0
        if doc_id is not None:
            doc_id = self.engine.document(doc_id).doc_id  # raises a clear error for an unknown id
        intent = self.recognise(question) if self.settings.INTENTS and reader is None else Intent(QUESTION)
        passages = None
        if intent.action == "nested_retrieve" and not intent.missing:  # the door's own scope wins over a name's
            reader, doc_id, passages = "nested", doc_id or intent.args.get("doc_id"), intent.args.get("limit")
        if self.where and (reader or self.settings.READER) == "nested":
            raise ThreadRagError("page and heading filters narrow the search the walk starts from; nested passages "
                                 "are searched over whole documents (give a document instead)")
        if intent.action in (QUESTION, "nested_retrieve") and not self.engine.documents():  # an action may fill it
            raise ThreadRagError("no documents indexed yet: index some with /index PATH (or thread-rag index PATH)")
        if intent.action in (QUESTION, "nested_retrieve"):
            ans = self._ask_fast(question, on_token, doc_id, reader or self.settings.READER, t0, anyway, passages)
        else:
            ans = self._act(question, intent, on_token, t0, changes, anyway)
        ans.llm_calls += self._calls  # constrained JSON calls (intent, condensation, sources)
        if cut:
            ans.note = "; ".join(x for x in (cut, ans.note) if x)
        self.history.append((question, ans.answer))
        return ans

    def recognise(self, message: str) -> Intent:
        """The message's reading (``intent.Recogniser``: the query embedder, the catalog's names, the model only on
        a close call). The examples are embedded once per process and embedder."""
        if self._recogniser is None:
            qe = self.engine.query_embedder
            key = f"{type(qe).__name__}:{self.settings.EMBEDDER_MODEL}"
            if key not in _EXAMPLES:
                _EXAMPLES[key] = Examples(qe.embed_queries)
            self._recogniser = Recogniser(qe.embed_queries,
                                          lambda: [(d.doc_id, d.name) for d in self.engine.documents()],
                                          self.invoke_json, examples=_EXAMPLES[key])
        intent = self._recogniser.recognise(message)
        self.on_event("intent", {"action": intent.action, "scores": intent.scores, "asked_model": intent.asked_model,
                                 "ms": intent.ms})
        return intent

    # -- the fast path: code jumps and walks, the model reads once -----------------------
    def _ask_fast(self, question: str, on_token, doc_id: str | None, reader: str, t0: float,
                  anyway: bool = False, k: int | None = None) -> Answer:
        """A question answered: search, walk, quote, outcome, the checked explanation (``k``: how many passages the
        nested reader reads, when the message asked for a number)."""
        s = self.settings
        name = reader
        standalone = self.condense(question)
        calls = 0
        hits = self._search(standalone, doc_id, max(s.READ_K, 1))
        index = self.engine.retriever.index
        qvec = self.engine.query_embedder.embed_queries([standalone])[0]
        rel = best_similarity(index, qvec, [h.chunk_id for h in hits[:s.READ_K]])
        match = best_match(hits[:s.READ_K])
        trace = [{"step": 0, "tool": "rag_search", "args": {"query": standalone, **({"doc_id": doc_id} if doc_id else {}),
                                                            **self.where},
                  "ok": True, "error": None, "result": [f"{h.chunk_id} ({h.score:.2f})" for h in hits]}]
        self.on_event("tool", trace[0])
        base = dict(question=question, standalone_question=standalone, tool_trace=trace, backend=self.backend,
                    mode=f"fast/{name}", relevance=round(rel, 4),
                    match=None if match is None else round(match, 4))
        judge = Judge(self.engine.calibration() if s.CALIBRATION == "on" else None, s.RELEVANCE_MIN, s.QUOTE_MIN,
                      s.MATCH_MIN)
        read_k = k
        # under the cosine floor: no model call to search further (its lines are read for the outcome and shown as
        # related; a line that plainly answers may still answer it, QUOTE_STRONG)
        far = rel < s.RELEVANCE_MIN and judge.calibration is None and not anyway
        if s.QUESTION_STEPS and reader != "nested" and not far:  # the nested reader searches its own tree
            hits = self._question_steps(standalone, doc_id, hits, trace)
            read_k = len(hits)  # both searches' entries, read under the same budget (as _decide)
        t_read = time.perf_counter()
        sources = self.read(reader, standalone, hits, qvec, doc_id, k=read_k)
        self._trace_read(trace, reader, sources, t_read)
        if s.DECIDE and sources and name not in ("topk", "nested") and not far:  # the budgeted readers
            sources = self._decide(standalone, sources, hits, qvec, reader, doc_id, trace)
        if not sources:
            return self._refusal(base, on_token, t0, calls)
        base["unmentioned"] = unmentioned_terms(self.engine, standalone)
        quote = self._quote(standalone, sources, base, t0)
        outcome = self._outcome(judge, standalone, sources, quote, base)
        if outcome.kind == NOT_ANSWERED and not anyway:  # no line of what was read answers the question
            return self._related(base, quote, on_token, t0)
        if s.ANSWER_MODE == "quote" and not quote.lines:  # nothing could be quoted (no cross-encoder, or headings only)
            note = quote.note or "no line of what was read could be quoted"
            base["outcome"] = {**base["outcome"], "kind": NOT_ANSWERED, "line": f"Nothing could be quoted: {note.removeprefix('no quote: ')}.",
                               "reasons": [note]}
            return self._refusal({**base, "note": note}, on_token, t0, calls)
        outcome.anyway = outcome.kind == NOT_ANSWERED
        self.on_event("quote", {"lines": quote.lines, "best": quote.best, "seconds": quote.seconds, "note": quote.note,
                                "cut": quote.cut})
        self._tell_outcome(outcome, standalone, base)
        if s.ANSWER_MODE == "quote":
            return self._answer(base, quote.text(), sources, t0, calls, timings={"first_token_s": None})
        try:
            return self._explain(standalone, sources, quote, match, base, on_token, t0, t_read, outcome)
        except ThreadRagError as exc:  # the model failed (Ollama down, a model that does not load): the quote stands
            if not quote.lines:
                raise
            return self._answer({**base, "note": f"no explanation: {exc}"}, quote.text(), sources, t0, calls,
                                timings={"first_token_s": None})

    def _explain(self, question: str, sources: list, quote, match, base: dict, on_token, t0: float,
                 t_read: float, outcome: Outcome | None = None) -> Answer:
        """The model's explanation after the quote, one streamed call, checked span by span against the sources read
        (``check.CheckedStream``): what it adds that they do not hold is marked, or left out (``UNSUPPORTED``). A
        *partly* outcome is explained for the parts the quote covers only; the check may lower the outcome."""
        s = self.settings
        may_refuse = s.weak_match(match) and s.WEAK_MATCH == "refuse"
        reads = s.EXPLAIN_FROM if quote.lines else "sources"
        read = quote_sources(quote.reading, sources, self._count) if reads == "quote" else sources
        asked = " ".join(outcome.covered) if outcome is not None and outcome.kind == PARTLY else question
        msgs = answer_messages(asked, read, may_refuse=may_refuse, reads=reads)
        self.on_event("answer_start", {"anyway": bool(outcome and outcome.anyway)})
        checker = CheckedStream(SourceText(["\n".join(x.chunk_texts or [x.text]) for x in read]), emit=on_token,
                                strict=s.UNSUPPORTED == "drop")
        t_ans = time.perf_counter()
        raw, t_first, interrupted, cut = self._stream(msgs, checker.feed, may_refuse)
        if (not raw.strip() or (may_refuse and said_not_in_docs(raw))) and not interrupted:
            if outcome is not None:  # the model's refusal lowers the outcome
                outcome.kind, outcome.lowered = NOT_ANSWERED, "the model found no answer in what it read"
                self._tell_outcome(outcome, question, base)
            return self._refusal(base, on_token, t0, 1)
        text = checker.close().text
        if outcome is not None and lowered(outcome, len(checker.checked), len(unsupported(checker.checked))):
            self._tell_outcome(outcome, question, base)
        citations, invalid, more = self._cite_sources(text, read, msgs, interrupted)
        base.update(checked=len(checker.checked),
                    unsupported=[to_dict(x) for x in unsupported(checker.checked)], dropped=checker.dropped,
                    computed=[x.computed for x in checker.checked if x.computed],
                    citations_held=citations_hold(text, {x.n: x.text for x in sources}))
        first = (t_ans - t0 + t_first) if t_first is not None else None
        return self._answer(base, text, sources, t0, 1 + more, citations=citations, invalid=invalid,
                            interrupted=interrupted, cut=cut,
                            timings={"first_token_s": round(first, 3) if first else None,
                                     "read_s": round(t_ans - t_read, 3)},
                            tokens={"in": self._prompt_tokens(msgs), "out": self._count(raw),
                                    "sources": sum(x.tokens for x in read)})

    def _answer(self, base: dict, text: str, sources: list, t0: float, calls: int, citations=(), invalid=(),
                interrupted: bool = False, cut: bool = False, timings: dict | None = None,
                tokens: dict | None = None) -> Answer:
        return Answer(answer=text.strip(), refused=False, citations=list(citations), invalid_citations=list(invalid),
                      sources=[to_dict(x) for x in sources], interrupted=interrupted, cut=cut, llm_calls=calls,
                      timings={**(timings or {}), **base.pop("timings"), "total_s": round(time.perf_counter() - t0, 3)},
                      tokens=tokens or {}, **base)

    def _quote(self, question: str, sources: list, base: dict, t0: float):
        """The quote (``agent/quote.py``): the lines of what was read that answer the question, shown at once
        (the ``quote`` event), before any LLM call."""
        s = self.settings
        t = time.perf_counter()
        try:
            scored = score_units(question, sources, self._logits)
            quoted, cut = choose_quote(question, scored, QuoteSettings(margin=s.QUOTE_MARGIN, words=s.QUOTE_WORDS))
            quote = Quote(quote_lines(quoted, sources), best=max((u.score for u in scored), default=None),
                          units=len(scored), reading=quote_lines(reading(scored, quoted, s.EXPLAIN_WORDS), sources),
                          cut=cut)
            quote.margin, quote.spread = stand_out(scored)
            quote.top = top_units(scored, PART_UNITS) if PART_UNITS else set()
        except (ModelUnavailableError, ModelCallError) as exc:  # no cross-encoder, or it failed: no quote, the
            # explanation reads the sources
            quote = Quote(note=f"no quote: {exc}")
        quote.seconds = round(time.perf_counter() - t, 3)
        base.update(quote=[to_dict(x) for x in quote.lines], quote_best=None if quote.best is None else round(quote.best, 3),
                    quote_cut=quote.cut,
                    read_lines=[to_dict(x) for x in quote.reading], timings={"quote_s": round(time.perf_counter() - t0, 3)})
        return quote

    def _outcome(self, judge: Judge, question: str, sources: list, quote, base: dict) -> Outcome:
        """Answered, partly or not answered (``agent/outcome.py``), from the quote and the search's evidence; a
        question of several parts is judged part by part (one more cross-encoder pass each, over the ``PART_UNITS``
        units the whole question scored best; over every unit with a calibration, whose features read them all)."""
        t = time.perf_counter()
        index = self.engine.retriever.index
        rel, match = base["relevance"], base["match"]

        unknown = set(base.get("unmentioned") or [])

        def evidence(q: str, best, quoted: str, margin, spread) -> Evidence:
            absent, uncovered, aw, uw = word_evidence(index, q, quoted, unknown)
            return Evidence(best, rel, match, absent, uncovered, aw, uw, margin, spread)

        whole = evidence(question, quote.best, quote.text(), quote.margin, quote.spread)
        by_part = {}
        asked = parts(question)
        # a calibration reads each part's margin and spread over every line, as it was fitted: it scores them all
        among = (quote.top or None) if judge.calibration is None else None
        if len(asked) > 1 and quote.best is not None:
            for q in asked:
                try:
                    scored = score_units(q, sources, self._logits, among=among)
                except ModelCallError:  # the cross-encoder failed now: the question is judged whole
                    by_part = {}
                    break
                chosen, _ = choose_quote(q, scored, QuoteSettings(margin=self.settings.QUOTE_MARGIN,
                                                                  words=self.settings.QUOTE_WORDS))
                by_part[q] = evidence(q, max((u.score for u in scored), default=None), " ".join(u.text for u in chosen),
                                      *stand_out(scored))
        outcome = judge.decide(whole, by_part)
        base["outcome"] = {**to_dict(outcome), "line": outcome.line(question)}
        base["timings"]["outcome_s"] = round(time.perf_counter() - t, 3)  # the decision's own cost
        return outcome

    def _tell_outcome(self, outcome: Outcome, question: str, base: dict) -> None:
        base["outcome"] = {**to_dict(outcome), "line": outcome.line(question)}
        self.on_event("outcome", base["outcome"])

    def _logits(self, question: str, texts: list[str]):
        return self.engine.retriever.cross_encoder.logits(question, texts, self.settings.QUOTE_TOKENS)

    def _related(self, base: dict, quote, on_token, t0: float) -> Answer:
        """The documents do not answer the question (its outcome is in ``base``): the line that says what they do not say, with the
        nearest lines shown as related (the ``related`` event), and no LLM call."""
        ans = self._refusal(base, on_token and (lambda text: on_token(text + "\n")), t0, 0)
        ans.related = True
        self.on_event("related", {"lines": quote.lines, "best": quote.best, "seconds": quote.seconds, "note": ""})
        return ans

    def _stream(self, msgs: list, on_token, may_refuse: bool):
        """The streamed answer (each piece to ``on_token``); where the model may reply the refusal marker, it is
        held back until the text cannot be the marker any more (a refusal shows as the outcome's line, never as the
        marker)."""
        if not may_refuse:
            return stream_answer(self.model, msgs, self.settings.MAX_ANSWER_TOKENS, on_token, self.stop)
        hold = HoldBack(on_token)
        got = stream_answer(self.model, msgs, self.settings.MAX_ANSWER_TOKENS, hold, self.stop)
        if not said_not_in_docs(got.text):
            hold.flush()
        return got

    def _question_steps(self, question: str, doc_id: str | None, hits: list, trace: list) -> list:
        """``QUESTION_STEPS``: the model's lookups are searched and answered, and the question followed by those
        answers is searched too; its first ``READ_K`` hits are interleaved with the question's (``agent/steps.py``)."""
        t = time.perf_counter()
        steps = QuestionSteps(self.model, lambda text, n: self._search(text, doc_id, n),
                              self.settings.QUESTION_STEPS)
        merged, st = steps.search(question, max(self.settings.READ_K, 1), hits)
        self._calls += st.calls
        trace.append({"step": len(trace), "tool": "question_steps", "args": {"query": st.query or question},
                      "ok": st.error is None, "error": st.error, "lookups": st.lookups, "searched": st.searched,
                      "answers": st.answers, "result": [f"{h.chunk_id} ({h.score:.2f})" for h in merged],
                      "ms": round((time.perf_counter() - t) * 1000, 1)})
        self.on_event("tool", trace[-1])
        return merged

    def _trace_read(self, trace: list, reader: str, sources: list, t_read: float) -> None:
        trace.append({"step": len(trace), "tool": f"read:{reader}", "ok": True, "error": None,
                      "result": [f"[{x.n}] " + x.chunk_ids[0] + (".." + x.chunk_ids[-1] if len(x.chunk_ids) > 1 else "")
                                 for x in sources], "ms": round((time.perf_counter() - t_read) * 1000, 1)})
        self.on_event("tool", trace[-1])

    def _decide(self, question: str, sources: list, hits: list, qvec, reader: str, doc_id: str | None,
                trace: list) -> list[Source]:
        """The post-reading decision (``DECIDE``): one constrained call on the answer prompt's prefix says
        "answer" or "search <query>". A second search's hits are interleaved with the first's and read again
        under the same budget, so the answer never reads more than any other strategy."""
        try:
            got = self.invoke_json(decide_messages(question, sources), DECIDE_SCHEMA, max_tokens=48)
        except (ThreadRagError, ValueError):  # the model failed, or its reply was unusable: answer from what was read
            return sources
        query = str(got.get("query") or "").strip() if isinstance(got, dict) and got.get("decision") == "search" else ""
        trace.append({"step": len(trace), "tool": "decide", "ok": True, "error": None,
                      "result": f"search: {query}" if query else "answer"})
        self.on_event("tool", trace[-1])
        if not query:
            return sources
        t_read = time.perf_counter()
        more = self._search(query, doc_id, max(self.settings.READ_K, 1))
        k = self.settings.READ_K
        mixed = interleave(hits[:k], more[:k])  # a shorter second search keeps all of the first
        sources = self.read(reader, question, mixed, qvec, doc_id, k=len(mixed))
        self._trace_read(trace, reader, sources, t_read)
        return sources

    def _search(self, text: str, doc_id: str | None, k: int) -> list:
        """The search's hits for ``text`` in this question's scope (its document, pages and heading)."""
        return self.engine.retriever.search(text, doc_id=doc_id, k=k, **self.where).hits

    def read(self, reader: str, query: str, hits: list, qvec, doc_id: str | None = None,
             k: int | None = None) -> list[Source]:
        """The numbered sources the model will read (from the first ``k`` hits, default ``READ_K``), each document
        at the generation the search ranked; if another process re-indexed it since and that generation is
        gone, the question is searched once more and read from the new hits."""
        try:
            sources = self._read(reader, query, hits, qvec, doc_id, k, self._thread_at(hits))
        except _GenerationGone:
            hits = self._search(query, doc_id, max(len(hits), 1))
            sources = self._read(reader, query, hits, qvec, doc_id, k, self._thread_at(hits))
        return self._told_apart(sources)

    def _told_apart(self, sources: list[Source]) -> list[Source]:
        """Sources of different documents with one name ("install.en.txt" of two guides) named with the folders
        that tell them apart, as the document list names them."""
        if len({s.doc_name for s in sources}) == len({(s.doc_name, s.doc_id) for s in sources}):
            return sources
        labels = distinct_names(self.engine.documents())
        for s in sources:
            s.doc_name = labels.get(s.doc_id, s.doc_name)
            s.tokens = self._count(s.render())
        return sources

    def _thread_at(self, hits: list) -> Callable:
        """``thread_of`` pinned to the generations the hits were ranked at (a re-index between the search and
        the reading must not give the walk another version's neighbours)."""
        ranked = {ChunkId.parse(h.chunk_id).serial: h.generation for h in hits if getattr(h, "generation", None)}

        def thread_of(serial: int) -> Thread:
            gen = ranked.get(serial)
            thread = self.engine.thread(serial) if gen is None else self.engine.library.thread_at(serial, gen)
            if thread is None:
                raise _GenerationGone(serial)
            return thread
        return thread_of

    def _read(self, reader: str, query: str, hits: list, qvec, doc_id, k, thread_of: Callable) -> list[Source]:
        s, e = self.settings, self.engine
        k = s.READ_K if k is None else k
        if reader in self.readers:  # one this agent was made with (the lab's baselines)
            return self.readers[reader](hits, k, thread_of, self._count, s.READ_BUDGET)
        if reader in ("walk", "windows"):
            return walk_sources(hits, k, thread_of, e.retriever.index, qvec, self._count, s.READ_BUDGET,
                                max_walk=s.WALK_MAX, walk_threshold=s.WALK_THRESHOLD, walk_query_min=s.WALK_QUERY_MIN,
                                max_back=s.WALK_BACK,
                                frame=partial(self._neighbour_summary, thread_of) if reader == "windows" else None)
        if reader == "nested":
            res = e.nested.retrieve(query, limit=k, doc_id=doc_id)  # "give me 4 separate passages": 4 (the budget holds)
            return nested_sources(res.hits, e.thread, self._count, s.READ_BUDGET,
                                  best=lambda ids: closest(e.retriever.index, qvec, ids)[0])
        raise ThreadRagError(f"unknown reader {reader!r} ({', '.join([*READERS, *self.readers])})")

    def _neighbour_summary(self, thread_of: Callable, chunk, step: int) -> str:
        """The summary of the chunk ``step`` away from ``chunk``, in the version ``thread_of`` reads, as a window
        shows it (made on the spot, not stored, when the cache has none: reading never writes)."""
        cid = ChunkId.parse(chunk.chunk_id)
        thread = thread_of(cid.serial)
        nb = cid.neighbour(step, len(thread))
        return "" if nb is None else self.engine.windows.summary(thread.record, thread.chunks[nb.position])

    def _cite_sources(self, text: str, sources: list, msgs: list, interrupted: bool) -> tuple[list, list, int]:
        """Citations the model wrote; else the sources it names in one constrained follow-up; else matched
        by similarity (marked). Returns (citations, invalid markers, extra LLM calls)."""
        nums, invalid = written_citations(text, sources)
        how, calls = "written", 0
        if not nums and not interrupted and self.settings.CITE_FOLLOWUP:
            calls = 1
            try:
                nums, how = ask_sources(self.model, msgs, text, len(sources)), "sources_call"
            except (ThreadRagError, ValueError):  # the model failed or replied no JSON: the similarity match is left
                nums = []
        cites = self._cite([x for n in nums for x in sources if x.n == n], text, how)
        if not cites:
            windows = [{"chunk_ids": x.chunk_ids, "doc_id": x.doc_id, "doc_name": x.doc_name} for x in sources]
            cites = matched_citations(text, windows, set(), self.engine.chunk, self.engine.embedder.embed)
        return cites, invalid, calls

    def _cite(self, cited: list, answer: str, how: str) -> list[Citation]:
        """Citations of the sources the model named: of a source spanning several chunks (the walk's), the chunk
        that holds what the sentences citing it say (the fact is often not in its first): of those sharing the most
        words with them, the nearest by embedding (one embedding call for all), with that chunk's pages as it was
        read; its first chunk when that cannot be worked out."""
        wide = [x for x in cited if len(x.chunk_ids) > 1 and len(x.chunk_pages) == len(x.chunk_ids)]
        said = {x.n: cited_text(answer, x.n) for x in wide}
        holding = {x.n: [x.chunk_ids[i] for i in holding_chunks(said[x.n], x.chunk_texts)] if
                   len(x.chunk_texts) == len(x.chunk_ids) else x.chunk_ids for x in wide}
        near: dict = {}
        try:
            vecs = self.engine.query_embedder.embed_queries([said[x.n] for x in wide]) if wide else []
            near = {x.n: closest(self.engine.retriever.index, v, holding[x.n])[0] for x, v in zip(wide, vecs)}
        except (ThreadRagError, OSError, ValueError):  # the query embedder or the index failed after the answer
            near = {}                                     # streamed: its sources' first chunks stand
        out = []
        for x in cited:
            chunk = near.get(x.n) or holding.get(x.n, x.chunk_ids)[0]
            pages = x.chunk_pages[x.chunk_ids.index(chunk)] if x.chunk_pages else ""  # chunk is one of its ids
            out.append(Citation(chunk, x.doc_id, x.doc_name, pages or x.pages, how=how, source=x.n))
        return out

    def _refusal(self, base: dict, on_token, t0: float, calls: int) -> Answer:
        """Not answered: the line that names what the documents do not say (``Outcome.line``)."""
        line = Outcome(NOT_ANSWERED, False).line(base.get("standalone_question") or base.get("question") or "")
        base.setdefault("outcome", {"kind": NOT_ANSWERED, "calibrated": False, "line": line, "reasons": [
            f"closest passage cosine {base.get('relevance')} under the floor RELEVANCE_MIN "
            f"{self.settings.RELEVANCE_MIN:g}" if base.get("relevance", 1) < self.settings.RELEVANCE_MIN
            else "nothing was read that could answer it"]})
        line = base["outcome"].get("line") or line
        if on_token:
            on_token(line)
        return Answer(answer=line, refused=True, citations=[], invalid_citations=[], llm_calls=calls,
                      timings={**base.pop("timings", {}), "first_token_s": None,
                               "total_s": round(time.perf_counter() - t0, 3)}, **base)

    def _count(self, text: str) -> int:
        """LLM tokens of ``text`` (the model's own tokenizer where it has one, else ~1.3 per word)."""
        if isinstance(self.chat, EmbeddedChatModel):
            return self.chat.count_tokens(text)
        return int(len(text.split()) * 1.3) + 1

    def _prompt_tokens(self, msgs: list) -> int:
        return self._count("\n".join(m.content for m in msgs))

    # -- actions ------------------------------------------------------------------------
    def _act(self, question: str, intent: Intent, on_token, t0: float, changes: bool, anyway: bool) -> Answer:
        """A request carried out (``actions.act``); with a question after it ("index X and tell me Y"), that
        question answered next from the library as the request left it (its trace follows the request's)."""
        if on_token and intent.action in ("index_new_document", "pre_heat_summaries") and changes and not intent.missing:
            what = intent.args.get("file_path") or intent.args.get("serial_id") or "every document"
            on_token(f"{'indexing' if intent.action == 'index_new_document' else 'pre-heating summaries of'} {what} ...\n")
        done = act(intent, self.tools, self.engine, confirm=self.confirm, changes=changes)
        self.on_event("tool", done.entry)
        if on_token:
            on_token(done.text + ("\n\n" if intent.then else ""))
        if intent.then and (done.entry["ok"] or not changes):  # a door that changes nothing still answers
            ans = self._ask_fast(intent.then, on_token, None, self.settings.READER, t0, anyway)
            ans.answer, ans.tool_trace = done.text + "\n\n" + ans.answer, [done.entry] + ans.tool_trace
            return ans
        return Answer(question=question, standalone_question=question, answer=done.text, refused=False, citations=[],
                      invalid_citations=[], tool_trace=[done.entry],
                      backend=self.backend, mode=f"action/{intent.action}",
                      timings={"first_token_s": None, "total_s": round(time.perf_counter() - t0, 3)})


_EXAMPLES: dict = {}  # the recogniser's fitted examples, per query embedder (about 1 s to make)


def all_tools(engine) -> dict:
    """Every tool over ``engine``, ``quote_answer`` (which runs the agent) among them: what the agent, scripts and
    the MCP server offer."""
    return make_tools(engine, quote=partial(quote_answer, engine))


def quote_answer(engine, question: str, doc_id: str | None = None, pages: tuple | None = None,
                 heading: str | None = None) -> dict:
    """The documents' own lines that answer ``question``: the answer path's search, walk and quote, no language model
    (``ask --quote``; ``ANSWER_MODE = "quote"``). ``outcome``: answered, partly (its missing parts named) or not
    answered (``refused``; ``related``: the nearest lines are then in ``quote``)."""
    if not isinstance(question, str) or not question.strip():
        raise ThreadRagError("question is empty: ask something about the documents")
    agent = Agent(engine)
    agent.settings = engine.settings.replace(ANSWER_MODE="quote", CONDENSE_FOLLOWUPS=False, QUESTION_STEPS=0,
                                             DECIDE=False)  # nothing on this path may call a model
    ans = agent.ask(question, doc_id=doc_id, reader=engine.settings.READER, pages=pages, heading=heading)
    return {"question": question, "answer": ans.answer, "refused": ans.refused, "related": ans.related,
            "outcome": ans.outcome, "quote": ans.quote, "quote_best": ans.quote_best, "quote_cut": ans.quote_cut,
            "relevance": ans.relevance,
            "unmentioned": ans.unmentioned, "note": ans.note, "timings": ans.timings}
