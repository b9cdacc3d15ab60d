"""User-facing errors.

Every error a user can cause (bad file, bad id, bad argument, missing model) is a
:class:`ThreadRagError` whose ``str()`` is one line that names the thing and the reason.
Front doors print that line and exit non-zero; they never show a traceback for it.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path


class ThreadRagError(Exception):
    """A one-line, user-facing error."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))

    def noting(self, note: str) -> None:
        """Add ``note`` to the line (what the library still serves for a file that failed)."""
        self.args = (str(self) + note,)


def printable(path) -> str:
    """A path as text that can be printed and stored: a name that is not valid UTF-8 (bytes the file system took
    as they came) shows its odd bytes as ``\\xe9``."""
    try:
        return os.fsencode(str(path)).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file system byte makes (a JSON escape such as \ud800)
        return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def shown(path) -> str:
    """A path or name for a plain output line: quoted and escaped when it holds a line break or tab, so one result
    stays one line; a name that is not valid UTF-8 shows its odd bytes as ``\\xe9``."""
    text = printable(path)
    return text if text.isprintable() else json.dumps(text, ensure_ascii=False)


def counted(n: int, noun: str) -> str:
    """``1 chunk``, ``3 chunks`` (output lines said "1 chunks")."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


class SettingsError(ThreadRagError):
    """An invalid setting (names the setting)."""


class IngestError(ThreadRagError):
    """A document could not be loaded or chunked: ``path`` (the file as the user named it, printable) and
    ``reason``; its line is ``path: reason``."""

    def __init__(self, path, reason: str):
        self.path, self.reason = printable(path), " ".join(str(reason).split())
        Exception.__init__(self, self._line())  # the name as shown on a result line: not squeezed, quoted if odd

    def _line(self) -> str:
        return f"{shown(self.path)}: {self.reason}"

    def __reduce__(self):
        return IngestError, (self.path, self.reason)

    def named(self, path) -> "IngestError":
        """The same failure, naming the file as ``path``."""
        return IngestError(path, self.reason)

    def noting(self, note: str) -> None:
        """Add ``note`` to the reason too."""
        self.reason += note
        self.args = (self._line(),)


class NotFoundError(ThreadRagError):
    """What was asked for is not there: a document or chunk the library does not hold, a file gone (HTTP 404)."""


class ChunkIdError(ThreadRagError):
    """A malformed or unknown chunk id."""


class ChunkOutOfRangeError(ChunkIdError, NotFoundError):
    """A chunk id past the end of its document's thread."""


class UnknownDocumentError(ThreadRagError):
    """A document id that is not in the catalog (or not a document id at all)."""


class MissingDocumentError(UnknownDocumentError, NotFoundError):
    """A well-formed document id that the catalog does not hold."""


class ModelUnavailableError(ThreadRagError):
    """A model, runtime or server that is not installed or not reachable."""


class ModelCallError(ThreadRagError):
    """A call to the chat model failed (the backend's own error, named in the message: llama.cpp's, Ollama's
    client's). Raised at the model's door (``llm/backends.py``), so the answer path catches this, never Exception."""


@contextlib.contextmanager
def failing_as(what: str, errors: tuple):
    """A model runtime's call whose own ``errors`` (llama.cpp's, torch's) become one ModelCallError naming ``what``.
    Only those types: a bug of ours in the same block (a TypeError, a KeyError) stays what it is."""
    try:
        yield
    except errors as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise ModelCallError(f"{what} failed: {type(exc).__name__}" + (f": {first}" if first else "")) from exc


class EmbedderMismatchError(ThreadRagError):
    """Stored vectors come from another embedder than the one configured (re-index, or switch back)."""


class ReadOnlyError(ThreadRagError):
    """A change asked of a library on a read-only file system."""


class CorruptFileError(ThreadRagError):
    """A stored file that cannot be read (it is set aside, never silently emptied)."""


def debugging() -> bool:
    """``--debug`` or ``THREAD_RAG_DEBUG=1``: a door prints the traceback of an error after its one line."""
    import os

    return os.environ.get("THREAD_RAG_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def trace(exc: BaseException) -> str:
    """The traceback of ``exc`` as text (for ``--debug``)."""
    import traceback

    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()


def one_line(exc: BaseException) -> str:
    """Any exception as the one line a front door prints (a ThreadRagError's own message; for the rest, what
    went wrong and what to do, never a traceback)."""
    if isinstance(exc, ThreadRagError):
        return str(exc)
    first = (str(exc).splitlines() or [""])[0][:200]
    name = type(exc).__name__
    if isinstance(exc, (FileExistsError, NotADirectoryError)) and getattr(exc, "filename", None):
        blocker = _file_in_the_way(Path(exc.filename))
        if blocker is not None:
            return f"file system error: {blocker} is a file, where a folder is needed"
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"the disk is full ({exc.strerror}); free some space and try again"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        return f"file system error{where}: {exc.strerror or first or name}"
    if "exceed context window" in first or "context length" in first.lower():
        return f"the prompt is longer than the model's context ({first}); ask a narrower question or raise LLM_CTX"
    if "database or disk is full" in first:  # Chroma's SQLite on a full disk
        return f"the disk is full (the store said: {first}); free some space and try again"
    if name in ("ConnectError", "ConnectTimeout", "ReadTimeout", "ResponseError", "RequestError"):
        return f"the model server failed ({name}: {first}); is `ollama serve` running? or set CHAT_BACKEND=embedded"
    return f"unexpected {name}: {first} (run again with --debug, or THREAD_RAG_DEBUG=1, for where it happened)"


def why_missing(path: Path, what: str = "file") -> str:
    """Why ``path``, which does not exist, cannot be read: a loop of links, a link to nothing, or no such ``what``."""
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except RuntimeError:  # Python's word for links that go round
            return f"a loop of links that never reaches a {what}"
        except OSError:
            pass
        return f"a link to {printable(os.readlink(path))}, which does not exist"
    return f"no such {what}"


def _file_in_the_way(path: Path) -> Path | None:
    """The first of ``path`` and its parents that exists as something other than a folder (a folder was to be
    made or entered there), or None."""
    for p in (path, *path.parents):
        try:
            if p.exists() and not p.is_dir():
                return p
        except OSError:
            return None
    return None


class LibraryChangedError(ThreadRagError):
    """A generation a reader was reading left the store because another process replaced it: read again."""

    def __init__(self, message: str = "the library changed during the search; try again",
                 generations: set[tuple[int, int]] | frozenset = frozenset()):
        super().__init__(message)
        self.generations = set(generations)  # (serial, generation)s whose rows were not found
