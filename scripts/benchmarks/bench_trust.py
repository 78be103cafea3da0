"""Panel benchmarks (issue 25), run through scripts/bench.py; a dev tool, never imported by the package.

    python scripts/bench.py panel-reuse [--rows 6]
        a panel of smollm2-135m and gemma3-270m (correctness, --threads 1) in a fresh run directory, side by side
        with the same panel in a run directory where `-j correctness --model gemma3-270m` already ran: wall time
        of each panel run, their ratio, how many judgements each made, and whether their verdicts are the same.

Each path is a fresh CLI process after a one-row warm-up of both models (compiled indexes cached in one temporary
LOCALJUDGE_HOME); the figures are printed with the load average, as ratios: this machine is shared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "scripts" / "data" / "coqa_rag_60.jsonl"
PANEL = "smollm2-135m,gemma3-270m"


def section_panel_reuse(rows: int) -> None:
    """The panel with and without an earlier solo run of one member in the same store (see the module docstring)."""
    print(f"## Panel reuse: {rows} coqa rows, correctness, --threads 1, panel {PANEL}; load {os.getloadavg()[0]:.1f}\n")
    work = Path(tempfile.mkdtemp(prefix="bench-panel-"))
    env = {**os.environ, "LOCALJUDGE_HOME": str(work / "home"), "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "localjudge", "run", str(DATA), "-j", "correctness", "--threads", "1", "-q"]

    def run(name: str, extra: list[str], limit: int) -> tuple[float, dict]:
        t0 = time.perf_counter()
        cmd = [*base, "--limit", str(limit), "--out", str(work / name), *extra]
        subprocess.run(cmd, env=env, check=False, capture_output=True)
        took = time.perf_counter() - t0
        return took, json.loads((work / name / "run.json").read_text())["counts"]

    run("warm", ["--panel", PANEL], 1)
    t_fresh, c_fresh = run("fresh", ["--panel", PANEL], rows)
    t_solo, _ = run("reused", ["--model", "gemma3-270m"], rows)
    t_reused, c_reused = run("reused", ["--panel", PANEL], rows)

    def verdicts(name: str) -> dict[tuple[str, int], object]:
        lines = (work / name / "results.jsonl").read_text().splitlines()
        return {(r["judge"], r["row_index"]): r["result"]["value"] for r in map(json.loads, lines)}

    same = verdicts("fresh") == verdicts("reused")
    print("| path | wall s | vs fresh panel | judged now | from cache |")
    print("|---|---|---|---|---|")
    print(f"| panel in a fresh run directory | {t_fresh:.1f} | 1.00 | {c_fresh['evaluated']} | {c_fresh['cached']} |")
    print(f"| (solo gemma3-270m run first, not counted: {t_solo:.1f} s) | | | | |")
    print(
        f"| panel after the solo run | {t_reused:.1f} | {t_reused / t_fresh:.2f} | {c_reused['evaluated']} | "
        f"{c_reused['cached']} |"
    )
    print(f"\nSame verdicts (members and panel): {same}; load now {os.getloadavg()[0]:.1f}")
