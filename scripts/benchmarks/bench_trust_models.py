"""The trust table of docs/trust-estimators.md measured on an installable model and a human-labelled set, not simulated.

    python scripts/bench.py trust-models --rows 40 --threads 1 --labels 10,20,30   # a quick look
    python -m scripts.benchmarks.bench_trust_models --threads 1                                # all 300 TruthfulQA rows

The model judges scripts/data/truthfulqa_labelled_300.jsonl with the `guidelines` judge and a truthfulness guideline
(the judge those labels fit: scripts/tools/agreement.py), with `--probs`, into a normal run directory (`--out`), so a
re-run reuses every finished judgement. Then for each label count n, `--draws` seeded draws of n labelled rows, without
replacement; each draw's PPI++, labels-only and Rogan–Gladen intervals come from the functions `agree` uses
(trust/judge_trust.py `judge_estimates` on the stored rows, with `agree`'s pass labels).

Coverage on a finite labelled set: the truth is the human pass rate over every row the judge scored (all of them
carry a label). That is the mean PPI++ estimates: the judge's predictions on the rows without a drawn label plus the
drawn labels. Draws are without replacement, so with n a large share of N the intervals (which assume an infinite
population) are conservative; the judge's verdicts are the same in every draw, so the coverage is over label draws
for this judge on these rows. Output depends on the run and the seed only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel

from localjudge.errors import LocalJudgeError
from localjudge.judges import get_judge
from localjudge.labels.agreement import agree
from localjudge.report import load_run
from localjudge.trust.judge_trust import judge_estimates, predictions
from scripts.benchmarks.bench_trust_estimators import _intervals, _table
from scripts.tools.agreement import GUIDELINE

if TYPE_CHECKING:
    from localjudge.engine.base import Engine

DATA = Path(__file__).resolve().parents[1] / "data" / "truthfulqa_labelled_300.jsonl"
LABELS = (50, 100, 200)
JUDGE = "guidelines"
COLUMNS = ("ppi++", "ppi-python", "labels-only", "wald", "rogan-gladen")
HEAD = ["labels", "PPI++ cover", "PPI++ ±", "ppi-python cover", "ppi-python ±", "labels-only cover", "labels-only ±"]
HEAD += ["Wald cover", "Wald ±", "Rogan–Gladen cover", "RG ±", "mean λ", "PPI++ ≤ labels-only", "PPI++ fell back", "RG"]


class Judged(BaseModel):
    """One judge's stored rows with the human pass labels `agree` makes of them (row_index -> 0/1)."""

    model_config = {"arbitrary_types_allowed": True}

    rows: list[Any]  # ResultRow of the one judge
    pass_labels: dict[int, float]
    model_id: str = ""

    @property
    def truth(self) -> float:
        """The human pass rate over every scored, labelled row: what the intervals should hold."""
        return float(np.mean(list(self.pass_labels.values())))


