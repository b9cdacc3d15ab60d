"""Consecutive chunks as one passage: the overlap a chunk repeats from the one before removed, and a page
label. One home for what windows, the agent's readers, nested retrieval and the benchmarks all join."""
from __future__ import annotations


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
    """Consecutive chunks as one text, overlap removed; a space where the boundary falls inside
    a paragraph (the next chunk continues the same line), else a newline."""
    text = chunks[0].text
    for a, b in zip(chunks, chunks[1:]):
        rest = strip_overlap(a.text, b.text)
        same_para = b.char_start < a.char_end and "\n" not in b.text[: max(0, len(b.text) - len(rest))].strip()
        text += (" " if same_para and rest[:1].islower() else "\n") + rest
    return text
