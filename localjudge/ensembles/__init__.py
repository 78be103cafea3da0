"""Runs of several models: judge panels (panel.py), escalation cascades (cascade.py), a panel as a cascade's first
stage (panel_cascade.py), the threshold a cascade needs to reach a target agreement (escalation.py), members side by
side on Ray (parallel.py) and one example judged by a panel or a cascade (single.py). Statistical estimates from
labels (PPI++, the label budget, bias, corrected rates) live in `localjudge.trust`.

A run spec whose `trust` asks for a panel or a cascade (`localjudge.evaluate(panel=...)`, `--escalate-to ...`) lands
in `dispatch`; each member or cascade stage is an ordinary plain run of a spec derived from it, into one run of one
store (see members.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..run.spec import RunSpec
    from ..run.types import RunResult


def dispatch(spec: RunSpec, progress: Callable[[Any], None] | None = None) -> RunResult:
    """Run the panel, the cascade or the panel cascade `spec.trust` asks for."""
    t = spec.trust
    if t.panel is not None and (t.escalate_to is not None or t.escalate_below is not None):
        if t.escalate_to is None:
            raise InputError("--escalate-below needs --escalate-to MODEL")
        from .panel_cascade import run_panel_cascade

        return run_panel_cascade(spec, progress)
    if t.panel is not None:
        from .panel import run_panel

        return run_panel(spec, progress)
    extra = [k for k, given in (("aggregation", t.aggregation != "majority"), ("weights", t.weights is not None)) if given]
    if extra:
        raise InputError(f"{', '.join(extra)}: only with a panel (--panel)")
    if t.escalate_to is None:
        raise InputError("--escalate-below needs --escalate-to MODEL")
    from .cascade import run_cascade

    return run_cascade(spec, progress)
