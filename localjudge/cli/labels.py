"""`localjudge labels export | import`: move the human labels of a run directory in and out of its store.

    localjudge labels export runs/quickstart -o labels.jsonl [--judge NAME]
    localjudge labels import runs/quickstart labels.jsonl [--labeller NAME]

The exported file holds each labelled row's inputs, `id`, `row_index`, `judge`, `label`, `comment`, `labeller`,
`sample` (random / uncertain / browse) and `labelled_at`: `agree --labels` and `align --labels` read it as it is.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.group(name="labels")
def labels_group() -> None:
    """Human labels kept in a run directory's store (made with `localjudge view`)."""


@labels_group.command(name="export")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("labels.jsonl"), show_default=True)
@click.option("--judge", default=None, help="Only this judge's labels.")
def export_cmd(run_dir: Path, output: Path, judge: str | None) -> None:
    """Write the latest label of every labelled (row, judge) of RUN_DIR to a JSONL file."""
    from ..labels import export_labels

    n = export_labels(run_dir, output, judge)
    click.echo(f"wrote {output} ({n} labels)")


@labels_group.command(name="import")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.argument("labels_file", type=click.Path(path_type=Path))
@click.option("--labeller", default=None, help="Labeller name for rows without one [default: the file's, else 'import'].")
def import_cmd(run_dir: Path, labels_file: Path, labeller: str | None) -> None:
    """Append the labels of LABELS_FILE (row_index or id, judge, label) to RUN_DIR's store; earlier labels stay
    in the history."""
    from ..labels import import_labels

    n = import_labels(run_dir, labels_file, labeller)
    click.echo(f"imported {n} labels into {run_dir}")
