"""Click commands `report` and `agree` (registered on the main group by localjudge.cli).

    localjudge report RUN [--compare OTHER_RUN] [--labels FILE --label-column COL] -o report.html
    localjudge report RUN                            with RUN's stored labels (`localjudge view`), when it has any
    localjudge agree RUN --labels FILE --label-column COL [--judge NAME] [--key COL] [-o agreement.json]
    localjudge agree RUN --labels RUN_DIR            the labels kept in a run directory (`localjudge view`)

They parse, call the library, print; library errors reach the group's one error handler.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..labels.agreement import AgreementReport
    from ..labels.calibration import CalibratedRate
    from ..report import Run, TrustSection
    from ..run.record import RunRecord
    from ..trust.judge_trust import JudgeTrust


def _f(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:.1%}" if pct else f"{x:.3f}"


def calibrated_text(cal: CalibratedRate) -> str:
    """The corrected pass rate with its interval and the TPR/TNR it used, or the one-line refusal (never a number then)."""
    from ..labels.calibration import calibrated_text as text

    return text(cal)


def render_table(rep: AgreementReport) -> str:
    """The report as a plain-text table for the terminal."""
    lines = [
        f"judge {rep.judge} ({rep.kind}) vs labels[{rep.label_column!r}]",
        f"joined {rep.join.n_matched} of {rep.join.n_results} results to {rep.join.n_labels} labels, {rep.join.how}; "
        f"used {rep.n_used} (unlabelled {rep.n_unlabelled}, unscored {rep.n_unscored})",
    ]
    stats: list[tuple[str, str]] = []
    if rep.accuracy is not None:
        ci = f" [{_f(rep.accuracy_ci[0], True)}, {_f(rep.accuracy_ci[1], True)}]" if rep.accuracy_ci else ""
        stats.append(("accuracy", _f(rep.accuracy, True) + ci))
    if rep.balanced_accuracy is not None:
        stats.append(("balanced accuracy", _f(rep.balanced_accuracy, True)))
    if rep.kind == "categorical":
        ci = f" [{_f(rep.cohen_kappa_ci[0])}, {_f(rep.cohen_kappa_ci[1])}]" if rep.cohen_kappa_ci else ""
        stats.append(("Cohen's kappa", _f(rep.cohen_kappa) + ci))
    if rep.pairwise is not None:
        stats += [
            ("ties (orders disagree)", f"{rep.pairwise.n_ties} ({_f(rep.pairwise.tie_rate, True)})"),
            ("accuracy when decided", _f(rep.pairwise.accuracy_decided, True)),
        ]
    if rep.auc is not None:
        ci = f" [{_f(rep.auc_ci[0])}, {_f(rep.auc_ci[1])}]" if rep.auc_ci else ""
        note = "" if rep.auc_score == "expected_score" else "; from the verdict alone: run with --probs for the expected score"
        stats.append(
            (
                f"AUC of the {(rep.auc_score or 'score').replace('_', ' ')}",
                f"{_f(rep.auc)}{ci} (n={rep.n_auc}; 0.5 = no signal{note})",
            )
        )
    cal = rep.calibrated
    if cal is not None:
        stats.append(("observed pass rate", f"{_f(cal.observed, True)} (n={cal.n_verdicts})"))
        stats.append(("corrected pass rate", calibrated_text(cal)))
    for name, c in (("Spearman rho", rep.spearman), ("Kendall tau-b", rep.kendall)):
        if c is not None:
            stats.append((name, f"{_f(c.statistic)} (p={_f(c.p_value)}, n={c.n})"))
    w = max((len(k) for k, _ in stats), default=0)
    lines += [f"  {k.ljust(w)}  {v}" for k, v in stats]
    if rep.confusion and rep.labels:
        labs = [str(x) for x in rep.labels]
        cw = max(6, *(len(x) for x in labs))
        lines.append("  confusion (rows: label, columns: judge)")
        lines.append("  " + "".ljust(cw) + "".join(x.rjust(cw + 1) for x in labs))
        for lab, row in zip(labs, rep.confusion, strict=True):
            lines.append("  " + lab.ljust(cw) + "".join(str(c).rjust(cw + 1) for c in row))
    lines.append(f"  disagreements: {rep.n_disagreements}")
    return "\n".join(lines)


def trust_text(trust: JudgeTrust) -> str:
    """The judge's trust figures (PPI++ beside labels-only and Rogan–Gladen, the label budget, biases) as indented lines."""
    return "\n".join(f"  {line}" for line in trust.lines())


_PER = {"session": "conversation", "turn": "turn of a conversation", "tool_call": "tool call of a conversation"}


def granularity_of(record: RunRecord) -> str | None:
    """A conversation run's granularity (`session`, `turn`, `tool_call`: what one result, so one label, is about),
    None for a single-turn run."""
    conv = record.conversation
    return str(conv.get("granularity") or "session") if conv is not None else None


