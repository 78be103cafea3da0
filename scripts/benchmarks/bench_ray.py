"""`bench.py ray [--rows 12]`: local vs Ray on this machine (rows/min, ratio, same outputs?), the store's write rate
and the driver's rate with free judgements; each contender is `bench.py _ray MODE` in its own process (`ray_mode`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from scripts.benchmarks.bench_common import DATA, JUDGES, peak_rss_mb

# the script every contender subprocess runs (`bench.py _ray MODE`)
BENCH = Path(__file__).resolve().parents[1] / "bench.py"


RAY_MAP = {"retrieval_context": "context", "ground_truth": "expected"}
FREE = '{"rationale": "ok", "result": "yes"}'  # a valid answer for the three yes/no JSON judges, at no cost


def _ray_data(rows: int, path: Path) -> Path:
    lines = [x for x in DATA.read_text().splitlines() if x.strip()]
    path.write_text("".join(lines[i % len(lines)] + "\n" for i in range(rows)))
    return path


def ray_mode(mode: str, rows: int, work: str) -> dict:
    """One contender of the `ray` section, in its own process: `local`, `local1` (1 thread), `ray`, `store`,
    `driver_local`, `driver_ray`."""
    from localjudge import evaluate

    work_dir = Path(work)
    judges = list(JUDGES)
    if mode == "store":  # rows/s the driver can persist: realistic ResultRows (the local run's), one transaction each
        from localjudge.store.db import Store

        with Store(work_dir / "local" / "results.sqlite") as src:
            real = list(src.iter_results(src.run_for_dir(), judges, rows))
        st = Store(work_dir / "store_rate.sqlite")
        run_id = st.new_run()
        n = 1000
        t = time.perf_counter()
        for i in range(n):
            r = real[i % len(real)]
            st.put(r.model_copy(update={"run_id": run_id, "row_index": i}), cache=True)
        dt = time.perf_counter() - t
        st.close()
        size = sum(len(r.model_dump_json()) for r in real) / len(real)
        return {"n": n, "wall_s": dt, "row_bytes": size}
    data = _ray_data(rows, work_dir / f"data_{rows}.jsonl")
    kw: dict = {"mapping": RAY_MAP, "out": work_dir / mode}
    init_s = 0.0
    ex = None
    if mode in ("ray", "driver_ray"):
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        import ray

        from localjudge.distributed import RayExecutor

        t = time.perf_counter()
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR")
        init_s = time.perf_counter() - t
        ex = RayExecutor()
        kw["executor"] = ex
    if mode == "local1":
        kw["model_options"] = {"n_threads": 1}
    if mode in ("driver_local", "driver_ray"):  # judgements that cost nothing: what is left is the driver's work
        kw |= {"model": "scripted:", "model_options": {"response": FREE}}
    t = time.perf_counter()
    run = evaluate(data, judges, **kw)
    dt = time.perf_counter() - t
    res = [(r.row_index, r.judge, r.result.raw_text, r.result.value) for r in run.results]
    return {
        "n": len(res),
        "wall_s": dt,
        "init_s": init_s,
        "results": res,
        "rss_mb": peak_rss_mb(),
        "workers": ex.stats["workers"] if ex else 1,
        "unscored": run.counts.unscored,
    }


def _ray_sub(mode: str, rows: int, work: str) -> dict:
    r = subprocess.run(
        [sys.executable, str(BENCH), "_ray", mode, "--rows", str(rows), "--work", work],
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def section_ray(rows: int) -> None:
    import tempfile

    from localjudge.engine.threads import default_threads

    n_j = len(JUDGES)
    print(f"## Ray on this machine: {rows} CoQA RAG rows x {n_j} judges = {rows * n_j} judgements (default model)\n")
    with tempfile.TemporaryDirectory() as work:
        loc, loc1, ray_ = _ray_sub("local", rows, work), _ray_sub("local1", rows, work), _ray_sub("ray", rows, work)
        store = _ray_sub("store", rows, work)
        free = 50 * rows  # enough rows that the driver's own rate shows
        d_loc, d_ray = _ray_sub("driver_local", free, work), _ray_sub("driver_ray", free, work)
    for name, r in (
        ("local", loc),
        ("local1", loc1),
        ("ray", ray_),
        ("store", store),
        ("driver_local", d_loc),
        ("driver_ray", d_ray),
    ):
        if "error" in r:
            print(f"{name} error: {r['error']}")
            return
    rpm_l, rpm_r = rows / loc["wall_s"] * 60, rows / ray_["wall_s"] * 60
    print("| engine | workers x threads | rows/min | ratio to local | wall s | peak RSS MB (driver) |")
    print("|---|---|---|---|---|---|")
    print(
        f"| local (this process, default threads) | 1 x {default_threads()} | {rpm_l:.1f} | 1.00 | {loc['wall_s']:.1f} | {loc['rss_mb']:.0f} |"
    )
    rpm_1 = rows / loc1["wall_s"] * 60
    print(f"| local, --threads 1 | 1 x 1 | {rpm_1:.1f} | {rpm_1 / rpm_l:.2f} | {loc1['wall_s']:.1f} | {loc1['rss_mb']:.0f} |")
    print(
        f"| ray (local cluster, started in {ray_['init_s']:.1f} s, not counted) | {ray_['workers']} x 1 | {rpm_r:.1f} | "
        f"{rpm_r / rpm_l:.2f} | {ray_['wall_s']:.1f} | {ray_['rss_mb']:.0f} |"
    )
    a = {(x[0], x[1]): x for x in loc["results"]}
    b = {(x[0], x[1]): x for x in ray_["results"]}
    same_text = sum(a[k][2] == b[k][2] for k in a if k in b)
    same_value = sum(a[k][3] == b[k][3] for k in a if k in b)
    print(f"\nsame outputs as the local run: byte-identical {same_text}/{len(a)}, same verdicts {same_value}/{len(a)}", end="")
    c = {(x[0], x[1]): x for x in loc1["results"]}
    print(
        f"; as the local run with 1 thread: byte-identical {sum(c[k][2] == b[k][2] for k in c if k in b)}/{len(c)}, "
        f"same verdicts {sum(c[k][3] == b[k][3] for k in c if k in b)}/{len(c)}"
    )
    write_rps = store["n"] / store["wall_s"]
    drv_l = d_loc["n"] / d_loc["wall_s"]
    drv_r = d_ray["n"] / d_ray["wall_s"]
    print(
        f"\nstore write rate: {write_rps:.0f} results/s ({store['n']} ResultRows of {store['row_bytes']:.0f} bytes JSON, one "
        f"committed transaction each, WAL, synchronous=FULL)"
    )
    print(
        f"driver with judgements that cost nothing ({d_loc['n']} cells, scripted answers): local loop {drv_l:.0f} cells/s, "
        f"Ray ({d_ray['workers']} workers) {drv_r:.0f} cells/s"
    )
    bound = min(write_rps, drv_r) / n_j * 60  # rows/min one driver can take in
    per_machine = rpm_r
    print(
        f"\nexpected scaling: rows/min with N machines like this one ~ min(N x {per_machine:.1f}, {bound:.0f}) "
        f"(the driver's bound: min(store, Ray driver) / {n_j} judges); the driver saturates at N ~ {bound / per_machine:.0f}"
    )
