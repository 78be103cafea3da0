"""Conversations and agents: one conversation model, readers from chat logs, MLflow sessions,
OpenTelemetry GenAI spans, DeepEval and RAGAS objects, MLflow's renderings of a conversation and its
tool calls, per-turn windows, and deterministic tool-call metrics (docs/conversations.md)."""

from .model import Conversation, ToolCall, ToolSpec, Turn
from .otel_files import read_otel_traces
from .readers import Bounds, from_deepeval, from_messages, from_ragas
from .render import available_tools_text, conversation_text, expected_calls_text, tool_calls_text, turn_windows
from .toolcalls import deepeval_tool_correctness, ragas_tool_call_accuracy
from .traces import from_mlflow_store, from_mlflow_traces, from_otel

__all__ = [
    "Bounds",
    "Conversation",
    "ToolCall",
    "ToolSpec",
    "Turn",
    "available_tools_text",
    "conversation_text",
    "deepeval_tool_correctness",
    "expected_calls_text",
    "from_deepeval",
    "from_mlflow_store",
    "from_mlflow_traces",
    "from_messages",
    "from_otel",
    "from_ragas",
    "ragas_tool_call_accuracy",
    "read_otel_traces",
    "tool_calls_text",
    "turn_windows",
]
