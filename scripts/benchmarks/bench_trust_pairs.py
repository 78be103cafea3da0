"""The trust table of docs/trust-estimators.md on a pairwise set: scripts/data/hhh_pairs.jsonl with `pairwise`.

    python scripts/bench.py trust-pairs --rows 40 --threads 1 --labels 10,20,30    # a quick look
    python -m scripts.benchmarks.bench_trust_pairs --threads 1 --rows 80 --labels 20,40,60    # what docs/trust-estimators.md shows

The estimand is the share of pairs where humans prefer answer A (the first shown). The human-preferred answer is
shown first on even rows and second on odd rows (as scripts/tools/agreement.py and scripts/tools/align_report.py show them),
so the truth is about one half and a judge that always picks one position carries no information about it. The
prediction per pair is the judge's verdict "A wins": with `--probs`, its expected score (P(A better)); in both
orders (the default) a pair where the two orders disagree is a tie, and a tie is "A does not win"
(judges/pairwise.py `combine_orders`: passed = value == 1); `--one-order` judges each pair once, forward only.
Labels-only, Rogan–Gladen and PPI++ come from the functions `agree` uses, over seeded label draws without
replacement (scripts/benchmarks/bench_trust_models.py `table`); the run directory resumes like any run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localjudge.errors import LocalJudgeError
from localjudge.judges import get_judge
from localjudge.judges.pairwise import BothOrders
from localjudge.report import load_run
from scripts.benchmarks.bench_trust_estimators import _table
from scripts.benchmarks.bench_trust_models import HEAD, Judged, describe, parse_counts, table
from scripts.tools.agreement import hhh_pair_rows

if TYPE_CHECKING:
    from localjudge.engine.base import Engine

DATA = Path(__file__).resolve().parents[1] / "data" / "hhh_pairs.jsonl"
JUDGE = "pairwise"
LABELS = (20, 40, 60)


def hhh_rows(limit: int | None) -> list[dict[str, Any]]:
    """The pairs as the `pairwise` judge reads them; `pref` is the position (1 = A, 2 = B) humans prefer."""
    src = [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines() if x.strip()]
    return hhh_pair_rows(src[:limit])


def judge_pairs(
    rows: list[dict[str, Any]],
    out: Path,
    *,
    both_orders: bool = True,
    model: str | None = None,
    engine: Engine | None = None,
    threads: int = 1,
) -> Judged:
    """Judge `rows` into the run directory `out` (resumed when it exists); pass labels are 1 where humans prefer A."""
    import localjudge

    judge = BothOrders(get_judge(JUDGE)) if both_orders else get_judge(JUDGE)
    res = localjudge.evaluate(
        rows,
        [judge],
        model=model,
        engine=engine,
        model_options=None if engine is not None else {"n_threads": threads},
        out=out,
        options={"probs": True},
    )
    calls = 2 if both_orders else 1
    print(
        f"{res.counts.cells} pairs, {calls * res.counts.evaluated} judgements computed now, "
        f"{calls * (res.counts.reused + res.counts.cached)} reused",
        file=sys.stderr,
    )
    mine = [r for r in load_run(out).rows if r.judge == JUDGE]
    # `agree` keeps pass labels for yes/no judges only; for a pair the pass label is "humans prefer A", on every
    # pair the judge scored (a both-orders tie is scored: it is "A does not win")
    labels = {r.row_index: float(rows[r.row_index]["pref"] == 1) for r in mine if r.result.scored}
    model_id = next((r.record.model_id for r in mine if r.record is not None), "")
    return Judged(rows=mine, pass_labels=labels, model_id=model_id)


def report(j: Judged, label_counts: tuple[int, ...], draws: int, seed: int, both_orders: bool) -> str:
    """The markdown block: the judge line, the table, and the estimators' own sentences."""
    rows, notes = table(j, label_counts, draws, seed)
    order = "both orders (a disagreement is a tie, not an A win)" if both_orders else "one order (forward)"
    lines = [f"**{j.model_id or 'model'}**, `{JUDGE}` judge on HHH pairs, {order}; pass = A wins: {describe(j)}.", ""]
    lines += [f"{draws} draws per label count, labels drawn without replacement, seed {seed}, 95 % intervals.", ""]
    lines += [_table(HEAD, rows), "", "What the estimators said, over all draws:", ""]
    return "\n".join(lines + [f"- {x}" for x in notes])


def main(argv: list[str] | None = None) -> int:
    """Judge (or resume), then print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model name or .gguf path (default: the default model, SmolLM2-135M)")
    ap.add_argument("--rows", type=int, default=None, help="judge only the first ROWS pairs (default: all 221)")
    ap.add_argument("--threads", type=int, default=1, help="the model's CPU threads (default 1)")
    ap.add_argument("--labels", default=",".join(map(str, LABELS)), help="label counts to draw (default 20,40,60)")
    ap.add_argument("--draws", type=int, default=500, help="seeded draws per label count (default 500)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--one-order", action="store_true", help="judge each pair once (forward) instead of both orders")
    ap.add_argument("--out", type=Path, default=None, help="the run directory (default runs/trust-pairs/<model>-<rows>)")
    a = ap.parse_args(argv)
    counts = parse_counts(a.labels)
    if a.draws < 1 or a.threads < 1 or (a.rows is not None and a.rows < 2):
        raise SystemExit("--draws and --threads must be at least 1, --rows at least 2")
    rows = hhh_rows(a.rows)
    tag = "one-order" if a.one_order else "both-orders"
    out = a.out or Path("runs") / "trust-pairs" / f"{Path(a.model or 'default').stem}-{len(rows)}-{tag}"
    try:
        judged = judge_pairs(rows, out, both_orders=not a.one_order, model=a.model, threads=a.threads)
    except LocalJudgeError as e:  # a model that is not installed, a run directory of other rows: one line, exit 2
        print(f"error: {e} (finished judgements stay in {out})", file=sys.stderr)
        return 2
    print(f"Run directory {out} (re-run the same command to resume).", file=sys.stderr)
    print(report(judged, counts, a.draws, a.seed, not a.one_order))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
