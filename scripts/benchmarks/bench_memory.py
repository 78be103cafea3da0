"""Peak memory of a batch run against dataset size: rows are streamed, so peak RSS should stay flat.

    python scripts/benchmarks/bench_memory.py                      # 1k, 10k and 100k rows (about 10 minutes)
    python scripts/benchmarks/bench_memory.py --sizes 1000 20000   # quicker

Each size runs in a fresh child process: a synthetic JSONL file (question, answer, reference and a
list of three retrieved passages, ~1.6 kB a row) is evaluated with the real `correctness` judge
from the catalog and a `ScriptedEngine` (no model: this measures the runner, store and exports, not
inference). The child's peak RSS comes from `wait4`. Prints one line per size and a JSON summary.
A dev tool: never imported by the package.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_data(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "id": f"row-{i}",
                        "question": f"Question {i}: what does passage {i % 97} say about topic {i % 13}? " + "detail " * 20,
                        "answer": f"Answer {i}: " + "it says something specific and long enough to matter. " * 5,
                        "ground_truth": f"Reference {i}: " + "the expected answer in a few sentences. " * 4,
                        "context": [f"Passage {i}.{k}: " + "retrieved text about the topic, " * 12 for k in range(3)],
                    }
                )
                + "\n"
            )


def child(data: str, out: str) -> None:
    """Run the benchmark in this process (called by the parent in a fresh interpreter)."""
    from collections import deque

    from localjudge import evaluate
    from localjudge.engine.base import ScriptedEngine

    engine = ScriptedEngine(lambda messages, fmt: '{"rationale": "scripted", "result": "yes"}', model_id="bench")
    engine.prompts = deque(maxlen=1)  # type: ignore[assignment]  # the fake keeps every prompt otherwise
    t0 = time.perf_counter()
    run = evaluate(data, ["correctness"], engine=engine, out=out)
    print(json.dumps({"seconds": time.perf_counter() - t0, "cells": run.counts.cells, "evaluated": run.counts.evaluated}))


def measure(n: int, workdir: Path) -> dict:
    data, out = workdir / f"data_{n}.jsonl", workdir / f"run_{n}"
    make_data(data, n)
    env = {**os.environ, "LOCALJUDGE_HOME": str(workdir / "home")}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", str(data), str(out)], stdout=subprocess.PIPE, env=env, text=True
    )
    assert proc.stdout is not None
    text = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"child for {n} rows failed with status {status}")
    res = json.loads(text.strip().splitlines()[-1])
    return {
        "rows": n,
        "data_mb": round(data.stat().st_size / 2**20, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "seconds": round(res["seconds"], 1),
        "rows_per_s": round(n / res["seconds"], 1),
        "store_mb": round((out / "results.sqlite").stat().st_size / 2**20, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--child", nargs=2, metavar=("DATA", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="lj_bench_mem_") as tmp:
        for n in args.sizes:
            r = measure(n, Path(tmp))
            rows.append(r)
            print(
                f"{r['rows']:>7} rows  data {r['data_mb']:>6} MB  peak RSS {r['peak_rss_mb']:>6} MB  "
                f"{r['seconds']:>7} s  {r['rows_per_s']:>6} rows/s  store {r['store_mb']} MB",
                flush=True,
            )
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
