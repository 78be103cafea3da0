"""localjudge judges as MLflow 3 scorers, and runs logged to MLflow tracking. Needs `localjudge[mlflow]`.

    import mlflow
    from localjudge.integrations.mlflow import scorer

    mlflow.genai.evaluate(
        data=[{"inputs": {"question": "What is 2+2?"}, "outputs": "4", "expectations": {"expected_response": "4"}}],
        scorers=[scorer("correctness"), scorer("relevance_to_query"), scorer("guidelines", guidelines="Be polite.")],
    )

How MLflow's arguments reach the judge's variables (the 8 MLflow judges take MLflow's own names):

| judge variable (aliases) | taken from |
|---|---|
| `input` (question, request) | `inputs[name]` for any of its names; else `inputs` itself: a string, a one-key dict's value, a chat payload's last message, else the dict as JSON; else the trace's root span inputs |
| `output` / safety's `content` (answer, response) | `outputs` the same way (a string, `{"choices": ...}`, `{"messages": ...}`, ...); else the trace's root span outputs |
| `ground_truth` (expected_response, expected_facts, expected), `expected_output` | `expectations[name]` (a list of expected facts stays a list) |
| `guidelines` | `scorer(..., guidelines=...)` or `expectations["guidelines"]` |
| `retrieval_context` / `doc` (context, documents) | `expectations` / `inputs` under one of its names; else the chunks of the trace's top-level RETRIEVER spans (their text, in order) |

Any variable can also be fixed when the scorer is made (`scorer("guidelines", guidelines=[...])`). A record
that lacks a required variable fails that row before any model call, with an error naming the variable,
where it was looked for and the judge's required variables (MLflow shows it as the row's error).

The scorer returns `Feedback(value=..., rationale=..., source=AssessmentSource("LLM_JUDGE",
"localjudge:<model>"), metadata={score, passed, expected_score, judge, judge_version, model_sha256, ...})`:
value "yes"/"no" for yes/no judges (MLflow's CategoricalRating convention), the number for score judges,
the normalised score for judges with structured values (retrieval_relevance's per-document verdicts go to
the metadata). An unscored result is `Feedback(error=...)` with its reason, never a fake "no".

Thread safety: MLflow calls scorers from thread pools (`MLFLOW_GENAI_EVAL_MAX_WORKERS` x scorer workers).
Every scorer of a process shares one loaded model through one `EngineWorker`, which decodes the
concurrent requests side by side; with `n_parallel=1` (the default) each output is byte-identical to
judging the row alone.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..engine.base import DecodeOptions, Engine
from ..judges.protocol import JudgeProtocol
from ..run.record import JudgeRef, RunRecord
from ..store.results import JudgeResult
from .common import BoundJudge, bind_variables, check_fixed, chunk_text, require

EXTRA = "mlflow"
WHERE = "this MLflow record (inputs, outputs, expectations, trace)"
HINT = (
    "put it in inputs or expectations under one of those names, fix it with scorer(..., {var}=...), "
    "or (for retrieved context) pass a trace with a RETRIEVER span"
)


def _mlflow() -> Any:
    return require("mlflow", EXTRA, "MLflow")


# ------------------------------------------------------------------------------------------- scorers


def _root_span(trace: Any) -> Any:
    try:
        return next((s for s in trace.data.spans if not s.parent_id), None)
    except Exception:  # not a trace
        return None


def _trace_chunks(trace: Any) -> list[str] | None:
    """The text of every chunk of the trace's top-level RETRIEVER spans, in order (None: no such span)."""
    if trace is None:
        return None
    from mlflow.genai.utils.trace_utils import extract_retrieval_context_from_trace

    spans = extract_retrieval_context_from_trace(trace)
    chunks = [chunk_text(c) or json.dumps(c, default=str) for docs in spans.values() for c in docs]
    return chunks or None


