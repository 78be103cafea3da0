"""What every adapter shares: the missing-extra error, one engine worker per loaded model, judges bound
to a model, framework records mapped onto judge variables, and schema-constrained generation.

Frameworks call from many threads (MLflow's scorer pools, DeepEval's and RAGAS's async executors). An
engine is not thread-safe, so every adapter reaches the model through `shared_worker(engine)`: one thread
owns the engine, requests from any thread join its current drain (decoded side by side with
`n_parallel`, sharing the prefix cache). The model itself is loaded once per process (`ModelRef`).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from ..engine.backends import ModelRef
from ..engine.base import DecodeOptions, Engine, Message
from ..engine.worker import EngineWorker
from ..errors import InputError, ParseError
from ..formats.json_schema import CLIENT_CONSTRAINT, JSONSchemaFormat
from ..judges.protocol import JudgeProtocol, SequentialJudge
from ..judges.spec import Variable
from ..store.results import JudgeResult


class MissingExtraError(InputError):
    """An optional framework is not installed; the message names the extra to install (exit 2)."""


def require(module: str, extra: str, framework: str) -> ModuleType:
    """Import `module`, or raise `MissingExtraError`: one line naming `pip install 'localjudge[extra]'`."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        why = f"{e.name} cannot be imported" if e.name and e.name != module else str(e).split("\n")[0]
        raise MissingExtraError(f"{framework} is not installed ({why}); pip install 'localjudge[{extra}]'") from None


# ------------------------------------------------------------------------------------- the shared engine

_WORKERS: dict[int, EngineWorker] = {}
_LOCK = threading.Lock()


def shared_worker(engine: Engine) -> EngineWorker:
    """The one `EngineWorker` of `engine` in this process (created on first use)."""
    with _LOCK:
        w = _WORKERS.get(id(engine))
        if w is None or w.engine is not engine:
            w = _WORKERS[id(engine)] = EngineWorker(engine, name=f"localjudge-engine-{engine.model_id}")
        return w


def decode_options(options: DecodeOptions | Mapping[str, Any] | None) -> DecodeOptions:
    """`DecodeOptions` from an instance, a dict of its fields, or None (the defaults)."""
    return options if isinstance(options, DecodeOptions) else DecodeOptions(**(options or {}))


class BoundJudge:
    """A judge with its model: `submit(values)` from any thread -> Future[JudgeResult], through the shared worker.

    The model is loaded on the first judgement (once per process for the same spec and options)."""

    def __init__(
        self,
        judge: str | JudgeProtocol,
        *,
        model: str | None = None,
        model_options: Mapping[str, Any] | None = None,
        engine: Engine | None = None,
        options: DecodeOptions | Mapping[str, Any] | None = None,
        judges_dir: str | None = None,
    ):
        if isinstance(judge, str):
            from ..judges import get_judge

            judge = get_judge(judge, judges_dir=judges_dir)
        self.judge: JudgeProtocol = judge
        self.ref = ModelRef(model, model_options, engine=engine)
        self.options = decode_options(options)

    @property
    def name(self) -> str:
        """The judge's name."""
        return self.judge.name

    def submit(self, values: Mapping[str, Any]) -> Future[JudgeResult]:
        """Queue one judgement; the future holds its `JudgeResult` (or the exception bad input raised)."""
        worker = shared_worker(self.ref.engine())
        judge, opts, row = self.judge, self.options, dict(values)

        def start(eng: Engine, done: Any) -> None:
            judge.submit_many(eng, [row], opts, lambda i, r: done(r), eng.model_id)

        return worker.call(start, sequential=isinstance(judge, SequentialJudge))

    def run(self, values: Mapping[str, Any]) -> JudgeResult:
        """One judgement, waiting for it (other threads' judgements are decoded beside it)."""
        return self.submit(values).result()


# ------------------------------------------------------------------------------- records -> variables

INPUT_NAMES = ("input", "question", "request", "query", "user_input", "prompt")
OUTPUT_NAMES = ("output", "response", "answer", "content", "actual_output")
CONTEXT_NAMES = ("retrieval_context", "context", "doc", "documents", "retrieved_contexts", "contexts")
_CHUNK_KEYS = ("content", "page_content", "text", "chunk")


