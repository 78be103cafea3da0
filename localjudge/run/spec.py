"""`RunSpec`: everything a run is told, declared once; built at the edge, passed whole.

The command line (`cli/run.py`), the Python API (`localjudge.evaluate`, through `RunSpec.build`) and the adapters
each build one `RunSpec`; `api.execute` hands it whole to one plain run (run/plain.py) or to a panel or a
cascade (localjudge/trust), which derive their stages' specs from it with `model_copy`; Ray workers get its model
(`ModelSpec`, pickled). The model's `ModelRef` is built once, with the spec, and validated there. What a run is
*told* is here; what it reports back as it goes (the progress callback) is an argument of its own.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..conversations.dataset import ConversationOptions
from ..distributed.base import Executor
from ..engine.backends import BackendOptions
from ..engine.base import DecodeOptions, Engine
from ..engine.model_spec import ModelSpec

Member = str | Engine  # a panel member or escalation model: a model spec, or an engine already loaded


def _fspath(v: Any) -> Any:
    return os.fspath(v) if isinstance(v, os.PathLike) else v


class TrustSpec(BaseModel):
    """A panel (members, how their verdicts combine) and/or a cascade (who judges again, below which confidence);
    the checks and their messages are localjudge/trust's."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    panel: list[Member] | None = None
    aggregation: str = "majority"
    weights: list[float] | None = None
    escalate_to: Member | None = None
    escalate_below: float | None = None

    @field_validator("panel", mode="before")
    @classmethod
    def _paths(cls, v: Any) -> Any:
        return None if v is None else [_fspath(m) for m in v]

    @field_validator("escalate_to", mode="before")
    @classmethod
    def _path(cls, v: Any) -> Any:
        return _fspath(v)

    @property
    def wanted(self) -> bool:
        """Whether anything here asks for a panel or a cascade (else the run is one plain run)."""
        return (
            self.panel is not None
            or self.escalate_to is not None
            or self.escalate_below is not None
            or self.aggregation != "majority"
            or self.weights is not None
        )


class RunSpec(BaseModel):
    """One run: the data and how its columns map, the judges, the model, decoding, the output, trust, the executor."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    # data and judges
    data: Any  # a path (JSONL/CSV/TSV/Parquet), a DataFrame, a list of dicts, or a Dataset
    judges: list[Any]  # catalog names or judge objects (JudgeProtocol)
    judges_dir: str | None = None
    mapping: dict[str, str] | list[str] | None = None  # {"judge_var": "column"} or ["var=column", "var=column:list"]
    limit: int | None = None
    rows: set[int] | None = None  # only these row indexes (a cascade's escalated rows)
    chunk_size: int = 16
    both_orders: bool = False
    # conversations (data with a `messages` column, MlflowSessions or OtelTraces): session-level or per-turn rows; None: the
    # data's rows as they are, or session-level for a `messages` column judged by a judge taking `conversation`
    conversation: ConversationOptions | None = None
    # model and decoding
    model: ModelSpec = Field(default_factory=ModelSpec)
    decode: DecodeOptions = Field(default_factory=DecodeOptions)
    # output
    out: Path | None = None  # a run directory; None: the shared store, no exports
    run_id: str | None = None  # store under this run of the store (panels and cascades put every stage in one)
    csv_raw: bool = False
    # trust and executor
    trust: TrustSpec = Field(default_factory=TrustSpec)
    executor: str | Executor | None = None  # None or "local": this process; "ray"; or an executor object
    # negative controls after the run (report/controls.py): N rows per judge given another row's answer, judged by the
    # same model into out/controls (N more judge calls per judge); 0: none. Never part of the run's results.
    controls: int = Field(0, ge=0)
    controls_seed: int = 0
    # the kinds of control besides mismatched answers (report/controls.py KINDS: non_answer, context, reference), each
    # `controls` more calls per judge
    control_kinds: tuple[str, ...] = ("answer",)

    @field_validator("judges", mode="before")
    @classmethod
    def _judges(cls, v: Any) -> Any:
        return list(v)

    @field_validator("mapping", mode="before")
    @classmethod
    def _mapping(cls, v: Any) -> Any:
        if v is None or isinstance(v, Mapping):
            return None if v is None else dict(v)
        return [v] if isinstance(v, str) else list(v)

    @classmethod
    def build(
        cls,
        data: Any,
        judges: Sequence[Any],
        *,
        model: str | os.PathLike[str] | None = None,
        engine: Engine | None = None,
        out: str | os.PathLike[str] | None = None,
        mapping: Any = None,
        options: DecodeOptions | Mapping[str, Any] | None = None,
        judges_dir: str | os.PathLike[str] | None = None,
        model_options: Mapping[str, Any] | BackendOptions | None = None,
        limit: int | None = None,
        chunk_size: int = 16,
        both_orders: bool = False,
        engine_kwargs: Mapping[str, Any] | None = None,
        executor: str | Executor | None = None,
        csv_raw: bool = False,
        panel: Sequence[str | os.PathLike[str] | Engine] | None = None,
        escalate_to: str | os.PathLike[str] | Engine | None = None,
        escalate_below: float | None = None,
        run_id: str | None = None,
        rows: Collection[int] | None = None,
        aggregation: str = "majority",
        weights: Sequence[float] | None = None,
        conversation: ConversationOptions | Mapping[str, Any] | str | None = None,
        controls: int = 0,
        controls_seed: int = 0,
        control_kinds: Sequence[str] = ("answer",),
    ) -> RunSpec:
        """The spec of `localjudge.evaluate`'s keywords (the Python API's edge; see `localjudge.evaluate`).
        `engine_kwargs`, the former name of `model_options`, still works for one release, with a DeprecationWarning.
        `conversation`: `ConversationOptions`, its fields as a dict, or a granularity (`"session"`, `"turn"`).
        `controls`: after the run, judge this many negative controls per judge (another row's answer; `controls_seed`
        seeds the sample), as `localjudge controls RUN_DIR --sample N` does; needs `out`. `control_kinds`: the kinds
        judged (mismatched answers always; `non_answer`, `context`, `reference` each `controls` more calls per judge)."""
        given: Mapping[str, Any] | BackendOptions | None = model_options
        if engine_kwargs is not None:
            warnings.warn(
                "evaluate(engine_kwargs=...) is deprecated: use model_options=...; it goes in the next release",
                DeprecationWarning,
                stacklevel=3,
            )
            if engine_kwargs:
                given = {**engine_kwargs, **dict(model_options or {})}
        return cls(
            data=data,
            judges=list(judges),
            judges_dir=None if judges_dir is None else os.fspath(judges_dir),
            mapping=mapping,
            limit=limit,
            rows=None if rows is None else set(rows),
            chunk_size=chunk_size,
            both_orders=both_orders,
            conversation=ConversationOptions(granularity=conversation) if isinstance(conversation, str) else conversation,
            model=ModelSpec.given(model, given, engine),
            decode=options if isinstance(options, DecodeOptions) else DecodeOptions(**(options or {})),
            out=None if out is None else Path(out),
            run_id=run_id,
            csv_raw=csv_raw,
            trust=TrustSpec(
                panel=None if panel is None else list(panel),
                aggregation=aggregation,
                weights=None if weights is None else list(weights),
                escalate_to=escalate_to,
                escalate_below=escalate_below,
            ),
            executor=executor,
            controls=controls,
            controls_seed=controls_seed,
            control_kinds=tuple(control_kinds),
        )


__all__ = ["Member", "RunSpec", "TrustSpec"]
