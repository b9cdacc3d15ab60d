"""Questions the chat model writes for sampled chunks, kept only when they do not copy the chunk and the chunk
answers them (``thread-rag eval --model-questions N``).

Filters, each cheap and visible in the saved set (``extra``): the question shares no run of ``COPY_RUN`` words with
the chunk and holds at most two of the chunk's five rarest words (a question made of the chunk's rare words is a
keyword lookup, not a question); the packaged cross-encoder's logit for (question, chunk) is at least
``ANSWERS_MIN`` (the chunk answers it).
"""
from __future__ import annotations

import math
import random
import re
from collections import Counter
from typing import Callable, Iterator

from .questions import EvalQuestion, section_of

PROMPT = ("Here is a passage from a manual.\n\n{heading}{text}\n\n"
          "Write one question that a user of this manual could ask and that this passage answers. Use your own "
          "words: do not copy phrases from the passage. Reply with the question only, on one line.")
COPY_RUN = 6        # words in a row shared with the chunk: copied
RARE_WORDS = 5      # the chunk's rarest words looked at
RARE_MAX = 2        # of which a question may hold at most this many
ANSWERS_MIN = 0.0   # cross-encoder logit (probability 0.5): the chunk answers the question
MIN_CHUNK_WORDS = 40

_WORD = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*")


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def document_frequency(chunks: list) -> Counter:
    df: Counter = Counter()
    for c in chunks:
        df.update(set(words(c.text)))
    return df


def rare_words(text: str, df: Counter, n_chunks: int, n: int = RARE_WORDS) -> list[str]:
    """The chunk's ``n`` rarest words in the library (longer than 3 letters, not numbers)."""
    ws = {w for w in words(text) if len(w) > 3 and not w.replace(".", "").isdigit()}
    return sorted(ws, key=lambda w: (-math.log((n_chunks + 1) / (df.get(w, 0) + 1)), w))[:n]


def longest_shared_run(question: str, text: str) -> int:
    """The most words in a row the question shares with the text."""
    q, t = words(question), " " + " ".join(words(text)) + " "
    best = 0
    for i in range(len(q)):
        j = i + best + 1
        while j <= len(q) and " " + " ".join(q[i:j]) + " " in t:
            best = j - i
            j += 1
    return best


def clean_question(reply: str) -> str | None:
    """The model's reply as one question, or None when it did not write one."""
    for line in reply.strip().splitlines():
        line = re.sub(r"^\s*(?:question\s*:|q\s*:|\d+[.)]|[-*])\s*", "", line, flags=re.I).strip().strip('"\u201c\u201d')
        if line.endswith("?") and 3 <= len(line.split()) <= 30:
            return line
    return None


def filter_reason(question: str, text: str, df: Counter, n_chunks: int) -> str | None:
    """Why a written question is not kept (None: kept so far; the cross-encoder check follows)."""
    if longest_shared_run(question, text) >= COPY_RUN:
        return "copies the passage"
    held = set(words(question)) & set(rare_words(text, df, n_chunks))
    if len(held) > RARE_MAX:
        return "made of the passage's rare words"
    return None


def model_questions(threads: list, ask: Callable[[str], str], answers: Callable[[str, str], float], n: int,
                    seed: int = 13, skip: set = frozenset(), tried: Callable[[dict], None] = lambda r: None
                    ) -> Iterator[EvalQuestion]:
    """Up to ``n`` kept questions, written by ``ask(prompt) -> reply`` for chunks sampled (seeded) across the
    documents, each checked with ``answers(question, chunk text) -> logit``. Chunk ids in ``skip`` were tried by an
    earlier run (resuming); every try, kept or not, goes to ``tried``."""
    chunks = [(t.record, c) for t in threads for c in t.chunks]
    df, n_chunks = document_frequency([c for _, c in chunks]), len(chunks)
    rng = random.Random(seed)
    pool = [(d, c) for d, c in chunks if len(c.text.split()) >= MIN_CHUNK_WORDS and c.chunk_id not in skip]
    rng.shuffle(pool)
    kept = 0
    for doc, c in pool:
        if kept >= n:
            return
        heading = section_of(c)
        reply = ask(PROMPT.format(heading=f"Section: {heading}\n" if heading else "", text=c.text.strip()))
        q = clean_question(reply)
        why = "no question in the reply" if q is None else filter_reason(q, c.text, df, n_chunks)
        logit = None
        if why is None:
            logit = float(answers(q, c.text))
            if logit < ANSWERS_MIN:
                why = "the passage does not answer it"
        tried({"chunk_id": c.chunk_id, "question": q, "kept": why is None, "why": why,
               "logit": None if logit is None else round(logit, 3)})
        if why is None:
            kept += 1
            yield EvalQuestion.make("model", q, doc, [c.chunk_id], heading, c.chunk_id,
                                    extra={"logit": round(logit, 3)})
