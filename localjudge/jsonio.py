"""Bounded JSON reading: the one place the package parses JSON that comes from outside it (data files and rows,
trace files and span attributes, tool-call arguments, HTTP bodies).

`loads` checks the size and the nesting depth of the text before the parser sees it (a linear scan counting
brackets outside strings, never recursion), so no input can make `json.loads` recurse past Python's limit;
with `finite=True` it refuses NaN, Infinity and numbers that overflow to infinity (`1e400`). `check_value`
does the same checks, iteratively, on a value already parsed (a DataFrame cell, a records list, a span dict
given from Python). Both raise `JSONBoundsError`, whose message is one line without a location: callers put
where (file, line, field) in front. This module imports nothing of the package, so every layer may use it
(the bottom layer in pyproject.toml's import contract)."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

DEFAULT_MAX_DEPTH = 100  # arrays and objects inside one another; real data files, traces and calls stay far below
# the deepest any caller parses (HTTP bodies, answers checked against a client's schema): what Python's recursion limit
# let through before, less room for the caller's own stack, now refused before the parser starts
PARSER_DEPTH = 500
Problem = Literal["too_large", "too_deep", "not_utf8", "invalid", "not_finite"]


class JSONBoundsError(json.JSONDecodeError):
    """JSON refused: `kind` says why (too_large, too_deep, not_utf8, invalid, not_finite); `str()` is one line
    naming the problem and the limit, without the file or field (the caller's to add). A `json.JSONDecodeError`
    (so a `ValueError`), so a handler written for `json.loads` catches it: `msg`, `lineno` and `colno` are the
    parser's for `invalid`, the problem and the bracket past the limit for `too_deep`, line 1 column 1 else."""

    def __init__(
        self, kind: Problem, message: str, parser: json.JSONDecodeError | None = None, msg: str = "", line: int = 1, col: int = 1
    ):
        super().__init__(msg or message, "", 0)  # no document kept: the input may be megabytes
        if parser is not None:
            self.msg, self.pos, line, col = parser.msg, parser.pos, parser.lineno, parser.colno
        self.lineno, self.colno, self.args = line, col, (message,)
        self.kind, self.message = kind, message
        self.parser = parser  # for `invalid`, the parser's own error
        self.detail = str(parser).splitlines()[0][:200] if parser is not None else message  # as the parser words it

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.kind, self.message, self.parser, self.msg, self.lineno, self.colno))


# a string (to its closing quote, or to the end when it has none: one pass, never a retry), or a bracket
_TOKENS_B = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)
_TOKENS_S = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


def json_depth(data: str | bytes, stop_past: int | None = None) -> int:
    """How deep the arrays and objects of JSON text nest (0 for a scalar), counted in one linear pass without
    recursion and without parsing: brackets inside strings are skipped, so a valid document's depth is exact
    (an invalid one gets a number too; the parser rejects it afterwards). With `stop_past`, the count stops
    at the first level deeper than it (and returns that level)."""
    return _deepest(data, stop_past)[0]


def _deepest(data: str | bytes, stop_past: int | None) -> tuple[int, int]:
    """`json_depth`, and the offset of the bracket that reached that depth (-1 for a scalar)."""
    tokens = _TOKENS_B.finditer(data) if isinstance(data, bytes) else _TOKENS_S.finditer(data)
    depth = deepest = 0
    at = -1
    for m in tokens:
        c = m.group()
        if c in (b"[", b"{", "[", "{"):
            depth += 1
            if depth > deepest:
                deepest, at = depth, m.start()
                if stop_past is not None and depth > stop_past:
                    break
        elif c in (b"]", b"}", "]", "}"):
            depth = max(0, depth - 1)
    return deepest, at


