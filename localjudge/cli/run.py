"""`localjudge run`: evaluate a dataset with judges, resumably; prints a summary table.

    localjudge run data.jsonl --judge correctness --judge groundedness --out runs/demo
    localjudge run data.csv -j relevance_to_query --map input=prompt --model scripted:answers.jsonl

Exit codes:
  0    every (row, judge) was scored.
  1    the run finished, but at least one (row, judge) is unscored: a bad row (malformed line,
       missing / empty / wrong-type value, prompt too long for the context window), a verdict that
       could not be parsed, or a judgement that raised. Details: `error` / `unscored_reason` in
       results.jsonl; counts in the summary.
  2    bad input before any inference: unreadable or unknown data file, a mapped column that does
       not exist (the message lists the columns), an unknown judge, a bad --map; with --engine ray,
       Ray not installed or a --ray-address nobody answers on. Nothing was run.
  3    the model cannot be used (not found, checksum, load failure, a format it cannot express, or
       10 judgements in a row raising); finished results are kept, run again to resume.
  5    the run directory cannot be written (disk full, read-only, no permission); the store keeps
       every result finished before, free space or fix permissions and run again to resume.
  130  interrupted by Ctrl-C (143: SIGTERM); finished results are kept and exported, run the same
       command again to resume.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import click

from ..engine.base import DecodeOptions
from ..errors import InputError
from .options import ModelChoice, TrustChoice, control_kind_option, decode_options, model_options, trust_options
from .progress import ProgressLine
from .run_trust import calibrated, trust_lines

EXIT_SIGINT, EXIT_SIGTERM = 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop, keep and export what is finished."""


