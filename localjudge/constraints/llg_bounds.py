"""What a client's grammar or schema may be before llguidance sees it: size, rules, and reference depth.

llguidance validates a grammar by walking its rules recursively on the calling thread's stack, so a
deep enough chain of references overflows it and kills the process (a segfault: nothing to catch, no
log). Measured on llguidance 1.x with `validate_grammar_with_warnings` on an 8 MB thread stack (the
stack of the threads that plan requests and run the engine), the process dies at:

  * a Lark rule chain `r0: r1 "a" | "b"`, `r1: r2 ...`: about 2,650 rules deep (2,600 answered);
    the same with `rN: "(" rN+1 ")"` or `rN: rN+1`: 2,650; a chain of terminals `T0: T1 "a"`: 3,550;
    a cycle of rules (`rN: "(" rN+1 ")" | "x"`, the last referring to r0) 2,650 long, too: the walk
    follows a cycle as far as a chain, which is why a cycle counts all its rules;
  * JSON schema `$ref` chains (in `response_format`/`tools` or in a Lark `%json {...}` block):
    `{"$ref"}` aliases 2,450 deep; `{"type": "array", "items": {"$ref": next}}` 1,075; `{"anyOf":
    [{"$ref": next}, {"type": "null"}]}` 1,025 (each of the last two is 2 steps per level as
    counted here: 2,050 to 2,150);
  * not at all for inline nesting (llguidance refuses a `%json` block nested past 128 levels, and
    nesting in parentheses or a regex, with an error), nor for 102,400 rules.

The matcher itself (built on the engine thread once a grammar validated) survived every chain that
validated. So every grammar and schema from a client is checked here, in pure Python and without
recursion, before any llguidance call, against bounds a tenth of those: the longest chain of
references `MAX_REF_DEPTH` (counted over the rule graph, where a cycle, a recursive grammar, counts
as long as the rules in it, which bounds any walk through it), `MAX_RULES` rules, `MAX_GRAMMAR_BYTES`
of Lark text. A Lark rule's `%json` block counts as long as its schema's own chain. A schema's chain is
counted over `schema_graph` (every local `$ref` resolved wherever it points, under any keyword): a bound
checked by walking a fixed set of keywords was stepped around by a chain under `x` (issue 43). A server also
runs llguidance on a client's input in a child process first (`isolation`, `serve/core/compile_guard.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import InputError
from . import schema_graph

MAX_REF_DEPTH = 200  # steps in the longest chain of references (native crash: about 2,050 and more)
MAX_RULES = 10_000  # rules and terminals of one Lark grammar (102,400 validated without harm)
MAX_GRAMMAR_BYTES = 1024 * 1024  # a Lark grammar's text, the same as a schema's JSON (`LLG_MAX_SCHEMA_BYTES`)

_HEAD = re.compile(r"[ \t]*[?!]?([A-Za-z_][A-Za-z0-9_]*)(?:\.-?\d+)?[ \t]*(?:\[[^\]\n]*\])?[ \t]*:")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BLOCK = re.compile(r"%([A-Za-z_]+)[ \t]*\{")
_DIRECTIVE = re.compile(r"[ \t]*%(?:ignore|import|declare|llguidance|override|extend)\b")


class BadBlock(ValueError):
    """A Lark rule's `%json` schema that no compiler can read (the message names the rule)."""


class TooDeep(ValueError):
    """A JSON text nested deeper than Python parses (it is past `MAX_REF_DEPTH` anyway)."""


