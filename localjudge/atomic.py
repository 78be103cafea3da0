"""The one atomic write: a file appears whole under its name, or not at all.

Data goes to a temporary file beside the target (same directory, so the rename cannot cross file
systems), is flushed and fsynced, gets the mode a plain `open()` would give (or the replaced file's),
then is renamed over the target. On any error the temporary file is removed and the target is left
as it was. Callers decide what an `OSError` means (a run's exports raise `StorageError`; a cache
entry that cannot be written is simply recomputed next time).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


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
    """Yield a temporary path beside `path`; when the block ends without error it replaces `path`.

    The block writes the temporary file however it likes (it must close it); an exception removes it."""
    p = Path(path)
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
