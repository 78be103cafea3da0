"""A local GGUF model as DeepEval's judge model. Needs `localjudge[deepeval]`.

    from deepeval.metrics import FaithfulnessMetric
    from localjudge.integrations.deepeval import LocalJudgeLLM

    metric = FaithfulnessMetric(model=LocalJudgeLLM())          # the default model; LocalJudgeLLM("path.gguf")
    metric.measure(test_case)

DeepEval's metrics call `generate(prompt, schema=SomePydanticModel)`. `LocalJudgeLLM` decodes that answer
constrained to the schema (`JSONSchemaFormat`: every property written, enums and bounds enforced, free
text bounded in tokens) and returns the validated instance, so DeepEval's JSON repair never runs: there
is no malformed answer to repair. GEval's `ReasonScore` is also held to the integer range its prompt
states. Without a schema, `generate` returns text (one JSON string, decoded and bounded like any field).

One model per process, shared with the other adapters through one engine worker: DeepEval's async mode
(`a_generate`) and its thread pools batch their requests on it. Importing this module sets
`DEEPEVAL_TELEMETRY_OPT_OUT=1` unless it is already set (localjudge makes no network calls).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ..engine.base import DecodeOptions, Engine
from .common import StructuredModel, require

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
require("deepeval", "deepeval", "DeepEval")

from deepeval.models.base_model import DeepEvalBaseLLM  # noqa: E402

_SCORE_RANGE = re.compile(r'"score"`?:? an integer between (\d+) and (\d+)')


def _tighter_schema(prompt: Any, schema: Any) -> dict[str, Any] | None:
    """GEval's `ReasonScore`: the score as an integer in the range its prompt states (else None: as given)."""
    if schema is None or getattr(schema, "__name__", "") != "ReasonScore" or not isinstance(prompt, str):
        return None
    m = _SCORE_RANGE.search(prompt)
    js = schema.model_json_schema()
    props = js.get("properties", {})
    if not m or "score" not in props:
        return None
    lo, hi = int(m.group(1)), int(m.group(2))
    props["score"] = {"type": "integer", "minimum": lo, "maximum": hi, "title": "Score"}
    return js


class LocalJudgeLLM(DeepEvalBaseLLM):
    """DeepEval's `DeepEvalBaseLLM` on a local model: schema-constrained answers, returned validated.

    `model`: a model spec (None: the default model; a registry name, a .gguf path, `scripted:...`) with
    `model_options`, or an `engine` already loaded. `field_tokens`: tokens per free-text field (each
    truth, claim, reason); `max_tokens`: the whole answer (None: the schema's own budget). `options`:
    `DecodeOptions` (temperature, seed, ...). The model loads on the first call."""

    def __init__(
        self,
        model: str | None = None,
        *,
        model_options: Mapping[str, Any] | None = None,
        engine: Engine | None = None,
        options: DecodeOptions | Mapping[str, Any] | None = None,
        field_tokens: int = 80,
        max_tokens: int | None = None,
    ):
        self.structured = StructuredModel(
            model, model_options=model_options, engine=engine, options=options, field_tokens=field_tokens, max_tokens=max_tokens
        )
        super().__init__(model=f"localjudge:{self.structured.model_id}")

    def load_model(self, *args: Any, **kwargs: Any) -> Any:  # DeepEval types it as the LLM; its value is model-specific
        """The model reference (the GGUF itself loads on the first call, once per process)."""
        return self.structured

    def generate(self, prompt: Any, schema: Any = None, **kwargs: Any) -> Any:
        """The answer to `prompt`: an instance of `schema` (decoded under its JSON schema), or text."""
        return self.structured.generate(prompt, schema, _tighter_schema(prompt, schema))

    async def a_generate(self, prompt: Any, schema: Any = None, **kwargs: Any) -> Any:
        """`generate` for DeepEval's async mode: waits on the engine worker without blocking the loop."""
        return await self.structured.agenerate(prompt, schema, _tighter_schema(prompt, schema))

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        """`localjudge:<model id>`."""
        return f"localjudge:{self.structured.model_id}"

    def supports_structured_outputs(self) -> bool:
        """True: every answer is decoded under the schema."""
        return True

    def supports_json_mode(self) -> bool:
        """True: every answer is valid JSON by construction."""
        return True