def record_values(
    judge: JudgeProtocol,
    inputs: Any = None,
    outputs: Any = None,
    expectations: Mapping[str, Any] | None = None,
    trace: Any = None,
    fixed: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The judge's variables from MLflow's scorer arguments (see the module docstring); `InputError` naming
    the missing variable and the judge's required variables when the record lacks one."""
    root = _root_span(trace) if trace is not None else None
    if inputs is None and root is not None:
        inputs = root.inputs
    if outputs is None and root is not None:
        outputs = root.outputs
    sources = [s for s in (expectations, inputs, outputs) if isinstance(s, Mapping)]
    names = {n for v in judge.variables for n in (v.name, *v.aliases)}
    needs_chunks = any(n in names for n in ("retrieval_context", "doc", "context", "documents"))
    roles = {"input": inputs, "output": outputs, "context": _trace_chunks(trace) if needs_chunks else None}
    return bind_variables(judge, sources, roles, fixed, WHERE, HINT)


def _metadata(result: JudgeResult, bound: BoundJudge) -> dict[str, str]:
    ident = bound.ref.identity()
    meta: dict[str, Any] = {
        "judge": result.judge,
        "judge_version": result.judge_version,
        "format": result.format,
        "model_id": result.model_id or ident.model_id,
        "model_sha256": ident.digest,
        "score": result.score,
        "passed": result.passed,
        "expected_score": result.expected_score,
        "unscored_reason": result.unscored_reason,
    }
    if isinstance(result.value, (list, dict)):
        meta["value"] = result.value
    if result.details:
        meta["details"] = result.details
    return {k: v if isinstance(v, str) else json.dumps(v, default=str) for k, v in meta.items() if v is not None}


def feedback_of(result: JudgeResult, bound: BoundJudge, name: str) -> Any:
    """A `JudgeResult` as an MLflow `Feedback` (an unscored result: `Feedback(error=...)` with its reason)."""
    from mlflow.entities import AssessmentError, AssessmentSource, Feedback

    source = AssessmentSource(source_type="LLM_JUDGE", source_id=f"localjudge:{result.model_id or bound.ref.identity().model_id}")
    meta = _metadata(result, bound)
    if not result.scored:
        err = AssessmentError(error_code=(result.unscored_reason or "unscored").upper(), error_message=result.error or "unscored")
        return Feedback(name=name, error=err, source=source, metadata=meta, rationale=result.rationale)
    value = result.value
    if not isinstance(value, (str, int, float, bool)):
        value = result.score
    return Feedback(name=name, value=value, rationale=result.rationale, source=source, metadata=meta)


def scorer(
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
    """An MLflow scorer (made with MLflow's `@scorer`) that runs a localjudge judge on a local model.

    `judge`: a catalog name (`localjudge judges list`) or a judge object. `model`/`model_options`: the
    model spec and its backend options (None: the default model), or an `engine` already loaded; loaded
    on the first row, once per process. `options`: `DecodeOptions` (or a dict of them: fast=True, ...).
    `**variables`: judge variables fixed for every row (`guidelines=[...]`). `name`: the metric name (the
    judge's name by default); `description`, `aggregations`, `timeout` go to MLflow's `@scorer`. `timeout`
    is 0 (none) by default: MLflow's own default (300 s per call) counts the time a row waits in the local
    model's queue behind every other thread's rows, and a constrained local decode always ends within its
    token budget."""
    _mlflow()
    from mlflow.genai.scorers import scorer as mlflow_scorer

    bound = BoundJudge(judge, model=model, model_options=model_options, engine=engine, options=options, judges_dir=judges_dir)
    check_fixed(bound.judge, variables)
    metric = name or bound.name

    def localjudge_scorer(
        inputs: Any = None, outputs: Any = None, expectations: dict[str, Any] | None = None, trace: Any = None
    ) -> Any:
        values = record_values(bound.judge, inputs, outputs, expectations, trace, variables)
        return feedback_of(bound.run(values), bound, metric)

    kwargs: dict[str, Any] = {"name": metric, "description": description or f"localjudge judge {bound.name!r}"}
    if aggregations is not None:
        kwargs["aggregations"] = aggregations
    accepted = inspect.signature(mlflow_scorer).parameters
    if timeout is not None and "timeout" in accepted:
        kwargs["timeout"] = timeout
    pass_if = _pass_if(bound.judge)
    if pass_if is not None and "pass_if" in accepted:
        kwargs["pass_if"] = pass_if
    return mlflow_scorer(localjudge_scorer, **kwargs)


def _pass_if(judge: JudgeProtocol) -> Callable[[Any], bool] | None:
    """For judges with a numeric range (score_lines, score_json): value -> normalised score >= threshold."""
    fmts = judge.output_formats
    rng = fmts[0].score_range() if len(fmts) == 1 else None
    if rng is None:
        return None
    lo, hi, threshold = float(rng.lo), float(rng.hi), judge.pass_threshold

    def passes(value: Any) -> bool:
        try:
            x = float(value)
        except (TypeError, ValueError):
            return False
        return (1.0 if hi == lo else (x - lo) / (hi - lo)) >= threshold

    return passes


# ----------------------------------------------------------------------------------- logging a run


def run_metrics(run: Any) -> dict[str, float]:
    """Per judge: mean score, pass rate, unscored count, n; position consistency for both-order pairwise."""
    from ..judges.pairwise import is_pairwise_format, pairwise_stats

    out: dict[str, float] = {}
    for judge, s in run.summary.judges.items():
        key = judge.replace(" ", "_")
        if s.mean_score is not None:
            out[f"{key}/mean_score"] = s.mean_score
        if s.pass_rate is not None:
            out[f"{key}/pass_rate"] = s.pass_rate
        out[f"{key}/unscored"] = float(s.n_unscored)
        out[f"{key}/n"] = float(s.n)
    by_judge: dict[str, list[JudgeResult]] = {}
    for row in run.results:
        by_judge.setdefault(row.judge, []).append(row.result)
    for judge, results in by_judge.items():
        if results and is_pairwise_format(results[0].format_spec):
            st = pairwise_stats(judge, results)
            if st.consistency_rate is not None:
                out[f"{judge}/position_consistency"] = st.consistency_rate
            if st.first_position_rate is not None:
                out[f"{judge}/first_position_rate"] = st.first_position_rate
    return {k: v for k, v in out.items() if isinstance(v, float) and math.isfinite(v)}


def run_params(run: Any) -> dict[str, str]:
    """The run's reproducibility parameters: model, sha256, backend, judges and versions, decoding options."""
    record: RunRecord = run.summary.record
    judges = [j for j in record.judges or [] if isinstance(j, JudgeRef)]
    params: dict[str, Any] = {
        "model": record.model_id,
        "model_sha256": record.model_sha256,
        "backend": record.backend,
        "judges": ",".join(j.name for j in judges),
        "rows": record.rows,
        "localjudge_version": record.localjudge_version,
        "run_id": record.run_id,
    }
    for j in judges:
        params[f"judge_version/{j.name}"] = j.version
    for k, v in (record.options or {}).items():
        params[f"decode/{k}"] = v
    for k, v in (record.engine or {}).items():
        params[f"engine/{k}"] = v
    return {k: ("" if v is None else str(v))[:6000] for k, v in params.items()}


def log_run(
    run: Any,
    *,
    experiment: str | None = None,
    tracking_uri: str | None = None,
    run_name: str | None = None,
    report: bool = True,
) -> str:
    """Log a finished localjudge run (a `RunResult`) to MLflow tracking; returns the MLflow run id.

    Params: model, sha256, judges and versions, decoding options; metrics per judge (mean score, pass rate,
    unscored count, position consistency for both-order pairwise); the results table (`mlflow.log_table`,
    `localjudge_results.json`); the HTML report as an artifact (`report`, for runs with a directory).
    Raises whatever MLflow raises (an unreachable tracking server, ...): callers that must not fail on it
    catch it (the CLI turns it into a warning)."""
    mlflow = _mlflow()
    if tracking_uri:
        mlflow.set_tracking_uri(tracking_uri)
    if experiment:
        mlflow.set_experiment(experiment)
    table = run.to_pandas()
    for col in table.columns:  # log_table needs JSON-able cells
        if table[col].dtype == object:
            table[col] = table[col].map(lambda x: x if x is None or isinstance(x, (str, int, float, bool)) else json.dumps(x))
    name = run_name or f"localjudge {run.summary.record.run_id or ''}".strip()
    with mlflow.start_run(run_name=name) as active:
        mlflow.set_tags({"localjudge.run_id": str(run.run_id), "mlflow.source.name": "localjudge"})
        mlflow.log_params(run_params(run))
        mlflow.log_metrics(run_metrics(run))
        mlflow.log_table(table, artifact_file="localjudge_results.json")
        mlflow.log_dict(run.summary.model_dump(mode="json"), "localjudge_summary.json")
        if report and run.out is not None:
            from ..report.build import build_report

            with tempfile.TemporaryDirectory() as tmp:
                path = build_report(Path(run.out), Path(tmp) / "report.html")
                mlflow.log_artifact(str(path))
        return str(active.info.run_id)


def log_run_or_warn(run: Any, warn: Callable[[str], None], **kwargs: Any) -> str | None:
    """`log_run`, turning any failure into one warning line with the reason (the run is already stored)."""
    t0 = time.time()
    try:
        return log_run(run, **kwargs)
    except Exception as e:  # noqa: BLE001 - logging is best effort: the run is finished and stored
        why = " ".join(str(e).split())[:300] or type(e).__name__
        where = kwargs.get("tracking_uri") or os.environ.get("MLFLOW_TRACKING_URI") or "the default tracking URI"
        warn(f"warning: could not log the run to MLflow at {where} ({type(e).__name__}: {why}); the run itself is stored "
             f"in {run.out or run.store_path} (after {time.time() - t0:.1f} s)")  # fmt: skip
        return None
