"""llguidance behind the `Constraint` seam: client JSON schemas and Lark grammars, compiled in milliseconds.

llguidance (MIT, what llama.cpp and vLLM use for structured output) computes the allowed-token mask
of an Earley parser over a lazy lexer, so `pattern`, `maxLength` as characters, optional properties
and recursive `$ref` cost nothing up front. Its tokenizer is built from the GGUF's own vocabulary
(`llguidance.llamacpp.lltokenizer_from_vocab`), once per engine.

It has no "distance to the shortest completion", which our whole-output budget needs. `close_path`
finds a real completion instead: from a copy of the matcher, take the forced tokens, else the first
allowed single byte in a fixed order (`CLOSE_ORDERS`: `"`, `}`, `]`, `0`, ...), else the lowest allowed byte, until the
grammar accepts (another order if that one loops); when none closes, `llg_search.search` looks for one in
the matcher itself, bounded in work. From the start, where greedy closing is long (an object's optional
properties, all written) or fails, a short instance read off the schema (`llg_minimal`) is tried first and kept
when the matcher takes it to an accepting state. Its length bounds the distance from above, and it is a path the matcher accepted, so
the decode loop keeps the invariant *len(close path) <= tokens left*: a model token whose close path
would not fit is replaced by the first token of the current close path (`settle`). Every output
therefore completes inside its budget. Free-text fields are bounded as with the automaton: after
`field_tokens` model tokens inside one JSON string, the next token is the close path's first (`"`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import ConstraintError
from . import llg_minimal, llg_search
from .base import ConstraintEngine, TokenVocab
from .llg_search import FIRST_ORDER, RANK
from .spec import ConstraintSpec, JSONSchema, Lark, Regex

# the bytes the close path tries first, in order: JSON closers first (most close a value at once), then, for
# grammars, a space and common terminators before separators (a separator can repeat forever)
VARY = b"vary"  # the last resort: the first order, with a byte picked often giving way to others
CLOSE_ORDERS = (FIRST_ORDER, b' "}]);.\n>0a,', b"", VARY)  # VARY prefers bytes by `RANK` (FIRST_ORDER first)
CLOSE_LIMIT = 600  # steps before one order gives up (a grammar it cannot close greedily)
SHORT_PATH = 64  # a VARY close path longer than this is compared with the search's
LARK_SHORT = 4  # a Lark grammar's greedy close path longer than this is compared with the search's
PROBE_SLACK = 64  # while decoding, a token's close path may be twice the current one and this many tokens more
# greedy walks that failed (no close within their limit: up to CLOSE_LIMIT matcher steps each, e.g. `"}]0...` inside a
# number, where every request's first digit fails three orders), remembered per compiled grammar by the tokens the
# request had consumed, while it had consumed fewer than MEMO_DEPTH (a walk is a function of the matcher's state,
# which is a function of those tokens, so a remembered failure is the same failure); at most MEMO_SIZE of them
MEMO_DEPTH, MEMO_SIZE = 32, 1024


def _limits():
    from llguidance import LLParserLimits

    return LLParserLimits(verbose_errors=False)


class LLGVocab:
    """llguidance's tokenizer over the model's vocabulary, and the byte → single-byte-token map the close
    path walks with."""

    def __init__(self, tokenizer: Any, vocab: TokenVocab):
        self.tokenizer, self.vocab = tokenizer, vocab
        self.n = tokenizer.vocab_size
        self.byte_tokens = np.full(256, -1, dtype=np.int64)
        for b in range(256):
            t = vocab.byte_token(b)
            if t is not None:
                self.byte_tokens[b] = t
        self.eos = np.array(vocab.eos_ids, dtype=np.int64)
        # where each single-byte token's bit lies in llguidance's bitmask (byte, bit): the close path reads those
        # 256 bits, not the whole vocabulary's (`byte_allowed`)
        tok = np.maximum(self.byte_tokens, 0)
        self._byte_at, self._byte_bit = tok >> 3, (tok & 7).astype(np.uint8)
        self._has_byte = self.byte_tokens >= 0
        self._orders: dict[bytes, list[tuple[int, int, int]]] = {}  # by close order: `first_allowed`

    @classmethod
    def from_llama(cls, llama_cpp: Any, vocab_p: Any, vocab: TokenVocab) -> LLGVocab:
        """Build it from a loaded llama.cpp vocabulary (about 0.2 s for a 49k vocabulary)."""
        return cls(llama_tokenizer(vocab_p, vocab), vocab)

    def compile(self, grammar: str) -> LLGCompiled:
        """The grammar checked against this vocabulary (`ConstraintError` naming llguidance's reason), with
        the length of its shortest greedy completion."""
        from llguidance import LLMatcher

        t0 = time.perf_counter()
        m = LLMatcher(self.tokenizer, grammar, log_level=0, limits=_limits())
        if m.is_error():
            raise ConstraintError(f"the format cannot be compiled: {one_line(m.get_error())}")
        c = LLGCompiled(self, grammar, m)
        state = CloseState()
        path = c.start_path(m, state)
        if path is None:
            raise ConstraintError("the format has no completion the model's vocabulary can write; simplify it")
        c.shortest, c.path, c.initial = len(path), path, state
        c.compile_ms = (time.perf_counter() - t0) * 1000
        return c

    def mask(self, m: Any) -> np.ndarray:
        """The allowed-token bits of matcher `m` as a bool array over the vocabulary (a fresh array)."""
        bits = np.unpackbits(np.frombuffer(m.compute_bitmask(), dtype=np.uint8), bitorder="little")
        return bits[: self.n].view(bool)  # 0/1 bytes, read as bools without a copy

    def byte_allowed(self, packed: bytes) -> np.ndarray:
        """By byte (256 bools): whether the byte has a single-byte token that the bitmask `packed` (a matcher's
        `compute_bitmask()`) allows; the same bits as `mask(m)[byte_tokens]`, without unpacking the vocabulary."""
        bits = np.frombuffer(packed, dtype=np.uint8)[self._byte_at] >> self._byte_bit
        return self._has_byte & (bits & 1).astype(bool)

    def first_allowed(self, packed: bytes, order: bytes) -> int | None:
        """The single-byte token of the first byte of `order` that has one the bitmask `packed` allows (None: no
        such byte), read bit by bit: the close path's usual pick costs a few bit tests, not a mask."""
        bits = self._orders.get(order)
        if bits is None:
            bits = self._orders[order] = [
                (int(t), int(t) >> 3, int(t) & 7) for t in (self.byte_tokens[b] for b in order) if t >= 0
            ]
        for t, at, bit in bits:
            if packed[at] >> bit & 1:
                return t
        return None


def one_line(msg: str) -> str:
    """llguidance's message on one line, without its parser-state dump."""
    return " ".join(msg.split())[:400]


@dataclass
class CloseState:
    """What the close path learns while one request decodes: the order that closed last (tried first next time)
    and whether the search ever beat greedy closing (then probes may search too). Per request (each cursor copies
    the compile's), so one request's history never changes another's output."""

    order: bytes = CLOSE_ORDERS[0]
    searched: bool = False

    def copy(self) -> CloseState:
        """An independent copy."""
        return CloseState(self.order, self.searched)


class LLGCompiled:
    """A grammar compiled for one vocabulary, read-only once built; `start()` gives each request its own matcher
    and close-path state."""

    def __init__(self, lv: LLGVocab, grammar: str, matcher: Any):
        self.lv, self.grammar, self._proto = lv, grammar, matcher
        self.shortest = 0
        self.path: list[int] = []  # the close path from the start, found once here (a search can take a while)
        self.initial = CloseState()  # the close-path state the compile left: every request starts from it
        self.literals = llg_search.literals(grammar)
        # a Lark grammar (the `grammar` format): its greedy close path can wander through a free lexeme byte by
        # byte (`,,,,nnnn...` where `a.` closes), so any greedy path longer than LARK_SHORT is compared with
        # the search's; JSON schemas keep greedy paths (their long ones are required properties, and compile
        # time matters more there)
        self.lark = not grammar.lstrip().startswith("{")  # llguidance's JSON-schema grammars are JSON documents
        self.compile_ms = 0.0
        self.from_cache = False
        self._failed: set[tuple[tuple[int, ...], bytes, int]] = set()  # (tokens consumed, order, limit): see MEMO_DEPTH

    def start(self, tokenize: Callable[[bytes], list[int]] | None, vocab: TokenVocab) -> LLGConstraint:
        """A fresh per-request cursor (`tokenize` None: jump-forward off)."""
        return LLGConstraint(self, self._proto.deep_copy(), jump=tokenize is not None)

    @property
    def searched(self) -> bool:
        """Whether the search beat greedy closing at compile (every request's probes may search)."""
        return self.initial.searched

    def start_path(self, m: Any, state: CloseState) -> list[int] | None:
        """The close path from the start, at compile: `close_path` (with the search where greedy closing needs it),
        except where greedy closing takes more than `SHORT_PATH` tokens or fails and the schema's own short
        instance (`llg_minimal`, tokenized and consumed by the matcher to an accepting state) is shorter: then that
        instance, and no search (an object's optional properties are what made the greedy path long)."""
        greedy = self.greedy(m, state)  # the walk `close_path` begins with, made once and handed on
        if greedy is None or len(greedy) > SHORT_PATH:
            text = llg_minimal.from_grammar(self.grammar)
            if text is not None:
                toks = [int(t) for t in self.lv.tokenizer.tokenize_bytes(text.encode())]
                mm = m.deep_copy()
                if toks and mm.consume_tokens(toks) and mm.is_accepting() and (greedy is None or len(toks) < len(greedy)):
                    return toks
        return self._past_greedy(m, state, greedy, limit=CLOSE_LIMIT, budget=None, probe=False, in_string=False, shorten=True)

    def greedy(
        self, m: Any, state: CloseState, limit: int = CLOSE_LIMIT, seen: tuple[int, ...] | None = None
    ) -> list[int] | None:
        """The first greedy close path of `CLOSE_ORDERS` (the one that closed last time first; `state.order` set
        to the one that closed), or None when none closes within `limit` tokens. `seen`: the tokens that took a
        fresh cursor to `m`'s state, when fewer than `MEMO_DEPTH` (an order that failed from there is not walked again)."""
        for order in sorted(CLOSE_ORDERS, key=lambda o: o != state.order):
            if seen is not None and (seen, order, limit) in self._failed:
                continue
            path = self._close(m, order, limit)
            if path is not None:
                state.order = order
                return path
            if seen is not None and len(self._failed) < MEMO_SIZE:
                self._failed.add((seen, order, limit))
        return None

    def close_path(
        self,
        m: Any,
        state: CloseState,
        limit: int = CLOSE_LIMIT,
        budget: int | None = None,
        probe: bool = False,
        in_string: bool = False,
        shorten: bool = False,
        seen: tuple[int, ...] | None = None,
    ) -> list[int] | None:
        """Tokens that take a copy of `m` to an accepting state, fewer than `limit` of them: forced tokens where
        there are some, else the first allowed byte in one of `CLOSE_ORDERS` (tried in turn: a greedy order can
        loop, as `, a, a, ...` in a list of names), else the lowest allowed byte. When no greedy order closes,
        or (`shorten`: at compile) only `VARY` does with a path longer than `SHORT_PATH`, `llg_search.search`
        too, and the shorter path wins (at compile a search still running after `llg_search.SEARCH_SECONDS` refuses
        the format: `SearchTimeLimit`, never a shorter-searched answer; `probe`: with the search's smaller per-token bounds, and only for a grammar whose greedy closing
        failed before, so judge formats never search; `in_string`: `m` is inside a JSON string); None when
        nothing closes. `state` (the request's) is read and updated; `seen` as in `greedy`."""
        greedy = self.greedy(m, state, limit, seen)
        return self._past_greedy(m, state, greedy, limit, budget, probe, in_string, shorten)

    def _past_greedy(
        self,
        m: Any,
        state: CloseState,
        greedy: list[int] | None,
        limit: int,
        budget: int | None,
        probe: bool,
        in_string: bool,
        shorten: bool,
    ) -> list[int] | None:
        """`close_path` once greedy closing gave `greedy` (None: no order closed): it, or the search's shorter path."""
        if greedy is not None and (
            len(greedy) <= (LARK_SHORT if self.lark else SHORT_PATH) or (state.order != VARY and not self.lark)
        ):
            return greedy
        if (probe and not state.searched) or (greedy is not None and not shorten):
            return greedy
        if budget is None:
            budget = llg_search.PROBE_BUDGET if probe or greedy else llg_search.SEARCH_BUDGET
        seconds = llg_search.SEARCH_SECONDS if shorten else None  # at compile a slow search is refused, never cut short
        found = llg_search.search(self.lv, m, limit, budget, self.literals, in_string, seconds)
        if found is not None and (greedy is None or len(found) < len(greedy)):
            state.searched = True
            return found
        return greedy

    def _close(self, m: Any, order: bytes, limit: int = CLOSE_LIMIT) -> list[int] | None:
        m = m.deep_copy()
        bt = self.lv.byte_tokens
        used = np.zeros(256, dtype=np.int64)
        path: list[int] = []
        while len(path) < limit:
            if m.is_accepting():
                return path
            ff = m.compute_ff_tokens()
            if ff:
                if not m.consume_tokens(ff):
                    return None
                path.extend(ff)
                continue
            packed = m.compute_bitmask()
            if order == VARY:  # the preference order, but a byte picked often gives way to others (escapes loops)
                ok = np.flatnonzero(self.lv.byte_allowed(packed))
                if len(ok) == 0:
                    return None
                b = int(ok[np.argmin(used[ok] // 4 * 1000 + RANK[ok])])
                used[b] += 1
                pick: int | None = int(bt[b])
            else:
                pick = self.lv.first_allowed(packed, order)
            if pick is None:
                singles = bt[self.lv.byte_allowed(packed)]
                if len(singles) == 0:
                    return None
                pick = int(singles.min())
            if not m.consume_token(pick):
                return None
            path.append(pick)
        return None


class LLGConstraint:
    """`Constraint` over an llguidance matcher, with the close path as the budget guarantee."""

    def __init__(self, compiled: LLGCompiled, matcher: Any, jump: bool):
        self.c, self.m, self.lv = compiled, matcher, compiled.lv
        self._jump = jump
        self._path: list[int] | None = list(compiled.path)
        self.in_string = False  # inside a JSON string (free-text field budgets count these tokens)
        self._esc = False
        self._next_path: list[int] | None = None  # the close path after the token `settle` accepted
        self._cutting = False  # a field budget ran out inside this string: its close path is followed out of it
        self.close = compiled.initial.copy()  # this request's own close-path state
        self._seen: list[int] | None = []  # the tokens consumed, while fewer than MEMO_DEPTH (the close path's memo key)

    def choices(self, remaining: int, closing: bool) -> tuple[np.ndarray, bool, bool]:
        """The mask's ids (EOS left to the decode loop); while closing, only the close path's next token, and
        so on until the string being closed is (a pattern's close path can take several tokens to get there)."""
        accepting = bool(self.m.is_accepting())
        if (closing or self._cutting) and self._path:
            self._cutting = self.in_string
            return np.array(self._path[:1], dtype=np.int32), accepting, closing
        allowed = self.lv.mask(self.m)
        allowed[self.lv.eos[self.lv.eos < len(allowed)]] = False
        return np.flatnonzero(allowed), accepting, False  # intp: what indexing the logits with them wants

    def settle(self, token: int, remaining: int) -> int:
        """`token` when its own close path fits `remaining` - 1, else the current close path's next token; -1
        when the output is already complete and nothing more fits (the decode loop ends it there)."""
        if self._path and token == self._path[0] and len(self._path) <= remaining:
            self._next_path = self._path[1:]  # along the close path: the rest of it still closes (no probe)
            return token
        probe = self.m.deep_copy()
        if remaining >= 1 and probe.consume_token(token):  # a close path longer than remaining - 1 is of no use
            # past greedy closing, a close path far longer than the current one is not looked for: the token is replaced
            limit = CLOSE_LIMIT  # a grammar greedy closing never failed on keeps its probe (one order, mostly)
            if self.close.searched:
                limit = min(limit, remaining, PROBE_SLACK + 2 * len(self._path or []))
            seen = self._key([token])
            path = self.c.close_path(probe, self.close, limit, probe=True, in_string=self._in_string_after(token), seen=seen)
            if path is not None and 1 + len(path) <= remaining:
                self._next_path = path
                return token
        if self._path == []:  # accepting already, and `token` (with its own close) does not fit: end the output
            return -1
        assert self._path, "the close path was lost: a bug in the budget invariant"
        self._next_path = self._path[1:]
        return self._path[0]

    def advance(self, token: int) -> bool:
        """Consume `token`; True unless it stayed inside a JSON string (those count toward a field's budget)."""
        if not self.m.consume_token(token):
            raise RuntimeError(f"llguidance refused token {token}: {one_line(self.m.get_error())}")
        self._consumed([token])
        nxt, self._next_path = self._next_path, None
        if nxt is None and self._path and self._path[0] == token:
            nxt = self._path[1:]  # the model followed the close path: the rest of it still closes
        self._path = nxt if nxt is not None else self.c.close_path(self.m, self.close, seen=self._key([]))
        stayed = self._track(token)
        self._cutting = self._cutting and self.in_string
        return stayed

    def _in_string_after(self, token: int) -> bool:
        """Whether `token` would leave the output inside a JSON string (`_track` without moving)."""
        ins, esc = self.in_string, self._esc
        for b in self.lv.vocab.pieces[token]:
            if esc:
                esc = False
            elif b == 0x5C and ins:
                esc = True
            elif b == 0x22:
                ins = not ins
        return ins

    def _track(self, token: int) -> bool:
        """Follow JSON strings through `token`'s bytes; False when it stayed inside one."""
        was = self.in_string
        quoted = False
        for b in self.lv.vocab.pieces[token]:
            if self._esc:
                self._esc = False
            elif b == 0x5C and self.in_string:
                self._esc = True
            elif b == 0x22:
                self.in_string = not self.in_string
                quoted = True
        return not (was and self.in_string and not quoted)

    def jump(self, remaining: int) -> list[int]:
        """llguidance's fast-forward tokens (part of the close path, so they always fit)."""
        if not self._jump:
            return []
        ff = list(self.m.compute_ff_tokens())
        if not ff or len(ff) > remaining:
            return []
        if not self.m.consume_tokens(ff):
            raise RuntimeError(f"llguidance refused its own forced tokens: {one_line(self.m.get_error())}")
        for t in ff:
            self._track(t)
        self._consumed(ff)
        old = self._path
        if old is not None and old[: len(ff)] == ff:
            self._path = old[len(ff) :]
        else:
            self._path = self.c.close_path(self.m, self.close, seen=self._key([]))
        return ff

    def _consumed(self, tokens: list[int]) -> None:
        """Note tokens the matcher consumed (kept while fewer than `MEMO_DEPTH`: past that, no key is needed)."""
        if self._seen is not None:
            self._seen.extend(tokens)
            if len(self._seen) >= MEMO_DEPTH:
                self._seen = None

    def _key(self, more: list[int]) -> tuple[int, ...] | None:
        """The close-path memo's key for the state after the tokens consumed and `more` (None: too deep)."""
        if self._seen is None or len(self._seen) + len(more) >= MEMO_DEPTH:
            return None
        return (*self._seen, *more)

    def distance(self) -> int:
        """The close path's length: at least the true distance, and always achievable."""
        return len(self._path) if self._path is not None else 1 << 30

    def can_end(self) -> bool:
        """The grammar accepts the output as it stands."""
        return bool(self.m.is_accepting())

    def terminal(self) -> bool:
        """Accepting, and the grammar allows nothing but the end."""
        return bool(self.m.is_stopped())


def llama_tokenizer(vocab_p: Any, vocab: TokenVocab) -> Any:
    """llguidance's tokenizer over a loaded llama.cpp vocabulary (about 0.2 s for a 49k vocabulary): what the
    llama.cpp backend registers as `vocab.tokenizers["llguidance"]`."""
    import warnings

    from llguidance.llamacpp import lltokenizer_from_vocab

    with warnings.catch_warnings():  # it calls llama_token_get_attr once per token, deprecated in llama-cpp-python
        warnings.simplefilter("ignore", DeprecationWarning)
        return lltokenizer_from_vocab(vocab_p, eos_token=list(vocab.eos_ids))


class LLGEngine(ConstraintEngine):
    """llguidance: compiles JSON schemas and Lark grammars in milliseconds (bounded by its parser limits and the
    checks in `llg_bounds`), with the close path as the budget guarantee. Needs the backend's llguidance
    tokenizer (`vocab.tokenizers["llguidance"]`)."""

    name = "llguidance"
    # a Regex too, when asked for by name (the registry gives regexes to the automaton: docs/constraints.md)
    accepts: ClassVar[tuple[type, ...]] = (JSONSchema, Lark, Regex)

    def key(self, spec: ConstraintSpec) -> str:
        """`llg\\0` + the grammar document (the key used before the registry: the LRU's grammar-size bound reads it)."""
        return "llg\0" + self.grammar(spec)

    def grammar(self, spec: ConstraintSpec) -> str:
        """llguidance's grammar document of `spec` (a regex is wrapped in one)."""
        if isinstance(spec, Regex):
            from llguidance import LLMatcher

            return LLMatcher.grammar_from_regex(spec.pattern)
        return spec.text()

    def vocab(self, vocab: TokenVocab) -> LLGVocab:
        """llguidance's view of `vocab`, built once per vocabulary."""
        lv = vocab.derived.get(self.name)
        if lv is None:
            make = vocab.tokenizers.get(self.name)
            if make is None:
                raise ConstraintError("this backend gives llguidance no tokenizer; use a regex format or the llama backend")
            lv = vocab.derived[self.name] = LLGVocab(make(), vocab)
        return lv

    def compile(self, spec: ConstraintSpec, vocab: TokenVocab) -> LLGCompiled:
        """The grammar document compiled by llguidance (`ConstraintError` naming its reason)."""
        return self.vocab(vocab).compile(self.grammar(spec))
