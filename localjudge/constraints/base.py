"""What every constraint engine shares: the model's vocabulary (`TokenVocab`), the per-request cursor the decode
loop drives (`Constraint`), a compiled constraint (`Compiled`) and the engine seam (`ConstraintEngine`).

An engine compiles a typed constraint value (`spec.Regex`, `spec.JSONSchema`, `spec.Lark`) for one vocabulary
into a `Compiled`; `Compiled.start()` gives each request its own `Constraint` cursor, so one request's history
never changes another's output. The registry (`registry.py`) decides which engine compiles which value.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from .spec import ConstraintSpec


@dataclass
class TokenVocab:
    """The model's tokens as raw bytes, with the ids that end generation."""

    pieces: list[bytes]
    eos_ids: list[int]
    _hash: str = ""
    _first_byte: np.ndarray | None = None
    _byte_token: dict[int, int] = field(default_factory=dict)
    _outlines_vocab: object = None
    # backend-native tokenizers an engine may need beside the pieces, built on first use ("llguidance": the
    # llama.cpp backend gives llguidance's tokenizer); `derived` keeps what engines build once per vocabulary
    tokenizers: dict[str, Callable[[], Any]] = field(default_factory=dict)
    derived: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """The vocabulary size (number of token pieces)."""
        return len(self.pieces)

    @property
    def hash(self) -> str:
        """A 24-hex-digit SHA-256 of the pieces and EOS ids, computed once; keys the on-disk FSM cache."""
        if not self._hash:
            h = hashlib.sha256()
            for p in self.pieces:
                h.update(len(p).to_bytes(2, "little"))
                h.update(p)
            h.update(repr(self.eos_ids).encode())
            self._hash = h.hexdigest()[:24]
        return self._hash

    @property
    def first_byte(self) -> np.ndarray:
        """Each token's first byte (int16 array, -1 for an empty piece), computed once; also fills the
        single-byte token map that `byte_token` reads."""
        if self._first_byte is None:
            fb = np.full(self.n, -1, dtype=np.int16)
            for i, p in enumerate(self.pieces):
                if p:
                    fb[i] = p[0]
                    if len(p) == 1 and p[0] not in self._byte_token:
                        self._byte_token[p[0]] = i
            self._first_byte = fb
        return self._first_byte

    def byte_token(self, b: int) -> int | None:
        """The lowest id of a token whose piece is exactly byte `b`, or None when there is none."""
        self.first_byte  # noqa: B018 - fills _byte_token
        return self._byte_token.get(b)

    def outlines_vocabulary(self):
        """The pieces as an outlines-core `Vocabulary` (EOS and empty pieces left out, `eos_ids[0]` as its EOS),
        built once."""
        if self._outlines_vocab is None:
            from outlines_core import Vocabulary

            mapping: dict[bytes, list[int]] = {}
            eos = set(self.eos_ids)
            for i, p in enumerate(self.pieces):
                if p and i not in eos:
                    mapping.setdefault(p, []).append(i)
            self._outlines_vocab = Vocabulary(self.eos_ids[0], mapping)
        return self._outlines_vocab


class Constraint(Protocol):
    """What the decode loop asks a format's constraint, one request at a time (a cursor, not the compiled
    format: `start()` of a compiled format makes one)."""

    def choices(self, remaining: int, closing: bool) -> tuple[np.ndarray, bool, bool]:
        """(token ids allowed now such that a complete output still fits in `remaining` tokens, whether the
        output may end here, whether `closing` - a free field spent its budget - removed some)."""
        ...

    def settle(self, token: int, remaining: int) -> int:
        """The token to emit for the model's choice `token`: itself, or one that keeps the rest within
        `remaining` tokens (an engine whose `choices` is exact returns it unchanged); -1 when the output is
        complete as it stands and no token fits (the decode loop ends the output there)."""
        ...

    def advance(self, token: int) -> bool:
        """Take `token`; True when it brought the output closer to its end (free-field budgets count the others)."""
        ...

    def jump(self, remaining: int) -> list[int]:
        """The tokens the format forces next (jump-forward), taken already; [] when nothing is forced or they
        would not leave room to finish within `remaining`."""
        ...

    def distance(self) -> int:
        """Fewest tokens from here to a complete output (the budget guarantee)."""
        ...

    def can_end(self) -> bool:
        """Whether the output is complete here (it may still go on)."""
        ...

    def terminal(self) -> bool:
        """Whether the output is complete here and nothing may follow."""
        ...


class Compiled(Protocol):
    """A constraint compiled for one vocabulary, shared by every request that uses it (read-only once built)."""

    @property
    def shortest(self) -> int:
        """Fewest tokens of a complete output."""
        ...

    compile_ms: float
    from_cache: bool

    def start(self, tokenize: Callable[[bytes], list[int]] | None, vocab: TokenVocab) -> Constraint:
        """A fresh per-request cursor (`tokenize` None: jump-forward off)."""
        ...


class ConstraintEngine(ABC):
    """Compiles the constraint values it accepts for a vocabulary. Registered by `name` (built-in ones, or a
    plugin's through the `localjudge.constraint_engines` entry-point group)."""

    name: ClassVar[str]
    accepts: ClassVar[tuple[type, ...]]  # the constraint value types this engine compiles
    # True when a compile's cost (time, memory) is only known by compiling: serve builds an untrusted client's
    # constraint in a bounded child process first (`sandbox.py`, the automaton); False: bounded by the engine
    sandboxed: ClassVar[bool] = False

    def key(self, spec: ConstraintSpec) -> str:
        """The in-memory cache key of `spec`'s compiled form for one vocabulary (same key, same compile)."""
        return f"{self.name}\0{spec.text()}"

    @abstractmethod
    def compile(self, spec: ConstraintSpec, vocab: TokenVocab) -> Compiled:
        """`spec` compiled for `vocab`; `errors.ConstraintError` when it cannot be."""
