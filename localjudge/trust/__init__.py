"""How much to trust the numbers: judge panels (panel.py), escalation cascades (cascade.py), a panel as a cascade's
first stage (panel_cascade.py) and the threshold a cascade needs to reach a target agreement (escalation.py). Corrected pass rates live in `localjudge.labels.calibration`.

`runner.evaluate(panel=...)` or `evaluate(escalate_to=..., escalate_below=...)` lands in `dispatch`; each member
or cascade stage is an ordinary `evaluate` into one run of one store (see members.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..batch.types import RunResult

_PANEL_KEYS = {"aggregation", "weights"}


def dispatch(
    data: Any,
    judges: Sequence[Any],
    *,
    panel: Sequence[Any] | None,
    escalate_to: Any,
    escalate_below: float | None,
    **kw: Any,
) -> RunResult:
    """Run a panel or a cascade with `evaluate`'s keywords `kw` (and the panel's `aggregation=`, `weights=`)."""
    extra = {k for k in kw if k in _PANEL_KEYS}
    unknown = set(kw) - _PANEL_KEYS - _RUN_KEYS
    if unknown:
        raise TypeError(f"evaluate() got unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    if panel is not None and (escalate_to is not None or escalate_below is not None):
        if escalate_to is None:
            raise InputError("--escalate-below needs --escalate-to MODEL")
        from .panel_cascade import run_panel_cascade

        return run_panel_cascade(data, judges, panel=panel, escalate_to=escalate_to, escalate_below=escalate_below, **kw)
    if panel is not None:
        from .panel import run_panel

        return run_panel(data, judges, panel=panel, **kw)
    if extra:
        raise InputError(f"{', '.join(sorted(extra))}: only with a panel (--panel)")
    if escalate_to is None:
        raise InputError("--escalate-below needs --escalate-to MODEL")
    from .cascade import run_cascade

    return run_cascade(data, judges, escalate_to=escalate_to, escalate_below=escalate_below, **kw)


_RUN_KEYS = {
    "model",
    "engine",
    "out",
    "mapping",
    "options",
    "progress",
    "judges_dir",
    "model_options",
    "limit",
    "chunk_size",
    "both_orders",
    "engine_kwargs",
    "executor",
    "csv_raw",
}
