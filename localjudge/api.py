"""The Python API: judge one example, constrain any prompt to a format, or evaluate a dataset.

    import localjudge
    r = localjudge.judge("correctness", input="2+2?", output="4", ground_truth="4")
    print(r.value, r.score, r.rationale)
    run = localjudge.evaluate("data.jsonl", judges=["correctness", "groundedness"], out="runs/demo")
    run.summary.judges["correctness"].pass_rate;  df = run.to_pandas()

`evaluate` is the one batch entry point: its keywords build a `RunSpec` (run/spec.py) and `execute` runs it. A
panel or a cascade goes to localjudge/ensembles, which builds it out of plain runs; everything else is one plain run
(run/plain.py `run_plain`). How a run goes:
  1. Before any inference: the data's columns and row count are read, every judge's variables are
     mapped onto columns (a missing column is an `InputError` listing the columns that exist) (run/plan.py).
  2. Rows stream in chunks; inside a chunk each judge runs over every row (consecutive prompts share
     the judge's prefix in the KV cache). Every finished result is committed to the store at once (run/loop.py).
  3. Each judgement's reproducibility record (model sha256, judge version, format, rendered-prompt
     hash, decode options, seed, localjudge version) hashed with `canonical_hash` is its cache key.
     A cell whose stored key matches is skipped; a key found in the cache is copied without
     inference; only what changed runs. The model is loaded on the first cache miss, never before.
  4. Exports (results.jsonl, results.csv, summary.json, run.json) are written atomically from the
     store at the end, and also when the run is interrupted (run/plain.py).

Row problems are data: a malformed line, a missing/empty/wrong-type value, a prompt too long for
the context window or a judgement that raised gets an unscored result naming file, line/row,
column and reason (top-level `error`), and the other rows still run. Only model errors abort, and
storage errors (`StorageError`: disk full, read-only run directory); the store keeps every result
committed before, so running again resumes.

pandas in, pandas out: a DataFrame in gives the DataFrame with judge columns (`to_frame`):

    df = pd.DataFrame({"input": [...], "output": [...], "context": [...]})
    scored = localjudge.evaluate(df, judges=["groundedness", "relevance_to_query"])
    scored[["groundedness/value", "groundedness/score", "groundedness/rationale"]]

the input's columns and index, then per judge `<judge>/value`, `/score` (in [0, 1]), `/passed`, `/rationale`,
`/unscored_reason` and `/error` (one row per input row). Anything else in (a path, a list of dicts) gives the
`RunResult`, and `execute` (given a `RunSpec`) always returns the `RunResult` (`run.to_pandas()`: one row per (row,
judge), the CSV export's columns; `to_frame(run, df)`: this wide form). The run itself is the same cached,
resumable run: `df.attrs["localjudge_run_id"]` and `df.attrs["localjudge_store"]` name it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .engine.backends import ModelRef
from .engine.base import DecodeOptions, Engine, Message
from .errors import InputError, ParseError, UnscoredReason
from .formats import OutputFormat
from .store.results import JudgeResult, Timings, Usage

if TYPE_CHECKING:
    from .judges.protocol import JudgeProtocol
    from .run.spec import RunSpec
    from .run.types import Progress, RunResult

FIELDS = ("value", "score", "passed", "rationale", "unscored_reason", "error")


def _engine(model: str | None, engine: Engine | None, model_options: Mapping[str, Any] | None) -> Engine:
    if engine is not None:
        return engine
    return ModelRef(model, model_options).engine()


def judge(
    name: str | JudgeProtocol,
    *,
    model: str | None = None,
    engine: Engine | None = None,
    options: DecodeOptions | None = None,
    judges_dir: str | None = None,
    model_options: Mapping[str, Any] | None = None,
    engine_kwargs: Mapping[str, Any] | None = None,
    **variables: Any,
) -> JudgeResult:
    """Run a judge (a catalog name or a judge object) on one example; loads the model once per process.

    `model` is a model spec (see `engine.backends`), `model_options` its backend's options
    (`engine_kwargs` is their former name)."""
    from .judges import get_judge

    j = get_judge(name, judges_dir=judges_dir) if isinstance(name, str) else name
    return j.evaluate(_engine(model, engine, {**(engine_kwargs or {}), **(model_options or {})}), options=options, **variables)


def run_format(
    fmt: OutputFormat,
    prompt: str,
    *,
    system: str | None = None,
    model: str | None = None,
    engine: Engine | None = None,
    options: DecodeOptions | None = None,
    model_options: Mapping[str, Any] | None = None,
    engine_kwargs: Mapping[str, Any] | None = None,
) -> JudgeResult:
    """Generate under any output format for a free prompt and parse it into a typed result."""
    if not prompt or not prompt.strip():
        raise InputError("the prompt is empty; pass the text the model should answer")
    eng = _engine(model, engine, {**(engine_kwargs or {}), **(model_options or {})})
    if options is not None and options.fast:
        fmt = fmt.fast() or fmt
    msgs = ([Message(role="system", content=system)] if system else []) + [Message(role="user", content=prompt)]
    gen = eng.generate(msgs, fmt, options)
    base = dict(
        judge=f"format:{fmt.kind}",
        judge_version="",
        format=fmt.describe(),
        raw_text=gen.text,
        model_id=gen.model_id,
        usage=Usage.of([gen]),
        timings=Timings.of([gen]),
    )
    try:
        v = fmt.parse(gen.text)
    except ParseError as e:
        return JudgeResult(**base, unscored_reason=UnscoredReason.PARSE_ERROR, error=str(e))
    score = fmt.normalise(v)
    expected = fmt.expected_score(gen.choice_steps) if gen.choice_steps is not None else None
    return JudgeResult(
        **base,
        value=fmt.value(v),
        score=score,
        passed=None if score is None else score >= 0.5,
        rationale=fmt.rationale(v),
        verdict=v.model_dump(),
        expected_score=expected,
    )


def is_dataframe(data: Any) -> bool:
    """True for a pandas DataFrame (without importing pandas)."""
    return type(data).__name__ == "DataFrame" and hasattr(data, "itertuples")


def to_frame(run: Any, data: Any = None) -> Any:
    """A `RunResult` as a wide DataFrame: one row per data row, `<judge>/<field>` columns; with `data`
    (the DataFrame judged), its columns and index first."""
    import pandas as pd

    n = run.n_rows
    cols: dict[str, list[Any]] = {f"{j}/{f}": [None] * n for j in run.judges for f in FIELDS}
    for row in run.results:
        if row.row_index >= n:
            continue
        r = row.result
        for f, v in zip(FIELDS, (r.value, r.score, r.passed, r.rationale, r.unscored_reason, row.error or r.error), strict=True):
            cols[f"{row.judge}/{f}"][row.row_index] = v
    judged = pd.DataFrame(cols)
    for j in run.judges:
        judged[f"{j}/score"] = judged[f"{j}/score"].astype("float64")
    if data is not None:
        base = data.iloc[:n]
        judged.index = base.index
        judged = pd.concat([base, judged], axis=1)
    judged.attrs = {"localjudge_run_id": run.run_id, "localjudge_store": str(run.store_path)}
    return judged


def evaluate(data: Any, judges: Sequence[Any], *, progress: Any = None, **keywords: Any) -> Any:
    """`localjudge.evaluate`: run `judges` over every row of `data`; a DataFrame in gives a DataFrame out (see the
    module docstring), anything else the `RunResult`. The keywords (model, model_options, out, mapping, options,
    panel, escalate_to, executor, ...) are `RunSpec.build`'s (localjudge/run/spec.py), where each is described;
    `progress`: called with a `Progress` as cells finish."""
    from .run.spec import RunSpec

    spec = RunSpec.build(data, judges, **keywords)
    run = execute(spec, progress)
    if not is_dataframe(data):
        return run
    per_turn = spec.conversation is not None and spec.conversation.granularity == "turn"
    return turn_frame(run) if per_turn else to_frame(run, data)


def turn_frame(run: Any) -> Any:
    """A per-turn conversation run (`conversation="turn"`) as a wide DataFrame: one row per judged turn,
    `conversation_id`, `turn_index`, `row_id`, then `<judge>/<field>` columns (the input's rows are conversations,
    not turns, so its columns are not repeated)."""
    import pandas as pd

    n = run.n_rows
    base: dict[str, list[Any]] = {"conversation_id": [None] * n, "turn_index": [None] * n, "row_id": [None] * n}
    cols: dict[str, list[Any]] = {f"{j}/{f}": [None] * n for j in run.judges for f in FIELDS}
    for row in run.results:
        if row.row_index >= n:
            continue
        i, r = row.row_index, row.result
        base["conversation_id"][i], base["turn_index"][i], base["row_id"][i] = row.conversation_id, row.turn_index, row.row_id
        for f, v in zip(FIELDS, (r.value, r.score, r.passed, r.rationale, r.unscored_reason, row.error or r.error), strict=True):
            cols[f"{row.judge}/{f}"][i] = v
    judged = pd.DataFrame({**base, **cols})
    for j in run.judges:
        judged[f"{j}/score"] = judged[f"{j}/score"].astype("float64")
    judged.attrs = {"localjudge_run_id": run.run_id, "localjudge_store": str(run.store_path)}
    return judged


def execute(spec: RunSpec, progress: Callable[[Progress], None] | None = None) -> RunResult:
    """Run `spec` (see the module docstring): a panel or a cascade through localjudge/ensembles, else one plain run;
    `progress` is called as cells finish. Always the `RunResult`, whatever the data was.

    With `spec.controls` N > 0, the finished run's negative controls follow (`with_controls`)."""
    if spec.controls:
        check_controls(spec)
    elif tuple(spec.control_kinds) != ("answer",):
        raise InputError(
            f"control kinds {', '.join(spec.control_kinds)} need controls=N (--controls N): the rows sampled per judge "
            "for each kind"
        )
    if spec.trust.wanted:
        from .ensembles import dispatch

        run = dispatch(spec, progress)
    else:
        from .run.plain import run_plain

        run = run_plain(spec, progress)
    return with_controls(spec, run) if spec.controls else run


