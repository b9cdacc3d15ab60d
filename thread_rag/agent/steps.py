"""Question steps (``QUESTION_STEPS``, off by default): a question that hides what it asks about behind another
question ("the river through the birthplace of the author of Green Hills") is searched as asked AND with the names
the LLM finds along the way.

1. the LLM splits the question into lookups (one JSON-constrained call, at most ``max_steps``), "#1" standing for
   an earlier lookup's answer;
2. each lookup, its "#n" filled in, is searched, and the LLM answers it in a few words from its top two passages;
3. the question followed by every lookup's answer is searched, and those hits are interleaved with the question's
   own (its first hit stays first; the caller decides how many of the merged hits it reads).
A question the LLM leaves in one lookup costs that one call and changes nothing. Any failure of the LLM (down,
no usable JSON) leaves the question's own hits as they were, and the trace says why.

Chosen on the dev halves (``bench_results/probes/decompose_probe.py``): searching the answers with the question
found more of the supporting passages than interleaving the lookups' own searches, and interleaving it with the
question's own search instead of replacing it kept aws-docs-qa and limit-small level (nDCG@10 -0.002 and -0.001).
The component gets a chat model and a search function; it never writes.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Callable

from langchain_core.messages import HumanMessage, SystemMessage

from ..errors import ThreadRagError
from ..llm.backends import limit
from ..retrieve.pipeline import MAX_QUERY_CHARS
from .answer import parse_json_lenient

SPLIT_SYSTEM = ("You split a question into the simple lookups that answer it, in order. Each lookup asks for ONE fact. "
                "When a lookup needs an earlier lookup's answer, write #1, #2, ... in its place.")
SPLIT_ASK = ("Example:\nQuestion: Who founded the company that makes the Foo 3000 camera?\n"
             '{{"steps": ["Which company makes the Foo 3000 camera?", "Who founded #1?"]}}\n\n'
             "Example:\nQuestion: What river flows through the birthplace of the author of Green Hills?\n"
             '{{"steps": ["Who is the author of Green Hills?", "Where was #1 born?", "What river flows through #2?"]}}\n\n'
             "Example:\nQuestion: When was the mayor of Springfield born?\n"
             '{{"steps": ["Who is the mayor of Springfield?", "When was #1 born?"]}}\n\n'
             "Question: {q}\n")
LOOKUP_SYSTEM = "Answer from the passages with a name or a short phrase only, no sentence."
LOOKUP_ASK = "Passages:\n{p}\n\nQuestion: {q}\nAnswer:"
PASSAGES, PASSAGE_WORDS, ANSWER_TOKENS, SPLIT_TOKENS = 2, 90, 16, 120

Search = Callable[[str, int], list]  # (query, k) -> hits with .chunk_id and .text, best first


def split_schema(max_steps: int) -> dict:
    return {"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"},
                                                       "minItems": 1, "maxItems": max_steps}},
            "required": ["steps"]}


@dataclass
class StepsTrace:
    """What the steps did for one question (shown in the agent's tool trace and kept by the bench)."""

    lookups: list[str] = field(default_factory=list)    # as the model wrote them ("#1" for an earlier answer)
    searched: list[str] = field(default_factory=list)   # each with the earlier answers filled in
    answers: list[str] = field(default_factory=list)
    query: str | None = None                             # the question + the answers (None: nothing added)
    error: str | None = None                             # why the steps stopped early or did nothing, if so
    calls: int = 0                                       # LLM calls made (failed ones included)


class QuestionSteps:
    def __init__(self, model, search: Search, max_steps: int = 4):
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or not 2 <= max_steps <= 6:
            raise ValueError(f"max_steps={max_steps!r}: must be an integer between 2 and 6")
        self.model, self._search, self.max_steps = model, search, max_steps

    def search(self, question: str, k: int, hits: list) -> tuple[list, StepsTrace]:
        """The question's first ``k`` ``hits`` interleaved with the first ``k`` hits of "question + the lookups'
        answers" (up to 2k, each chunk once); just the first ``k`` hits when nothing was added."""
        trace = self.plan(question)
        if trace.query is None:
            return hits[:k], trace
        try:
            more = self._search(trace.query, k)
        except (ThreadRagError, OSError, ValueError) as exc:  # the search failed: the question's own hits stand
            trace.error = f"search: {exc}"[:200]
            return hits[:k], trace
        return interleave(hits[:k], more[:k]), trace

    def plan(self, question: str) -> StepsTrace:
        trace = StepsTrace()
        try:
            trace.lookups = self.split(question, trace)
            if len(trace.lookups) < 2:
                return trace
            for lookup in trace.lookups:
                text = fill(lookup, trace.answers, trace.searched)
                trace.searched.append(text)
                trace.answers.append(self.answer(text, self._search(text, PASSAGES), trace))
        except (ThreadRagError, OSError, ValueError) as exc:  # a model call or a search failed: steps are an
            # addition, what was found so far is used
            trace.error = f"{exc.__class__.__name__}: {exc}"[:200]
        names = " ".join(a for a in trace.answers if a)
        if names:  # the answers must survive the search's cut of long queries: the question gives way
            trace.query = f"{question[:max(0, MAX_QUERY_CHARS - len(names) - 1)]} {names}".strip()
        return trace

    def split(self, question: str, trace: StepsTrace) -> list[str]:
        """The model's lookups; the question alone when its reply is not a list of lookups (the trace says so)."""
        msgs = [SystemMessage(SPLIT_SYSTEM), HumanMessage(SPLIT_ASK.format(q=question))]
        trace.calls += 1
        out = self.model.invoke(msgs, format=split_schema(self.max_steps), **limit(self.model, SPLIT_TOKENS)).content
        try:
            steps = parse_json_lenient(str(out)).get("steps")
        except (ValueError, AttributeError):
            steps = None
        if not isinstance(steps, list):
            trace.error = f"the model's split was not a list of lookups: {str(out)[:80]!r}"
            return [question]
        steps = [" ".join(s.split()) for s in steps if isinstance(s, str) and s.strip()][:self.max_steps]
        return steps or [question]

    def answer(self, lookup: str, hits: list, trace: StepsTrace) -> str:
        p = "\n".join(f"[{i + 1}] {' '.join(h.text.split()[:PASSAGE_WORDS])}" for i, h in enumerate(hits[:PASSAGES]))
        if not p:
            return ""
        msgs = [SystemMessage(LOOKUP_SYSTEM), HumanMessage(LOOKUP_ASK.format(p=p, q=lookup))]
        trace.calls += 1
        out = str(self.model.invoke(msgs, **limit(self.model, ANSWER_TOKENS, stop=["\n"])).content)
        first = next((line for line in out.splitlines() if line.strip()), "")  # one line, whatever the backend
        return " ".join(first.split()).strip('."').strip()[:200]


def fill(lookup: str, answers: list[str], searched: list[str]) -> str:
    """``#n`` replaced by the n-th earlier lookup's answer, or by that lookup (as ``searched``) when the model
    could not answer it; a ``#n`` no earlier lookup stands behind is text ("the #1 pick") and stays."""
    def earlier(m: re.Match) -> str:
        n = int(m.group(1))
        return (answers[n - 1] or searched[n - 1]) if 1 <= n <= len(answers) else m.group(0)

    return " ".join(re.sub(r"#(\d+)", earlier, lookup).split()) or lookup


def interleave(first: list, second: list) -> list:
    """first[0], second[0], first[1], ... each chunk once (where it first appears); the longer list's rest after."""
    out: dict = {}
    for pair in itertools.zip_longest(first, second):
        for h in pair:
            if h is not None and h.chunk_id not in out:
                out[h.chunk_id] = h
    return list(out.values())
