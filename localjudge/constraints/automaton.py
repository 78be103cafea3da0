"""Regex → token automaton over the model's own vocabulary, with token budgets.

outlines-core compiles the regex against a `Vocabulary` built from the GGUF's token pieces (raw
bytes, so byte-level BPE and SentencePiece byte-fallback both work). We flatten its transitions
into numpy arrays, once per (vocabulary, regex), cached on disk as .npz:

  * `ids[s]`, `nxt[s]`: allowed token ids in state s and the state each one leads to;
  * `final[s]`: whether the output may end in s;
  * `dist[s]`: fewest tokens from s to a final state (BFS on the reversed transition graph).

`dist` is what guarantees termination: a token t is allowed only if 1 + dist[next(t)] fits in the
remaining budget, and once a free-text field has used its own budget only tokens that shorten
`dist` are allowed (that closes the field). `forced_bytes(s)` finds the literal the format forces
next (JSON keys, closing braces), which the decode loop feeds in one batch (jump-forward).

The decode loop (`engine.job.DecodeJob`) sees a format only through the `base.Constraint` protocol: the
tokens allowed now within the budget, advance, the forced tokens next, the distance to the shortest
completion. `AutomatonConstraint` is this module's automaton behind it; `llg.LLGConstraint` is
llguidance's. `AutomatonEngine` is the registry's "automaton" engine: it compiles `spec.Regex` values.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..errors import ConstraintError
from ..paths import cache_home
from ..store.atomic import replacing
from .base import Constraint, ConstraintEngine, TokenVocab
from .spec import ConstraintSpec, Regex

__all__ = ["Constraint", "TokenVocab", "TokenFSM", "AutomatonConstraint", "AutomatonEngine", "compile_regex", "cache_path"]

FSM_CACHE_VERSION = "fsm-v2"
INF = np.iinfo(np.int32).max


@dataclass
class TokenFSM:
    """A compiled format: flat numpy arrays, one slice per state."""

    regex: str
    offsets: np.ndarray  # (S+1,) int64 into ids/nxt
    ids: np.ndarray  # int32
    nxt: np.ndarray  # int32
    final: np.ndarray  # (S,) bool
    dist: np.ndarray  # (S,) int32, INF when no final state is reachable
    initial: int = 0
    compile_ms: float = 0.0
    from_cache: bool = False
    _forced: dict[int, bytes] = field(default_factory=dict)
    _jumps: dict[int, tuple[list[int], int] | None] = field(default_factory=dict)

    @property
    def shortest(self) -> int:
        """Fewest tokens of a complete output (the budget a request needs at least)."""
        return int(self.dist[self.initial])

    def start(self, tokenize: Callable[[bytes], list[int]] | None, vocab: TokenVocab) -> AutomatonConstraint:
        """A fresh per-request cursor over this automaton (`tokenize`: None turns jump-forward off)."""
        return AutomatonConstraint(self, vocab, tokenize)

    @property
    def n_states(self) -> int:
        """The number of automaton states."""
        return len(self.final)

    def allowed(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """(token ids, next states) allowed in state `s`, as views into `ids` and `nxt`."""
        a, b = self.offsets[s], self.offsets[s + 1]
        return self.ids[a:b], self.nxt[a:b]

    def step(self, s: int, token: int) -> int | None:
        """The state `token` leads to from `s`, or None when `token` is not allowed there."""
        ids, nxt = self.allowed(s)
        hit = np.nonzero(ids == token)[0]
        return int(nxt[hit[0]]) if len(hit) else None

    def walk(self, s: int, tokens: list[int]) -> int | None:
        """The state after feeding `tokens` from `s`, or None as soon as one is not allowed."""
        for t in tokens:
            s2 = self.step(s, t)
            if s2 is None:
                return None
            s = s2
        return s

    def forced_bytes(self, s: int, vocab: TokenVocab) -> bytes:
        """The literal every valid continuation from s starts with (empty if there is a choice)."""
        if s in self._forced:
            return self._forced[s]
        out = bytearray()
        cur = s
        fb = vocab.first_byte
        for _ in range(256):
            if self.final[cur]:
                break
            ids, _ = self.allowed(cur)
            if len(ids) == 0:
                break
            firsts = np.unique(fb[ids])
            if len(firsts) != 1 or firsts[0] < 0:
                break
            bt = vocab.byte_token(int(firsts[0]))
            nxt = self.step(cur, bt) if bt is not None else None
            if nxt is None:
                break
            out.append(int(firsts[0]))
            cur = nxt
        self._forced[s] = bytes(out)
        return self._forced[s]

    def forced_tokens(self, s: int, vocab: TokenVocab, tokenize: Callable[[bytes], list[int]]) -> tuple[list[int], int] | None:
        """The forced literal from s as the model's own tokenization, and the state after it (for
        jump-forward); None when nothing is forced or that tokenization is not a path of the automaton."""
        if s not in self._jumps:
            lit = self.forced_bytes(s, vocab)
            toks = tokenize(lit) if lit else []
            end = self.walk(s, toks) if toks else None
            ok = end is not None and b"".join(vocab.pieces[t] for t in toks) == lit
            self._jumps[s] = (toks, end) if ok else None  # type: ignore[assignment]
        return self._jumps[s]

    def nbytes(self) -> int:
        """The memory the automaton's arrays hold, in bytes."""
        return int(self.offsets.nbytes + self.ids.nbytes + self.nxt.nbytes + self.final.nbytes + self.dist.nbytes)


