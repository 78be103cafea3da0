"""`bench.py tokens / workload / reuse / batching / gpu`: ms per generated token and cold CLI start, rows/min on the
committed RAG workload against the raw bound, prefix reuse and batching leaving outputs unchanged, and the workload
with every layer on the GPU; each contender in its own process (`sub`, scripts/benchmarks/bench_contenders.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from scripts.benchmarks.bench_common import JUDGES, sub


def cold_cli(home: str) -> float:
    env = {**os.environ, "LOCALJUDGE_HOME": home}
    t = time.perf_counter()
    r = subprocess.run(
        [
            str(Path(sys.executable).parent / "localjudge"),
            "judge",
            "correctness",
            "--field",
            "input=What is 2+2?",
            "--field",
            "output=4",
            "--field",
            "ground_truth=4",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    dt = time.perf_counter() - t
    if r.returncode not in (0, 1):
        raise SystemExit(f"CLI failed: {r.stderr}")
    return dt


def section_tokens(n: int) -> None:
    import tempfile

    print(f"## ms per generated token (default model, {n} RAG-sized judge prompts, cold KV cache each)\n")
    print("| path | ms/token | ratio to raw | valid JSON verdicts |")
    print("|---|---|---|---|")
    rows = {}
    for mode, label in (
        ("raw_tokens", "llama.cpp raw (no constraint)"),
        ("gbnf_tokens", "llama-cpp-python GBNF JSON schema"),
        ("outlines_tokens", "outlines from_llamacpp (stock)"),
        ("engine_free_tokens", "localjudge loop, no constraint"),
        ("engine_nojump_tokens", "localjudge engine, constraint, jump-forward off"),
        ("localjudge_tokens", "localjudge engine (constraint + jump-forward)"),
    ):
        rows[mode] = (label, sub(mode, 0, n))
    raw = rows["raw_tokens"][1]
    raw_ms = raw["decode_ms"] / max(raw["out_tokens"], 1)
    for label, r in rows.values():
        if "error" in r:
            print(f"| {label} | error: {r['error']} | | |")
            continue
        ms = r["decode_ms"] / max(r["out_tokens"], 1)
        print(f"| {label} | {ms:.2f} | {ms / raw_ms:.2f} | {r['valid']}/{r['n']} |")
    with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as warm:
        cold_cli(warm)
        print(
            f"\ncold CLI start to first verdict: {cold_cli(cold):.2f} s with an empty cache (index compiled), "
            f"{cold_cli(warm):.2f} s with the compiled index cached on disk\n"
        )


def section_reuse() -> None:
    r = sub("reuse", 0, 0)
    if "error" in r:
        print("reuse check error:", r["error"])
        return
    print(f"\n## Prefix reuse vs a cold KV cache (relevance_to_query on TruthfulQA, first {r['n']} rows)\n")
    print(f"byte-identical outputs: {r['identical']}/{r['n']}" + (f"; first differences: {r['diffs']}" if r["diffs"] else ""))


def section_batching(rows: int) -> None:
    p1, p4 = sub("batch_p1", rows, 0), sub("batch_p4", rows, 0)
    if "error" in p1 or "error" in p4:
        print("batching check error:", p1.get("error") or p4.get("error"))
        return
    a = {(r[0], r[1]): r for r in p1["results"]}
    b = {(r[0], r[1]): r for r in p4["results"]}
    same_text = sum(a[k][2] == b[k][2] for k in a)
    same_value = sum(a[k][3] == b[k][3] for k in a)
    print(f"\n## Batching vs one at a time ({rows} TruthfulQA rows x relevance_to_query + safety = {len(a)} judgements)\n")
    print(
        f"one at a time: {p1['wall_s']:.0f} s; --parallel 4: {p4['wall_s']:.0f} s ({p1['wall_s'] / p4['wall_s']:.2f}x); "
        f"byte-identical outputs {same_text}/{len(a)}, same verdicts {same_value}/{len(a)}"
    )


def section_workload(rows: int) -> None:
    n = rows * len(JUDGES)
    print(f"## Workload: {rows} CoQA RAG rows x {len(JUDGES)} judges = {n} judgements (default model)\n")
    res = {
        m: sub(m, rows, 0)
        for m in ("speeds", "gbnf", "outlines", "localjudge", "localjudge_fast", "localjudge_noreuse", "localjudge_p4")
    }
    sp, lj = res["speeds"], res["localjudge"]
    if "error" in sp or "error" in lj:
        print("error:", sp.get("error") or lj.get("error"))
        return
    bound_s = lj["prompt_tokens"] / sp["pp_tok_s"] + lj["out_tokens"] * sp["gen_ms_per_tok"] / 1000
    bound_rpm = n / bound_s * 60
    print(f"measured: prompt processing {sp['pp_tok_s']:.0f} tok/s, generation {sp['gen_ms_per_tok']:.1f} ms/token\n")
    print("| mode | rows/min | ratio to raw bound | valid typed verdicts | mean output tokens | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    print(
        f"| 1. raw llama.cpp bound (no reuse, localjudge's token counts) | {bound_rpm:.1f} | 1.00 | - | "
        f"{lj['out_tokens'] / n:.1f} | - |"
    )
    for m, label in (
        ("gbnf", "2. llama-cpp-python + GBNF, one call per row"),
        ("outlines", "3. outlines from_llamacpp, one call per row"),
        ("localjudge", "4. localjudge default (batch runner)"),
        ("localjudge_fast", "5. localjudge fast verdict mode"),
        ("localjudge_noreuse", "localjudge default, prefix reuse off (no shared prefix)"),
        ("localjudge_p4", "localjudge default, --parallel 4 (4 rows decoded per batch)"),
    ):
        r = res[m]
        if "error" in r:
            print(f"| {label} | error: {r['error']} | | | | |")
            continue
        rpm = r["n"] / r["wall_s"] * 60
        print(
            f"| {label} | {rpm:.1f} | {rpm / bound_rpm:.2f} | {100 * r['valid'] / r['n']:.0f}% | "
            f"{r['out_tokens'] / r['n']:.1f} | {r['rss_mb']:.0f} |"
        )
    if "error" not in res["gbnf"] and "error" not in res["outlines"]:
        g = res["gbnf"]["n"] / res["gbnf"]["wall_s"]
        o = res["outlines"]["n"] / res["outlines"]["wall_s"]
        j = lj["n"] / lj["wall_s"]
        f = res["localjudge_fast"]["n"] / res["localjudge_fast"]["wall_s"] if "error" not in res["localjudge_fast"] else 0
        print(
            f"\nlocaljudge / GBNF = {j / g:.2f}x, localjudge / outlines = {j / o:.2f}x, fast / GBNF = {f / g:.2f}x; "
            f"prompt tokens reused from the KV cache: {lj['cached_tokens']}/{lj['prompt_tokens']}"
        )


def section_gpu(rows: int, parallel: tuple[int, ...] = (1, 4, 16)) -> None:
    """The workload with every layer on the GPU (a CUDA build of llama-cpp-python): the naive GBNF loop against
    localjudge one row at a time and with N rows decoded per batch, each in its own process, same rows."""
    os.environ["BENCH_GPU_LAYERS"] = "-1"
    n = rows * len(JUDGES)
    print(f"## GPU: {rows} CoQA RAG rows x {len(JUDGES)} judges = {n} judgements, every layer offloaded\n")
    res = {"gbnf": sub("gbnf", rows, 0)} | {p: sub("localjudge" if p == 1 else f"localjudge_p{p}", rows, 0) for p in parallel}
    base = res["gbnf"]
    print("| contender | wall s | rows/min | x GBNF | valid typed verdicts | mean output tokens |")
    print("|---|---|---|---|---|---|")
    for key, label in [("gbnf", "llama-cpp-python + GBNF, one call per row")] + [
        (p, "localjudge default" if p == 1 else f"localjudge --parallel {p}") for p in parallel
    ]:
        r = res[key]
        if "error" in r:
            print(f"| {label} | error: {r['error']} | | | | |")
            continue
        ratio = f"{base['wall_s'] / r['wall_s']:.2f}" if "error" not in base else "-"
        print(
            f"| {label} | {r['wall_s']:.1f} | {r['n'] / r['wall_s'] * 60:.1f} | {ratio} | {r['valid']}/{r['n']} | "
            f"{r['out_tokens'] / r['n']:.1f} |"
        )
