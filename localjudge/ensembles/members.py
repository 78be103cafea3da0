"""What panels and cascades share: member names, judges renamed per member, freeing a member's model, the
same-family warning, and reading one run's results back by judge.

A member's results are ordinary results of the run under the judge name `JUDGE@MEMBER` (no schema change: the
store keys results by (run, row, judge)); the panel's or cascade's own result is stored under `JUDGE`. A member's
cache key is the key a solo run of `JUDGE` on that member's model gives the cell (`RenamedJudge.key_name`, see
run/plan.py), so running the same panel again reuses every member's results, adding a member runs only the new
one, and a panel reuses an earlier solo run of one of its models in the same store (and a solo run a panel's).
Stores written before keyed members with `JUDGE@MEMBER`; those keys are still found, so they resume too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..engine.base import DecodeOptions, Engine
from ..errors import InputError
from ..judges.protocol import JudgeProtocol
from ..store.db import Store
from ..store.results import JudgeResult, ResultRow

if TYPE_CHECKING:
    from ..engine.model_spec import ModelSpec
    from ..run.spec import RunSpec
    from ..run.types import RunCounts, RunResult

MEMBER_SEP = "@"
# the data columns that may name the model under test (first found wins), for the same-family warning
MODEL_COLUMNS = ("model", "generator", "model_name", "generator_model")


def member_label(member: str | os.PathLike[str] | Engine) -> str:
    """A short name for a panel member or cascade model: a registry name as given, a file's stem, an engine's id."""
    if isinstance(member, (str, os.PathLike)):
        text = os.fspath(member)
        scheme, _, rest = text.partition(":")
        if rest and scheme in ("llama", "scripted"):
            text = rest
        if text.endswith(".gguf") or "/" in text or "\\" in text:
            text = re.split(r"[\\/]", text.rstrip("/\\"))[-1].removesuffix(".gguf")
        return text or "default"
    return str(member.identity().model_id)


def labels_for(members: Sequence[str | os.PathLike[str] | Engine], what: str) -> list[str]:
    """Distinct labels of `members`; an `InputError` naming the duplicate otherwise."""
    labels = [member_label(m) for m in members]
    seen: set[str] = set()
    for lab in labels:
        if lab in seen:
            raise InputError(f"{what}: model {lab!r} given twice; name each model once")
        seen.add(lab)
    return labels


def member_judge(judge: str, label: str) -> str:
    """The judge name a member's results are stored under."""
    return f"{judge}{MEMBER_SEP}{label}"


class RenamedJudge:
    """A judge under another name (`JUDGE@MEMBER`): the same prompts, formats and parsing; results carry the new
    name. Picklable, so Ray workers can run it."""

    def __init__(self, inner: JudgeProtocol, name: str):
        self.inner = inner
        self.name = name
        self.key_name = inner.name  # cache keys are the renamed judge's (run/plan.py), shared with solo runs

    def __getattr__(self, attr: str) -> Any:
        if attr == "inner":  # during unpickling, before __dict__ is set
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def _rename(self, r: Any) -> Any:
        return r.model_copy(update={"judge": self.name}) if isinstance(r, JudgeResult) else r

    def evaluate(self, engine: Engine, options: DecodeOptions | None = None, **variables: Any) -> JudgeResult:
        """The inner judge's result, under this name."""
        return self._rename(self.inner.evaluate(engine, options, **variables))

    def submit_many(
        self,
        engine: Engine,
        rows: Sequence[Mapping[str, Any]],
        options: DecodeOptions | None,
        on_result: Callable[[int, JudgeResult | Exception], None],
        model_id: str = "",
    ) -> None:
        """The inner judge's `submit_many`, its results renamed on the way back."""
        self.inner.submit_many(engine, rows, options, lambda i, r: on_result(i, self._rename(r)), model_id)


def run_as_member(
    spec: RunSpec,
    judges: Sequence[JudgeProtocol],
    label: str,
    model: ModelSpec,
    *,
    run_id: str | None,
    rows: set[int] | None = None,
    executor: Any = None,
    progress: Callable[[Any], None] | None = None,
) -> RunResult:
    """A plain run of `spec` with `judges` (resolved already) under the names `JUDGE@label`, on `model`, into the
    store's run `run_id` (None: a new one), only `rows` when given, on `executor`."""
    from ..run.plain import run_plain

    renamed = [cast("JudgeProtocol", RenamedJudge(j, member_judge(j.name, label))) for j in judges]
    stage = spec.model_copy(
        update={"judges": renamed, "both_orders": False, "model": model, "run_id": run_id, "rows": rows, "executor": executor}
    )
    return run_plain(stage, progress)