def role_of(names: Iterable[str]) -> str | None:
    """ "input", "output" or "context" for a variable known by these names (its name first), else None."""
    for n in names:
        for role, known in (("input", INPUT_NAMES), ("output", OUTPUT_NAMES), ("context", CONTEXT_NAMES)):
            if n in known:
                return role
    return None


def chunk_text(value: Any) -> str | None:
    """The text of a retrieved chunk: a dict with content/page_content/text, or an object with such an
    attribute (LangChain and MLflow `Document`s); None for anything else."""
    if isinstance(value, Mapping):
        for k in _CHUNK_KEYS:
            if isinstance(value.get(k), str):
                return value[k]
        return None
    for k in ("page_content", "content", "text"):
        v = getattr(value, k, None)
        if isinstance(v, str) and not isinstance(value, str):
            return v
    return None


def _messages_text(value: Mapping[str, Any]) -> str | None:
    """The last message's text of a chat payload ({"messages": [...]} or OpenAI {"choices": [...]})."""
    msgs = value.get("messages")
    if isinstance(msgs, list) and msgs and isinstance(msgs[-1], Mapping) and isinstance(msgs[-1].get("content"), str):
        return msgs[-1]["content"]
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        msg = choices[0].get("message")
        if isinstance(msg, Mapping) and isinstance(msg.get("content"), str):
            return msg["content"]
    return None


def as_text(value: Any) -> str:
    """A record value as prompt text, never a Python repr: a chunk's text, a chat payload's last message,
    a one-key dict's value, else JSON (lists and dicts) or str (numbers)."""
    if isinstance(value, str):
        return value
    text = chunk_text(value)
    if text is not None:
        return text
    if isinstance(value, Mapping):
        text = _messages_text(value)
        if text is not None:
            return text
        if len(value) == 1:
            return as_text(next(iter(value.values())))
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return str(value)


def as_value(value: Any, var: Variable | None = None) -> Any:
    """A record value as the judge's variable takes it: lists stay lists (of chunk texts), so the judge
    renders them as its catalog does (one verdict per document, dash lines, ...); a dict stays a dict for a
    variable that renders dicts (`dict_format`), else becomes text; anything else becomes text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return [as_text(x) for x in value]
    if isinstance(value, Mapping) and var is not None and var.dict_format != "str" and chunk_text(value) is None:
        return {str(k): as_text(v) for k, v in value.items()}
    return as_text(value)


def bind_variables(
    judge: JudgeProtocol,
    sources: Sequence[Mapping[str, Any]],
    roles: Mapping[str, Any],
    fixed: Mapping[str, Any] | None = None,
    where: str = "the record",
    hint: str = "",
) -> dict[str, Any]:
    """The judge's variables from a framework's record, before any model call.

    Each variable (by its name, then its aliases) is looked up in `fixed`, then in each of `sources` in
    order; an input-, output- or context-like variable with no such key takes `roles["input"|"output"|
    "context"]`. A required variable still missing raises `InputError` naming it, `where` it was looked
    for, `hint` (`{var}` in it: that variable) and the judge's required variables."""
    fixed = fixed or {}
    values: dict[str, Any] = {}
    for v in judge.variables:
        names = [v.name, *v.aliases]
        val = None
        for src in (fixed, *sources):
            val = next((src[n] for n in names if src.get(n) is not None), None)
            if val is not None:
                break
        if val is None:
            role = role_of(names)
            if role is not None:
                val = roles.get(role)
        if val is not None:
            values[v.name] = as_value(val, v)
    for v in judge.variables:
        if not v.required or v.name in values or v.default is not None:
            continue
        if v.compose and any(values.get(src) is not None for src in v.compose.values()):
            continue
        also = f" (or {', '.join(v.aliases)})" if v.aliases else ""
        need = ", ".join(judge.required_variables)
        raise InputError(
            f"judge '{judge.name}' needs '{v.name}'{also}, which {where} does not provide"
            f"{'; ' + hint.replace('{var}', v.name) if hint else ''}; the judge's required variables: {need}"
        )
    return values


def check_fixed(judge: JudgeProtocol, fixed: Mapping[str, Any]) -> None:
    """Refuse fixed values for variables the judge does not take (naming the ones it does)."""
    known = {n for v in judge.variables for n in (v.name, *v.aliases)}
    unknown = [k for k in fixed if k not in known]
    if unknown:
        takes = ", ".join(v.name for v in judge.variables)
        raise InputError(f"judge '{judge.name}' takes no variable {unknown[0]!r}; it takes {takes}")


