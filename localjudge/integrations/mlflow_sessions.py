"""A run over MLflow sessions (`localjudge run --mlflow-sessions URI --log-assessments`) logged back to MLflow:
each result becomes an MLflow assessment (`Feedback`, source `LLM_JUDGE` `localjudge:<model>`, as the scorer
adapter in mlflow.py makes them) on a trace of its session.

Where a result goes: a session-level result on the session's first trace (where `mlflow.genai.evaluate` logs
its session-level scorers' assessments); a per-turn result on the trace of that turn (the session's traces in
time order: trace k gave the k-th unit interaction, its request and response). An unscored result is logged
as a `Feedback` with an `AssessmentError` naming its reason, never dropped.
"""

from __future__ import annotations

import json
from typing import Any

from ..store.results import ResultRow


def _feedback(row: ResultRow) -> Any:
    from mlflow.entities import AssessmentError, AssessmentSource, Feedback

    res = row.result
    source = AssessmentSource(source_type="LLM_JUDGE", source_id=f"localjudge:{res.model_id}")
    meta = {
        "judge": res.judge,
        "judge_version": res.judge_version,
        "format": res.format,
        "model_id": res.model_id,
        "score": res.score,
        "passed": res.passed,
        "unscored_reason": res.unscored_reason,
        "conversation_id": row.conversation_id,
        "turn_index": row.turn_index,
        "localjudge_row_id": row.row_id,
    }
    metadata = {k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.items() if v is not None}
    if not res.scored:
        err = AssessmentError(error_code=(res.unscored_reason or "unscored").upper(), error_message=row.error or res.error or "")
        return Feedback(name=row.judge, error=err, source=source, metadata=metadata, rationale=res.rationale)
    value = res.value if isinstance(res.value, (str, int, float, bool)) else res.score
    return Feedback(name=row.judge, value=value, rationale=res.rationale, source=source, metadata=metadata)


def log_assessments(run: Any, tracking_uri: str) -> int:
    """Log every result of `run` (a `RunResult` over MLflow sessions) as an assessment on its trace in the store
    at `tracking_uri`; returns how many were logged. Results without a conversation (none in such a run) are
    left out."""
    import mlflow

    from ..conversations.traces import from_mlflow_store

    traces = {c.id: list(c.metadata.get("trace_ids") or []) for c in from_mlflow_store(tracking_uri)}
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(tracking_uri)
    n = 0
    try:
        for row in run.results:
            ids = traces.get(row.conversation_id) or []
            if not ids:
                continue
            trace_id = ids[0] if row.turn_index is None else ids[min(row.turn_index, len(ids) - 1)]
            mlflow.log_assessment(trace_id=trace_id, assessment=_feedback(row))
            n += 1
    finally:
        mlflow.set_tracking_uri(previous)
    return n
