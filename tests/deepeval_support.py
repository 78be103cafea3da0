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


def conversation_judge(name: str, strict_mode: bool = False) -> Any:
    """The built-in deepeval_conversation judge `name`, with DeepEval's `strict_mode` set when asked."""
    from localjudge.judges import get_judge
    from localjudge.judges.judge import Judge

    judge = get_judge(name)
    if strict_mode:
        spec = judge.spec.model_copy(deep=True)
        assert spec.deepeval_conversation is not None
        spec.deepeval_conversation.strict_mode = True
        judge = Judge(spec)
    return judge


def judge_turns(
    name: str, turns: list[tuple[str, str]], answer: Callable[[str], Any], strict_mode: bool = False, **values: Any
) -> tuple[Any, list[str]]:
    """The ported judge `name` (strict mode set as DeepEval's) on `turns` ((role, content) pairs) with a scripted
    engine answering `answer(prompt)` as JSON: (its result, the prompts it sent). `values`: its other variables."""
    import json

    from integrations_support import scripted

    from localjudge.conversations import from_messages
    from localjudge.conversations.render import deepeval_turns_text

    judge = conversation_judge(name, strict_mode)
    prompts: list[str] = []

    def reply(msgs: Any, fmt: Any) -> str:
        (m,) = msgs
        prompts.append(m.content)
        return json.dumps(answer(m.content), ensure_ascii=False)

    conv = from_messages([{"role": r, "content": c} for r, c in turns])
    return judge.evaluate(scripted(reply), deepeval_turns=deepeval_turns_text(conv), **values), prompts
