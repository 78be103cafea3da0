"""The align report as terminal text: what `localjudge align` prints and the `view` app's align button shows."""

from __future__ import annotations

from .aligner import AlignReport, Metrics


def _ci(x: float | None, ci: tuple[float, float] | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def render_report(rep: AlignReport) -> str:
    """The report as text for the terminal."""

    def row(name: str, m: Metrics) -> str:
        return f"  {name:<7} {_ci(m.accuracy, m.accuracy_ci):<24} {_ci(m.kappa, m.kappa_ci):<25} {_ci(m.auc, m.auc_ci)}"

    lines = [
        f"judge {rep.judge} aligned on {rep.labels_file} (column {rep.label_column!r}, positive = {rep.positive!r}; "
        f"sha256 {rep.labels_sha256[:12]}…) with model {rep.model_id}",
        f"rows: {rep.n_rows} labelled, {rep.n_used} scored ({rep.n_unscored} unscored); split seed {rep.seed}: "
        f"{rep.n_train} train, {rep.n_test} held out (stratified)",
        f"threshold on the expected score: {rep.threshold:.4f} (train kappa {_ci(rep.train_kappa_at_threshold, None)}; "
        f"the judge's own verdict: {_ci(rep.train_kappa_baseline_default, None)})",
    ]
    if rep.examples_asked:
        lines.append(f"few-shot examples: {rep.examples_asked} asked, {rep.examples_kept} kept ({rep.example_note})")
    lines += [
        f"held out (n = {rep.n_test}), 95 % bootstrap intervals:",
        f"  {'':<7} {'accuracy':<24} {'Cohen kappa':<25} AUC (expected score)",
        row("before", rep.before),
        row("after", rep.after),
    ]
    for c in rep.changes:
        diff = "n/a" if c.difference is None else f"{c.difference:+.3f}"
        ci = f" [{c.ci[0]:+.3f}, {c.ci[1]:+.3f}]" if c.ci else ""
        lines.append(f"  {c.metric:<12} after - before {diff}{ci}: {c.verdict}")
    if rep.aligned_file:
        lines.append(f"wrote {rep.aligned_file} (judge {rep.aligned_judge}); report: align_report.json beside it")
    return "\n".join(lines)
