"""`localjudge align JUDGE --labels FILE`: calibrate a judge on human labels and write the aligned judge file.

    localjudge align groundedness --labels labelled.jsonl --label-column label --out aligned/
    localjudge align relevance_to_query --labels l.csv --examples 4 --positive yes --model qwen2.5-1.5b-instruct
    localjudge align relevance_to_query --labels runs/quickstart     the labels made in `localjudge view`

Prints the held-out figures before and after (accuracy, Cohen's kappa, AUC, with 95 % bootstrap intervals
and the paired difference), says "no significant change" when the interval of the difference includes 0,
and writes OUT/<name>.toml (usable by `run --judge PATH` or `--judges-dir OUT`) and OUT/align_report.json.
The method, step by step: localjudge/align/aligner.py.
"""

from __future__ import annotations

from typing import Any

import click

from ..engine.base import DecodeOptions
from .options import ModelChoice, decode_options, model_options


@click.command(name="align")
@click.argument("judge")
@click.option(
    "--labels",
    required=True,
    type=click.Path(),
    help="Labelled rows: JSONL, JSON, CSV or Parquet, or a run directory (its labels of JUDGE, made with `localjudge view`).",
)
@click.option("--label-column", default="label", show_default=True, help="Column holding the human label (two classes).")
@click.option("--positive", default=None, help="The label value counted as positive [default: yes / true / pass / 1].")
@click.option("--rationale-column", default=None, help="A column of human rationales, shown in few-shot examples.")
@click.option("--examples", type=click.IntRange(0, 16), default=0, show_default=True, help="Few-shot examples to try (k).")
@click.option("--test-fraction", type=float, default=0.3, show_default=True, help="Share of rows held out.")
@click.option("--split-seed", type=int, default=0, show_default=True, help="Seed of the stratified split and the bootstrap.")
@click.option("--bootstrap", "n_boot", type=click.IntRange(100), default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--name", default=None, help="Name of the aligned judge [default: JUDGE_aligned].")
@click.option("--out", "-o", default="aligned", show_default=True, type=click.Path(file_okay=False), help="Where to write.")
@click.option("--map", "mapping", multiple=True, metavar="VAR=COLUMN", help="Take judge variable VAR from COLUMN.")
@click.option("--judges-dir", default=None, type=click.Path(exists=True, file_okay=False), help="Extra judge files.")
@click.option(
    "--target-agreement",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Instead of a threshold on the score: choose the cascade's --escalate-below so that agreement with the labels "
    "on the rows not escalated is at least this (Trust or Escalate, fixed-sequence testing).",
)
@click.option(
    "--confidence",
    "target_confidence",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.9,
    show_default=True,
    help="With --target-agreement: the probability that the guarantee holds.",
)
@decode_options()
@model_options()
def align_cmd(
    judge: str,
    labels: str,
    label_column: str,
    positive: str | None,
    rationale_column: str | None,
    examples: int,
    test_fraction: float,
    split_seed: int,
    n_boot: int,
    name: str | None,
    out: str,
    mapping: tuple[str, ...],
    judges_dir: str | None,
    decode: DecodeOptions,
    model: ModelChoice,
    target_agreement: float | None = None,
    target_confidence: float = 0.9,
) -> None:
    """Calibrate JUDGE on human labels: threshold on the expected score (and optional few-shot examples) chosen on a
    train split, held-out agreement before and after, the aligned judge written as a new judge file."""
    from pathlib import Path

    from ..align.aligner import align
    from ..labels.store import is_run_dir, labels_file_for, stale_line

    if is_run_dir(labels):  # the run's labels of this judge, with the rows' inputs, kept beside the aligned judge
        Path(out).mkdir(parents=True, exist_ok=True)
        note = stale_line(labels, Path(judge).stem)
        if note:
            click.echo(note, err=True)
        labels = str(labels_file_for(labels, Path(judge).stem, Path(out) / "labels_from_run.jsonl"))
    elif Path(labels).is_dir():
        raise click.BadParameter(f"{labels} is a directory without results.sqlite; give a labels file or a run directory")
    ref = model.ref()
    if target_agreement is not None:
        _escalation(
            judge,
            labels,
            label_column,
            positive,
            target_agreement,
            target_confidence,
            test_fraction,
            split_seed,
            out,
            ref,
            mapping,
            judges_dir,
            decode,
        )
        return
    rep = align(
        judge,
        labels,
        label_column=label_column,
        positive=positive,
        rationale_column=rationale_column,
        seed=split_seed,
        test_fraction=test_fraction,
        examples=examples,
        n_boot=n_boot,
        name=name,
        out=out,
        model=ref.spec,
        model_options=ref.options,
        mapping=list(mapping),
        options=decode,
        judges_dir=judges_dir,
    )
    from ..align.text import render_report

    click.echo(render_report(rep))


def _escalation(
    judge: str,
    labels: str,
    label_column: str,
    positive: str | None,
    target: float,
    confidence: float,
    test_fraction: float,
    seed: int,
    out: str,
    ref: Any,
    mapping: tuple[str, ...],
    judges_dir: str | None,
    decode: DecodeOptions,
) -> None:
    """`align --target-agreement`: the escalation threshold, its held-out figures; writes OUT/escalation_report.json."""
    from pathlib import Path

    from ..ensembles.escalation import align_escalation, escalation_lines
    from ..errors import StorageError
    from ..store.atomic import write_atomic

    rep = align_escalation(
        judge,
        labels,
        label_column=label_column,
        positive=positive,
        target=target,
        confidence=confidence,
        test_fraction=test_fraction,
        seed=seed,
        out=out,
        model=ref.spec,
        model_options=ref.options,
        mapping=list(mapping),
        judges_dir=judges_dir,
        options=decode,
    )
    path = Path(out) / "escalation_report.json"
    try:
        write_atomic(path, rep.model_dump_json(indent=2) + "\n", mkdir=True)
    except OSError as e:
        raise StorageError(f"cannot write {str(path)!r} ({e.strerror or e}); choose a writable folder with --out") from None
    click.echo("\n".join(escalation_lines(rep)))
    click.echo(f"wrote {path}")
