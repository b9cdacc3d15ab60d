"""Result and record schemas: one dataclass per concept, serialised one way (``to_dict``).

The same dicts go to ``--json`` output, scripted sessions and the agent's tool messages.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import ThreadRagError


def to_dict(obj: Any) -> Any:
    """Plain data for JSON; a dataclass field marked ``metadata={"internal": True}`` is left out."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj) if not f.metadata.get("internal")}
    if isinstance(obj, (list, tuple)):
        return [to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


@dataclass
class Block:
    """A piece of loaded text in reading order (paragraph, list item, table row, heading)."""

    text: str
    page: int | None = None          # 1-based page (PDF)
    heading_path: tuple = ()         # headings above this block, outermost first
    is_heading: bool = False
    char_start: int = 0              # offset of the block in the document's full text


@dataclass
class LoadedDocument:
    path: str
    kind: str                        # pdf | docx | text | markdown | html | epub | image
    blocks: list
    pages: int | None = None
    encoding: str | None = None
    warnings: list = field(default_factory=list)  # what was lost while loading (e.g. PDF pages without text)
    ocr_pages: list = field(default_factory=list)  # pages read by OCR (no text layer), from 1

    @property
    def full_text(self) -> str:
        return "\n\n".join(b.text for b in self.blocks)


@dataclass
class Chunk:
    chunk_id: str
    doc_id: str
    position: int
    text: str
    page_start: int | None = None
    page_end: int | None = None
    heading_path: list = field(default_factory=list)
    char_start: int = 0
    char_end: int = 0
    parent: int | None = None        # parent group (parent_child strategy)
    n_tokens: int = 0
    ocr: bool = False                # its pages were read by OCR (set by the library from its document's record)

    @property
    def pages_label(self) -> str:
        """``p.3``, or ``p.3 (OCR)`` for text read off a scanned page."""
        label = pages_label(self.page_start, self.page_end)
        return f"{label} (OCR)" if label and self.ocr else label


def distinct_names(docs) -> dict[str, str]:
    """Each document's name for a person (``doc_id`` -> name), followed, where another document has the same
    name, by as many of its folders as tell them apart: ``install.en.pdf (installation-guide-arm64-en)``."""
    from collections import defaultdict
    from pathlib import PurePath

    def folders(path: str) -> tuple:
        parent = PurePath(path).parent
        return parent.parts[1:] if parent.anchor else parent.parts  # "/" is no folder's name

    groups, out = defaultdict(list), {}
    for d in docs:
        groups[d.name].append(d)
    for name, same in groups.items():
        where = {d.doc_id: folders(d.path) for d in same}
        depth = 1
        while depth < max(len(f) for f in where.values()) and len({f[-depth:] for f in where.values()}) < len(same):
            depth += 1
        told = len(same) > 1 and len({f[-depth:] for f in where.values()}) == len(same)  # else the ids tell them
        for d in same:
            out[d.doc_id] = f"{name} ({'/'.join(where[d.doc_id][-depth:])})" if told else name
    return out


def pages_label(first: int | None, last: int | None) -> str:
    """``p.3``, ``pp.3-5``, or "" for a text without pages."""
    if first is None:
        return ""
    return f"p.{first}" if last in (None, first) else f"pp.{first}-{last}"


PAGES_EXPECTED = "a range like 10-20 (pages from 1, the first not after the last)"


def page_range(text: str, option: str = "--pages") -> tuple[int, int]:
    """``"10-20"`` -> (10, 20), ``"3"`` -> (3, 3): a page range as typed after ``--pages`` (CLI and chat); anything else
    is one line naming the option as typed."""
    if not text.strip():
        raise ThreadRagError(f"{option} is empty: leave it out to search every page")
    m = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", text.strip())
    lo, hi = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (0, 0)  # "5-" is no range, "1_0" no page
    if not 1 <= lo <= hi:
        raise ThreadRagError(f"{option} {text!r}: expected {PAGES_EXPECTED}")
    return lo, hi


def content_key(chunks: list, embedder: str, chunk_strategy: str) -> str:
    """What every structure derived from a document generation is keyed by: a SHA-256 of the recipe and of each
    chunk's text, pages and heading, in order, as the store keeps them. The catalog record carries the key of
    the chunks it committed; the token cache, search-index parts and base, and nested trees carry the key of the
    chunks they were made from, and are used only when the two are equal."""
    h = hashlib.sha256(json.dumps(["thread-rag content key 1", embedder, chunk_strategy]).encode())
    for c in chunks:
        h.update(json.dumps([c.position, c.text, c.page_start, c.page_end, " > ".join(c.heading_path)]).encode())
    return h.hexdigest()


@dataclass
class DocumentRecord:
    serial: int
    doc_id: str
    name: str
    path: str
    content_hash: str
    kind: str
    chunk_count: int
    pages: int | None
    indexed_at: str
    generation: int
    chunk_strategy: str = "sentence"
    embedder: str = ""
    seconds: float = 0.0
    content_key: str = ""            # records.content_key of its chunks ("": committed before content keys)
    origin: str = ""                 # the data dir that indexed it (a library shared on a server; "" locally)
    ocr_pages: list = field(default_factory=list)  # pages its text was read off by OCR (scans), from 1

    @classmethod
    def from_dict(cls, d: dict) -> "DocumentRecord":
        """A stored record; fields a newer version of this program added are left out (so this version opens
        a catalog a newer one wrote; versions before this method fail on fields they do not know)."""
        return cls(**{k: v for k, v in d.items() if k in _RECORD_FIELDS})


_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(DocumentRecord))


@dataclass
class IndexResult:
    path: str
    status: str                      # indexed | replaced | unchanged | failed
    doc_id: str | None = None
    chunks: int = 0
    pages: int | None = None
    seconds: float = 0.0
    error: str | None = None
    timings: dict = field(default_factory=dict)  # load_s, chunk_s, embed_s, store_s
    warnings: list = field(default_factory=list)  # the loader's warnings (indexed, but something is missing)
    same_as: str | None = None       # unchanged as a copy: the indexed file with the same bytes
    moved_from: str | None = None    # unchanged, moved: the document's old path (gone), now this file's


@dataclass
class Thread:
    """One document's ordered chunks at one generation (its committed one, unless a reader pinned another)."""

    record: DocumentRecord
    chunks: list

    def __len__(self) -> int:
        return len(self.chunks)
