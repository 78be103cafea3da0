"""Weight layouts of the default model side by side: speed, and what the conversion does to verdicts (issue 46).

    python scripts/bench.py layouts                    # shipped Q4_1 vs BF16 vs Q4_0, 300 TruthfulQA rows + quick start
    python scripts/bench.py layouts --rows 40 --threads 1

Each layout is made with `localjudge models optimize` (engine/layout.py, llama.cpp's own quantizer) in the current
models home, then judges the same rows in one process after another (never two models at once): the 300 labelled
TruthfulQA rows with the `guidelines` judge and `--probs` (as `bench.py trust-models`), and the README quick
start (examples/rag_sample.jsonl, groundedness and correctness). Per layout: the wall time of each workload, the
prompt and decode speed `measure` reports, and against the shipped file the verdict agreement, the mean |Δ| of
the expected score, and the accuracy against the human labels (a pass where the label is "yes"). The small
model judges at chance (docs/models.md), so the accuracy column shows that a layout changed nothing measurable,
not that either is good.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "examples" / "rag_sample.jsonl"
LAYOUTS = ("BF16", "Q4_0")


def quick_start_rows() -> list[dict[str, Any]]:
    """The README quick start's rows (examples/rag_sample.jsonl)."""
    return [json.loads(x) for x in QUICK.read_text(encoding="utf-8").splitlines() if x.strip()]


def _results(out: Path) -> dict[tuple[str, int], Any]:
    from localjudge.report import load_run

    return {(r.judge, r.row_index): r.result for r in load_run(out).rows}


def _judge(model: str, threads: int, rows: int, work: Path) -> dict[str, Any]:
    import localjudge
    from localjudge.judges import get_judge
    from scripts.benchmarks.bench_trust_models import JUDGE, truthfulqa_rows

    tqa = truthfulqa_rows(rows)
    t = time.perf_counter()
    localjudge.evaluate(
        tqa,
        [get_judge(JUDGE)],
        model=model,
        model_options={"n_threads": threads},
        out=work / "tqa",
        mapping={"input": "question", "output": "answer"},
        options={"probs": True},
    )
    tqa_s = time.perf_counter() - t
    quick = quick_start_rows()
    t = time.perf_counter()
    localjudge.evaluate(
        quick,
        [get_judge("groundedness"), get_judge("correctness")],
        model=model,
        model_options={"n_threads": threads},
        out=work / "quick",
    )
    quick_s = time.perf_counter() - t
    labels = {i: r["label"] == "yes" for i, r in enumerate(tqa)}
    return {
        "tqa": _results(work / "tqa"),
        "quick": _results(work / "quick"),
        "tqa_s": tqa_s,
        "quick_s": quick_s,
        "labels": labels,
    }


def _compare(mine: dict[tuple[str, int], Any], base: dict[tuple[str, int], Any]) -> tuple[str, str]:
    """Verdict agreement and mean |Δ expected score| over the cells both scored."""
    both = [k for k in mine if k in base and mine[k].passed is not None and base[k].passed is not None]
    if not both:
        return "—", "—"
    same = sum(mine[k].passed == base[k].passed for k in both)
    deltas = [
        abs(mine[k].expected_score - base[k].expected_score)
        for k in both
        if mine[k].expected_score is not None and base[k].expected_score is not None
    ]
    delta = f"{sum(deltas) / len(deltas):.3f}" if deltas else "—"
    return f"{same}/{len(both)} ({100 * same / len(both):.1f} %)", delta


def _accuracy(res: dict[tuple[str, int], Any], labels: dict[int, bool]) -> str:
    scored = [(k, v) for k, v in res.items() if v.passed is not None]
    if not scored:
        return "—"
    right = sum(bool(v.passed) == labels[k[1]] for k, v in scored)
    passes = sum(bool(v.passed) for _, v in scored)
    return f"{100 * right / len(scored):.1f} % (passes {passes}/{len(scored)})"


def section_layouts(rows: int = 300, threads: int = 2) -> None:
    """The table of docs/models.md, 'Weight layouts'."""
    from localjudge.engine.layout import measure, optimize
    from localjudge.models.manifest import entry_exists, get_entry
    from localjudge.models.registry import resolve_model

    models = {"Q4_1 (shipped)": "smollm2-135m"}
    for t in LAYOUTS:
        name = f"smollm2-135m-{t.lower().replace('_', '-')}"
        if not entry_exists(get_entry(name)):
            optimize("smollm2-135m", type_name=t, speeds=False)
        models[t] = name
    print(f"## Weight layouts of smollm2-135m ({rows} TruthfulQA rows, quick start; {threads} threads)\n")
    head = "| layout | file | prompt tok/s | decode tok/s | TruthfulQA s | quick start s | TruthfulQA verdicts = shipped"
    head += " | mean abs. Δ score | labelled accuracy | quick start verdicts = shipped |"
    print(head)
    print("|" + "---|" * 10)
    base: dict[str, Any] | None = None
    for label, model in models.items():
        path = Path(resolve_model(model).path)
        speed = measure(path, threads)
        with tempfile.TemporaryDirectory() as tmp:
            got = _judge(model, threads, rows, Path(tmp))
        base = base or got
        agree_tqa, delta = _compare(got["tqa"], base["tqa"])
        agree_quick, _ = _compare(got["quick"], base["quick"])
        print(
            f"| {label} | {path.stat().st_size / 1e6:,.0f} MB | {speed.prompt_tok_s:,.0f} | {speed.decode_tok_s:,.0f} | "
            f"{got['tqa_s']:.1f} | {got['quick_s']:.1f} | {agree_tqa} | {delta} | {_accuracy(got['tqa'], got['labels'])} | "
            f"{agree_quick} |",
            flush=True,
        )
