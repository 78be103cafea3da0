"""The manifest of models pulled from a hub or added by hand: `models_home()/manifest.json`.

One entry per local model name: where its file is, the sha256 recorded when it arrived (the registry's
pin when there is one, else the digest computed on first pull or add: "unpinned"), where it came
from (hub repo, file, revision and commit, or the path it was added from) and what its GGUF metadata
says. `models.resolve_model` reads it, so `--model NAME` works after `models pull` / `models add`.

Only complete, verified files are ever recorded: a pull writes into `models_home()/.partial/` and
renames the file into place after its digest checks out; an entry is written after the rename. The
manifest itself is replaced atomically, under an exclusive lock (two pulls at once do not lose an
entry).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import ModelNotFoundError
from ..paths import models_home
from ..store.atomic import write_json_atomic

MANIFEST = "manifest.json"
PARTIAL_DIR = ".partial"  # where downloads in progress live; never read by the model loader


def manifest_path() -> Path:
    """The manifest file in the models home."""
    return models_home() / MANIFEST


def partial_dir() -> Path:
    """The staging folder for transfers in progress (inside the models home, so renames stay on one disk)."""
    return models_home() / PARTIAL_DIR


def read_manifest() -> dict[str, dict[str, Any]]:
    """Every recorded model by name ({} when there is no manifest or it cannot be read)."""
    p = manifest_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    models = data.get("models") if isinstance(data, dict) else None
    return {str(k): v for k, v in models.items() if isinstance(v, dict)} if isinstance(models, dict) else {}


def entry_path(entry: dict[str, Any]) -> Path:
    """The absolute path of an entry's file (relative paths are relative to the models home).

    An entry resolves only inside the models home (after `..` and symlinks): a manifest that names any
    other file raises `ModelNotFoundError`. The one exception is a file linked by `models add --link`
    (`"linked": true`), which stays where the user put it: an absolute path to a `.gguf` file."""
    raw = str(entry.get("path", ""))
    p = Path(raw)
    if entry.get("linked") is True and entry.get("source") == "add" and p.is_absolute() and p.suffix.lower() == ".gguf":
        return p
    full = p if p.is_absolute() else models_home() / p
    if not raw or "\0" in raw or not is_inside_models_home(full):
        raise ModelNotFoundError(
            f"the manifest {str(manifest_path())!r} names {raw!r}, outside the models home {str(models_home())!r}; "
            "it is not used: pull or add the model again"
        )
    return full


def entry_exists(entry: dict[str, Any] | None) -> bool:
    """Whether an entry names a file that exists where it may be (False for one outside the models home)."""
    if entry is None:
        return False
    try:
        return entry_path(entry).exists()
    except ModelNotFoundError:
        return False


def get_entry(name: str) -> dict[str, Any] | None:
    """The manifest entry of `name`, or None."""
    return read_manifest().get(name)


@contextmanager
def _locked() -> Iterator[None]:
    home = models_home()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".manifest.lock", "a+") as fh:
        try:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - not POSIX: best effort, no lock
            pass
        yield


def put_entry(name: str, entry: dict[str, Any]) -> None:
    """Record (or replace) `name`'s entry; paths inside the models home are stored relative to it."""
    entry = dict(entry)
    p = Path(str(entry["path"]))
    try:
        entry["path"] = str(p.resolve().relative_to(models_home().resolve()))
    except ValueError:
        entry["path"] = str(p)
    with _locked():
        models = read_manifest()
        models[name] = entry
        write_json_atomic(manifest_path(), {"version": 1, "models": dict(sorted(models.items()))}, mkdir=True)


def remove_entry(name: str) -> bool:
    """Forget `name` (its file is left alone); True when there was an entry."""
    with _locked():
        models = read_manifest()
        if name not in models:
            return False
        del models[name]
        write_json_atomic(manifest_path(), {"version": 1, "models": models}, mkdir=True)
    return True


def is_inside_models_home(path: str | os.PathLike[str]) -> bool:
    """Whether `path` lies inside the models home (pulled and copied files do; linked files do not)."""
    try:
        Path(path).resolve().relative_to(models_home().resolve())
        return True
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop
        return False
