"""The `keyword:` backend: a deterministic judge with no model, for demos, smoke tests and baselines.

    localjudge judge thumbs_keywords --model keyword:refund,sorry --field output="Sorry, here is your refund."

It reads the last user message of each request (the rendered judge prompt) and passes it when any of
the keywords occurs in it (case-insensitive), with a reason naming the keyword it found. It answers the
formats whose verdict is a pass or a fail: `thumbs` (this plugin) and `yes_no_json` (built in); any
other format is an error naming the formats it knows. With `--probs` it reports the verdict with
probability 1, so it declares token probabilities (`Capability.TOKEN_PROBS`) and nothing else.

It is built on localjudge's `ScriptedEngine` (answers from a function) and is a complete backend:
typed options, an identity without loading (model id and a digest of the keywords, so the cache
tells two keyword lists apart), and `load`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from pydantic import Field

from localjudge.engine import Backend, BackendOptions, Engine, Message, ModelIdentity, ScriptedEngine
from localjudge.engine.capabilities import Capability
from localjudge.errors import InputError
from localjudge.formats import OutputFormat

VERDICTS = {"thumbs": ("up", "down"), "yes_no_json": ("yes", "no")}


class KeywordOptions(BackendOptions):
    """Options of `keyword:` models (`--option key=value`)."""

    invert: bool = Field(False, description="fail (instead of pass) when a keyword occurs: a blocklist")
    n_ctx: int = Field(4096, ge=16, description="context window the engine reports")


def keywords_of(target: str | None) -> list[str]:
    """The comma-separated keywords of `keyword:WORD,WORD`, lower-cased; `InputError` when there are none."""
    words = [w.strip().lower() for w in (target or "").split(",") if w.strip()]
    if not words:
        raise InputError("keyword: needs at least one keyword, e.g. --model keyword:refund,sorry")
    return words


def answer(words: list[str], invert: bool, messages: Sequence[Message], fmt: OutputFormat) -> tuple[str, str]:
    """(text before the verdict, the verdict) for one request under `fmt`."""
    if fmt.kind not in VERDICTS:
        raise InputError(f"keyword: answers the formats {', '.join(VERDICTS)}; this judge asks for {fmt.kind!r}")
    text = next((m.content for m in reversed(messages) if m.role == "user"), "").lower()
    found = next((w for w in words if w in text), None)
    passed = (found is not None) != invert
    reason = f"the text mentions {found!r}" if found else f"the text mentions none of {', '.join(words)}"
    verdict = VERDICTS[fmt.kind][0 if passed else 1]
    fast = fmt.n_free_fields() == 0  # the verdict-only variant (--fast): no reason to write
    if fmt.kind == "thumbs":
        return ("thumb: " if fast else f"reason: {reason}\nthumb: "), verdict
    head = '{"result": "' if fast else '{"rationale": ' + json.dumps(reason) + ', "result": "'
    return head, verdict


class KeywordEngine(ScriptedEngine):
    """A `ScriptedEngine` that names its backend `keyword` in run records and cache keys."""

    def identity(self) -> ModelIdentity:
        """The keyword model: its id and the digest of its keywords."""
        return ModelIdentity(backend="keyword", model_id=self.model_id, digest=self.model_sha256)


class KeywordBackend(Backend):
    """`keyword:WORD[,WORD...]`: pass when the prompt mentions a keyword (`--option invert=true`: fail)."""

    scheme = "keyword"
    Options = KeywordOptions
    summary = "no model: pass when the prompt mentions a keyword (example plugin)"
    capabilities = Capability.TOKEN_PROBS

    def identity(self, target: str | None, options: BackendOptions) -> ModelIdentity:
        """model id `keyword:<words>`; digest: sha256 of the keywords and `invert`."""
        assert isinstance(options, KeywordOptions)
        words = keywords_of(target)
        digest = hashlib.sha256(json.dumps([words, options.invert]).encode()).hexdigest()
        return ModelIdentity(backend="keyword", model_id="keyword:" + ",".join(words), digest=digest)

    def load(self, target: str | None, options: BackendOptions) -> Engine:
        """A `ScriptedEngine` answering by the keyword rule (and its probability-1 choice point with --probs)."""
        assert isinstance(options, KeywordOptions)
        words, ident = keywords_of(target), self.identity(target, options)

        def text(messages: Sequence[Message], fmt: OutputFormat) -> str:
            before, verdict = answer(words, options.invert, messages, fmt)
            return before + verdict + ('"}' if fmt.kind == "yes_no_json" else "")

        def steps(messages: Sequence[Message], fmt: OutputFormat) -> list[tuple[str, dict[str, float]]]:
            before, verdict = answer(words, options.invert, messages, fmt)
            return [(before, {verdict: 1.0})]

        return KeywordEngine(text, model_id=ident.model_id, n_ctx=options.n_ctx, digest=ident.digest, choice_steps=steps)
