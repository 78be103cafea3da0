"""What `localjudge run` adds after its summary table: a panel's and a cascade's figures, and the corrected pass
rates (and PPI++ estimates) from human labels given with --labels or stored in the run directory, also written to
summary.json as "calibrated" and "estimates".
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError

if TYPE_CHECKING:
    from ..run.record import RunRecord


def trust_lines(record: RunRecord) -> list[str]:
    """The panel's and the cascade's figures, when the run had them (both: a panel as a cascade's first stage)."""
    lines: list[str] = []
    if record.panel:
        from ..ensembles.panel import panel_lines

        lines += ["", *panel_lines(record.panel)]
    if record.cascade:
        from ..ensembles.cascade import cascade_lines

        lines += ["", *cascade_lines(record.cascade)]
    return lines


def calibrated(run: Any, labels_file: str | None, label_column: str, out_dir: Path, quiet: bool) -> None:
    """Corrected pass rates from --labels (a file or a run directory), else from the labels stored in the run
    directory when it has any: printed, and added to summary.json as "calibrated"."""
    import json

    from ..labels.store import is_run_dir, stale_line
    from ..run.exports import write_json_atomic
    from ..trust.judge_trust import estimate_text, run_trust
    from ..trust.rates import corrected_rates, rate_line, stored_labels

    if labels_file is None or is_run_dir(labels_file):
        src = out_dir if labels_file is None else Path(labels_file)
        note = stale_line(src)
        if note and not quiet:
            click.echo(note, err=True)
        stored = stored_labels(src)
        if not stored:
            if labels_file is not None:
                click.echo(f"--labels {labels_file}: no labels stored there yet; label rows with `localjudge view`", err=True)
            return
        rates = corrected_rates(list(run.results), stored, where=str(src))
        trusts = run_trust(list(run.results), stored=stored)
        missing = f"the labels stored in {src} fit no pass/fail judge of this run; no corrected rate"
    elif Path(labels_file).is_dir():
        raise InputError(f"--labels {labels_file} is a directory without results.sqlite; give a labels file or a run directory")
    else:
        from ..labels.agreement import calibrated_rates, read_labels

        label_list = read_labels(labels_file)
        rates = calibrated_rates(list(run.results), label_list, label_column)
        trusts = run_trust(list(run.results), labels=label_list, label_column=label_column)
        missing = f"--labels {labels_file}: no pass/fail judge of this run fits column {label_column!r}; no corrected rate"
    if not rates:
        click.echo(missing, err=True)
        return
    path = out_dir / "summary.json"
    summary = json.loads(path.read_text(encoding="utf-8"))
    summary["calibrated"] = {j: c.model_dump() for j, c in rates.items()}
    if trusts:  # PPI++ beside labels-only and Rogan–Gladen (trust/judge_trust.py)
        summary["estimates"] = {j: t.estimates.model_dump(mode="json") for j, t in trusts.items() if t.estimates}
    write_json_atomic(path, summary)
    for j, c in rates.items():
        if not quiet:
            click.echo(rate_line(j, c))
            est = trusts[j].estimates if j in trusts else None
            if est is not None:
                click.echo(f"{j}: pass rate by PPI++ {estimate_text(est.ppi)}")
        if c.warning:
            click.echo(f"warning: {c.warning}", err=True)