def _distances(n_states: int, src: np.ndarray, dst: np.ndarray, final: np.ndarray) -> np.ndarray:
    dist = np.full(n_states, INF, dtype=np.int32)
    dist[final] = 0
    frontier = final.copy()
    level = 0
    while frontier.any():
        level += 1
        reach = np.zeros(n_states, dtype=bool)
        reach[src[frontier[dst]]] = True
        new = reach & (dist == INF)
        dist[new] = level
        frontier = new
    return dist


def cache_path(regex: str, vocab_hash: str) -> Path:
    """Where the compiled automaton of `regex` for the vocabulary with this hash is cached on disk."""
    key = hashlib.sha256(f"{FSM_CACHE_VERSION}\0{vocab_hash}\0{regex}".encode()).hexdigest()[:32]
    return cache_home() / "fsm" / vocab_hash / f"{key}.npz"


def compile_regex(regex: str, vocab: TokenVocab, use_cache: bool = True) -> TokenFSM:
    """Compile (or load from the disk cache) the token automaton of `regex` for `vocab`."""
    path = cache_path(regex, vocab.hash)
    t0 = time.perf_counter()
    if use_cache and path.exists():
        try:
            with np.load(path) as z:
                fsm = TokenFSM(
                    regex=regex,
                    offsets=z["offsets"],
                    ids=z["ids"],
                    nxt=z["nxt"],
                    final=z["final"],
                    dist=z["dist"],
                    initial=int(z["initial"]),
                    from_cache=True,
                )
            fsm.compile_ms = (time.perf_counter() - t0) * 1000
            return fsm
        except Exception:  # a corrupt cache entry is recompiled, never trusted
            pass
    from outlines_core import Index

    try:
        index = Index(regex, vocab.outlines_vocabulary())
    except Exception as e:
        raise ConstraintError(f"the model's vocabulary cannot express this format ({e}); use another model or format") from None
    trans = index.get_transitions()
    states = sorted(trans.keys() | set(index.get_final_states()) | {index.get_initial_state()})
    remap = {s: i for i, s in enumerate(states)}
    counts = np.array([len(trans.get(s, {})) for s in states], dtype=np.int64)
    offsets = np.zeros(len(states) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ids = np.empty(offsets[-1], dtype=np.int32)
    nxt = np.empty(offsets[-1], dtype=np.int32)
    for i, s in enumerate(states):
        tr = trans.get(s, {})
        if tr:
            a, b = offsets[i], offsets[i + 1]
            ids[a:b] = np.fromiter(tr.keys(), dtype=np.int32, count=len(tr))
            nxt[a:b] = np.fromiter((remap[x] for x in tr.values()), dtype=np.int32, count=len(tr))
    eos = set(vocab.eos_ids)
    keep = ~np.isin(ids, list(eos))  # EOS is handled by the decode loop at final states
    if not keep.all():
        edge_state = np.repeat(np.arange(len(states)), counts)
        counts = np.bincount(edge_state[keep], minlength=len(states)).astype(np.int64)
        ids, nxt = ids[keep], nxt[keep]
        offsets = np.zeros(len(states) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
    final = np.zeros(len(states), dtype=bool)
    for s in index.get_final_states():
        final[remap[s]] = True
    src = np.repeat(np.arange(len(states), dtype=np.int32), np.diff(offsets))
    dist = _distances(len(states), src, nxt, final)
    initial = remap[index.get_initial_state()]
    if dist[initial] == INF:
        raise ConstraintError("the model's vocabulary cannot complete this format; use another model or format")
    fsm = TokenFSM(regex=regex, offsets=offsets, ids=ids, nxt=nxt, final=final, dist=dist, initial=initial)
    fsm.compile_ms = (time.perf_counter() - t0) * 1000
    if use_cache:
        try:
            with replacing(path, mkdir=True) as tmp, open(tmp, "wb") as f:  # a concurrent reader never sees half a file
                np.savez(f, offsets=offsets, ids=ids, nxt=nxt, final=final, dist=dist, initial=np.int64(initial))
        except OSError:
            pass  # a read-only cache only costs a recompile next time
    return fsm


class AutomatonConstraint:
    """`Constraint` over a `TokenFSM`: exact distances, so every budget holds by filtering alone."""

    def __init__(self, fsm: TokenFSM, vocab: TokenVocab, tokenize: Callable[[bytes], list[int]] | None):
        self.fsm, self.vocab, self.tokenize = fsm, vocab, tokenize
        self.state = fsm.initial
        self._nxt: np.ndarray | None = None
        self._ids: np.ndarray | None = None

    def choices(self, remaining: int, closing: bool) -> tuple[np.ndarray, bool, bool]:
        """Allowed ids whose next state's distance fits; while closing, only those that shorten it."""
        fsm, state = self.fsm, self.state
        ids, nxt = fsm.allowed(state)
        d = fsm.dist[nxt]
        ok = d < remaining  # 1 + dist(next) <= remaining
        if closing:
            ok &= d < fsm.dist[state]
        cut = False
        if not ok.all():
            ids, nxt = ids[ok], nxt[ok]
            cut = closing
        self._ids, self._nxt = ids, nxt
        return ids, bool(fsm.final[state]), cut

    def settle(self, token: int, remaining: int) -> int:
        """Unchanged: `choices` already kept only tokens that fit."""
        return token

    def advance(self, token: int) -> bool:
        """Move to the state `token` leads to; True when that state is nearer a final one."""
        fsm = self.fsm
        new: int | None = None
        if self._ids is not None and self._nxt is not None:
            hit = np.nonzero(self._ids == token)[0]
            new = int(self._nxt[hit[0]]) if len(hit) else None
        if new is None:
            new = fsm.step(self.state, token)
            if new is None:
                raise RuntimeError(f"token {token} is not allowed by the format here (a bug in the decode loop)")
        closer = bool(fsm.dist[new] < fsm.dist[self.state])
        self.state, self._ids, self._nxt = new, None, None
        return closer

    def jump(self, remaining: int) -> list[int]:
        """The forced literal as the model's own tokens, when it and the shortest rest fit."""
        fsm = self.fsm
        if self.tokenize is None or fsm.final[self.state]:
            return []
        jump = fsm.forced_tokens(self.state, self.vocab, self.tokenize)
        if not jump or len(jump[0]) + fsm.dist[jump[1]] > remaining:
            return []
        toks, end = jump
        self.state, self._ids, self._nxt = end, None, None
        return list(toks)

    def distance(self) -> int:
        """dist[state]."""
        return int(self.fsm.dist[self.state])

    def can_end(self) -> bool:
        """final[state]."""
        return bool(self.fsm.final[self.state])

    def terminal(self) -> bool:
        """A final state with no transition out."""
        fsm, s = self.fsm, self.state
        return bool(fsm.final[s]) and fsm.offsets[s] == fsm.offsets[s + 1]


class AutomatonEngine(ConstraintEngine):
    """outlines-core's token automaton: exact distances, cached on disk per (vocabulary, regex); a compile's cost
    is only known by compiling, so serve builds a client's in a bounded child first (`sandbox.py`)."""

    name = "automaton"
    accepts: ClassVar[tuple[type, ...]] = (Regex,)
    sandboxed = True

    def key(self, spec: ConstraintSpec) -> str:
        """The pattern itself (the key engines used before the registry, kept so caches read the same)."""
        return spec.text()

    def compile(self, spec: ConstraintSpec, vocab: TokenVocab) -> TokenFSM:
        """`compile_regex` of the pattern (disk-cached)."""
        assert isinstance(spec, Regex)
        return compile_regex(spec.pattern, vocab)