def granularity_line(record: RunRecord) -> str | None:
    """`granularity: turn (one label per turn of a conversation)` for a conversation run, else None."""
    g = granularity_of(record)
    return None if g is None else f"granularity: {g} (one label per {_PER.get(g, g)})"


def agreement_json(rep: AgreementReport, trust: JudgeTrust, granularity: str | None = None) -> bytes:
    """The agreement report as written by `agree -o`, with the trust figures under "trust" (and a conversation run's
    `granularity`)."""
    import json

    doc = {**rep.model_dump(mode="json"), "trust": trust.model_dump(mode="json")}
    if granularity is not None:
        doc["granularity"] = granularity
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


@click.command(name="report")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--compare", "compare_dir", type=click.Path(path_type=Path), help="Another run to compare with (the base).")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), default=Path("report.html"), show_default=True, help="HTML file to write."
)
@click.option(
    "--labels",
    type=click.Path(path_type=Path),
    help="Human labels (JSONL/JSON/CSV/Parquet, or a run directory's stored labels) for an agreement section with "
    "the corrected pass rate. Default: the labels stored in RUN_DIR (made with `localjudge view`), when it has any.",
)
@click.option("--label-column", help="Column of --labels holding the label (a labels file only).")
@click.option("--judge", "judges", multiple=True, help="Judge(s) to check against the labels (default: every judge that fits).")
@click.option("--key", help="Join key: a labels column (matched to row_id or the same input variable), or COL=FIELD.")
@click.option("--max-rows", type=click.IntRange(1), default=20000, show_default=True, help="Rows shown in the table.")
def report_cmd(
    run_dir: Path,
    compare_dir: Path | None,
    output: Path,
    labels: Path | None,
    label_column: str | None,
    judges: tuple[str, ...],
    key: str | None,
    max_rows: int,
) -> None:
    """Write a self-contained HTML report of RUN_DIR (charts, rows, record; optional comparison and agreement)."""
    from ..labels.agreement import agreements_for_run
    from ..labels.store import is_run_dir
    from ..report import build_report, load_run
    from ..trust.rates import rate_line, stored_agreements, stored_labels

    stored_dir = run_dir if labels is None else labels if is_run_dir(labels) else None
    if stored_dir is None and label_column is None:
        raise click.UsageError("--labels FILE needs --label-column (a run directory's labels need none)")
    if stored_dir is not None and labels is None and label_column is not None:
        raise click.UsageError("--label-column goes with --labels")
    run = load_run(run_dir)
    base = load_run(compare_dir) if compare_dir else None
    reports: list[AgreementReport] = []
    skipped: list[tuple[str, str]] = []
    if stored_dir is not None:  # the run's own labels (or another run directory's), random-sample ones first
        from ..labels.store import stale_line

        note = stale_line(stored_dir)
        if note:
            click.echo(note, err=True)
        stored = stored_labels(stored_dir)
        if not stored and labels is not None:
            raise click.UsageError(f"{labels} has no labels yet; label rows with `localjudge view` first")
        reports, skipped = stored_agreements(run.rows, stored, list(judges) or None, where=str(stored_dir))
    elif labels is not None and label_column is not None:
        reports, skipped = agreements_for_run(run, labels, label_column, list(judges) or None, key)
    trusts = report_trust(run, base, stored_dir, compare_dir, reports)
    path = build_report(run, output, compare=base, agreements=reports, max_rows=max_rows, trust=trusts)
    for judge, why in skipped:
        click.echo(f"agreement skipped for judge {judge}: {why}", err=True)
    for rep in reports:
        if rep.calibrated is not None:
            click.echo(rate_line(rep.judge, rep.calibrated))
            if rep.calibrated.warning:
                click.echo(f"warning: {rep.calibrated.warning}", err=True)
    for section in trusts:
        for line in section.lines:
            if line.startswith(("pass rate by PPI++", "this run − base")) or line in section.flagged:
                click.echo(f"{section.judge}: {line}")
    click.echo(f"wrote {path} ({path.stat().st_size // 1024} KiB, {len(run.rows)} results)")


def report_trust(
    run: Run, base: Run | None, stored_dir: Path | None, compare_dir: Path | None, reports: list[AgreementReport]
) -> list[TrustSection]:
    """Each judge's trust section: PPI++ beside the other estimates where labels exist (the run directory's stored
    ones, else a labels file's, as joined in `reports`), the bias report, and with a base run that has labels of its
    own, the PPI++ difference of the pass rate (this run − base)."""
    from ..trust.judge_trust import difference_text, judge_trust, run_difference, stored_pass_labels
    from ..trust.rates import stored_labels

    stored = stored_labels(stored_dir) if stored_dir is not None else []
    from_file = {rep.judge: rep.pass_labels for rep in reports}
    base_stored = stored_labels(compare_dir) if compare_dir is not None else []
    out: list[TrustSection] = []
    for judge in run.judges():
        labels = stored_pass_labels(run.rows, stored, judge)[0] if stored else from_file.get(judge)
        section = judge_trust(run.rows, judge, labels).section()
        if base is not None and labels and base_stored and judge in base.judges():
            base_labels = stored_pass_labels(base.rows, base_stored, judge)[0]
            mine = [r for r in run.rows if r.judge == judge]
            theirs = [r for r in base.rows if r.judge == judge]
            diff = run_difference(mine, labels, theirs, base_labels or {})
            if diff is not None:
                section.lines.append(f"this run − base, human pass rate by PPI++: {difference_text(diff)}")
        out.append(section)
    return out


