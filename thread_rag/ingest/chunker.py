"""Chunkers: blocks -> an ordered list of chunk drafts, sized in the embedder's own tokens.

All strategies share one interface (``chunk(doc) -> list[ChunkDraft]``) and one packing loop:
sentences are packed up to ``CHUNK_TOKENS``; a sentence is never cut unless it alone exceeds the
limit; the next chunk starts with up to ``CHUNK_OVERLAP`` tokens of whole trailing sentences; a
heading starts a new chunk once ``CHUNK_MIN_TOKENS`` are packed.

- ``sentence``: the packing loop alone.
- ``semantic``: also breaks where the embedding distance between neighbouring sentences peaks
  (above the ``SEMANTIC_PERCENTILE`` of the document's distances).
- ``parent_child``: sentence chunks (the thread) grouped into parents of about ``PARENT_TOKENS``;
  each chunk records its parent group.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

import numpy as np

from ..errors import IngestError
from ..records import LoadedDocument

_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")


def text_for_embedding(text: str) -> str:
    """What the embedder reads for a chunk: its raw text minus Markdown link targets and escapes.

    The stored text is never changed; summaries or other chunks are never added.
    """
    if "[" not in text and "\\" not in text:  # no link, image or escape: most sentences (a 50 MB file: 650k)
        return " ".join(text.split())
    text = _MD_IMAGE.sub(r"\1", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _MD_ESCAPE.sub(r"\1", text)
    return " ".join(text.split())


@dataclass
class Unit:
    text: str
    tokens: int
    page: int | None
    heading_path: tuple
    char_start: int
    char_end: int
    block: int
    is_heading: bool = False
    new_line: bool = False  # starts a line of its block after the first (a list item, a table row, a code line,
    #                         its indentation kept)
    table_head: str = ""    # a table row's header row and the rule under it, where its block opens with them
    head_tokens: int = 0    # ... and its tokens: a chunk that starts at this row repeats the header


@dataclass
class ChunkDraft:
    text: str
    page_start: int | None
    page_end: int | None
    heading_path: list
    char_start: int
    char_end: int
    n_tokens: int
    parent: int | None = None
    units: list = field(default_factory=list, repr=False)


class Chunker(Protocol):
    strategy: str

    def chunk(self, doc: LoadedDocument) -> list[ChunkDraft]: ...


class SentenceChunker:
    strategy = "sentence"

    def __init__(self, count_tokens: Callable[[Sequence[str]], list[int]], target: int = 200, overlap: int = 32,
                 min_tokens: int = 48, split_regex: str = r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])"):
        if target <= 0 or overlap < 0 or overlap >= target:
            raise ValueError("need target > 0 and 0 <= overlap < target")
        self.count_tokens = count_tokens
        self.target = target
        self.overlap = overlap
        self.min_tokens = min_tokens
        self._split = re.compile(split_regex)

    # -- units ---------------------------------------------------------------------------
    def units(self, doc: LoadedDocument) -> list[Unit]:
        pieces: list[tuple[str, int, int, int, bool]] = []  # text, start, end, block index, starts a later line
        for bi, block in enumerate(doc.blocks):
            text = block.text
            for line_m in re.finditer(r"[^\n]+", text):
                line = line_m.group(0)
                start = line_m.start()
                first = len(pieces)
                if block.is_heading:
                    pieces.append((line.strip(), block.char_start + start, block.char_start + line_m.end(), bi, False))
                    continue
                pos = 0
                for m in list(self._split.finditer(line)) + [None]:
                    end = m.start() if m else len(line)
                    for a, b in _spans(line, pos, end):  # a sentence of megabytes comes in pieces of 20,000
                        seg = line[a:b]
                        if seg.strip():
                            nl = start > 0 and len(pieces) == first
                            indented = len(pieces) == first  # a line's first piece keeps its indentation
                            pieces.append((seg.rstrip() if indented else seg.strip(), block.char_start + start + a,
                                           block.char_start + start + b, bi, nl))
                    pos = m.end() if m else pos
        counts = self.count_tokens([text_for_embedding(t) for t, *_ in pieces])
        units: list[Unit] = []
        heads = {bi: table_head(b.text) for bi, b in enumerate(doc.blocks)}
        distinct = sorted({x for h in heads.values() if h for x in (h, h.split("\n")[0])})  # with and without rule
        head_tokens = dict(zip(distinct, self.count_tokens([text_for_embedding(h) for h in distinct]))) \
            if distinct else {}
        heads = {bi: h if h and head_tokens[h] <= self.target // 3 else "" for bi, h in heads.items()}  # rows fit
        for (text, s, e, bi, nl), n in zip(pieces, counts):
            b = doc.blocks[bi]
            if n > self.target:
                parts = self._split_long(text, n, s, b, bi)
                parts[0].new_line = nl
                units.extend(parts)
            else:
                at = s - b.char_start  # a row repeats the header above it; the rule line, the header row
                head = heads[bi] if at > len(heads[bi]) else heads[bi][:at - 1] if nl and heads[bi] else ""
                units.append(Unit(text, max(n, 1), b.page, tuple(b.heading_path), s, e, bi, b.is_heading, nl, head,
                                  head_tokens.get(head, 0)))
        return units

    def _split_long(self, text: str, n: int, start: int, b, bi: int) -> list[Unit]:
        """A sentence longer than the limit: cut at word boundaries into near-equal parts."""
        words = list(re.finditer(r"\S+", text))
        parts = int(np.ceil(n / (self.target * 0.9)))
        per = max(1, int(np.ceil(len(words) / parts)))
        out = []
        for i in range(0, len(words), per):
            grp = words[i:i + per]
            seg = text[grp[0].start():grp[-1].end()]
            tok = self.count_tokens([text_for_embedding(seg)])[0]
            if tok > self.target and len(grp) > 1:  # very dense text (e.g. hashes): halve again
                half = len(grp) // 2
                for sub in (grp[:half], grp[half:]):
                    s2 = text[sub[0].start():sub[-1].end()]
                    out.append(Unit(s2, self.count_tokens([text_for_embedding(s2)])[0], b.page, tuple(b.heading_path),
                                    start + sub[0].start(), start + sub[-1].end(), bi))
                continue
            out.append(Unit(seg, max(tok, 1), b.page, tuple(b.heading_path), start + grp[0].start(),
                            start + grp[-1].end(), bi))
        return out

    # -- packing -------------------------------------------------------------------------
    def pack(self, units: list[Unit], breaks: set[int] | None = None) -> list[ChunkDraft]:
        breaks = breaks or set()
        chunks: list[ChunkDraft] = []
        cur: list[Unit] = []
        own_from = 0  # index in cur of the first unit that is not overlap
        for i, u in enumerate(units):
            cur_tok = sum(x.tokens for x in cur) + (cur[0].head_tokens if cur else 0)
            own_tok = sum(x.tokens for x in cur[own_from:])
            force = (u.is_heading or i in breaks) and own_tok >= self.min_tokens
            if cur and (force or cur_tok + u.tokens > self.target) and own_tok > 0:
                chunks.append(self._draft(cur, own_from))
                cur = [] if force else self._tail(cur, u.tokens)
                own_from = len(cur)
            cur.append(u)
        if cur and sum(x.tokens for x in cur[own_from:]) > 0:
            chunks.append(self._draft(cur, own_from))
        return chunks

    def _tail(self, cur: list[Unit], next_tokens: int) -> list[Unit]:
        budget = min(self.overlap, self.target - next_tokens)
        tail: list[Unit] = []
        total = 0
        for u in reversed(cur):
            if u.is_heading or total + u.tokens > budget:
                break
            tail.insert(0, u)
            total += u.tokens
        if len(tail) == len(cur):
            tail = tail[1:]
        return tail

    def _draft(self, units: list[Unit], own_from: int) -> ChunkDraft:
        parts: list[str] = [units[0].table_head + "\n"] if units[0].table_head else []  # a table goes on: its header
        prev_block = None
        for u in units:
            if prev_block is None:
                parts.append(u.text)
            elif u.block == prev_block:
                parts.append(("\n" if u.new_line else " ") + u.text)
            else:
                parts.append("\n" + u.text)
            prev_block = u.block
        pages = [u.page for u in units if u.page is not None]
        own = units[own_from] if own_from < len(units) else units[0]
        return ChunkDraft(text="".join(parts), page_start=min(pages) if pages else None,
                          page_end=max(pages) if pages else None, heading_path=list(own.heading_path),
                          char_start=units[0].char_start, char_end=units[-1].char_end,
                          n_tokens=sum(u.tokens for u in units) + units[0].head_tokens, units=units)

    def chunk(self, doc: LoadedDocument) -> list[ChunkDraft]:
        units = self.units(doc)
        if not units:
            raise IngestError(doc.path, "no text to chunk")
        return self.pack(units)


class SemanticChunker(SentenceChunker):
    strategy = "semantic"

    def __init__(self, count_tokens, embed: Callable[[Sequence[str]], np.ndarray], percentile: float = 85.0, **kw):
        super().__init__(count_tokens, **kw)
        self.embed = embed
        self.percentile = percentile

    def chunk(self, doc: LoadedDocument) -> list[ChunkDraft]:
        units = self.units(doc)
        if not units:
            raise IngestError(doc.path, "no text to chunk")
        return self.pack(units, semantic_breaks([u.text for u in units], self.embed, self.percentile))


def semantic_breaks(sentences: list[str], embed, percentile: float) -> set[int]:
    """Indices i where a break before sentence i falls on a distance peak between neighbours."""
    if len(sentences) < 3:
        return set()
    vecs = embed([text_for_embedding(s) for s in sentences])
    dist = 1.0 - np.sum(vecs[1:] * vecs[:-1], axis=1)
    cut = np.percentile(dist, percentile)
    return {i + 1 for i, d in enumerate(dist) if d >= cut and d > 0}


class ParentChildChunker(SentenceChunker):
    strategy = "parent_child"

    def __init__(self, count_tokens, parent_tokens: int = 800, **kw):
        super().__init__(count_tokens, **kw)
        self.parent_tokens = parent_tokens

    def chunk(self, doc: LoadedDocument) -> list[ChunkDraft]:
        children = super().chunk(doc)
        parent, size = 0, 0
        for c in children:
            if size and size + c.n_tokens > self.parent_tokens:
                parent, size = parent + 1, 0
            c.parent = parent
            size += c.n_tokens
        return children


_HEAD = re.compile(r"(\|[^\n]*\|)\n(\|(?: ?:?-{3,}:? ?\|)+)(?=\n)")


def table_head(text: str) -> str:
    """A block's table header: its first line when that is a pipe row with a rule line under it ("| a | b |" then
    "| --- | --- |"), with the rule; else ""."""
    m = _HEAD.match(text)
    return m.group(0) if m else ""


def make_chunker(settings, count_tokens, embed=None) -> Chunker:
    kw = dict(target=settings.CHUNK_TOKENS, overlap=settings.CHUNK_OVERLAP, min_tokens=settings.CHUNK_MIN_TOKENS,
              split_regex=settings.SENTENCE_SPLIT_REGEX)
    if settings.CHUNK_STRATEGY == "semantic":
        if embed is None:
            raise ValueError("the semantic chunker needs an embedder")
        return SemanticChunker(count_tokens, embed, percentile=settings.SEMANTIC_PERCENTILE, **kw)
    if settings.CHUNK_STRATEGY == "parent_child":
        return ParentChildChunker(count_tokens, parent_tokens=settings.PARENT_TOKENS, **kw)
    return SentenceChunker(count_tokens, **kw)


LONG_PIECE = 20_000  # characters: a longer sentence is cut at a space before it is tokenised (a 17 MB line without a
#                      full stop took 36 s and 2.4 GB to chunk in one piece)


def _spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``(start, end)`` as spans of at most LONG_PIECE characters, each cut after the last space before the limit
    (or at the limit where there is none)."""
    out = []
    while end - start > LONG_PIECE:
        cut = text.rfind(" ", start + LONG_PIECE // 2, start + LONG_PIECE)
        cut = cut + 1 if cut > start else start + LONG_PIECE
        out.append((start, cut))
        start = cut
    out.append((start, end))
    return out
