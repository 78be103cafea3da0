"""The close path's search, for what llguidance's matcher cannot close greedily (llg.py).

llguidance has no distance to the end, and a greedy walk over its allowed bytes loops (`aaaa...` inside
a `pattern`) or never writes the needle a pattern wants (`wifi` inside `.*wifi.*`). `search` walks the
matcher itself, so every path it returns is a real completion, with a bounded amount of work: a
depth-first search, then a shortest-first one, over single bytes, forced tokens and the literals and
witnesses of the schema's `pattern`s and `format`s, merging prefixes that look like the same state.
The work is bounded by a count of tried moves, never by the clock: the same request finds the same path
(or none) on every machine, however slow or loaded (issue 29: a deadline let the greedy path win there).
"""

from __future__ import annotations

import heapq
import json
import re
import re._constants as sre_c  # type: ignore[import-not-found]
import re._parser as sre_p  # type: ignore[import-not-found]
import time
import warnings
from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np

from ..errors import ConstraintError
from .base import TokenVocab

FIRST_ORDER = b'"}]0,1ntf{[ a'  # the close path's first greedy order (llg.py's CLOSE_ORDERS[0])
RANK = np.full(256, 100, dtype=np.int64) + np.arange(256)  # bytes in FIRST_ORDER's order first, then by value
for _i, _b in enumerate(FIRST_ORDER):
    RANK[_b] = _i


class LLGVocab(Protocol):
    """What the search needs of `llg.LLGVocab`: the byte → single-byte-token map, the vocabulary's
    pieces, and the allowed-token mask of a matcher."""

    byte_tokens: np.ndarray
    vocab: TokenVocab

    def mask(self, m: Any) -> np.ndarray:
        """The tokens `m` allows now, as a boolean array over the vocabulary."""
        ...


SEARCH_BUDGET = 20_000  # matcher states the search may visit for one close path (the only bound on its answer)
PROBE_BUDGET = 400  # the same while decoding, per model token (a token it cannot close is replaced, never lost)
SEARCH_SECONDS = 2.0  # at compile, a search still running after this is refused (`SearchTimeLimit`), never cut short
CLOCK_EVERY = 256  # tried moves between readings of the clock: a search shorter than this never reads it


class SearchTimeLimit(ConstraintError):
    """A compile-time search ran past `SEARCH_SECONDS`: the format is refused (serve: a 400) rather than answered
    with whatever path the search had found so far, so no output ever depends on how fast the machine is."""


MAX_LITERALS = 64  # pattern literals the search tries as moves
FEW_TOKENS = 32  # a state allowing this few tokens has each of them tried as a move too


def literals(grammar: str) -> list[bytes]:
    """Moves for `search` from the `pattern`s in a grammar: a short string each pattern matches (`witness`,
    as it is written inside a JSON string) and the literal runs in it (`wifi` in `"pattern": "wifi"`,
    `iglu:` in `^iglu:[a-z]+`). A search a byte at a time cannot find a needle: inside `.*wifi.*` or
    `\\d{4}-\\d{2}` every byte leads to a state with the same token mask until the whole match is written."""
    out: dict[bytes, None] = {}

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "format" and isinstance(v, str) and v in FORMAT_WITNESS:
                    out.setdefault(FORMAT_WITNESS[v].encode(), None)
                elif k == "pattern" and isinstance(v, str):
                    w = witness(v)
                    if w:
                        out.setdefault(json.dumps(w)[1:-1].encode(), None)
                    bare = re.sub(r"\\.|\[[^\]]*\]|\{[^}]*\}", " ", v)  # escapes, classes, counts
                    for run in re.findall(r"[^\s^$.*+?()|\\]{2,}", bare):
                        out.setdefault(run.encode(), None)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    try:
        walk(json.loads(grammar))
    except (ValueError, RecursionError):
        return []
    return list(out)[:MAX_LITERALS]


