"""`localjudge controls RUN_DIR`: negative controls of a finished run, without labels (report/controls.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .options import control_kind_option, model_options


@click.command(name="controls")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--sample",
    type=click.IntRange(2, 100_000),
    default=20,
    show_default=True,
    help="Rows per judge given another row's answer (seeded).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample, the swap and the permutation test.")
@click.option(
    "--judges-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Your own judge files, as for run."
)
@control_kind_option("--kind", "kinds", "SAMPLE more calls per judge")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@model_options()
def controls_cmd(
    run_dir: Path, sample: int, seed: int, judges_dir: Path | None, kinds: tuple[str, ...], as_json: bool, model: Any
) -> None:
    """Does each judge of RUN_DIR tell its rows from the same rows with another row's answer? Judges SAMPLE
    controls per judge with the run's model (--model: the same model where the run's cannot be named) into
    RUN_DIR/controls (resumable, cached; never part of the run's results), then prints per judge both sides' mean
    score, the AUC with its 95 % interval, a permutation p-value and a verdict. Costs SAMPLE judge calls per judge,
    and SAMPLE more per --kind."""
    from ..report.controls import ControlOptions, controls_lines, kinds_asked, run_controls, save_controls

    options = ControlOptions(
        sample=sample,
        seed=seed,
        model=model.spec,
        model_options=model.options or None,
        judges_dir=judges_dir,
        kinds=kinds_asked(kinds),
    )
    report = run_controls(run_dir, options)
    saved = save_controls(run_dir, report)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    for line in controls_lines(report):
        click.echo(line)
    click.echo(f"Saved: {saved}")
