"""`localjudge labels export | import`: move the human labels of a run directory in and out of its store.

    localjudge labels export runs/quickstart -o labels.jsonl [--judge NAME]
    localjudge labels import runs/quickstart labels.jsonl [--labeller NAME] [--skip-bad]

The exported file holds each labelled row's inputs, `id`, `row_index`, `judge`, `label`, `comment`, `labeller`,
`sample` (random / uncertain / browse), `labelled_at` and `stale` (the row changed since it was labelled: `agree`
and `align` leave such labels out): `agree --labels` and `align --labels` read it as it is. An import checks every
record first (localjudge/labels/importing.py) and writes nothing when one is bad, unless `--skip-bad`.
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
    from ..labels.store import count_stale, export_labels

    n = export_labels(run_dir, output, judge)
    stale = count_stale(run_dir, judge)
    click.echo(f"wrote {output} ({n} labels{f', {stale} of them stale' if stale else ''})")


@labels_group.command(name="import")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.argument("labels_file", type=click.Path(path_type=Path))
@click.option("--labeller", default=None, help="Labeller name for rows without one [default: the file's, else 'import'].")
@click.option(
    "--skip-bad", is_flag=True, help="Import the good records and skip the bad ones (listed) instead of importing none."
)
def import_cmd(run_dir: Path, labels_file: Path, labeller: str | None, skip_bad: bool) -> None:
    """Append the labels of LABELS_FILE (row_index or id, judge, label) to RUN_DIR's store; earlier labels stay
    in the history. Every record is checked first; one bad record imports nothing, unless --skip-bad."""
    from ..labels.importing import import_labels

    rep = import_labels(run_dir, labels_file, labeller, skip_bad=skip_bad)
    for line in rep.errors:
        click.echo(f"skipped {line}", err=True)
    skipped = f", skipped {rep.skipped} bad records" if rep.skipped else ""
    click.echo(f"imported {rep.imported} labels into {run_dir}{skipped}")