FORMAT_WITNESS = {  # a value of each `format` llguidance checks, for `search` (a date is a needle too)
    "date": "2000-01-01",
    "time": "00:00:00Z",
    "date-time": "2000-01-01T00:00:00Z",
    "duration": "P1D",
    "email": "a@example.com",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "uri": "http://example.com",
    "uri-reference": "http://example.com",
    "iri": "http://example.com",
    "iri-reference": "http://example.com",
    "idn-email": "a@example.com",
    "idn-hostname": "example.com",
}


def witness(pattern: str) -> str | None:
    """A short string that the regex `pattern` matches (Python's parser standing in for ECMAScript's; the
    fewest repetitions, the shortest branch), or None where it cannot tell (back references, too long)."""
    try:
        with warnings.catch_warnings():  # Python's FutureWarnings on ECMAScript classes such as `[[a]`
            warnings.simplefilter("ignore", FutureWarning)
            tree = sre_p.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    try:
        w = _witness(tree, 0)
    except (ValueError, RecursionError):
        return None
    return w if w is not None and len(w) <= 256 else None


def _witness(items: Any, depth: int) -> str | None:
    c = sre_c
    if depth > 40:
        return None
    out = []
    for op, av in items:
        if op is c.LITERAL:
            out.append(chr(av))
        elif op is c.NOT_LITERAL:
            out.append("a" if av != ord("a") else "b")
        elif op is c.ANY:
            out.append("a")
        elif op is c.IN:
            ch = _in(av)
            if ch is None:
                return None
            out.append(ch)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            lo, _, sub = av
            if lo > 64:
                return None
            w = _witness(sub, depth + 1) if lo else ""
            if w is None:
                return None
            out.append(w * lo)
        elif op is c.SUBPATTERN:
            w = _witness(av[-1], depth + 1)
            if w is None:
                return None
            out.append(w)
        elif op is c.BRANCH:
            ws = [w for w in (_witness(b, depth + 1) for b in av[1]) if w is not None]
            if not ws:
                return None
            out.append(min(ws, key=len))
        elif op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            continue
        else:  # back references, conditionals
            return None
    return "".join(out)


def _in(av: Any) -> str | None:
    """A character of a class `[...]`."""
    c = sre_c
    if av and av[0][0] is c.NEGATE:
        rx = "".join(_class_src(x) for x in av[1:])
        for ch in "a0 -_.A":
            if rx is not None and not re.fullmatch(f"[{rx}]", ch):
                return ch
        return None
    for op, x in av:
        if op is c.LITERAL:
            return chr(x)
        if op is c.RANGE:
            return chr(x[0])
        if op is c.CATEGORY:
            return {c.CATEGORY_DIGIT: "0", c.CATEGORY_SPACE: " ", c.CATEGORY_WORD: "a"}.get(
                x, "-" if x in (c.CATEGORY_NOT_WORD,) else "a"
            )
    return None


def _class_src(x: Any) -> str:
    c = sre_c
    op, v = x
    if op is c.LITERAL:
        return re.escape(chr(v))
    if op is c.RANGE:
        return f"{re.escape(chr(v[0]))}-{re.escape(chr(v[1]))}"
    if op is c.CATEGORY:
        return {
            c.CATEGORY_DIGIT: r"\d",
            c.CATEGORY_SPACE: r"\s",
            c.CATEGORY_WORD: r"\w",
            c.CATEGORY_NOT_DIGIT: r"\D",
            c.CATEGORY_NOT_SPACE: r"\S",
            c.CATEGORY_NOT_WORD: r"\W",
        }.get(v, "")
    return ""


