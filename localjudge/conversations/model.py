"""The conversation data model every reader produces and every renderer and metric consumes: ordered
`Turn`s (system / user / assistant / tool), the assistant's `ToolCall`s, tool results as `tool` turns
that point back at their call, plus what a judge may compare against (expected tool calls, expected
outcome), the assistant's assigned role and free metadata."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Role = Literal["system", "user", "assistant", "tool"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Strict):
    """One call the assistant made (or was expected to make): the tool's name, its arguments as a dict
    (decoded from JSON where the source held a string) and the call id that its result refers to."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ToolSpec(_Strict):
    """A tool the assistant could call: name, description and its JSON-schema parameters."""

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)


class Turn(_Strict):
    """One message. `tool_calls` and `retrieval_context` (the passages retrieved for this answer, DeepEval's
    `Turn.retrieval_context`; None when the source gives none) only on assistant turns; `tool_call_id` (the call
    answered), `name` (the tool) and `error` (the exception text when the tool failed) only on tool turns."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    error: str | None = None
    retrieval_context: list[str] | None = None

    @model_validator(mode="after")
    def _fields_fit_role(self) -> Turn:
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"tool_calls are only allowed on assistant turns, not on a {self.role} turn")
        if self.role != "tool" and (self.tool_call_id is not None or self.error is not None):
            raise ValueError(f"tool_call_id and error are only allowed on tool turns, not on a {self.role} turn")
        if self.retrieval_context is not None and self.role != "assistant":
            raise ValueError(f"retrieval_context is only allowed on assistant turns, not on a {self.role} turn")
        return self


class Conversation(_Strict):
    """A whole conversation (an MLflow session, a chat log, a test case) in turn order.

    `persona` is the assistant's assigned role when the source states it apart from a system turn
    (DeepEval's `chatbot_role`); `expected_tool_calls` and `expected_outcome` are references for the
    tool-call metrics and outcome judges; `available_tools` is what the assistant could call."""

    id: str | None = None
    turns: list[Turn]
    expected_tool_calls: list[ToolCall] | None = None
    expected_outcome: str | None = None
    persona: str | None = None
    available_tools: list[ToolSpec] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def tool_calls(self) -> list[ToolCall]:
        """Every call the assistant made, in conversation order."""
        return [c for t in self.turns if t.role == "assistant" for c in t.tool_calls]

    def results_by_call_id(self) -> dict[str, Turn]:
        """The tool turns that answer a call, by the id of that call (the first answer wins)."""
        out: dict[str, Turn] = {}
        for t in self.turns:
            if t.role == "tool" and t.tool_call_id is not None:
                out.setdefault(t.tool_call_id, t)
        return out

    def assistant_turn_indices(self) -> list[int]:
        """Indices into `turns` of the assistant turns: the turns a per-turn judge scores."""
        return [i for i, t in enumerate(self.turns) if t.role == "assistant"]
