"""`python scripts/bench.py defaults [--rows 12] [--load N]`: this code's default options against the previous
release's settings and the naive llama-cpp-python GBNF loop, on the same RAG rows x groundedness, side by side in
one run (issue 29: a default that halved the speed was found from the outside, never by the benchmark).

Contenders, each in its own process:

* `default`: `localjudge run` as a user runs it, every option at its default (the batch runner, prefix reuse), the
  default model in the layout this CPU computes fastest (engine/layout.py), and again with the shipped Q4_1 file
  (`LOCALJUDGE_LAYOUT=shipped`: the previous release's default, issue 46);
* `previous`: the same code with the settings of release 630c02b: every logical CPU as threads,
  `n_batch` = `n_ubatch` = 512, and libgomp's own spin-wait (GOMP_SPINCOUNT 300,000), on the shipped file;
* `default, --threads 1`, `default, libgomp's own spin-wait`, `default, no spin` and `default, n_ubatch=512` (physical batches at fixed
  positions, so prefix reuse stops at a multiple of 512) and `--parallel 4` (four rows per decode; batched kernels
  round differently, so the default is 1): what each part of the default's choice is worth, on the converted file;
* `GBNF`: llama-cpp-python's `create_completion` with its JSON-schema grammar, one call per row, with the same
  thread count and spin-wait as the default (max_tokens 256), the naive loop a user would write, on both files
  (the ratio column is to the loop on the converted file, the last row).

With `--load N` every contender runs a second time beside N busy-loop processes (killed after each contender, and
each exits by itself after an hour at most), for the loaded-machine figures beside the idle ones.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JUDGE = "groundedness"
LIBGOMP_SPIN = "300000"  # libgomp's own GOMP_SPINCOUNT when OMP_WAIT_POLICY is unset
BUSY_MAX_S = 3600.0  # a busy-loop process never outlives this, whatever happens to the bench


def _rows(rows: int) -> list[dict]:
    from scripts.benchmarks.bench_common import DATA

    return [json.loads(x) for x in DATA.read_text().splitlines() if x.strip()][:rows]


def _options(name: str) -> dict:
    from localjudge.engine.threads import usable_cpus

    if name == "previous":
        return {"n_threads": min(len(usable_cpus()), 16), "n_batch": 512, "n_ubatch": 512}
    if name == "default_1":
        return {"n_threads": 1}
    if name == "default_ub512":
        return {"n_ubatch": 512}
    if name == "default_par4":
        return {"n_parallel": 4}
    return {}


def run_contender(name: str, rows: int) -> dict:
    """One contender in this process: wall seconds for the rows (the model loaded first, not counted)."""
    if name == "gbnf":
        return _gbnf(rows)
    from localjudge import evaluate
    from localjudge.engine import load_engine
    from localjudge.judges import get_judge

    eng = load_engine(**_options(name))
    eng.compile(get_judge(JUDGE).format)  # compiled once, outside the timed part (cached on disk anyway)
    data = _rows(rows)
    t0, c0 = time.perf_counter(), os.times()
    with tempfile.TemporaryDirectory() as out:
        run = evaluate(data, [JUDGE], engine=eng, out=out)
        res = [row.result for row in run.results]
    c1 = os.times()
    return {
        "wall_s": time.perf_counter() - t0,
        "cpu_s": c1.user + c1.system - c0.user - c0.system,
        "n": len(res),
        "valid": sum(r.scored for r in res),
        "threads": eng.n_threads,
        "n_ubatch": eng.n_ubatch,
        "spin": _spin(),
        "cached": sum(r.usage.cached_prompt_tokens for r in res),
        "prompt": sum(r.usage.prompt_tokens for r in res),
    }


def _gbnf(rows: int) -> dict:
    from localjudge.engine import load_engine
    from localjudge.judges import get_judge
    from scripts.benchmarks.bench_common import MAX_TOKENS, SCHEMA, _llama, _valid

    eng = load_engine()  # renders the same chat prompts; loads llama.cpp with the default's spin-wait first
    from llama_cpp import LlamaGrammar

    texts = [eng.render_prompt(get_judge(JUDGE).render(**_variables(r))) for r in _rows(rows)]
    threads = eng.n_threads
    eng.close()
    llm = _llama()
    grammar = LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
    t0, c0 = time.perf_counter(), os.times()
    valid = 0
    for text in texts:
        out = llm.create_completion(text, max_tokens=MAX_TOKENS, temperature=0, grammar=grammar)
        valid += _valid(out["choices"][0]["text"])
    c1 = os.times()
    return {
        "wall_s": time.perf_counter() - t0,
        "cpu_s": c1.user + c1.system - c0.user - c0.system,
        "n": len(texts),
        "valid": valid,
        "threads": threads,
        "n_ubatch": 512,
        "spin": _spin(),
    }


def _spin() -> str:
    """How llama.cpp's threads wait in this process: the spin count, or the OpenMP wait policy."""
    if "OMP_WAIT_POLICY" in os.environ:
        return f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}"
    return os.environ.get("GOMP_SPINCOUNT", "libgomp's")