def _not_constant(name: str) -> Any:
    raise JSONBoundsError("not_finite", f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONBoundsError("not_finite", f"{text[:40]} is not a finite number (it overflows a double)")
    return value


def loads(
    data: str | bytes,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_bytes: int | None = None,
    finite: bool = False,
    constants: bool = True,
) -> Any:
    """`data` parsed as JSON, or `JSONBoundsError`: more than `max_bytes` (when given), nested deeper than
    `max_depth` (checked before parsing), bytes that are not UTF-8, text that is not JSON (with its line and
    column), with `constants=False` the words NaN, Infinity and -Infinity (which JSON does not have), and with
    `finite` those and numbers that overflow to infinity (`1e400`) too."""
    if max_bytes is not None:
        size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise JSONBoundsError("too_large", f"{size} bytes of JSON, more than the limit of {max_bytes}")
    depth, at = _deepest(data, max_depth)
    if depth > max_depth:
        if isinstance(data, bytes):
            nl, line = data.rfind(b"\n", 0, at), data.count(b"\n", 0, at) + 1
        else:
            nl, line = data.rfind("\n", 0, at), data.count("\n", 0, at) + 1
        problem = f"nested more than {max_depth} levels deep (the limit)"
        message = f"JSON nested more than {max_depth} levels deep at line {line} column {at - nl} (the limit)"
        raise JSONBoundsError("too_deep", message, msg=problem, line=line, col=at - nl)
    try:
        if finite:
            return json.loads(data, parse_constant=_not_constant, parse_float=_finite_float)
        if not constants:
            return json.loads(data, parse_constant=_not_constant)
        return json.loads(data)
    except JSONBoundsError:  # from the hooks above
        raise
    except json.JSONDecodeError as e:
        msg = f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
        raise JSONBoundsError("invalid", msg, e) from None
    except UnicodeDecodeError:
        raise JSONBoundsError("not_utf8", "not UTF-8 text; save it as UTF-8 JSON") from None
    except RecursionError:  # not reached after the depth check; kept so that no input ends in a traceback
        raise JSONBoundsError("too_deep", f"JSON nested more than {max_depth} levels deep (the limit)") from None


def check_value(value: Any, *, max_depth: int = DEFAULT_MAX_DEPTH, finite: bool = False) -> None:
    """Nothing when `value` (dicts, lists and tuples of scalars) nests at most `max_depth` deep and, with `finite`,
    holds no NaN or infinite float; else `JSONBoundsError` naming the first offending place (`a.b[2]`). An
    iterative walk: it never recurses, whatever the depth."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        v, depth, path = stack.pop()
        if isinstance(v, float):
            if finite and not math.isfinite(v):
                raise JSONBoundsError("not_finite", f"{path or 'the value'}: {v} is not a finite number")
            continue
        if isinstance(v, dict):
            items: list[tuple[str, Any]] = [(f"{path}.{k}" if path else str(k), x) for k, x in v.items()]
        elif isinstance(v, list | tuple):
            items = [(f"{path}[{i}]", x) for i, x in enumerate(v)]
        else:
            continue
        if depth + 1 > max_depth:
            raise JSONBoundsError("too_deep", f"{path or 'the value'}: nested more than {max_depth} levels deep (the limit)")
        stack.extend((x, depth + 1, p) for p, x in reversed(items))


# ------------------------------------------------------------------------------- printed Python literals


def _literal_depth(text: str, stop_past: int) -> int:
    """The deepest nesting of ( [ { outside Python string literals ('...' or "...", backslash escapes), scanning
    linearly and stopping once past `stop_past`."""
    depth = deepest = 0
    quote = ""
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_past:
                    break
        elif ch in ")]}":
            depth -= 1
    return deepest


def python_literal(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH, max_chars: int = 64 << 20) -> Any:
    """A printed Python literal read back: strings, numbers, booleans, None, and lists, tuples, dicts and sets of
    them (what `str(value)` prints, e.g. DeepEval's printed turns in a user's own column); `ValueError` for any
    other text, text over `max_chars`, or nesting past `max_depth` (checked by a linear scan before the parser,
    so no text makes it recurse). Never evaluates: names, calls and operators other than a sign are refused."""
    import ast

    if len(text) > max_chars:
        raise ValueError(f"text of {len(text)} characters is over the {max_chars} a printed value may have")
    if _literal_depth(text, max_depth) > max_depth:
        raise ValueError(f"printed value nested more than {max_depth} levels deep (the limit)")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, MemoryError, RecursionError) as e:
        raise ValueError(f"not a printed Python value: {type(e).__name__}") from None

    def value(node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub | ast.UAdd)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, int | float | complex)
            and not isinstance(node.operand.value, bool)
        ):
            return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
        if isinstance(node, ast.List):
            return [value(x) for x in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(value(x) for x in node.elts)
        if isinstance(node, ast.Set):
            return {value(x) for x in node.elts}
        if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
            return {value(k): value(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None}
        raise ValueError(f"not a printed Python value: {type(node).__name__} at line {node.lineno}")

    try:
        return value(tree)  # recursion bounded by the depth checked above
    except TypeError as e:  # an unhashable dict key or set member
        raise ValueError(f"not a printed Python value: {e}") from None
