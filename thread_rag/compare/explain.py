"""``--explain``: one LLM sentence per changed pair, cached like the neighbour summaries.

The cache is the summary cache (``threads.summary_cache``: one JSON file under ``CACHE_PATH``, merged under a
lock, replaced atomically): the file is named after the two documents' content hashes, an entry's key is
``sha256(model id + prompt version + both texts)``, so an edited chunk or another model never gets a stale
sentence. Only called when asked: the default comparison makes no model call.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

PROMPT_VERSION = "compare-v1"
MAX_WORDS = 30
PROMPT = ("Two versions of one passage of a manual follow. In ONE sentence of at most {n} words, say what the "
          "second version changes compared with the first (facts, values, steps). Reply with the sentence only."
          "\n\nSection: {heading}\nFirst version ({a_where}):\n{a_text}\n\nSecond version ({b_where}):\n{b_text}"
          "\n\nWords only in the first: {removed}\nWords only in the second: {added}")


def _clip(text: str, words: int = 300) -> str:
    w = text.split()
    return " ".join(w[:words]) + (" ..." if len(w) > words else "")


class ChangeExplainer:
    def __init__(self, chat_model, cache_root: str | Path, max_words: int = MAX_WORDS):
        from ..threads.summary_cache import SummaryCache

        self.model = chat_model
        self.cache = SummaryCache(Path(cache_root))
        self.max_words = max_words
        md = getattr(chat_model, "metadata", None) or {}
        self.id = f"{PROMPT_VERSION}:{md.get('model', type(chat_model).__name__)}:{max_words}"
        self.calls = 0

    def for_docs(self, side_a, side_b) -> Callable[[object, dict, dict], str]:
        """The callback :func:`thread_rag.compare.run.compare_sides` calls for each changed row."""
        key = hashlib.sha256(f"compare\n{getattr(side_a, 'content_hash', '') or side_a.doc_id}\n"
                             f"{getattr(side_b, 'content_hash', '') or side_b.doc_id}".encode()).hexdigest()

        def explain(row, a: dict | None, b: dict | None) -> str:
            ta = side_a.chunks[row.a].text if row.a is not None else ""
            tb = side_b.chunks[row.b].text if row.b is not None else ""
            text = f"{ta}\n\x00\n{tb}"
            got = self.cache.get(key, self.id, text)
            if got is not None:
                return got
            sentence = self._ask(ta, tb, row, a or {}, b or {})
            cid = f"{(a or {}).get('chunk_id', '-')}|{(b or {}).get('chunk_id', '-')}"
            self.cache.put_many(key, [(self.id, text, cid, sentence)])
            return sentence

        return explain

    def _ask(self, ta: str, tb: str, row, a: dict, b: dict) -> str:
        from langchain_core.messages import HumanMessage, SystemMessage

        from ..llm.backends import limit
        from ..threads.summarizers import first_sentence

        heading = " > ".join((a.get("heading_path") or b.get("heading_path") or [])[-2:]) or "-"
        prompt = PROMPT.format(n=self.max_words, heading=heading,
                               a_where=f"{a.get('chunk_id', '-')} {a.get('pages', '')}".strip(), a_text=_clip(ta),
                               b_where=f"{b.get('chunk_id', '-')} {b.get('pages', '')}".strip(), b_text=_clip(tb),
                               removed="; ".join(row.removed[:6]) or "-", added="; ".join(row.added[:6]) or "-")
        self.calls += 1
        r = self.model.invoke([SystemMessage("You describe changes between two versions of a text in one sentence."),
                               HumanMessage(prompt)], **limit(self.model, self.max_words * 2))
        content = r.content if isinstance(r.content, str) else str(r.content)
        return first_sentence(content, self.max_words) or "(no explanation)"