def resolve_judges(judges: Sequence[str | JudgeProtocol], judges_dir: str | None, both_orders: bool) -> list[JudgeProtocol]:
    """Judge objects for names, with pairwise judges wrapped to judge both orders when asked (before renaming)."""
    from ..judges import get_judge
    from ..judges.pairwise import BothOrders, is_pairwise_format

    out: list[JudgeProtocol] = []
    for given in judges:
        j = get_judge(given, judges_dir=judges_dir) if isinstance(given, str) else given
        fmts = j.output_formats
        if both_orders and not isinstance(j, BothOrders) and len(fmts) == 1 and is_pairwise_format(fmts[0].spec()):
            j = BothOrders(j)
        out.append(j)
    return out


def free_new_engines(before: set[Any]) -> None:
    """Close and forget the engines loaded since `before` (the backends' engine cache keys): members run one
    after the other, each model freed before the next is loaded."""
    from ..engine import backends

    for key in [k for k in backends._ENGINES if k not in before]:
        eng = backends._ENGINES.pop(key)
        close = getattr(eng, "close", None)
        if callable(close):
            close()


def loaded_engine_keys() -> set[Any]:
    """The keys of the engines loaded in this process so far (see `free_new_engines`)."""
    from ..engine import backends

    return set(backends._ENGINES)


def family(name: str) -> str:
    """A model's family from its name: the leading letters, lower-case ("smollm2-135m" → "smollm", "Qwen2.5-7B" →
    "qwen", "gpt-4o" → "gpt")."""
    m = re.match(r"[a-z]+", name.strip().lower().split("/")[-1].removeprefix("scripted:"))
    return m.group(0) if m else name.lower()


def same_family_warnings(data_models: Iterable[Any], labels: Sequence[str], column: str) -> list[str]:
    """One warning per member whose family is the family of a model named in the data (self-preference bias)."""
    named = {str(v) for v in data_models if v not in (None, "")}
    out = []
    for lab in labels:
        hits = sorted(m for m in named if family(m) == family(lab))
        if hits:
            shown = ", ".join(hits[:3]) + (" ..." if len(hits) > 3 else "")
            out.append(
                f"judge model {lab!r} is of the {family(lab)!r} family, like the model under test in column "
                f"{column!r} ({shown}): judges tend to prefer their own family's answers; add a member of another family"
            )
    return out


def data_model_column(data: Any, columns: Sequence[str]) -> str | None:
    """The first of MODEL_COLUMNS the data has, or None."""
    return next((c for c in MODEL_COLUMNS if c in columns), None)


def results_by_judge(store: Store, run_id: str, judges: Sequence[str], n_rows: int) -> dict[str, dict[int, ResultRow]]:
    """judge -> row index -> stored result, for the rows below `n_rows`."""
    out: dict[str, dict[int, ResultRow]] = {j: {} for j in judges}
    for r in store.iter_results(run_id, list(judges), n_rows):
        out[r.judge][r.row_index] = r
    return out


def sum_counts(results: Sequence[RunResult]) -> RunCounts:
    """The counts of several runs into one run (members or stages): cells and outcomes added, rows the largest."""
    from ..run.types import RunCounts

    c = RunCounts(rows=max(r.counts.rows for r in results))
    for r in results:
        for k in ("cells", "evaluated", "cached", "reused", "failed", "unscored"):
            setattr(c, k, getattr(c, k) + getattr(r.counts, k))
        c.engine_loaded = c.engine_loaded or r.counts.engine_loaded
    return c


def finish_run(
    store: Store,
    base: RunResult,
    judges: Sequence[JudgeProtocol],
    names: list[str],
    n_rows: int,
    meta: dict[str, Any],
    counts: RunCounts,
    csv_raw: bool = False,
) -> RunResult:
    """The combined run of a panel or a cascade: `meta` (the base run's, with the panel's or cascade's own
    fields) gains every stored judge name with its judge's version and the summed counts, and, in a conversation
    run, the per-conversation aggregation of every stored judge (the final verdicts, the panel's, each member's);
    it is saved as the run's record, and the exports are written from the store (`csv_raw`: as `evaluate`'s)."""
    from ..run.exports import export
    from ..run.record import RunRecord
    from ..run.turns import per_conversation
    from ..run.types import RunResult, RunSummary

    if "conversations" in meta:  # a conversation run: aggregate every stored judge, not only the last stage's
        meta["conversations"] = per_conversation(store.iter_results(base.run_id, names, n_rows))
    meta.update(
        judges=[{"name": n, "version": next((j.version for j in judges if n.split(MEMBER_SEP)[0] == j.name), "")} for n in names],
        counts=counts.model_dump(),
    )
    record = RunRecord.model_validate(meta)  # the base run's record with the panel's or cascade's keys after its fields
    store.set_run_meta(base.run_id, record.to_json())
    summaries = export(store, base.run_id, names, n_rows, base.out, record, counts, csv_raw=csv_raw)
    return RunResult(
        run_id=base.run_id,
        store_path=base.store_path,
        out=base.out,
        judges=names,
        n_rows=n_rows,
        summary=RunSummary(run=record.to_json(), judges=summaries),
        counts=counts,
    )
