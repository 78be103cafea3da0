"""Test support for the DeepEval ports: `RecordingLLM`, a DeepEval model that records every prompt the real
metric sends and answers it from a function, so a test can run DeepEval's own metric beside the ported judge on
the same answers and compare prompts and scores byte for byte."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deepeval.models.base_model import DeepEvalBaseLLM


class RecordingLLM(DeepEvalBaseLLM):
    """Records each prompt in `prompts` (the list given, or a new one) and answers `answer(prompt, schema)`: a
    schema instance, or JSON text (DeepEval parses text itself)."""

    def __init__(self, answer: Callable[[str, Any], Any], prompts: list[str] | None = None):
        self.answer, self.prompts = answer, (prompts if prompts is not None else [])
        super().__init__(model="recording")

    @classmethod
    def canned(cls, texts: list[str], prompts: list[str] | None = None) -> RecordingLLM:
        """Answers the given texts in order, one per call."""
        queue = list(texts)
        return cls(lambda prompt, schema: queue.pop(0), prompts)

    @classmethod
    def by_schema(cls, answer: Callable[[str], dict[str, Any]], prompts: list[str] | None = None) -> RecordingLLM:
        """Answers the metric's own schema built from `answer(prompt)`'s fields."""
        return cls(lambda prompt, schema: schema(**answer(prompt)), prompts)

    def load_model(self, *a: Any, **k: Any) -> Any:
        return self

    def generate(self, prompt: str, schema: Any = None, **k: Any) -> Any:
        self.prompts.append(prompt)
        return self.answer(prompt, schema)

    async def a_generate(self, prompt: str, schema: Any = None, **k: Any) -> Any:
        return self.generate(prompt, schema)

    def get_model_name(self, *a: Any, **k: Any) -> str:
        return "recording"
