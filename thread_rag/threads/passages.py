"""Consecutive chunks as one passage: the overlap a chunk repeats from the one before removed, and a page
label. One home for what windows, the agent's readers, nested retrieval and the benchmarks all join."""
from __future__ import annotations

from ..ingest.chunker import table_head


def strip_overlap(prev: str, nxt: str) -> str:
    """``nxt`` without the leading sentences it repeats from the end of ``prev``."""
    limit = min(len(prev), len(nxt))
    best = 0
    for i in range(1, limit + 1):
        if i < len(nxt) and nxt[i] not in " \n":
            continue
        head = nxt[:i].strip()
        if head and prev.rstrip().endswith(head):
            best = i
    return nxt[best:].lstrip()


def join_thread(chunks) -> str:
    """Consecutive chunks as one text, overlap removed. Where a chunk repeats the end of the one before, the
    whitespace it has after that overlap joins them (a space inside a line, a line break and its indentation
    between lines); without overlap, a space where the next chunk continues a paragraph in lower case, else a
    line break."""
    text = chunks[0].text
    for a, b in zip(chunks, chunks[1:]):
        repeated = table_head(b.text)  # a table's header that the chunk repeats is shown once
        b_text = b.text[len(repeated) + 1:] if repeated and repeated in text else b.text
        rest = strip_overlap(a.text, b_text)
        head = b_text[: len(b_text) - len(rest)]
        if head.strip():
            text += head[len(head.rstrip()):] + rest
        else:
            same_para = b.char_start < a.char_end and not b.text[:1].isspace()
            text += (" " if same_para and rest[:1].islower() else "\n") + (b_text if b_text[:1].isspace() else rest)
    return text
