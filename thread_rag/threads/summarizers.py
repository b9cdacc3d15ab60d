"""Summarizers: one sentence per chunk, behind one interface.

- ``ExtractiveSummarizer`` (default; milliseconds): the chunk's most central sentence, prefixed
  with its section title, bounded to ``SUMMARY_MAX_WORDS`` words.
- ``LlamaSummarizer``: the embedded GGUF (Qwen2.5-Coder 0.5B by default) through llama.cpp,
  reading the whole chunk.
- ``OllamaSummarizer``: an Ollama server's model (``SUMMARY_MODEL``).
``id`` names the summarizer and its prompt version; it is part of every cache key.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Protocol

from ..errors import ModelUnavailableError

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_\-]+")
_STOP = set("""a an the and or of to in on for with by from at as is are was were be been being this that these those
it its into than then there their they them you your we our can may must should will would not no if when which
who what how also such more most other any all each only about after before over under between""".split())


class Summarizer(Protocol):
    id: str

    def summarize(self, text: str, heading: str = "") -> str: ...


def bound_words(text: str, max_words: int) -> str:
    words = text.split()
    if len(words) <= max_words:
        return " ".join(words)
    return " ".join(words[:max_words]).rstrip(",;:") + " ..."


class ExtractiveSummarizer:
    def __init__(self, max_words: int = 40):
        self.max_words = max_words
        self.id = f"extractive-v1-{max_words}"

    def summarize(self, text: str, heading: str = "") -> str:
        sents = [s.strip() for s in _SENT.split(text) if len(s.split()) >= 4]
        if not sents:
            sents = [" ".join(text.split())]
        freq = Counter(w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP)
        best, best_score = sents[0], -1.0
        for i, s in enumerate(sents):
            words = [w.lower() for w in _WORD.findall(s) if w.lower() not in _STOP]
            if not words:
                continue
            score = sum(freq[w] for w in set(words)) / (len(set(words)) ** 0.5) * (1.0 - 0.04 * min(i, 10))
            if s.startswith(heading) and heading:
                score *= 0.5  # the heading line alone says little
            if score > best_score:
                best, best_score = s, score
        out = bound_words(best, self.max_words)
        return f"{heading}: {out}" if heading and heading.lower() not in out.lower() else out


def first_sentence(text: str, max_words: int) -> str:
    """A model's reply as one sentence: whitespace collapsed, the first sentence, at most ``max_words``."""
    text = " ".join(text.strip().split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    return bound_words(m.group(1) if m else text, max_words)


def _clean_llm(text: str, max_words: int) -> str:
    text = " ".join(text.strip().split())
    text = re.sub(r"^(to summarize|in summary|summary)[:,]?\s*", "", text, flags=re.I)
    text = re.sub(r"^(the (passage|text|section))\s+", "This section ", text, flags=re.I)
    return first_sentence(text, max_words)


PROMPT = ("Summarize the passage below in ONE sentence of at most {n} words. Say what it explains or tells the "
          "reader to do. Reply with the sentence only.\n\nSection: {heading}\nPassage:\n{text}")


class LlamaSummarizer:
    def __init__(self, settings, model: str | None = None):
        from ..llm.model_files import load_llama

        self.model_name = model or settings.SUMMARY_LLM
        self.max_words = settings.SUMMARY_MAX_WORDS
        self.llama = load_llama(settings, self.model_name, n_ctx=2048)
        self.id = f"llm-v1:{self.model_name}:{self.max_words}"

    def summarize(self, text: str, heading: str = "") -> str:
        words = text.split()
        body = " ".join(words[:900])  # the whole chunk (chunks are ~200 word-pieces); guard for odd inputs
        r = self.llama.create_chat_completion(
            messages=[{"role": "system", "content": "You write one-sentence summaries."},
                      {"role": "user", "content": PROMPT.format(n=self.max_words, heading=heading or "-", text=body)}],
            temperature=0.0, top_k=1, max_tokens=int(self.max_words * 2), seed=0)
        return _clean_llm(r["choices"][0]["message"]["content"] or "", self.max_words)


class OllamaSummarizer:
    def __init__(self, settings):
        host = settings.ollama_host
        if not host:
            raise ModelUnavailableError("SUMMARY_BACKEND=ollama needs OLLAMA_HOST (e.g. http://127.0.0.1:11434)")
        import ollama

        self.host = host
        self.client = ollama.Client(host=host, timeout=120)
        self.model = settings.SUMMARY_MODEL
        self.max_words = settings.SUMMARY_MAX_WORDS
        self.num_ctx = settings.OLLAMA_NUM_CTX
        self.id = f"ollama-v1:{self.model}:{self.max_words}"

    def summarize(self, text: str, heading: str = "") -> str:
        from ..llm.backends import ollama_door

        messages = [{"role": "system", "content": "You write one-sentence summaries."},
                    {"role": "user", "content": PROMPT.format(n=self.max_words, heading=heading or "-", text=text)}]
        options = {"temperature": 0, "num_ctx": self.num_ctx, "num_predict": self.max_words * 2}
        with ollama_door(self.host, self.model, instead="SUMMARY_BACKEND=extractive"):
            r = self.client.chat(model=self.model, messages=messages, options=options)
        return _clean_llm(r["message"]["content"] or "", self.max_words)


def make_summarizer(settings) -> Summarizer:
    if settings.SUMMARY_BACKEND == "llm":
        return LlamaSummarizer(settings)
    if settings.SUMMARY_BACKEND == "ollama":
        return OllamaSummarizer(settings)
    return ExtractiveSummarizer(settings.SUMMARY_MAX_WORDS)
