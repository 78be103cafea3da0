"""localjudge conversation judges as MLflow 3 session-level scorers. Needs `localjudge[mlflow]`.

    import mlflow
    from localjudge.integrations.mlflow_session_scorers import session_scorer

    traces = mlflow.search_traces(locations=[experiment_id], return_type="list")
    mlflow.genai.evaluate(data=traces, scorers=[session_scorer("conversation_completeness")])

MLflow makes a `@scorer` function session-level when it takes a `session` parameter (and then neither
`inputs`, `outputs` nor `trace`): `mlflow.genai.evaluate` groups the traces by their `mlflow.trace.session`
metadata, calls the scorer once per session with the session's traces, and logs its `Feedback` on the
session's first trace. `session_scorer` builds exactly such a function, so MLflow's `is_session_level_scorer`
is True by MLflow's own rule.

The session becomes a `Conversation` as `localjudge run --mlflow-sessions` reads it (`from_mlflow_traces`),
and the judge sees what a `--granularity session` row holds: `conversation` as MLflow renders it for its own
session-level judges (`conversation_text`; with tool calls for MLflow's tool-call judges), `tools_called`,
`available_tools` and `conversation_with_tool_calls`; `expectations` and fixed variables go first. So the
same model gives the same value and rationale as the run stores for that session. The `Feedback` is the
single-turn adapter's (`feedback_of`: source `LLM_JUDGE` `localjudge:<model>`; an unscored result is an
error Feedback with its reason), with the session id and its trace ids in the metadata.

Per turn: MLflow logs every Feedback of a session-level scorer on the session's first trace, so it has no
place for per-turn results of a session scorer; `localjudge run --mlflow-sessions URI --granularity turn
--log-assessments` puts each turn's result on that turn's trace.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

from ..engine.base import DecodeOptions, Engine
from ..errors import InputError
from ..judges.protocol import JudgeProtocol
from .common import BoundJudge, bind_variables, check_fixed, require
from .mlflow import EXTRA, feedback_of

WHERE = "this MLflow session (its conversation, expectations)"
HINT = "fix it with session_scorer(..., {var}=...) or put it in the session's expectations"


def session_values(
    judge: JudgeProtocol,
    session: list[Any],
    expectations: Mapping[str, Any] | None = None,
    fixed: Mapping[str, Any] | None = None,
) -> tuple[str, list[str], dict[str, Any]]:
    """(session id, its trace ids in time order, the judge's variables) for the traces of one MLflow session;
    `InputError` for traces that are not one session or a judge variable nothing provides."""
    from ..conversations.dataset import WITH_TOOLS, conversation_sources
    from ..conversations.render import available_tools_text, conversation_text, tool_calls_text
    from ..conversations.traces import SESSION_KEY, from_mlflow_traces

    convs = from_mlflow_traces(list(session or []))
    if len(convs) != 1:
        ids = sorted({str(t.info.trace_metadata.get(SESSION_KEY)) for t in session or []})
        raise InputError(
            f"a session scorer needs the traces of one session ({SESSION_KEY} metadata); got {len(session or [])} "
            f"traces of sessions {', '.join(ids) or 'none'}; pass mlflow.genai.evaluate traces with that metadata"
        )
    conv = convs[0]
    record = {
        "conversation": conversation_text(conv),
        WITH_TOOLS: conversation_text(conv, include_tool_calls=True),
        "tools_called": tool_calls_text(conv),
        "available_tools": available_tools_text(conv.available_tools),
    }
    record.update({v: record[src] for v, src in conversation_sources(judge.variables).items() if src in record})
    sources = [s for s in (expectations, record) if isinstance(s, Mapping)]
    values = bind_variables(judge, sources, {}, fixed, WHERE, HINT)
    return conv.id or "", list(conv.metadata.get("trace_ids") or []), values


def session_scorer(
    judge: str | JudgeProtocol,
    *,
    model: str | None = None,
    model_options: Mapping[str, Any] | None = None,
    engine: Engine | None = None,
    options: DecodeOptions | Mapping[str, Any] | None = None,
    judges_dir: str | None = None,
    name: str | None = None,
    description: str | None = None,
    aggregations: list[Any] | None = None,
    timeout: float | None = 0,
    **variables: Any,
) -> Any:
    """A session-level MLflow scorer (MLflow's `@scorer` over a `session` parameter) running a localjudge
    conversation judge (one taking `{{ conversation }}`: `conversation_completeness`, `user_frustration`,
    `knowledge_retention`, ... or your own) on a local model, once per session.

    The arguments are those of `localjudge.integrations.mlflow.scorer`: `judge` a catalog name or judge
    object, `model`/`model_options` or a loaded `engine` (loaded on the first session, once per process),
    `options` the decoding options, `**variables` judge variables fixed for every session, `name` the
    metric name (the judge's by default), `description`/`aggregations`/`timeout` for MLflow's `@scorer`
    (`timeout` 0: none, as a session waits in the local model's queue). A judge that takes no
    `conversation` variable is refused here, naming the variables it takes."""
    require("mlflow", EXTRA, "MLflow")
    from mlflow.genai.scorers import scorer as mlflow_scorer

    bound = BoundJudge(judge, model=model, model_options=model_options, engine=engine, options=options, judges_dir=judges_dir)
    check_fixed(bound.judge, variables)
    if not any(v.name == "conversation" or "conversation" in v.aliases for v in bound.judge.variables):
        takes = ", ".join(v.name for v in bound.judge.variables)
        raise InputError(
            f"judge '{bound.name}' takes no 'conversation' variable (it takes {takes}); a session scorer needs a "
            "conversation judge; use localjudge.integrations.mlflow.scorer for single-turn judges"
        )
    metric = name or bound.name

    def localjudge_session_scorer(session: list[Any], expectations: dict[str, Any] | None = None) -> Any:
        sid, trace_ids, values = session_values(bound.judge, session, expectations, variables)
        feedback = feedback_of(bound.run(values), bound, metric)
        feedback.metadata = {**(feedback.metadata or {}), "conversation_id": sid, "trace_ids": json.dumps(trace_ids)}
        return feedback

    kwargs: dict[str, Any] = {"name": metric, "description": description or f"localjudge conversation judge {bound.name!r}"}
    if aggregations is not None:
        kwargs["aggregations"] = aggregations
    if timeout is not None and "timeout" in inspect.signature(mlflow_scorer).parameters:
        kwargs["timeout"] = timeout
    return mlflow_scorer(localjudge_session_scorer, **kwargs)