# ---------------------------------------------------------------------------- schema-constrained output


class StructuredModel:
    """A local model answering prompts constrained to pydantic schemas (for DeepEval and RAGAS).

    `generate(prompt, Schema)` decodes under `JSONSchemaFormat(Schema.model_json_schema())`, so the answer
    is valid JSON of the schema by construction, and returns `Schema.model_validate(...)`. Free-text
    fields get `field_tokens` tokens each, the whole answer at most `max_tokens` (None: the format's own
    budget). Any thread may call it; requests are batched on the one shared engine worker."""

    def __init__(
        self,
        model: str | None = None,
        *,
        model_options: Mapping[str, Any] | None = None,
        engine: Engine | None = None,
        options: DecodeOptions | Mapping[str, Any] | None = None,
        field_tokens: int = 80,
        max_tokens: int | None = None,
        system: str | None = None,
    ):
        self.ref = ModelRef(model, model_options, engine=engine)
        self.options = decode_options(options)
        self.field_tokens, self.max_tokens, self.system = field_tokens, max_tokens, system
        self._formats: dict[Any, JSONSchemaFormat] = {}
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The model's id (registry name or file name), without loading it."""
        return self.ref.identity().model_id

    def format_for(self, schema: type[BaseModel] | Mapping[str, Any] | None) -> JSONSchemaFormat:
        """The (cached) constrained format of a pydantic model class or a JSON schema; None: one JSON string."""
        key: Any = schema if isinstance(schema, type) else json.dumps(schema, sort_keys=True)
        with self._lock:
            fmt = self._formats.get(key)
            if fmt is None:
                js = {"type": "string"} if schema is None else schema.model_json_schema() if isinstance(schema, type) else schema
                fmt = self._formats[key] = JSONSchemaFormat(
                    dict(js), field_tokens=self.field_tokens, max_tokens=self.max_tokens, constraint=CLIENT_CONSTRAINT
                )
        return fmt

    def messages(self, prompt: str | Sequence[Message]) -> list[Message]:
        """The chat messages for a prompt (the optional system message first)."""
        if not isinstance(prompt, str):
            items = list(prompt)
            if all(isinstance(m, Message) for m in items):
                return items
            prompt = "\n".join(x if isinstance(x, str) else as_text(x) for x in items)  # multimodal parts: the text ones
        if not prompt.strip():
            raise InputError("the prompt is empty; pass the text the model should answer")
        return ([Message(role="system", content=self.system)] if self.system else []) + [Message(role="user", content=prompt)]

    def submit(
        self, prompt: str | Sequence[Message], schema: type[BaseModel] | None = None, json_schema: Mapping[str, Any] | None = None
    ) -> Future[Any]:
        """Queue one request; the future holds the validated schema instance (a str when `schema` is None).
        `json_schema`: a tighter JSON schema to decode under (the answer is still validated by `schema`)."""
        fmt = self.format_for(json_schema if json_schema is not None else schema)
        gen = shared_worker(self.ref.engine()).generate(self.messages(prompt), fmt, self.options)
        out: Future[Any] = Future()

        def finish(f: Future[Any]) -> None:
            try:
                value = fmt.parse(f.result().text).value
                out.set_result(value if schema is None else schema.model_validate(value))
            except ParseError as e:  # the constraint makes this unreachable unless decoding was unconstrained
                out.set_exception(e)
            except Exception as e:
                out.set_exception(e)

        gen.add_done_callback(finish)
        return out

    def generate(
        self, prompt: str | Sequence[Message], schema: type[BaseModel] | None = None, json_schema: Mapping[str, Any] | None = None
    ) -> Any:
        """One answer, waiting for it: a `schema` instance, or text when `schema` is None."""
        return self.submit(prompt, schema, json_schema).result()

    async def agenerate(
        self, prompt: str | Sequence[Message], schema: type[BaseModel] | None = None, json_schema: Mapping[str, Any] | None = None
    ) -> Any:
        """`generate` for asyncio: awaits the engine worker without blocking the event loop."""
        return await asyncio.wrap_future(self.submit(prompt, schema, json_schema))
