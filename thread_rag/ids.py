"""Chunk and document ids: parsed once, formatted once.

``DOC{serial}_{position:03d}``: positions past 999 simply get more digits
(``DOC1_999`` -> ``DOC1_1000``). Nowhere else in the code does string arithmetic on ids.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ChunkIdError, UnknownDocumentError

_CHUNK_RE = re.compile(r"^DOC([1-9][0-9]*)_([0-9]{3,})$")
_DOC_RE = re.compile(r"^DOC([1-9][0-9]*)$")


def format_doc_id(serial: int) -> str:
    return f"DOC{int(serial)}"


def parse_doc_id(text: str) -> int:
    """Return the serial number of ``DOCn`` (case-insensitive, surrounding spaces ignored)."""
    m = _DOC_RE.match(str(text).strip().upper())
    if not m:
        raise UnknownDocumentError(f"'{text}' is not a document id (expected e.g. DOC1)")
    return int(m.group(1))


@dataclass(frozen=True, order=True)
class ChunkId:
    serial: int
    position: int

    @classmethod
    def parse(cls, text: str) -> "ChunkId":
        raw = str(text).strip().upper()
        m = _CHUNK_RE.match(raw)
        if not m:
            raise ChunkIdError(f"'{text}' is not a chunk id (expected e.g. DOC1_006)")
        pos = m.group(2)
        if len(pos) > 3 and pos.startswith("0"):
            raise ChunkIdError(f"'{text}' is not a chunk id (positions past 999 have no leading zero)")
        return cls(int(m.group(1)), int(pos))

    @property
    def doc_id(self) -> str:
        return format_doc_id(self.serial)

    def __str__(self) -> str:
        return f"DOC{self.serial}_{self.position:03d}"

    def neighbour(self, step: int, count: int) -> "ChunkId | None":
        """The chunk ``step`` positions away, or None past either end of a thread of ``count`` chunks."""
        p = self.position + step
        if 0 <= p < count:
            return ChunkId(self.serial, p)
        return None


def chunk_id(serial: int, position: int) -> str:
    return str(ChunkId(serial, position))


# -- files of one document generation: ``DOC<serial>.g<generation>`` plus an optional suffix ----------------
_GENERATION_FILE = re.compile(r"DOC(\d+)\.g(\d+)(\.[A-Za-z0-9.]+)?")


def generation_name(serial: int, generation: int, suffix: str = "") -> str:
    """The name of a derived file or folder of one document generation, e.g. ``DOC3.g2`` or ``DOC3.g2.json``."""
    return f"DOC{serial}.g{generation}{suffix}"


def parse_generation_name(name: str, suffixes: tuple[str, ...] = ("",)) -> tuple[int, int] | None:
    """(serial, generation) of a name :func:`generation_name` made with one of ``suffixes``; None for anything
    else (temporaries start with a dot, so they never match)."""
    m = _GENERATION_FILE.fullmatch(name)
    if m is None or (m[3] or "") not in suffixes:
        return None
    return int(m[1]), int(m[2])
