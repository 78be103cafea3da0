"""The judge registry: built-in TOML files, installed plugins' judge folders, a user's `--judges-dir`.

User files get the same validation as built-ins; a user file with a built-in's name replaces it.
Files whose name starts with `_` are ignored (drafts, shared snippets). Plugins add folders through the
`localjudge.judges` entry point group (plugins.py); they are read only when a name is not a built-in or
user judge, and for listings. A plugin judge never replaces a built-in one (that is an error naming both);
a broken plugin is an error only where its judges are asked for (`PluginError`, naming the plugin).
"""

from __future__ import annotations

import difflib
import functools
import tomllib
from importlib import resources
from importlib.resources.abc import Traversable
from os import PathLike
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import JudgeSpecError, LocalJudgeError, UnknownJudgeError
from ..registry.plugins import PluginError
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


def _plugin_folder(obj: Any) -> Traversable:
    """A plugin entry point's object as a folder: a package (its folder), a path, or a function giving either."""
    if callable(obj) and not isinstance(obj, ModuleType):
        obj = obj()
    if isinstance(obj, ModuleType):
        return resources.files(obj)
    if isinstance(obj, (str, PathLike)):
        return Path(obj)
    if isinstance(obj, Traversable):
        return obj
    raise TypeError(f"gives {type(obj).__name__}; point it at a package, a folder path, or a function returning one")


@functools.cache
def _plugin_judges() -> tuple[dict[str, Judge], tuple[str, ...]]:
    """Every installed plugin's judges by name, and one line per plugin that failed (it adds no judge)."""
    from ..registry import plugins

    out: dict[str, Judge] = {}
    problems: list[str] = []
    builtins = _builtins()
    for name in plugins.names(plugins.JUDGES):
        ep = plugins.find(plugins.JUDGES, name)
        assert ep is not None
        found: dict[str, Judge] = {}
        try:
            try:
                folder = _plugin_folder(plugins.load(ep))
            except TypeError as e:
                raise plugins.PluginError(f"{plugins.describe(ep)} {e}") from None
            if not folder.is_dir():
                raise plugins.PluginError(f"{plugins.describe(ep)}: {folder} is not a folder of judge .toml files")
            files = sorted((f for f in folder.iterdir() if f.name.endswith(".toml") and not f.name.startswith("_")), key=str)
            for f in files:
                origin = f"plugin {ep.dist.name if ep.dist else name}: {f.name}"
                try:
                    j = Judge(spec_from_dict(tomllib.loads(f.read_text("utf-8")), origin), origin)
                except tomllib.TOMLDecodeError as e:
                    raise JudgeSpecError(f"judge file {origin}: not valid TOML ({e})") from None
                if j.name in builtins or j.name in out or j.name in found:
                    other = builtins[j.name].origin if j.name in builtins else (out.get(j.name) or found[j.name]).origin
                    raise JudgeSpecError(f"judge file {origin}: key 'name': {j.name!r} is also defined in {other}; rename one")
                found[j.name] = j
        except LocalJudgeError as e:
            problems.append(str(e) if isinstance(e, plugins.PluginError) else f"{plugins.describe(ep)}: {e}")
            continue
        out.update(found)
    return out, tuple(problems)


def plugin_problems() -> list[str]:
    """One line per installed judge plugin that could not be read (listings show them; lookups raise them)."""
    return list(_plugin_judges()[1])


def registry(judges_dir: str | Path | None = None, *, plugins: bool = True) -> dict[str, Judge]:
    """All judges by name: built-ins, installed plugins' judges, then the user's files (which may replace
    a built-in). `plugins=False`: without reading the plugins (a lookup of a name found without them)."""
    out = dict(_builtins())
    if plugins:
        out.update(_plugin_judges()[0])
    if judges_dir is not None:
        out.update(_user_judges(judges_dir))
    return out


def list_judges(judges_dir: str | Path | None = None, *, plugins: bool = True) -> list[Judge]:
    """Every judge, sorted by name (a broken plugin adds none: see `plugin_problems`); `plugins=False`: the
    built-in (and `judges_dir`) judges alone, whatever is installed."""
    reg = registry(judges_dir, plugins=plugins)
    return [reg[k] for k in sorted(reg)]


def get_judge(name: str, judges_dir: str | Path | None = None) -> Judge:
    """A judge by name, or a path to a judge file; unknown names suggest the closest ones."""
    if name.endswith(".toml") or "/" in name:
        return load_judge_file(name)
    reg = registry(judges_dir, plugins=False)
    if name in reg:
        return reg[name]
    reg = registry(judges_dir)  # not built in, not the user's: read the installed plugins
    if name in reg:
        return reg[name]
    problems = plugin_problems()
    if problems:  # the judge may be in a plugin that cannot be read: say so rather than "unknown"
        raise PluginError(f"unknown judge {name!r}, and {problems[0]}")
    close = difflib.get_close_matches(name, list(reg), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else "run `localjudge judges list` to see them"
    raise UnknownJudgeError(f"unknown judge {name!r}; {hint}")
