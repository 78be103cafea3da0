"""What an engine can do beyond generating text, declared in one typed place.

Every engine generates under an `OutputFormat`. Some can do more, and the callers that need more ask
for it here instead of probing attributes:

    VOCABULARY   `engine.vocab`: its token pieces (serve checks client schemas against them in a sandbox
                 and spells logprob tokens as bytes)
    COMPILE      `engine.compile(fmt)`: the format's token automaton (serve's shortest-answer check)
    TOKEN_PROBS  `Generation.choice_steps` with `DecodeOptions(probs=True)`, and token log-probabilities
                 (`--probs`, `localjudge align`, aligned judges)
    STREAMING    `GenerateOptions.on_tokens` is called as tokens are decoded (serve's `stream: true`)

An engine declares `capabilities` (a `Capability` flag); a backend declares `capabilities` too: what the
engines it builds can do at most, known without loading a model. `require(engine, Capability.X,
for_what=...)` raises a one-line `CapabilityError` naming the capability and the backend.
`vocabulary_of(engine)` and `compiler_of(engine)` give the engine typed as what the flag promises
(`VocabularyEngine`, `CompilingEngine`), or None where the flag is not declared: no attribute probing,
no `type: ignore` at the call site.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import InputError

if TYPE_CHECKING:
    from ..constraints.base import Compiled, TokenVocab
    from ..formats import OutputFormat


class Capability(enum.Flag):
    """What an engine (or a backend's engines) can do beyond generating text; combine with `|`."""

    NONE = 0
    VOCABULARY = enum.auto()
    COMPILE = enum.auto()
    TOKEN_PROBS = enum.auto()
    STREAMING = enum.auto()


ALL = Capability.VOCABULARY | Capability.COMPILE | Capability.TOKEN_PROBS | Capability.STREAMING

_WORDS = {
    Capability.VOCABULARY: "no token vocabulary",
    Capability.COMPILE: "no constraint compiler",
    Capability.TOKEN_PROBS: "no token probabilities",
    Capability.STREAMING: "no token streaming",
}


class CapabilityError(InputError):
    """A model backend lacks a capability the command needs (token probabilities, vocabulary, ...) (exit 2)."""


class VocabularyEngine(Protocol):
    """An engine declaring `Capability.VOCABULARY`: its token vocabulary."""

    vocab: TokenVocab


class CompilingEngine(Protocol):
    """An engine declaring `Capability.COMPILE`: a format's constraint compiled for its vocabulary, and its tokenizer
    (the lengths a compiled constraint is measured in)."""

    def compile(self, fmt: OutputFormat) -> Compiled: ...

    def tokenize(self, text: str | bytes, add_special: bool = False, parse_special: bool = False) -> list[int]: ...


def vocabulary_of(engine: Any) -> VocabularyEngine | None:
    """`engine` typed as a `VocabularyEngine` where it declares `Capability.VOCABULARY`, else None."""
    return cast("VocabularyEngine", engine) if Capability.VOCABULARY in capabilities_of(engine) else None


def compiler_of(engine: Any) -> CompilingEngine | None:
    """`engine` typed as a `CompilingEngine` where it declares `Capability.COMPILE`, else None."""
    return cast("CompilingEngine", engine) if Capability.COMPILE in capabilities_of(engine) else None


def capabilities_of(engine_or_backend: Any) -> Capability:
    """The declared capabilities of an engine or a backend; `Capability.NONE` where nothing is declared
    (an engine written before capabilities existed can still generate)."""
    caps = getattr(engine_or_backend, "capabilities", Capability.NONE)
    return caps if isinstance(caps, Capability) else Capability.NONE


def has(engine_or_backend: Any, cap: Capability) -> bool:
    """Whether the engine (or backend) declares every capability in `cap`."""
    return cap in capabilities_of(engine_or_backend)


def missing_message(engine_or_backend: Any, cap: Capability, for_what: str) -> str:
    """The one-line reason `require` gives: the backend, the capability it lacks, what needed it."""
    backend = _backend_name(engine_or_backend)
    lacks = ", ".join(_WORDS[c] for c in _WORDS if c in cap and c not in capabilities_of(engine_or_backend))
    return f"model backend {backend!r} has {lacks or 'what is needed'}, which {for_what} needs; use a llama: model (llama.cpp)"


def require(engine_or_backend: Any, cap: Capability, *, for_what: str) -> None:
    """Raise `CapabilityError` unless the engine (or backend) declares `cap`; `for_what` names the feature."""
    if not has(engine_or_backend, cap):
        raise CapabilityError(missing_message(engine_or_backend, cap, for_what))


def _backend_name(obj: Any) -> str:
    scheme = getattr(obj, "scheme", None)
    if isinstance(scheme, str):
        return scheme
    try:
        return str(obj.identity().backend)
    except Exception:
        return type(obj).__name__
