"""The judge registry: built-in TOML files plus a user's `--judges-dir`, a plain dict by name.

User files get the same validation as built-ins; a user file with a built-in's name replaces it.
Files whose name starts with `_` are ignored (drafts, shared snippets).
"""

from __future__ import annotations

import difflib
import functools
from importlib import resources
from pathlib import Path

from ..errors import JudgeSpecError, UnknownJudgeError
from .judge import Judge
from .spec import read_spec, spec_from_dict

BUILTIN_PACKAGE = "localjudge.judges"


def load_judge_file(path: str | Path) -> Judge:
    """Load and validate one judge file (TOML)."""
    p = Path(path)
    return Judge(read_spec(p), str(p))


def judge_from_dict(data: dict, origin: str = "<dict>") -> Judge:
    """A judge from an already-parsed spec (the Python equivalent of a judge file)."""
    return Judge(spec_from_dict(data, origin), origin)


def _builtin_files() -> list[tuple[str, str]]:
    root = resources.files(BUILTIN_PACKAGE).joinpath("builtin")
    return sorted(
        (f.name, f.read_text("utf-8")) for f in root.iterdir() if f.name.endswith(".toml") and not f.name.startswith("_")
    )


@functools.cache
def _builtins() -> dict[str, Judge]:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    out: dict[str, Judge] = {}
    for fname, text in _builtin_files():
        origin = f"builtin/{fname}"
        j = Judge(spec_from_dict(tomllib.loads(text), origin), origin)
        if j.name != fname[:-5]:
            raise JudgeSpecError(f"judge file {origin}: key 'name': {j.name!r} differs from the file name; rename one")
        out[j.name] = j
    return out


def _user_judges(judges_dir: str | Path) -> dict[str, Judge]:
    d = Path(judges_dir)
    if not d.is_dir():
        raise JudgeSpecError(f"judges dir {d} does not exist or is not a directory; pass an existing folder of .toml files")
    out: dict[str, Judge] = {}
    for p in sorted(d.glob("*.toml")):
        if p.name.startswith("_"):
            continue
        j = load_judge_file(p)
        if j.name in out:
            raise JudgeSpecError(f"judge file {p}: key 'name': {j.name!r} is also defined in {out[j.name].origin}; rename one")
        out[j.name] = j
    return out


def registry(judges_dir: str | Path | None = None) -> dict[str, Judge]:
    """All judges by name: built-ins, then the user's files (which may replace a built-in)."""
    out = dict(_builtins())
    if judges_dir is not None:
        out.update(_user_judges(judges_dir))
    return out


def list_judges(judges_dir: str | Path | None = None) -> list[Judge]:
    """Every judge, sorted by name."""
    reg = registry(judges_dir)
    return [reg[k] for k in sorted(reg)]


def get_judge(name: str, judges_dir: str | Path | None = None) -> Judge:
    """A judge by name, or a path to a judge file; unknown names suggest the closest ones."""
    if name.endswith(".toml") or "/" in name:
        return load_judge_file(name)
    reg = registry(judges_dir)
    if name in reg:
        return reg[name]
    close = difflib.get_close_matches(name, list(reg), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else "run `localjudge judges list` to see them"
    raise UnknownJudgeError(f"unknown judge {name!r}; {hint}")
