"""The one place that decides which engine compiles a constraint value: `engine_for(spec)`.

Engines by name: the built-in "automaton" (outlines-core's token automaton: `spec.Regex`) and "llguidance"
(`spec.JSONSchema`, `spec.Lark`), then those installed packages add through the `localjudge.constraint_engines`
entry-point group (`name = "package.module:EngineClass"`, a `base.ConstraintEngine` subclass), looked up only
when no built-in engine accepts a value or one is asked for by name. `engine_for` takes the first engine, in
that order, that accepts the value's type. Why the automaton keeps `Regex` (judges' own formats): measured in
docs/constraints.md.

Engines are built once per process; importing this module imports no engine (numpy, outlines-core and
llguidance load with the engine that needs them).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ..errors import ConstraintError, InputError

if TYPE_CHECKING:
    from .base import Compiled, ConstraintEngine, TokenVocab

BUILTIN = {  # name -> "module:class", in the order `engine_for` tries them
    "automaton": "localjudge.constraints.automaton:AutomatonEngine",
    "llguidance": "localjudge.constraints.llg:LLGEngine",
}
_engines: dict[str, ConstraintEngine] = {}


def _check(obj: Any, where: str) -> ConstraintEngine:
    from .base import ConstraintEngine

    if isinstance(obj, type) and issubclass(obj, ConstraintEngine):
        obj = obj()
    if not isinstance(obj, ConstraintEngine):
        raise InputError(f"{where} gives {obj!r}, not a ConstraintEngine subclass; point it at one")
    return obj


def get(name: str) -> ConstraintEngine:
    """The engine registered as `name`: built in, registered in this process, or an installed plugin's (loaded
    once); `InputError` naming the known ones when there is none."""
    hit = _engines.get(name)
    if hit is not None:
        return hit
    if name in BUILTIN:
        module, attr = BUILTIN[name].split(":")
        engine = _check(getattr(import_module(module), attr), f"built-in engine {name!r}")
    else:
        from ..registry import plugins

        ep = plugins.find(plugins.CONSTRAINT_ENGINES, name)
        if ep is None:
            raise InputError(f"unknown constraint engine {name!r}; known: {', '.join(names())}")
        engine = _check(plugins.load(ep), plugins.describe(ep))
        if engine.name != name:
            raise plugins.PluginError(f"{plugins.describe(ep)}: the engine's name is {engine.name!r}; make it {name!r}")
    _engines[name] = engine
    return engine


def register(engine: ConstraintEngine) -> None:
    """Register an engine object under its `name` in this process (tried after the built-in ones)."""
    _engines[engine.name] = _check(engine, f"engine {engine.name!r}")


def names() -> list[str]:
    """Every engine name, in the order `engine_for` tries them: built-in, registered here, then installed plugins
    (declared, not imported)."""
    from ..registry import plugins

    out = list(BUILTIN) + [n for n in _engines if n not in BUILTIN]
    return out + [n for n in plugins.names(plugins.CONSTRAINT_ENGINES) if n not in out]


def engine_for(spec: Any, name: str | None = None) -> ConstraintEngine:
    """The engine that compiles `spec`: `name`'s when given (`ConstraintError` when it does not accept this kind of
    value), else the first in `names()` order that accepts its type."""
    if name is not None:
        engine = get(name)
        if not isinstance(spec, engine.accepts):
            raise ConstraintError(f"constraint engine {name!r} does not compile {type(spec).__name__} constraints")
        return engine
    for n in names():
        engine = get(n)
        if isinstance(spec, engine.accepts):
            return engine
    raise ConstraintError(f"no constraint engine compiles {type(spec).__name__} constraints; install one")


def compile(spec: Any, vocab: TokenVocab, name: str | None = None) -> Compiled:
    """`spec` compiled for `vocab` by `engine_for(spec, name)`."""
    return engine_for(spec, name).compile(spec, vocab)
