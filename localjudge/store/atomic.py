"""The one atomic write: a file appears whole under its name, or not at all.

Data goes to a temporary file beside the target (same directory, so the rename cannot cross file
systems), is flushed and fsynced, gets the mode a plain `open()` would give (or the replaced file's),
then is renamed over the target. On any error the temporary file is removed and the target is left
as it was. Callers decide what an `OSError` means (a run's exports raise `StorageError`; a cache
entry that cannot be written is simply recomputed next time).

Only regular files are replaced. A target that exists and is something else (a directory, a FIFO, a
device such as /dev/full, a socket) is refused with `NotAFileError` before anything is written, so it is
left untouched (a rename would put a file in its place). A symbolic link is written through: the file it
finally points to is replaced atomically (the temporary file goes beside that file) and the link stays
a link; a link that leads nowhere (dangling, a loop) or to something that is not a regular file is
refused. Between the check and the rename another process could put something else there; that race is
not guarded against.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class NotAFileError(OSError):
    """The target of a write exists and is not a regular file, or is a symbolic link that does not lead to
    one; the message says what it is (callers map it like any `OSError`: `StorageError`, exit 5, in the CLI)."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def regular_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to `path` replaces: `path` itself (existing or not), or for a symbolic link the file it
    finally points to. Raises `NotAFileError` for an existing target that is not a regular file and for a
    link that leads to none (dangling, a loop, a directory, a device)."""
    p = Path(path)
    if p.is_symlink():
        try:
            p = Path(os.path.realpath(p, strict=True))
        except OSError:
            raise NotAFileError(
                f"{path} is a symbolic link to {os.readlink(path)!r}, which leads to no file (it dangles or loops)"
            ) from None
    try:
        mode = p.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return p  # a new file (or one under a file: creating it fails as before)
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        via = f" (through the symbolic link {path})" if p != Path(path) else ""
        raise NotAFileError(f"{p}{via} is {kind}, not a regular file")
    return p


def _mode_for(path: Path) -> int:
    """The file's current mode, or what a plain open() would give a new file (mkstemp makes 0600)."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


@contextmanager
def replacing(path: str | os.PathLike[str], mkdir: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside `path`; when the block ends without error it replaces `path` (for a
    symbolic link: the file it points to). `NotAFileError` before anything is written when `path` is not a
    regular file or a link to one (see `regular_target`).

    The block writes the temporary file however it likes (it must close it); an exception removes it."""
    p = regular_target(path)
    if mkdir:
        p.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(p))
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], data: str | bytes, mkdir: bool = False) -> Path:
    """Write text (UTF-8) or bytes to `path` atomically; returns the path."""
    with replacing(path, mkdir=mkdir) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
    return Path(path)


def write_json_atomic(path: str | os.PathLike[str], obj: Any, mkdir: bool = False) -> Path:
    """Write `obj` as indented JSON (non-ASCII kept, unknown types as str) atomically."""
    return write_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n", mkdir=mkdir)