def _variables(row: dict) -> dict:
    from scripts.benchmarks.bench_common import JUDGES

    return JUDGES[JUDGE](row)


def _busy(deadline: float) -> None:  # pragma: no cover - a competing CPU-bound process
    x = 0
    while time.monotonic() < deadline:
        for _ in range(100_000):
            x = (x * 1103515245 + 12345) % (1 << 31)


def _sub(name: str, rows: int, env: dict[str, str], load: int) -> dict:
    """Run one contender in a fresh process, beside `load` busy-loop processes."""
    busy = [mp.Process(target=_busy, args=(time.monotonic() + BUSY_MAX_S,), daemon=True) for _ in range(load)]
    for p in busy:
        p.start()
    before = os.getloadavg()[0]
    try:
        r = subprocess.run(
            [sys.executable, str(Path(__file__).resolve().parents[1] / "bench.py"), "_defaults", name, "--rows", str(rows)],
            capture_output=True,
            text=True,
            timeout=BUSY_MAX_S,
            env={**os.environ, **env},
        )
    finally:
        for p in busy:
            p.kill()
            p.join()
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["load_before"] = before
    return out


SHIPPED = {"LOCALJUDGE_LAYOUT": "shipped"}  # the default model's file as it ships (Q4_1), not this CPU's layout
CONTENDERS = (  # name, label, environment (on top of this process's)
    ("default", "localjudge default (the model converted for this CPU)", {}),
    ("default", "localjudge default, the shipped Q4_1 file (the previous release's default)", SHIPPED),
    ("previous", "localjudge, 630c02b's settings, the shipped file", {"GOMP_SPINCOUNT": LIBGOMP_SPIN, **SHIPPED}),
    ("default_1", "localjudge default, --threads 1", {}),
    ("default", "localjudge default, libgomp's own spin-wait", {"GOMP_SPINCOUNT": LIBGOMP_SPIN}),
    ("default", "localjudge default, no spin (sleep at once)", {"OMP_WAIT_POLICY": "passive"}),
    ("default_ub512", "localjudge default, --option n_ubatch=512", {}),
    ("default_par4", "localjudge default, --parallel 4", {}),
    ("gbnf", "llama-cpp-python + GBNF, one call per row, the shipped file", SHIPPED),
    ("gbnf", "llama-cpp-python + GBNF, one call per row, the converted file", {}),
)


def section_defaults(rows: int, load: int) -> None:
    """Print the side-by-side table: seconds, rows/min and the ratio to the GBNF loop, alone and beside `load`
    busy processes."""
    from localjudge.engine.threads import SPIN_COUNT, default_threads, physical_cores, usable_cpus

    print(
        f"## Default options vs the previous release's settings: {rows} CoQA RAG rows x {JUDGE} (default model)\n\n"
        f"logical CPUs {len(usable_cpus())}, physical cores {physical_cores()}, default n_threads {default_threads()}, "
        f"spin count {SPIN_COUNT}\n"
    )
    loads = [0, load] if load else [0]
    res: dict[tuple[int, int], dict] = {}
    for lo in loads:
        for i, (name, _, env) in enumerate(CONTENDERS):
            res[i, lo] = _sub(name, rows, env, lo)
            print(f"  {CONTENDERS[i][1]}, beside {lo} busy: {res[i, lo]}", file=sys.stderr, flush=True)
    head = "| contender | threads | n_ubatch | spin |" + "".join(
        f" {'alone' if lo == 0 else f'beside {lo} busy'}: s | rows/min | x GBNF | load before |" for lo in loads
    )
    print(head + " valid |")
    print("|---" * (head.count("|") - 1) + "|---|")
    for i, (_, label, _) in enumerate(CONTENDERS):
        first = res[i, 0]
        cells = [label, str(first.get("threads", "")), str(first.get("n_ubatch", "")), first.get("spin", "")]
        for lo in loads:
            r, g = res[i, lo], res[len(CONTENDERS) - 1, lo]
            if "error" in r:
                cells += [f"error: {r['error']}", "", "", ""]
                continue
            ratio = g["wall_s"] / r["wall_s"] if "error" not in g else float("nan")
            cells += [f"{r['wall_s']:.1f}", f"{60 * r['n'] / r['wall_s']:.1f}", f"{ratio:.2f}", f"{r['load_before']:.1f}"]
        cells.append(f"{first.get('valid', 0)}/{first.get('n', 0)}")
        print("| " + " | ".join(cells) + " |")