def check_controls(spec: RunSpec) -> None:
    """Refuse, before any inference, controls the run could not judge: fewer than 2 rows, no run directory, an unknown
    kind of control, or a panel or cascade (its controls would be one model's; judge them with `localjudge controls RUN_DIR --model M`)."""
    if spec.controls < 2:
        raise InputError(f"controls={spec.controls}: controls need at least 2 rows per judge to swap answers between")
    if spec.out is None:
        raise InputError("controls need a run directory (out=..., --out): they are judged into OUT/controls")
    from .report.controls import check_kinds

    check_kinds(spec.control_kinds)
    if spec.trust.wanted:
        raise InputError(
            "controls are judged by one model, not by a panel or cascade: run `localjudge controls RUN_DIR --model MODEL` "
            "after the run"
        )


def with_controls(spec: RunSpec, run: RunResult) -> RunResult:
    """Judge `spec.controls` negative controls per judge of the finished run with the run's own model, exactly as
    `localjudge controls RUN_DIR --sample N --seed S` does (report/controls.py `run_controls`), save them to
    OUT/controls/controls.json, and hand the report back as `run.controls`. The run's results, pass rates and exports
    are not touched."""
    from .report.controls import ControlOptions, judge_controls, save_controls
    from .run.resumed_model import resumed_model

    assert spec.out is not None  # check_controls
    m = resumed_model(spec.model, spec.out)  # the file the run was judged with (a resumed run may keep the shipped one)
    ref = m.ref()
    engine = ref.engine() if ref.loaded else None  # the model the run loaded judges its controls: never a second load
    options = ControlOptions(
        sample=spec.controls,
        seed=spec.controls_seed,
        kinds=spec.control_kinds,
        model=m.spec if engine is None else None,
        engine=engine,
        model_options=(m.options or None) if engine is None else None,
        judges_dir=spec.judges_dir,
    )
    report, calls = judge_controls(spec.out, options)
    save_controls(spec.out, report)
    run.controls, run.control_calls = report, calls
    return run
