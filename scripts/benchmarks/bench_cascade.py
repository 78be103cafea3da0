"""`bench.py cascade [--rows 20] [--below 0.8]`: a smollm2-135m -> gemma3-270m cascade vs gemma3-270m on every row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from scripts.benchmarks.bench_common import DATA, ROOT


def section_cascade(rows: int, below: float) -> None:
    """A cascade (smollm2-135m first, gemma3-270m below `below`) against gemma3-270m on every row, side by side: the
    same rows, judge (correctness), --probs and one thread; each a fresh CLI process and run directory, after a
    one-row warm-up of both models (compiled indexes cached in one temporary LOCALJUDGE_HOME)."""
    import tempfile

    print(f"## Cascade: {rows} coqa rows, correctness, --probs, --threads 1, escalate below {below}\n")
    work = Path(tempfile.mkdtemp(prefix="bench-cascade-"))
    env = {**os.environ, "LOCALJUDGE_HOME": str(work / "home"), "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "localjudge", "run", str(DATA), "-j", "correctness", "--probs", "--threads", "1", "-q"]

    def run(name: str, extra: list[str], limit: int) -> float:
        t0 = time.perf_counter()
        subprocess.run(
            [*base, "--limit", str(limit), "--out", str(work / name), *extra], env=env, check=False, capture_output=True
        )
        return time.perf_counter() - t0

    run("warm-strong", ["--model", "gemma3-270m"], 1)
    run("warm-first", ["--model", "smollm2-135m"], 1)
    t_strong = run("strong", ["--model", "gemma3-270m"], rows)
    t_casc = run("cascade", ["--model", "smollm2-135m", "--escalate-to", "gemma3-270m", "--escalate-below", str(below)], rows)
    summary = json.loads((work / "cascade" / "summary.json").read_text())["run"]["cascade"]["judges"]["correctness"]

    def verdicts(name: str) -> dict[int, object]:
        lines = (work / name / "results.jsonl").read_text().splitlines()
        return {r["row_index"]: r["result"]["value"] for r in map(json.loads, lines) if r["judge"] == "correctness"}

    strong, casc = verdicts("strong"), verdicts("cascade")
    same = sum(strong.get(i) == v for i, v in casc.items())
    print("| path | wall s | vs strong alone | escalated | verdict = strong alone's |")
    print("|---|---|---|---|---|")
    print(f"| gemma3-270m on every row | {t_strong:.1f} | 1.00 | - | - |")
    print(
        f"| cascade smollm2-135m -> gemma3-270m | {t_casc:.1f} | {t_casc / t_strong:.2f} | "
        f"{summary['escalated']}/{summary['n']} ({summary['fraction_escalated']:.0%}) | {same}/{len(casc)} |"
    )
    est = summary["time_saved_ms_estimated"]
    print(f"\nThe run's own estimate of time saved (from per-row timings): {'n/a' if est is None else f'{est / 1000:.1f} s'}")
