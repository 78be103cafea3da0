"""Plugins: what installed packages add through entry points, found lazily and loaded one by one.

    localjudge.backends   scheme = "package.module:BackendClass"    a model backend (`--model scheme:...`)
    localjudge.formats    kind   = "package.module:FormatClass"     an output format (`[output] kind = ...`)
    localjudge.judges     name   = "package.judges"                 a folder of judge TOML files: a package
                                                                   (its folder), or an object giving a path
                                                                   (a str/Path, or a function returning one)

Entry points are read from the installed distributions' metadata on the first lookup of a name
localjudge does not know itself, and for listings (`localjudge judges list`, `localjudge models
options`), never at import time. A plugin that fails to load gives a one-line `PluginError` naming the
distribution and the entry point, and only where that plugin is asked for: other commands never see it.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from .errors import InputError

BACKENDS = "localjudge.backends"
FORMATS = "localjudge.formats"
JUDGES = "localjudge.judges"
GROUPS = (BACKENDS, FORMATS, JUDGES)


class PluginError(InputError):
    """An installed plugin cannot be loaded or gives the wrong kind of object; names the plugin (exit 2)."""


@functools.cache
def _group(group: str) -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)  # the first distribution on the path wins, as for imports
    return found


def names(group: str) -> list[str]:
    """The names the installed plugins declare in `group` (reads metadata only; imports nothing)."""
    return sorted(_group(group))


def find(group: str, name: str) -> EntryPoint | None:
    """The entry point named `name` in `group`, or None."""
    return _group(group).get(name)


def describe(ep: EntryPoint) -> str:
    """`plugin 'dist' entry point 'name = value' (group)`: how errors name a plugin."""
    dist = ep.dist.name if ep.dist is not None else "?"
    return f"plugin {dist!r} entry point '{ep.name} = {ep.value}' ({ep.group})"


def load(ep: EntryPoint) -> Any:
    """Import what the entry point names; any failure is a one-line `PluginError` naming the plugin."""
    try:
        return ep.load()
    except Exception as e:  # a plugin's own bug must not become a traceback in an unrelated command
        raise PluginError(f"{describe(ep)} failed to load: {type(e).__name__}: {_one_line(e)}; fix or uninstall it") from None


def refresh() -> None:
    """Forget what was read, so packages installed since are found (tests, long-lived processes)."""
    _group.cache_clear()


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else "(no message)"
