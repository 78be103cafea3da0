"""The one sha256-of-a-file helper: model files (registry checks, pulls, `models add`) and labels files."""

from __future__ import annotations

import hashlib
import os


def sha256_file(path: str | os.PathLike[str], block: int = 1 << 22) -> str:
    """The hex sha256 of the file's bytes, read in `block`-byte pieces (never whole into memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(block):
            h.update(chunk)
    return h.hexdigest()
