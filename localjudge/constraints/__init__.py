"""Constraints as data, and the engines that compile them for a model's vocabulary.

Layout: `spec.py` (the typed constraint values a format declares: `Regex`, `JSONSchema`, `Lark`), `base.py`
(`TokenVocab`, the per-request `Constraint` cursor the decode loop drives, the `ConstraintEngine` seam),
`registry.py` (which engine compiles which value; the `localjudge.constraint_engines` plugin group),
`automaton.py` (outlines-core's token automaton, disk-cached), `llg.py` + `llg_search.py` (llguidance, with
the close path as the budget guarantee), `llg_bounds.py` (what a client's grammar or schema may be before
llguidance sees it), `pointer.py` (JSON pointers in `$ref`s), `sandbox.py` (the automaton's bounded
compile in a child process, for serve).

Importing the package imports only the values and the registry: no engine, no numpy.
"""

from __future__ import annotations

from .registry import compile, engine_for, get, names, register
from .spec import ConstraintSpec, JSONSchema, Lark, Regex

__all__ = ["ConstraintSpec", "JSONSchema", "Lark", "Regex", "compile", "engine_for", "get", "names", "register"]