def search(
    lv: LLGVocab,
    m: Any,
    limit: int,
    budget: int,
    lits: list[bytes] | None = None,
    in_string: bool = False,
    seconds: float | None = None,
) -> list[int] | None:
    """A completion of a copy of `m`, fewer than `limit` tokens, from the matcher's allowed moves (a `"`,
    the pattern literals `lits`, printable ASCII bytes in `RANK` order, no escapes; forced tokens as one
    move): first by a depth-first search over most of `budget` tried moves, then the shortest, by a
    uniform-cost search over the rest (`{}` where the first wandered into a key); None when neither finds one.
    Only `budget` bounds the work, so the answer does not depend on how fast the machine is; `seconds` (at
    compile) only refuses: `SearchTimeLimit` when the search is still running after it, checked every
    `CLOCK_EVERY` tried moves.
    Two prefixes are taken for the same state when their token masks, acceptance, JSON nesting, skeleton
    (the forced text and the JSON punctuation written, not the free text inside strings) and the length of
    the number being written (up to `RUN_CAP`) agree, and a state is entered once: so a loop (`aaaa...` in
    a pattern, `1111...` past `RUN_CAP`) is cut at once while `"a": "` and `"b": "` stay apart, and the work
    is bounded by the states times the moves. The merge only prunes the search: a path it returns was
    consumed by the matcher, so it is always a real completion."""
    bt = lv.byte_tokens
    ascii_ = [b for b in np.argsort(RANK, kind="stable") if bt[b] >= 0 and 0x20 <= b < 0x7F and b not in (0x22, 0x5C)]
    closers = [(bytes((b,)), [int(bt[b])]) for b in b"}]" if bt[b] >= 0]
    quote = [(b'"', [int(bt[0x22])])] if bt[0x22] >= 0 else []
    usable = [lit for lit in lits or [] if all(bt[b] >= 0 for b in lit)]
    lit_moves = [(lit, [int(bt[b]) for b in lit]) for lit in usable]
    rest = lit_moves + [(bytes((int(b),)), [int(bt[b])]) for b in ascii_ if b not in b"}]"]
    # inside a string its closing quote, then the literals; outside, closing a container before opening a string
    in_str = quote + lit_moves + [(bytes((int(b),)), [int(bt[b])]) for b in ascii_]
    s = _Search(lv, (in_str, closers + quote + rest), limit, None if seconds is None else time.perf_counter() + seconds, usable)
    js0: JState = (0, in_string, False, 0, 0)
    return s.depth_first(m, js0, budget - budget // 8) or s.shortest(m, js0, budget // 8)


class _Search:
    """The two searches of `search`, sharing its moves and bounds."""

    def __init__(
        self,
        lv: LLGVocab,
        moves: tuple[list[tuple[bytes, list[int]]], ...],
        limit: int,
        deadline: float | None,
        lits: list[bytes] | None = None,
    ):
        self.lv, self.moves, self.limit = lv, moves, limit  # moves: (in a string, outside)
        self.lits = lits or []
        self.lit_len = max((len(lit) for lit in self.lits), default=0)
        self.deadline, self.tried = deadline, 0

    def _tried(self) -> None:
        """Count one tried move; past the deadline (read every `CLOCK_EVERY` moves), refuse the format."""
        self.tried += 1
        if self.deadline is not None and self.tried % CLOCK_EVERY == 0 and time.perf_counter() > self.deadline:
            raise SearchTimeLimit(
                f"the format's completion was not found within the close-path search's time limit ({SEARCH_SECONDS:g} s); "
                "simplify the format (fewer or shorter patterns and alternatives)"
            )

    def kids(self, node: Any, path: list[int], js: JState, seen: set) -> Iterator[tuple[Any, list[int], JState]]:
        """(matcher, path, JSON state) of each unseen state one move from `node`, lazily."""
        ff = node.compute_ff_tokens()
        if ff:  # forced: the only move
            if len(path) + len(ff) < self.limit:
                kid = node.deep_copy()
                if kid.consume_tokens(ff):
                    yield kid, path + list(ff), _json_state(js, self._text(ff), True)
            return
        allowed = self.lv.mask(node)
        moves = self.moves[0 if js[1] else 1]
        if js[1] and self.lits:  # after the closing quote: a literal the string so far began (forced `iglu` of `iglu:...`)
            moves = moves[:1] + self._rest_of_literals(path) + moves[1:]
        few = np.flatnonzero(allowed)
        if len(few) <= FEW_TOKENS:  # a state only multi-byte tokens leave (`",` where `"` alone is not allowed)
            moves = moves + [(self.lv.vocab.pieces[t], [int(t)]) for t in few]
        for data, toks in moves:
            if not allowed[toks[0]] or len(path) + len(toks) >= self.limit:
                continue
            kid = node.deep_copy()
            if not kid.consume_tokens(toks):
                continue
            js2 = _json_state(js, data, False)
            fp = _fingerprint(kid, js2)
            if fp not in seen:
                seen.add(fp)
                yield kid, path + toks, js2

    def _rest_of_literals(self, path: list[int]) -> list[tuple[bytes, list[int]]]:
        """The unwritten rest of each literal that the open string's text so far (on this path) is a proper
        prefix of: a pattern's witness still fits where the grammar forced its first bytes (`^iglu:` writes
        `iglu` as forced tokens, after which `iglu:a/a/a/0-0-0` as a whole no longer can be)."""
        text = self._text(path[-self.lit_len :])
        start = text.rfind(b'"')
        if start < 0:
            return []  # the string opened before this path: its start is not known here
        written = text[start + 1 :]
        return [
            (lit[len(written) :], [int(self.lv.byte_tokens[b]) for b in lit[len(written) :]])
            for lit in self.lits
            if written and len(written) < len(lit) and lit.startswith(written)
        ]

    def _text(self, toks: list[int]) -> bytes:
        return b"".join(self.lv.vocab.pieces[t] for t in toks)

    def shortest(self, m: Any, js0: JState, budget: int) -> list[int] | None:
        """The fewest-token completion among the states reached within `budget` tried moves (uniform cost)."""
        root = m.deep_copy()
        seen = {_fingerprint(root, js0)}
        heap: list[tuple[int, int, Any, list[int], JState]] = [(0, 0, root, [], js0)]
        tick = 0
        while heap and budget > 0:
            _, _, node, path, js = heapq.heappop(heap)
            if node.is_accepting():
                return path
            for kid, kpath, kjs in self.kids(node, path, js, seen):
                budget -= 1
                tick += 1
                self._tried()
                heapq.heappush(heap, (len(kpath), tick, kid, kpath, kjs))
        return None

    def depth_first(self, m: Any, js0: JState, budget: int) -> list[int] | None:
        """The first completion found going deep in move order, backing up from dead ends and seen states."""
        root = m.deep_copy()
        seen = {_fingerprint(root, js0)}
        stack: list[tuple[Any, list[int], JState, Iterator[tuple[Any, list[int], JState]]]] = [
            (root, [], js0, self.kids(root, [], js0, seen))
        ]
        while stack and budget > 0:
            node, path, js, it = stack[-1]
            if node.is_accepting():
                return path
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                continue
            budget -= 1
            self._tried()
            kid, kpath, kjs = nxt
            stack.append((kid, kpath, kjs, self.kids(kid, kpath, kjs, seen)))
        return None


JState = tuple[int, bool, bool, int, int]  # JSON depth, in a string, after a backslash there, skeleton hash, run
PUNCT = frozenset(b"{}[],: \n")
RUN_CAP = 16  # characters of one number told apart by the search (minimum 81920 needs 6)


def _fingerprint(m: Any, js: JState) -> tuple[bytes, bool, JState]:
    """What tells two prefixes apart for the search: the token mask, acceptance and the JSON state."""
    return m.compute_bitmask(), bool(m.is_accepting()), js


def _json_state(js: JState, data: bytes, forced: bool) -> JState:
    """The JSON nesting and skeleton after `data` (all of it in the skeleton when forced)."""
    depth, in_str, esc, skel, run = js
    kept = bytearray()
    for b in data:
        structural = False
        if in_str:
            if esc:
                esc = False
            elif b == 0x5C:
                esc = True
            elif b == 0x22:
                in_str, structural, run = False, True, 0
            else:
                run = min(run + 1, RUN_CAP)
        elif b == 0x22:
            in_str, structural, run = True, True, 0
        elif b in PUNCT:
            depth += (b in (0x7B, 0x5B)) - (b in (0x7D, 0x5D))
            structural, run = True, 0
        else:  # a number or literal: its length (up to RUN_CAP) tells states apart, so `1` and `100000` differ
            run = min(run + 1, RUN_CAP)  # (in a string too: `Z0` and `Z000000` for `^Z\d{6}$`)
        if forced or structural:
            kept.append(b)
    return depth, in_str, esc, hash((skel, bytes(kept))) if kept else skel, run