def truthfulqa_rows(limit: int | None) -> list[dict[str, Any]]:
    """The labelled rows as scripts/tools/agreement.py gives them to the `guidelines` judge (label yes = true = a pass)."""
    src = [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [
        {
            "id": f"tqa{i}",
            "question": r["question"],
            "answer": r["answer"],
            "label": r["label"],
            "guidelines": GUIDELINE,
            "guidelines_context": f"<request>{r['question']}</request>\n<response>{r['answer']}</response>",
        }
        for i, r in enumerate(src[:limit])
    ]


def judge_rows(
    rows: list[dict[str, Any]], out: Path, *, model: str | None = None, engine: Engine | None = None, threads: int = 1
) -> Judged:
    """Judge `rows` into the run directory `out` (resumed when it exists) and join the stored results with the
    `label` column the way `agree` does."""
    import localjudge

    res = localjudge.evaluate(
        rows,
        [get_judge(JUDGE)],
        model=model,
        engine=engine,
        model_options=None if engine is not None else {"n_threads": threads},
        out=out,
        mapping={"input": "question", "output": "answer"},
        options={"probs": True},
    )
    print(
        f"{res.counts.cells} judgements, {res.counts.evaluated} computed now, {res.counts.reused + res.counts.cached} reused",
        file=sys.stderr,
    )
    run = load_run(out)
    mine = [r for r in run.rows if r.judge == JUDGE]
    rep = agree(mine, rows, "label", judge=JUDGE)
    model_id = next((r.record.model_id for r in mine if r.record is not None), "")
    return Judged(rows=mine, pass_labels=rep.pass_labels or {}, model_id=model_id)


def describe(j: Judged) -> str:
    """One line on the judge against the labels: rows, truth, the judge's own pass rate, TPR/TNR at 0.5."""
    got = predictions(j.rows)
    if got is None:
        return f"{len(j.rows)} rows: the judge gave no pass/fail verdict"
    preds, kind = got
    rows = sorted(j.pass_labels)
    y = np.array([j.pass_labels[r] for r in rows]) == 1
    v = np.array([preds[r] >= 0.5 for r in rows])
    tpr = float(v[y].mean()) if y.any() else float("nan")
    tnr = float((~v[~y]).mean()) if (~y).any() else float("nan")
    return (
        f"{len(rows)} judged and labelled rows (of {len(j.rows)}); human pass rate {j.truth:.3f} (the truth); the judge's "
        f"prediction: its {kind}; judge pass rate {v.mean():.3f}; TPR {tpr:.2f}, TNR {tnr:.2f} at 0.5 (TPR + TNR = {tpr + tnr:.2f})"
    )


def _general(note: str) -> str:
    """A note with its per-draw figures (λ, TPR, TNR) as `…`, so draws that said the same thing count together."""
    return re.sub(r"\d+\.\d+", "…", note)


def table(j: Judged, label_counts: Sequence[int], draws: int, seed: int) -> tuple[list[list[str]], list[str]]:
    """Rows of the coverage / width table (the simulation's columns plus PPI++'s fallbacks), and the distinct notes
    the estimators gave (PPI++'s note, Rogan–Gladen's refusal) with how many draws gave each."""
    labelled = np.array(sorted(j.pass_labels))
    truth = j.truth
    out, notes = [], Counter[str]()
    for n in label_counts:
        if n >= labelled.size:
            out.append([str(n), *["–"] * (len(HEAD) - 2), f"skipped: n ≥ {labelled.size} labelled rows"])
            continue
        rng = np.random.default_rng([seed, n])
        hits: dict[str, list[bool]] = {k: [] for k in COLUMNS}
        widths: dict[str, list[float]] = {k: [] for k in COLUMNS}
        narrower = fell_back = refused = 0
        lam: list[float] = []
        for _ in range(draws):
            chosen = rng.choice(labelled, n, replace=False)
            est, _, _, why = judge_estimates(j.rows, {int(r): j.pass_labels[int(r)] for r in chosen})
            if est is None:
                raise SystemExit(f"no estimate at n={n}: {why}")
            for name, (lo, hi) in _intervals(est):
                hits[name].append(lo <= truth <= hi)
                widths[name].append((hi - lo) / 2)
            narrower += est.ppi.half_width <= est.labels_only.half_width
            lam.append(est.ppi.lam or 0.0)
            fell = "labels-only estimate" in est.ppi.note
            fell_back += fell
            notes[f"PPI++: {_general(est.ppi.note)}"] += 1
            if est.rogan_gladen is None:
                refused += 1
                notes[f"Rogan–Gladen refused: {_general(est.rogan_gladen_refused or '')}"] += 1
        cells = []
        for name in COLUMNS:
            cells += [f"{np.mean(hits[name]):.1%}" if hits[name] else "refused"]
            cells += [f"±{np.mean(widths[name]):.3f}" if widths[name] else "–"]
        rg = f"{refused} of {draws} refused" if refused else ""
        out.append([str(n), *cells, f"{np.mean(lam):.2f}", f"{narrower}/{draws}", f"{fell_back}/{draws}", rg])
    return out, [f"{k} ({c} draws)" for k, c in sorted(notes.items(), key=lambda kc: -kc[1])]


def report(j: Judged, label_counts: Sequence[int], draws: int, seed: int) -> str:
    """The markdown block: the judge line, the table, and the estimators' own sentences."""
    rows, notes = table(j, label_counts, draws, seed)
    lines = [f"**{j.model_id or 'model'}**, `{JUDGE}` judge on TruthfulQA: {describe(j)}.", ""]
    lines += [f"{draws} draws per label count, labels drawn without replacement, seed {seed}, 95 % intervals.", ""]
    lines += [_table(HEAD, rows), "", "What the estimators said, over all draws:", ""]
    return "\n".join(lines + [f"- {x}" for x in notes])


def parse_counts(text: str) -> tuple[int, ...]:
    """`50,100,200` -> (50, 100, 200); a clear error for anything else."""
    try:
        counts = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SystemExit(f"--labels {text!r}: give label counts as integers separated by commas, e.g. 50,100,200") from None
    if not counts or min(counts) < 2:
        raise SystemExit(f"--labels {text!r}: every label count must be at least 2")
    return counts


def main(argv: list[str] | None = None) -> int:
    """Judge (or resume), then print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model name or .gguf path (default: the default model, SmolLM2-135M)")
    ap.add_argument("--rows", type=int, default=None, help="judge only the first ROWS labelled rows (default: all 300)")
    ap.add_argument("--threads", type=int, default=1, help="the model's CPU threads (default 1)")
    ap.add_argument("--labels", default=",".join(map(str, LABELS)), help="label counts to draw (default 50,100,200)")
    ap.add_argument("--draws", type=int, default=500, help="seeded draws per label count (default 500)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", type=Path, default=None, help="the run directory (default runs/trust-models/<model>-<rows>)")
    a = ap.parse_args(argv)
    counts = parse_counts(a.labels)
    if a.draws < 1 or a.threads < 1 or (a.rows is not None and a.rows < 2):
        raise SystemExit("--draws and --threads must be at least 1, --rows at least 2")
    rows = truthfulqa_rows(a.rows)
    out = a.out or Path("runs") / "trust-models" / f"{Path(a.model or 'default').stem}-{len(rows)}"
    try:
        judged = judge_rows(rows, out, model=a.model, threads=a.threads)
    except LocalJudgeError as e:  # a model that is not installed, a run directory of other rows: one line, exit 2
        print(f"error: {e} (finished judgements stay in {out})", file=sys.stderr)
        return 2
    print(f"Run directory {out} (re-run the same command to resume).", file=sys.stderr)
    print(report(judged, counts, a.draws, a.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