@click.command(
    name="run",
    epilog="Exit codes: 0 all scored; 1 some rows unscored or failed; 2 bad input before "
    "inference; 3 model error; 5 cannot write the run directory (disk full, read-only); 130/143 interrupted "
    "(run again to resume).",
)
@click.argument("data", type=click.Path(dir_okay=False), required=False)
@click.option("--judge", "-j", "judges", multiple=True, help="A judge to run (repeatable).")
@click.option(
    "--trace-instructions",
    default=None,
    help="Also judge a `trace` column (agent traces: JSON text, a path, or an object with --map trace=COL:json) "
    "with MLflow's trace judge and these instructions.",
)
@click.option("--trace-result", default="yes/no", show_default=True, help="With --trace-instructions: the rating type.")
@click.option("--trace-max-iterations", default=10, show_default=True, type=int, help="With --trace-instructions.")
@click.option(
    "--map",
    "mapping",
    multiple=True,
    metavar="VAR=COLUMN[:list|:text]",
    help="Take judge variable VAR from COLUMN (repeatable); :list parses a CSV cell as a JSON list.",
)
@click.option(
    "--out",
    "-o",
    default=None,
    type=click.Path(file_okay=False),
    help="Run directory (store + exports). Default: runs/<data file stem>. Re-running with it resumes.",
)
@click.option("--judges-dir", default=None, type=click.Path(exists=True, file_okay=False), help="Extra judge files.")
@click.option("--limit", type=int, default=None, help="Only the first N rows.")
@decode_options()
@click.option("--both-orders", is_flag=True, help="Pairwise judges judge each pair in both orders (disagreement = tie).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary table.")
@click.option(
    "--csv-raw",
    is_flag=True,
    help="Write results.csv cells as they are: by default a cell starting with = + - @ (or a tab or CR) gets a "
    "leading ' so that a spreadsheet cannot run it as a formula.",
)
@click.option("--mlflow", "mlflow_log", is_flag=True, help="Log the finished run to MLflow tracking (needs localjudge[mlflow]).")
@click.option(
    "--experiment", default=None, help="With --mlflow: the MLflow experiment name (with --mlflow-sessions: the one read)."
)
@click.option(
    "--granularity",
    type=click.Choice(["session", "turn", "tool_call"]),
    default=None,
    help="Judge conversations (a `messages` column, or --mlflow-sessions): one result per conversation, or one per "
    "turn with the turns before it (--window), or one per assistant tool call. Default: session, for judges taking "
    "`conversation`.",
)
@click.option("--window", type=click.IntRange(1), default=10, show_default=True, help="With --granularity turn: turns each sees.")
@click.option(
    "--truncate-conversation",
    is_flag=True,
    help="A conversation whose prompt does not fit the context keeps its last turns that fit (the number cut is "
    "recorded on its results); default: it is an unscored prompt_too_long result naming the tokens needed.",
)
@click.option(
    "--mlflow-sessions",
    default=None,
    metavar="TRACKING_URI",
    help="Judge the sessions of this MLflow tracking store (e.g. sqlite:///mlflow.db) instead of DATA; --experiment "
    "names the experiment (default: all).",
)
@click.option(
    "--otel-traces",
    default=None,
    metavar="PATH",
    help="Judge the conversations of OpenTelemetry GenAI traces instead of DATA: a trace file (OTLP/JSON), a JSONL "
    "file of traces or a directory of *.json traces; traces sharing gen_ai.conversation.id / session.id are one "
    "conversation.",
)
@click.option(
    "--log-assessments",
    is_flag=True,
    help="With --mlflow-sessions: log each result on its session's traces as an MLflow assessment (feedback).",
)
@click.option("--tracking-uri", default=None, help="With --mlflow: the MLflow tracking URI (default: MLflow's own).")
@model_options(parallel=True)
@trust_options()
@click.option(
    "--labels",
    "labels_file",
    default=None,
    type=click.Path(),
    help="Human labels for some rows (JSONL/JSON/CSV/Parquet, joined by id, or a run directory's stored labels): the "
    "summary adds each pass/fail judge's pass rate corrected for its measured TPR/TNR, with a bootstrap interval. "
    "Default: the labels stored in --out (made with `localjudge view`), when it has any.",
)
@click.option("--label-column", default="label", show_default=True, help="With --labels: the column holding the label.")
@click.option(
    "--engine",
    "executor_kind",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where the judgements run: this process, or the workers of a Ray cluster (pip install 'localjudge[ray]'); "
    "the store, cache and resume stay here.",
)
@click.option(
    "--ray-address",
    default=None,
    metavar="auto|HOST:PORT|ray://HOST:PORT",
    help="With --engine ray: the cluster to join (default: RAY_ADDRESS, else a new local cluster).",
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=None,
    help="With --engine ray: workers, each loading the model once and taking n_threads CPUs (default: CPUs / n_threads).",
)
@click.option(
    "--controls",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    metavar="N",
    help="After the run, judge N negative controls per judge (sampled rows given another row's answer), with the same "
    "model, as `localjudge controls OUT --sample N` does: into OUT/controls, never into the run's results. Costs N more "
    "judge calls per judge (on a 10-row run, N=10 doubles its calls), so it is off by default (0); 20 tells a reading "
    "judge from a blind one (docs/trust.md).",
)
@click.option("--controls-seed", type=int, default=0, show_default=True, help="With --controls: seed of the sample and swap.")
@control_kind_option("--control-kind", "control_kinds", "N more calls per judge that declares its variable (with --controls)")
def run_cmd(
    data: str,
    judges: tuple[str, ...],
    trace_instructions: str | None,
    trace_result: str,
    trace_max_iterations: int,
    mapping: tuple[str, ...],
    out: str | None,
    judges_dir: str | None,
    limit: int | None,
    decode: DecodeOptions,
    both_orders: bool,
    quiet: bool,
    csv_raw: bool,
    model: ModelChoice,
    trust: TrustChoice,
    labels_file: str | None,
    label_column: str,
    executor_kind: str,
    ray_address: str | None,
    workers: int | None,
    mlflow_log: bool = False,
    experiment: str | None = None,
    tracking_uri: str | None = None,
    granularity: str | None = None,
    window: int = 10,
    truncate_conversation: bool = False,
    mlflow_sessions: str | None = None,
    log_assessments: bool = False,
    otel_traces: str | None = None,
    controls: int = 0,
    controls_seed: int = 0,
    control_kinds: tuple[str, ...] = (),
) -> None:
    """Evaluate DATA (JSONL, CSV, TSV or Parquet) with every --judge; resumable, results in --out."""
    from ..api import execute
    from ..report.controls import kinds_asked
    from ..run.spec import RunSpec

    todo: list[Any] = list(judges)
    if trace_instructions:
        from ..agent import TraceJudge

        todo.append(TraceJudge(trace_instructions, trace_result, max_iterations=trace_max_iterations))
    if not todo:
        raise click.UsageError("name at least one --judge (see `localjudge judges list`) or --trace-instructions")
    executor: Any = None
    if executor_kind == "ray":
        from ..distributed.ray_executor import RayExecutor

        executor = RayExecutor(address=ray_address, workers=workers)
    elif ray_address is not None or workers is not None:
        raise InputError("--ray-address and --workers need --engine ray")
    if sum(x is not None for x in (data, mlflow_sessions, otel_traces)) != 1:
        raise click.UsageError("give DATA or --mlflow-sessions TRACKING_URI or --otel-traces PATH (one of them)")
    if (experiment and not (mlflow_log or mlflow_sessions)) or (tracking_uri and not mlflow_log):
        raise click.UsageError("--experiment and --tracking-uri go with --mlflow (--experiment also with --mlflow-sessions)")
    if log_assessments and not mlflow_sessions:
        raise click.UsageError("--log-assessments goes with --mlflow-sessions")
    if mlflow_log or mlflow_sessions:  # a missing extra stops here, before any inference
        from ..integrations.common import require

        require("mlflow", "mlflow", "MLflow")
    source: Any = data
    if mlflow_sessions is not None:
        from ..conversations.dataset import MlflowSessions

        source = MlflowSessions(tracking_uri=mlflow_sessions, experiment=experiment)
    if otel_traces is not None:
        from ..conversations.dataset import OtelTraces

        source = OtelTraces(path=Path(otel_traces))
    conversation: Any = None
    if granularity is not None or window != 10 or truncate_conversation:
        from ..conversations.dataset import ConversationOptions

        conversation = ConversationOptions(granularity=granularity or "session", window=window, truncate=truncate_conversation)
    out_dir = Path(out) if out else Path("runs") / (Path(data or otel_traces or "").stem or "mlflow-sessions")
    show = not quiet and sys.stderr.isatty()
    bar = ProgressLine(sys.stderr, enabled=show)
    old = signal.getsignal(signal.SIGTERM)
    got_term: list[bool] = []  # the exit code follows the signal even when a library re-raises it as a plain
    # KeyboardInterrupt (Ray's ray.get does, when the signal lands inside it)

    def _term(signum: int, frame: Any) -> None:
        got_term.append(True)
        raise Terminated()

    signal.signal(signal.SIGTERM, _term)
    try:
        chosen = model.model_spec()  # a bad --option fails here, before any data is read
        ref = chosen.ref()
        import warnings

        warnings.filterwarnings("ignore", message="judge model .* family")  # printed with the panel's figures
        if (
            decode.probs and not trust.kwargs()
        ):  # a backend that gives no token probabilities: one line now, not an empty column later
            from ..engine.capabilities import Capability
            from ..engine.capabilities import require as require_capability

            require_capability(ref.backend, Capability.TOKEN_PROBS, for_what="--probs (the expected score at the verdict)")
        spec = RunSpec(
            data=source,
            conversation=conversation,
            judges=todo,
            judges_dir=judges_dir,
            mapping=list(mapping),
            limit=limit,
            both_orders=both_orders,
            model=chosen,
            decode=decode,
            out=out_dir,
            csv_raw=csv_raw,
            trust=trust.spec(),
            executor=executor,
            controls=controls,
            controls_seed=controls_seed,
            control_kinds=kinds_asked(control_kinds),
        )
        run = execute(spec, bar)
    except KeyboardInterrupt as e:
        bar.close()
        click.echo(f"Interrupted; finished results are kept in {out_dir}. Run the same command again to resume.", err=True)
        sys.exit(EXIT_SIGTERM if isinstance(e, Terminated) or got_term else EXIT_SIGINT)
    finally:
        bar.close()
        signal.signal(signal.SIGTERM, old)
    record = run.summary.record
    if not quiet:
        from ..report.controls import controls_column, controls_lines
        from ..run.aggregate import format_table

        c = run.counts
        click.echo(format_table(run.summary.judges, controls_column(run.controls)))
        besides = "" if run.control_calls is None else f" {run.control_calls.note()}"  # run --controls N
        click.echo(
            f"\n{c.rows} rows x {len(run.judges)} judges: {c.evaluated} judged now{besides}, {c.cached + c.reused} from cache, "
            f"{c.unscored} unscored ({c.failed} failed rows). Results: {out_dir}/results.jsonl, results.csv, "
            "summary.json"
        )
        for line in trust_lines(record):
            click.echo(line)
        for line in run.cautions:
            click.echo(line)
        if run.controls is not None:
            click.echo("")
            for line in controls_lines(run.controls):
                click.echo(line)
        if record.conversations:
            from ..run.turns import conversation_lines

            click.echo("")
            for line in conversation_lines(record.conversations):
                click.echo(line)
    elif record.panel:
        for w in record.panel.get("warnings") or []:
            click.echo(f"warning: {w}", err=True)
    calibrated(run, labels_file, label_column, out_dir, quiet)
    if log_assessments and mlflow_sessions is not None:
        from ..integrations.mlflow_sessions import log_assessments as log_to_traces

        n = log_to_traces(run, mlflow_sessions)
        if not quiet:
            click.echo(f"Logged {n} assessments to the traces of {mlflow_sessions}")
    if mlflow_log:
        from ..integrations.mlflow import log_run_or_warn

        mlflow_run = log_run_or_warn(run, lambda m: click.echo(m, err=True), experiment=experiment, tracking_uri=tracking_uri)
        if mlflow_run and not quiet:
            click.echo(f"Logged to MLflow: run {mlflow_run}" + (f" in experiment {experiment!r}" if experiment else ""))
    sys.exit(run.exit_code)
