"""Negative controls on the installable models beside what labels say about the same rows (issue 47).

    python scripts/bench.py controls                 # 60 TruthfulQA rows + the quick start, both models, 2 threads
    python scripts/bench.py controls --rows 300 --threads 1

For each model: the first --rows labelled TruthfulQA rows judged by `guidelines` with `--probs` (as `bench.py
trust-models`), and the README quick start (examples/rag_sample.jsonl, groundedness and correctness), each into a
run directory under --work (resumable); then `localjudge controls` on each run (a sample of --rows, or all 10 quick
start rows). The table puts the controls' verdict, made without labels, beside the labelled accuracy and the
labelled AUC (expected score against the human label) of the same judge on the same rows. One model at a time.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

MODELS = ("smollm2-135m", "gemma3-270m")


def _labelled(out: Path, rows: list[dict[str, Any]]) -> tuple[str, str]:
    """Accuracy (a pass where the label is yes) and the AUC of the expected score against the label."""
    from localjudge.report import load_run
    from localjudge.report.controls import auc, score_of

    labels = {i: r["label"] == "yes" for i, r in enumerate(rows)}
    got = [(score_of(r), r.result.passed, labels[r.row_index]) for r in load_run(out).rows if score_of(r) is not None]
    if not got:
        return "—", "—"
    right = sum(bool(p) == y for _, p, y in got if p is not None)
    pos = [float(s) for s, _, y in got if y and s is not None]
    neg = [float(s) for s, _, y in got if not y and s is not None]
    a = f"{auc(pos, neg):.2f}" if pos and neg else "—"
    return f"{100 * right / len(got):.1f} %", a


def section_controls(rows: int = 60, threads: int = 2, work: Path | None = None) -> None:
    """The table of docs/trust.md, 'Negative controls'."""
    import localjudge
    from localjudge.judges import get_judge
    from localjudge.report.controls import KINDS, run_controls
    from scripts.benchmarks.bench_layouts import quick_start_rows
    from scripts.benchmarks.bench_trust_models import JUDGE, truthfulqa_rows

    base = work or Path(tempfile.mkdtemp(prefix="bench-controls-"))
    print(f"## Negative controls beside the labels ({rows} TruthfulQA rows, quick start; {threads} threads; {base})\n")
    print(
        "| model | rows | judge | control | pass rate | labelled accuracy | labelled AUC | controls: real vs control mean | AUC [95 %] | p | verdict |"
    )
    print("|" + "---|" * 11)
    quick = quick_start_rows()
    for model in MODELS:
        opts = {"n_threads": threads}
        # without guidelines_context: the judge composes it from input and output (the same text), so the controls'
        # swapped output reaches the prompt (given whole, the context would hold the real answer: no control)
        tqa = [{k: v for k, v in r.items() if k != "guidelines_context"} for r in truthfulqa_rows(rows)]
        out = base / model / "truthfulqa"
        localjudge.evaluate(
            tqa, [get_judge(JUDGE)], model=model, model_options=opts, out=out,
            mapping={"input": "question", "output": "answer"}, options={"probs": True},
        )  # fmt: skip
        acc, lab_auc = _labelled(out, tqa)
        cases = [(f"TruthfulQA ({rows})", out, rows, {JUDGE: (acc, lab_auc)})]
        qout = base / model / "quickstart"
        localjudge.evaluate(
            quick, [get_judge("groundedness"), get_judge("correctness")], model=model, model_options=opts, out=qout
        )
        cases.append(("quick start (10)", qout, len(quick), {}))
        for label, run_dir, sample, labelled in cases:
            rep = run_controls(run_dir, sample=sample, model_options=opts, kinds=tuple(KINDS))
            summary = json.loads((run_dir / "summary.json").read_text())["judges"]
            by_kind = {"answer": rep.judges, **rep.other_kinds}
            for name in rep.judges:
                acc, lab_auc = labelled.get(name, ("—", "—"))
                rate = summary[name].get("pass_rate")
                for kind, judges in by_kind.items():
                    j = judges.get(name)
                    if j is None or j.variable is None:  # the judge declares no variable of this kind: no control
                        continue
                    ci = f"{j.auc:.2f} [{j.auc_ci[0]:.2f}, {j.auc_ci[1]:.2f}]" if j.auc is not None and j.auc_ci else "—"
                    means = f"{j.real_mean:.3f} vs {j.control_mean:.3f}" if j.real_mean is not None else "—"
                    print(
                        f"| {model} | {label} | {name} | {kind} | {'—' if rate is None else f'{100 * rate:.1f} %'} | {acc} | "
                        f"{lab_auc} | {means} | {ci} | {'—' if j.p_value is None else f'{j.p_value:.3f}'} | {j.verdict} |",
                        flush=True,
                    )
