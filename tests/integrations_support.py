"""Test support for the framework adapters: telemetry off for every framework (set before any of them is
imported), a temporary MLflow tracking store, and scripted engines that record their prompts."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

TELEMETRY_OFF = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_MODEL_CATALOG_URI": "",  # else MLflow fetches a model catalogue from the network
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
    "RAGAS_DO_NOT_TRACK": "true",
    "DO_NOT_TRACK": "true",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
for _k, _v in TELEMETRY_OFF.items():
    os.environ.setdefault(_k, _v)


def yes_no(result: str = "yes", rationale: str = "scripted") -> str:
    """A yes/no_json answer."""
    return json.dumps({"rationale": rationale, "result": result})


def scripted(answer: str | Any = None) -> Any:
    """A `ScriptedEngine` answering `answer` (text, or a function of (messages, format)) to every request."""
    from localjudge.engine.base import ScriptedEngine

    if callable(answer):
        return ScriptedEngine(answer)
    text = answer if answer is not None else yes_no()
    return ScriptedEngine(lambda msgs, fmt: text)


def prompt_text(messages: Sequence[Any]) -> str:
    """All message contents of one request, joined."""
    return "\n".join(m.content for m in messages)
