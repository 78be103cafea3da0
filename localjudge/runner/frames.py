"""pandas in, pandas out: `localjudge.evaluate(df, judges=[...])` returns the DataFrame with judge columns.

    df = pd.DataFrame({"input": [...], "output": [...], "context": [...]})
    scored = localjudge.evaluate(df, judges=["groundedness", "relevance_to_query"])
    scored[["groundedness/value", "groundedness/score", "groundedness/rationale"]]

A DataFrame in gives a DataFrame out: the input's columns and index, then per judge `<judge>/value`,
`/score` (in [0, 1]), `/passed`, `/rationale`, `/unscored_reason` and `/error` (one row per input row).
Anything else in (a path, a list of dicts) gives the `RunResult` as before, and
`localjudge.runner.execute` (given a `RunSpec`) always returns the `RunResult` (`run.to_pandas()`: one row per (row,
judge), the CSV export's columns; `to_frame(run, df)`: this wide form). The run itself is the same
cached, resumable run: `df.attrs["localjudge_run_id"]` and `df.attrs["localjudge_store"]` name it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FIELDS = ("value", "score", "passed", "rationale", "unscored_reason", "error")


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
    from ..run.spec import RunSpec
    from .evaluate import execute

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
