"""A local GGUF model as RAGAS's LLM (and embeddings). Needs `localjudge[ragas]`.

    from ragas.metrics.collections import Faithfulness
    from localjudge.integrations.ragas import LocalJudgeRagasLLM

    llm = LocalJudgeRagasLLM()                       # the default model; LocalJudgeRagasLLM("path.gguf")
    result = await Faithfulness(llm=llm).ascore(user_input=q, response=a, retrieved_contexts=[c])

`LocalJudgeRagasLLM` implements RAGAS 0.4's instructor-style interface (`InstructorBaseRagasLLM`:
`generate(prompt, response_model)` / `agenerate`): each answer is decoded constrained to
`response_model`'s JSON schema (RAGAS's 0/1 integer fields held to 0..1) and returned as the validated
instance. It serves both kinds of RAGAS
metrics: the `ragas.metrics.collections` ones (`ascore`, `batch_score`) and the classic ones run by
`ragas.evaluate(dataset, metrics=[...], llm=..., embeddings=...)`.

`LocalEmbeddings` gives metrics that compare texts by cosine similarity (answer relevancy) an offline
embedding model: llama.cpp's embedding mode on a local GGUF, the default judge model unless you pass
another (`engine.embed.LlamaEmbedder`): mean-pooled decoder states, a weak but real embedding; pass a
GGUF embedding model for quality. It implements both the new (`embed_text`) and the classic
(`embed_query`/`embed_documents`) interfaces.

Importing this module sets `RAGAS_DO_NOT_TRACK=true` unless it is already set (localjudge makes no
network calls).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from ..engine.base import DecodeOptions, Engine
from ..engine.embed import LlamaEmbedder
from .common import StructuredModel, require

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
require("ragas", "ragas", "RAGAS")

from ragas.embeddings.base import BaseRagasEmbedding  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402

T = TypeVar("T", bound=BaseModel)

# RAGAS's 0/1 integer fields (faithfulness verdicts, answer relevancy's noncommittal, context recall's
# attribution): typed `int` in RAGAS's schemas, with 0/1 only in the prompt or the field description.
BINARY_FIELDS = ("verdict", "noncommittal", "attributed")


def binary_schema(model: type[BaseModel]) -> dict[str, Any] | None:
    """`model`'s JSON schema with RAGAS's 0/1 integer fields held to 0..1 (None when it has none)."""
    js = model.model_json_schema()
    changed = False
    for obj in [js, *js.get("$defs", {}).values()]:
        for name, prop in (obj.get("properties") or {}).items():
            if name in BINARY_FIELDS and prop.get("type") == "integer" and "maximum" not in prop:
                prop.update(minimum=0, maximum=1)
                changed = True
    return js if changed else None


class LocalJudgeRagasLLM(InstructorBaseRagasLLM):
    """RAGAS's `InstructorBaseRagasLLM` on a local model: answers decoded under `response_model`, validated.

    `model`: a model spec (None: the default model) with `model_options`, or an `engine` already loaded;
    `field_tokens` per free-text field, `max_tokens` for the whole answer (None: the schema's budget);
    `options`: `DecodeOptions`. The model loads on the first call, once per process (shared with the
    other adapters through one engine worker, so RAGAS's concurrent jobs are batched)."""

    is_async = True  # RAGAS's classic prompts call `agenerate` when this is set (they await the engine worker)

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
        self.model = f"localjudge:{self.structured.model_id}"

    def generate(self, prompt: str, response_model: type[T]) -> T:
        """The answer as a validated `response_model` instance (waits for the engine worker)."""
        return self.structured.generate(prompt, response_model, binary_schema(response_model))

    async def agenerate(self, prompt: str, response_model: type[T]) -> T:
        """`generate` for asyncio (RAGAS's executor): awaits the worker without blocking the loop."""
        return await self.structured.agenerate(prompt, response_model, binary_schema(response_model))

    def __repr__(self) -> str:
        return f"LocalJudgeRagasLLM({self.model!r})"


class LocalEmbeddings(BaseRagasEmbedding):
    """Offline embeddings from a local GGUF (the default judge model unless `model` names another)."""

    def __init__(self, model: str | None = None, n_ctx: int = 1024, n_threads: int | None = None):
        super().__init__()
        self.embedder = LlamaEmbedder(model, n_ctx=n_ctx, n_threads=n_threads)

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        """One text's unit vector."""
        return self.embedder.embed([text])[0]

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        """`embed_text` in a thread, so the event loop keeps running."""
        return await asyncio.to_thread(self.embed_text, text)

    def embed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        """Several texts' unit vectors."""
        return self.embedder.embed(texts)

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        """`embed_texts` in a thread."""
        return await asyncio.to_thread(self.embedder.embed, texts)

    # the classic (LangChain-style) interface, used by `ragas.evaluate`'s metrics
    def embed_query(self, text: str) -> list[float]:
        """Classic interface: one text's vector."""
        return self.embed_text(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Classic interface: several texts' vectors."""
        return self.embedder.embed(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Classic interface, async."""
        return await self.aembed_text(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Classic interface, async."""
        return await self.aembed_texts(texts)

    def __repr__(self) -> str:
        return f"LocalEmbeddings({self.embedder.model_id!r})"