@click.command(name="agree")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--labels",
    type=click.Path(path_type=Path),
    required=True,
    help="Human labels: JSONL, JSON, CSV or Parquet, or a run directory (its labels, made with `localjudge view`).",
)
@click.option("--label-column", help="Column of --labels holding the label [a run directory: label].")
@click.option("--judge", help="Judge to check (needed when the run has several).")
@click.option(
    "--key",
    help="Join key: a labels column (matched to row_id or the same input variable), or COL=FIELD. "
    "Default: the labels' id column, else row position.",
)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="JSON file to write [default: agreement-JUDGE.json].")
@click.option("--max-disagreements", type=click.IntRange(0), default=200, show_default=True)
@click.option(
    "--target-width",
    type=click.FloatRange(0, 1, min_open=True),
    help="Say how many more random-sample labels bring the pass rate's 95% interval to ±W (PPI++ and labels alone).",
)
def agree_cmd(
    run_dir: Path,
    labels: Path,
    label_column: str | None,
    judge: str | None,
    key: str | None,
    output: Path | None,
    max_disagreements: int,
    target_width: float | None,
) -> None:
    """Agreement of a judge in RUN_DIR with human labels: prints a table, writes JSON."""
    from ..labels.agreement import agree, pick_judge, read_labels
    from ..labels.store import is_run_dir, label_rows, stale_line
    from ..report import load_run
    from ..report.build import write_output

    run = load_run(run_dir)
    if is_run_dir(labels):
        note = stale_line(labels, judge)
        if note:
            click.echo(note, err=True)
        label_column = label_column or "label"
        if judge is None and len(run.judges()) > 1:  # every judge of the run that has labels
            labelled = {lab["judge"] for lab in label_rows(labels, sessions=True)}
            names = [j for j in run.judges() if j in labelled]
            if not names:
                raise click.UsageError(f"{labels} has no labels yet; label rows with `localjudge view` first")
        else:
            names = [pick_judge(run.judges(), judge)]
        for name in names:
            found = label_rows(labels, name, sessions=True)  # a session label joins a session-level run by `id`
            if not found:
                raise click.UsageError(f"{labels} has no labels for judge {name!r}; label rows with `localjudge view` first")
            rep = agree(run.rows, found, label_column, judge=name, key=key, max_disagreements=max_disagreements)
            if rep.calibrated is not None and label_column == "label" and key is None:
                from ..trust.rates import corrected

                # the corrected rate from random-sample labels when there are enough (see trust/rates.py)
                rep.calibrated = corrected(run.rows, found, name, where=str(labels)) or rep.calibrated
            from ..trust.judge_trust import stored_trust

            trust = stored_trust(run.rows, found, name, target_half_width=target_width)
            out = output if output is not None and len(names) == 1 else Path(f"agreement-{rep.judge}.json")
            write_output(out, agreement_json(rep, trust, granularity_of(run.record)), "agreement")
            click.echo(render_table(rep))
            if granularity_line(run.record) is not None:
                click.echo(granularity_line(run.record))
            click.echo(trust_text(trust))
            if rep.calibrated is not None and rep.calibrated.warning:
                click.echo(f"warning: {rep.calibrated.warning}", err=True)
            click.echo(f"wrote {out}")
        return
    if label_column is None:
        raise click.UsageError("--label-column is needed with a labels file (a run directory's labels use `label`)")
    label_list = read_labels(labels)
    n_stale = sum(lab.get("stale") is True for lab in label_list)
    if n_stale:  # a `labels export` file marks the labels whose rows changed since they were given
        click.echo(f"{labels}: {n_stale} labels marked stale left out (their rows changed since they were given)", err=True)
        label_list = [lab for lab in label_list if lab.get("stale") is not True]
    if judge is not None and label_list and all("judge" in lab for lab in label_list):
        # a `labels export` file of several judges: this judge's labels
        label_list = [lab for lab in label_list if lab["judge"] == judge] or label_list
    rep = agree(run.rows, label_list, label_column, judge=judge, key=key, max_disagreements=max_disagreements)
    from ..trust.judge_trust import judge_trust

    trust = judge_trust(run.rows, rep.judge, rep.pass_labels, target_half_width=target_width)
    out = output or Path(f"agreement-{rep.judge}.json")
    write_output(out, agreement_json(rep, trust, granularity_of(run.record)), "agreement")
    click.echo(render_table(rep))
    if granularity_line(run.record) is not None:
        click.echo(granularity_line(run.record))
    click.echo(trust_text(trust))
    click.echo(f"wrote {out}")
