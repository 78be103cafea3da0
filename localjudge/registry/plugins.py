"""Plugins: what installed packages add through entry points, found lazily and loaded one by one.

    localjudge.backends   scheme = "package.module:BackendClass"    a model backend (`--model scheme:...`)
    localjudge.formats    kind   = "package.module:FormatClass"     an output format (`[output] kind = ...`)
    localjudge.constraint_engines
                          name   = "package.module:EngineClass"     a constraint engine (constraints/registry.py)
    localjudge.judges     name   = "package.judges"                 a folder of judge TOML files: a package
                                                                   (its folder), or an object giving a path
                                                                   (a str/Path, or a function returning one)

Entry points are read from the installed distributions' metadata on the first lookup of a name
localjudge does not know itself, and for listings (`localjudge judges list`, `localjudge models
options`), never at import time. A plugin that fails to load gives a one-line `PluginError` naming the
distribution and the entry point, and only where that plugin is asked for: other commands never see it.

A plugin's import runs in a helper thread, bounded by `import_timeout()` seconds (30, or the environment's
`LOCALJUDGE_PLUGIN_IMPORT_TIMEOUT`), and whatever it raises is caught there, `SystemExit`,
`KeyboardInterrupt` and `GeneratorExit` included: a plugin that exits, interrupts or hangs while importing is
one `PluginError` naming it, never another exit code, "Aborted!" or a command that never ends. A real Ctrl-C
reaches the main thread (which only waits for the helper), so it still aborts the command. A plugin that
imports in time is used exactly as if imported directly; one that did not is skipped for the rest of the
process (its thread may still be running, holding its module's import lock), never waited for again.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ..errors import InputError

BACKENDS = "localjudge.backends"
FORMATS = "localjudge.formats"
JUDGES = "localjudge.judges"
CONSTRAINT_ENGINES = "localjudge.constraint_engines"
GROUPS = (BACKENDS, FORMATS, JUDGES, CONSTRAINT_ENGINES)
IMPORT_TIMEOUT_ENV = "LOCALJUDGE_PLUGIN_IMPORT_TIMEOUT"
IMPORT_TIMEOUT_S = 30.0  # generous: a bound refuses a plugin that hangs, never one that is merely slow to import

_stuck: set[str] = set()  # modules whose import did not finish within the bound (their threads may still run)


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


def import_timeout() -> float:
    """Seconds a plugin's import may take: `LOCALJUDGE_PLUGIN_IMPORT_TIMEOUT` when set, else 30; a value
    that is not a positive number of seconds is a `PluginError` naming the variable."""
    raw = os.environ.get(IMPORT_TIMEOUT_ENV, "").strip()
    if not raw:
        return IMPORT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise PluginError(f"{IMPORT_TIMEOUT_ENV}={raw!r} is not a positive number of seconds; set it to e.g. 30 or unset it")
    return value


def load(ep: EntryPoint) -> Any:
    """Import what the entry point names, within `import_timeout()` seconds; any failure (an exception,
    `SystemExit`, `KeyboardInterrupt` or `GeneratorExit` raised by the plugin, or an import still running at
    the bound) is a one-line `PluginError` naming the plugin."""
    stuck = next((m for m in _stuck if ep.module == m or ep.module.startswith(m + ".")), None)
    if stuck is not None:
        raise PluginError(f"{describe(ep)} skipped: module {stuck!r} did not finish importing earlier; fix or uninstall it")
    timeout = import_timeout()
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, ep.load()))
        except BaseException as e:  # a plugin's sys.exit() or raise KeyboardInterrupt must not end the command
            outcome.append((False, e))

    thread = threading.Thread(target=run, name=f"localjudge plugin import {ep.name}", daemon=True)
    thread.start()
    thread.join(timeout)  # a real Ctrl-C interrupts this wait in the main thread and aborts as usual
    if not outcome:
        _stuck.add(ep.module)
        raise PluginError(
            f"{describe(ep)} did not finish importing in {timeout:g} s; skipped (fix or uninstall it, "
            f"or raise {IMPORT_TIMEOUT_ENV})"
        )
    ok, value = outcome[0]
    if ok:
        return value
    raise PluginError(f"{describe(ep)} failed to load: {type(value).__name__}: {_one_line(value)}; fix or uninstall it")


def refresh() -> None:
    """Forget what was read, so packages installed since are found (tests, long-lived processes)."""
    _group.cache_clear()


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else "(no message)"