def longest_chain(edges: dict[Any, list[Any]], weight: Callable[[Any], int]) -> tuple[int, list[Any]]:
    """The heaviest path through a directed graph (`edges`: node -> successors; every node a key) where a
    strongly connected component (a cycle) weighs the sum of its nodes' `weight`s, as a walk through it may
    visit each of them; returns (its weight, the nodes of one such path, at most 6). Iterative: Tarjan's
    components, then a pass in reverse topological order."""
    index: dict[Any, int] = {}
    low: dict[Any, int] = {}
    comp: dict[Any, int] = {}
    comps: list[list[Any]] = []  # in reverse topological order (Tarjan's emits sinks first)
    stack: list[Any] = []
    on: set[Any] = set()
    for root in edges:
        if root in index:
            continue
        work: list[tuple[Any, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on.add(node)
            succ = edges[node]
            if i < len(succ):
                work.append((node, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:  # returning to the parent
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp[m] = len(comps)
                    members.append(m)
                    if m == node:
                        break
                comps.append(members)
    best: list[int] = []
    nxt_comp: list[int | None] = []
    for c, members in enumerate(comps):  # successors' components come earlier in this order
        own = sum(weight(m) for m in members)
        after, via = 0, None
        for m in members:
            for s in edges[m]:
                sc = comp[s]
                if sc != c and best[sc] > after:
                    after, via = best[sc], sc
        best.append(own + after)
        nxt_comp.append(via)
    if not comps:
        return 0, []
    top = max(range(len(comps)), key=lambda c: best[c])
    path: list[Any] = []
    cur: int | None = top
    while cur is not None and len(path) < 6:
        path.append(comps[cur][0])
        cur = nxt_comp[cur]
    return best[top], path


def schema_depth(schema: Any) -> int:
    """The longest chain of subschemas and local `$ref`s in `schema` (each nesting step and each `$ref`
    followed is one step; a recursive `$ref` counts the subschemas of its cycle once), over
    `schema_graph.build`: a `$ref` is followed wherever it points, under any keyword. `BadRef` when a local
    `$ref` points at a value that is not a schema."""
    g = schema_graph.build(schema)
    depth, _ = longest_chain(g.edges, lambda _n: 1)
    return max(0, depth - 1)  # steps between subschemas: a flat schema is 0


def check_schema(schema: Any, error: type[InputError], where: str = "response schema") -> None:
    """`error` (one line naming the bound, the value and the limit) when `schema`'s chain of subschemas and
    `$ref`s is longer than `MAX_REF_DEPTH`."""
    try:
        depth = schema_depth(schema)
    except schema_graph.BadRef as e:
        raise error(f"{where}: {e}") from None
    if depth > MAX_REF_DEPTH:
        raise error(
            f"{where}: subschemas and $refs chain {depth} steps deep, more than the limit of {MAX_REF_DEPTH}; "
            "flatten the schema (fewer nested levels or $refs to $refs)"
        )


def _skip_string(text: str, i: int) -> int:
    """The index after the JSON/Lark string literal opening at `text[i]` (`"`)."""
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        if c == "\n":
            return i  # an unterminated string: llguidance will say so
        i += 1
    return i


def _skip_regex(text: str, i: int) -> int:
    """The index after the Lark regex literal opening at `text[i]` (`/`), flags included."""
    i += 1
    while i < len(text) and text[i] not in "/\n":
        i += 2 if text[i] == "\\" else 1
    i += 1
    while i < len(text) and text[i].isalpha():
        i += 1
    return i


def _json_block(text: str, i: int) -> int:
    """The index after the `{...}` JSON object opening at `text[i]`, or -1 when it does not close."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def lark_rules(text: str) -> tuple[dict[str, list[str]], dict[str, int]]:
    """The rules (and terminals) a Lark grammar defines, each with the names its body refers to, and the
    deepest `%json` schema chain in its body (`TooDeep` when one nests past what Python parses)."""
    refs: dict[str, list[str]] = {}
    json_depth: dict[str, int] = {}
    current: str | None = None
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line_start, i = True, i + 1
            continue
        if line_start:
            line_start = False
            m = _HEAD.match(text, i)
            if m is not None:
                current = m.group(1)
                refs.setdefault(current, [])
                json_depth.setdefault(current, 0)
                i = m.end()
                continue
            if _DIRECTIVE.match(text, i):
                current = None  # a directive (%ignore, %import, %llguidance ...) ends the rule before it
        if c in " \t\r":
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c == '"':
            i = _skip_string(text, i)
        elif c == "/":
            i = _skip_regex(text, i)
        elif c == "%":
            m = _BLOCK.match(text, i)
            if m is None:
                i += 1
                continue
            end = _json_block(text, m.end() - 1)
            if end < 0:
                return refs, json_depth  # an unclosed block: llguidance refuses it
            if m.group(1) == "json" and current is not None:
                try:
                    schema = json.loads(text[m.end() - 1 : end])
                except RecursionError:
                    raise TooDeep from None
                except ValueError:
                    schema = None  # not JSON: llguidance says what is wrong with it
                try:
                    json_depth[current] = max(json_depth[current], schema_depth(schema) + 1)
                except schema_graph.BadRef as e:
                    raise BadBlock(f"grammar: the %json schema of rule {current!r}: {e}") from None
            i = end
        else:
            m = _NAME.match(text, i)
            if m is None:
                i += 1
                continue
            if current is not None:
                refs[current].append(m.group(0))
            i = m.end()
    return refs, json_depth


def check_lark(text: str, error: type[InputError]) -> None:
    """`error` (one line naming the bound, the value and the limit) when a Lark grammar is larger than
    `MAX_GRAMMAR_BYTES`, defines more than `MAX_RULES` rules, or chains references (through rules,
    terminals and `%json` schemas) more than `MAX_REF_DEPTH` steps deep."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_GRAMMAR_BYTES:
        raise error(f"grammar: {size} bytes, more than the limit of {MAX_GRAMMAR_BYTES}; simplify it")
    try:
        refs, json_depth = lark_rules(text)
    except TooDeep:
        raise error(f"grammar: a %json schema nests deeper than the limit of {MAX_REF_DEPTH}; flatten it") from None
    except BadBlock as e:
        raise error(str(e)) from None
    if len(refs) > MAX_RULES:
        raise error(f"grammar: {len(refs)} rules, more than the limit of {MAX_RULES}; merge some")
    edges = {name: _defined(body, refs) for name, body in refs.items()}
    depth, path = longest_chain(edges, lambda name: 1 + json_depth[name])
    if depth > MAX_REF_DEPTH:
        shown = " -> ".join([*path, "..."] if len(path) >= 6 else path)
        raise error(
            f"grammar: rule references chain {depth} steps deep ({shown}), more than the limit of {MAX_REF_DEPTH}; "
            "flatten the grammar (fewer rules that only refer to the next)"
        )


def _defined(names: Iterable[str], refs: dict[str, list[str]]) -> list[str]:
    """The names among `names` that the grammar defines, once each."""
    return list(dict.fromkeys(x for x in names if x in refs))
