"""The one place that writes files: atomic replace and inter-process locks.

Writes go to a temporary file in the same directory, are fsynced, then renamed over the
target, so a reader (or a process killed mid-write) sees either the old or the new file,
never a torn one. ``file_lock`` is an advisory ``fcntl`` lock usable across processes.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from .errors import CorruptFileError


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` whole or not at all (temporary file, fsync, rename). ``exclusive``: only if
    ``path`` does not exist yet; when another writer made it first, theirs is kept (no error)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)  # fails if another writer made it first: theirs wins
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def atomic_write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 1) -> None:
    data = json.dumps(obj, ensure_ascii=False, indent=indent, sort_keys=False).encode("utf-8")
    atomic_write_bytes(path, data)


def read_json(path: str | os.PathLike, default: Any = None) -> Any:
    """Read JSON; a missing file gives ``default``; an unreadable one is set aside and reported."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return default
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        aside = set_aside(path)
        where = "left in place (read-only)" if aside == path else f"moved to {aside}"
        raise CorruptFileError(f"{path} is corrupt ({exc.__class__.__name__}); {where}") from exc


def set_aside(path: Path) -> Path:
    """Rename a damaged file to ``<name>.corrupt-<timestamp>`` and return the new path (``path`` itself where the
    folder cannot be written)."""
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.EROFS, errno.EACCES):
            raise
        return path  # a read-only library: the damaged file stays where it is
    return aside


def atomic_replace_dir(tmp_dir: Path, final_dir: Path) -> None:
    """Move a fully written directory into place (old one removed after the swap)."""
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if final_dir.exists():
        old = final_dir.with_name(f".{final_dir.name}.old-{os.getpid()}")
        os.replace(final_dir, old)
    os.replace(tmp_dir, final_dir)
    _fsync_dir(final_dir.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


# ``.<name>.<pid>.tmp`` / ``.<name>.old-<pid>``; mkstemp names (atomic_write_bytes) end in 8 random characters
_PID_TEMP = re.compile(r"\..+\.(?:(\d{1,7})\.tmp|old-(\d+))")


def remove_stale_temporaries(directory: Path, *, owned: bool = False, max_age: float = 600.0) -> list[Path]:
    """Remove temporaries that writers killed mid-write left in ``directory``: dot-named ``*.tmp`` and
    ``*.old-<pid>`` files or folders. One whose name carries a PID goes when that process is gone;
    any other when the caller ``owned`` the directory (holds the lock all its writers take) or it has
    not changed for ``max_age`` seconds. Returns what was removed."""
    try:
        entries = list(Path(directory).iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    for p in entries:
        if not p.name.startswith(".") or not (p.name.endswith(".tmp") or ".old-" in p.name):
            continue
        m = _PID_TEMP.fullmatch(p.name)
        try:
            stale = not pid_alive(int(m[1] or m[2])) if m else (owned or time.time() - p.lstat().st_mtime > max_age)
        except FileNotFoundError:
            continue
        if stale:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            removed.append(p)
    return removed


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, *, shared: bool = False, timeout: float | None = None) -> Iterator[None]:
    """Hold an advisory lock on ``path`` (created if needed) for the duration of the block. On a read-only file
    system the lock file is opened for reading (a lock needs no write access), or skipped when there is none."""
    path = Path(path)
    fd = _lock_file(path)
    if fd is None:  # a read-only file system without the lock file: no process can write there to take it
        yield
        return
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        if timeout is None:
            fcntl.flock(fd, mode)
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"timed out waiting for lock {path}")
                    time.sleep(0.05)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _lock_file(path: Path) -> int | None:
    """An open descriptor of the lock file ``path`` (made, with its folder, if needed); opened for reading where it
    cannot be written; None where it does not exist and cannot be made (a read-only file system or folder)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno not in (errno.EROFS, errno.EACCES):
            raise
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None


def read_only(path: str | os.PathLike) -> bool:
    """``path`` (an existing folder) cannot be written: a read-only mount, or no write permission."""
    return not os.access(path, os.W_OK)
