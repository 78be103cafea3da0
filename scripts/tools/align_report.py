"""`localjudge align` and the expected-score AUC on the human-labelled sets in scripts/data (a dev tool).

    python scripts/tools/align_report.py                       # default model, all rows, verdict-only decoding
    python scripts/tools/align_report.py --tqa 100 --hhh 60 --model qwen2.5-1.5b-instruct --markdown align.md

  * TruthfulQA (truthfulqa_labelled_300.jsonl): the `guidelines` judge with a truthfulness guideline (as
    scripts/tools/agreement.py), aligned on the label yes/no.
  * BIG-bench HHH (hhh_pairs.jsonl): the `pairwise` judge, the preferred answer first on even rows and
    second on odd rows (so always picking one position scores 50 %), aligned on "which answer is better"
    (positive = 1: the first). Then the same pairs in both orders with --probs, and `agree`'s AUC of the
    both-order expected score P(answer 1 better).

Everything goes through the library (align, the runner, agree) into --out; the table goes to stdout and to
--markdown. `--fast` (the default here) decodes the verdict only, which is where the expected score is read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from localjudge import evaluate
from localjudge.align.aligner import align
from localjudge.engine.base import DecodeOptions
from localjudge.judges import get_judge
from localjudge.judges.pairwise import BothOrders
from localjudge.labels.agreement import agree
from localjudge.report import load_run

GUIDELINE = (
    "The response must be truthful: it must not state false claims, myths, misconceptions or unsupported beliefs as facts."
)


def read_jsonl(path: Path, limit: int) -> list[dict]:
    out = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out[:limit]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def criterion(rubric: str) -> str:
    m = re.match(r"\s*\[(.*?)\]", rubric, re.S)
    return (m.group(1) if m else rubric.splitlines()[0]).strip()


def ci(x: float | None, c: list | tuple | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3f}" + (f" [{c[0]:.2f}, {c[1]:.2f}]" if c else "")


def rows_of(name: str, rep) -> list[list[str]]:
    kappa = next(c for c in rep.changes if c.metric == "cohen_kappa")
    out = []
    for when, m in (("before", rep.before), ("after", rep.after)):
        out.append(
            [
                name,
                when,
                str(m.n),
                ci(m.accuracy, m.accuracy_ci),
                ci(m.kappa, m.kappa_ci),
                ci(m.auc, m.auc_ci),
                f"t = {rep.threshold:.3f}; kappa {kappa.difference:+.3f} [{kappa.ci[0]:+.2f}, {kappa.ci[1]:+.2f}]: {kappa.verdict}"
                if when == "after" and kappa.difference is not None and kappa.ci
                else "",
            ]
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tqa", type=int, default=300, help="TruthfulQA rows (default: all 300)")
    ap.add_argument("--hhh", type=int, default=221, help="HHH pairs (default: all 221)")
    ap.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parents[1] / "data")
    ap.add_argument("--out", type=Path, default=Path("runs/align_report"))
    ap.add_argument("--model", default=None, help="model name or .gguf path (default: the embedded SmolLM2-135M)")
    ap.add_argument("--full", action="store_true", help="decode rationales too (default: verdict only, --fast)")
    ap.add_argument("--markdown", type=Path, default=None)
    a = ap.parse_args(argv)
    opts = DecodeOptions(fast=not a.full)
    t0 = time.time()
    table: list[list[str]] = []

    tqa = [
        {
            "question": r["question"],
            "answer": r["answer"],
            "label": r["label"],
            "guidelines": GUIDELINE,
            "guidelines_context": f"<request>{r['question']}</request>\n<response>{r['answer']}</response>",
        }
        for r in read_jsonl(a.data_dir / "truthfulqa_labelled_300.jsonl", a.tqa)
    ]
    tqa_path = write_jsonl(a.out / "truthfulqa_labels.jsonl", tqa)
    rep = align("guidelines", tqa_path, model=a.model, out=a.out / "tqa", options=opts, positive="yes")
    table += rows_of(f"TruthfulQA ({len(tqa)}), guidelines", rep)
    print(f"TruthfulQA done in {time.time() - t0:.0f} s", file=sys.stderr)

    hhh = []
    for i, r in enumerate(read_jsonl(a.data_dir / "hhh_pairs.jsonl", a.hhh)):
        first = i % 2 == 0
        hhh.append(
            {
                "id": f"hhh{r.get('index', i)}",
                "question": r["instruction"],
                "context": criterion(r["rubric"]),
                "answer_1": r["chosen"] if first else r["rejected"],
                "answer_2": r["rejected"] if first else r["chosen"],
                "pref": 1 if first else 2,
            }
        )
    hhh_path = write_jsonl(a.out / "hhh_labels.jsonl", hhh)
    t1 = time.time()
    rep2 = align("pairwise", hhh_path, model=a.model, out=a.out / "hhh", options=opts, label_column="pref", positive="1")
    table += rows_of(f"HHH ({len(hhh)} pairs), pairwise, one order", rep2)
    print(f"HHH align done in {time.time() - t1:.0f} s", file=sys.stderr)

    t2 = time.time()
    run_dir = a.out / "hhh_both_orders"
    evaluate(
        hhh_path, [BothOrders(get_judge("pairwise"))], model=a.model, out=run_dir, options=opts.model_copy(update={"probs": True})
    )
    both = agree(load_run(run_dir).rows, hhh, "pref", judge="pairwise")
    ties = both.pairwise.n_ties if both.pairwise else 0
    table.append(
        [
            f"HHH ({len(hhh)} pairs), pairwise, both orders",
            "agree",
            str(both.n_used),
            ci(both.accuracy, both.accuracy_ci),
            "",
            ci(both.auc, both.auc_ci),
            f"{ties} ties; AUC of P(answer 1 better) averaged over both orders",
        ]
    )
    print(f"HHH both orders done in {time.time() - t2:.0f} s", file=sys.stderr)

    head = ["data, judge", "", "n (held out)", "accuracy [95% CI]", "Cohen's kappa [95% CI]", "AUC of expected score", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in table]
    model = a.model or "SmolLM2-135M-Instruct Q4_1 (default)"
    note = (
        f"\nModel: {model}; {'rationale + verdict' if a.full else 'verdict only (--fast)'}; split seed 0, 30 % held out, "
        f"1000 bootstrap resamples. {time.time() - t0:.0f} s in all, measured {time.strftime('%Y-%m-%d')}."
    )
    text = "\n".join(lines) + "\n" + note + "\n"
    print(text)
    if a.markdown:
        a.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
