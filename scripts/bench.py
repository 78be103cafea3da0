"""Benchmarks, side by side in one run on the default model (a dev tool; never imported by the package).

    python scripts/bench.py tokens   [--n 6]     ms per generated token: raw / GBNF / outlines / localjudge,
                                                 and cold CLI start to first verdict
    python scripts/bench.py workload [--rows 20] rows/min on the committed RAG workload (scripts/data/coqa_rag_60.jsonl,
                                                 3 judges): raw bound / GBNF / outlines / localjudge
    python scripts/bench.py batching [--rows 300] one-at-a-time vs --parallel 4 on TruthfulQA: same verdicts?
    python scripts/bench.py models   [--n 6] [--model NAME ...] prompt/generation speed per local model, and what
                                                    it predicts for the curated hub models (by file size)
    python scripts/bench.py serve    [--rows 4]  the same judgements in-process (`localjudge run`), through `localjudge serve`
                                                 with 1 and 8 concurrent clients, and through llama-cpp-python's own
                                                 OpenAI server with the same client: valid % and rows/min
    python scripts/bench.py view     [--n 5]     `localjudge view` on synthetic 1k / 10k / 100k-row runs (results through the store):
                                                 time to first page (page HTML + status + first rows page), per page, sorted,
                                                 searched (scan, then the trigram index) and the uncertain queue, over HTTP
                                                 from a real server, side by side (goal: each < 300 ms at 100k)
    python scripts/bench.py cascade  [--rows 20] [--below 0.8]  smollm2-135m escalating to gemma3-270m (--probs) vs
                                                 gemma3-270m on every row: wall time, ratio, fraction escalated, and
                                                 how often the cascade's verdict equals the strong model's
    python scripts/bench.py trust-estimators [--trials 500] [--seed 2026]  seeded simulation, no model: coverage and
                                                 width of PPI++ / labels-only / Rogan-Gladen, active vs random
                                                 labelling (scripts/benchmarks/bench_trust_estimators.py)
    python scripts/bench.py trust-models [--rows 300] [--model smollm2-135m] [--threads 1] [--labels 50,100,200]
                                                 [--draws 500] [--out DIR]  the same table measured: the model judges
                                                 the labelled TruthfulQA rows into a resumable run directory
                                                 (scripts/benchmarks/bench_trust_models.py)
    python scripts/bench.py trust-pairs [--rows 221] [--model smollm2-135m] [--labels 20,40,60]  the same on the
                                                 HHH pairs with the `pairwise` judge, both orders; estimand: the
                                                 share of pairs humans prefer answer A (scripts/benchmarks/bench_trust_pairs.py)
    python scripts/bench.py panel-reuse [--rows 6]  a panel reusing an earlier solo run of a member vs a fresh panel
                                                 (scripts/benchmarks/bench_trust.py)
    python scripts/bench.py schemas --schemas PATH [--sample 40]   JSONSchemaBench coverage/compliance per category, and
                                                 constraints [--rows 12]: judges' formats under each constraint
                                                 (scripts/benchmarks/bench_constraints.py); threads [--rows 12]: rows/min
                                                 with 1 / physical / all cores, alone and beside a busy process
    python scripts/bench.py clients                    evaluation clients (MLflow ...) x path: usable verdicts, our serve vs
                                                 llama-cpp-python's server, one thread (scripts/benchmarks/bench_clients.py);
                                                 then each framework's default path with nothing configured
    python scripts/bench.py schemas-e2e --schemas PATH [--sample 160] [--max-tokens 256] [--timeout 120]
                                    [--contender localjudge|automaton|llamacpp ...] [--out DIR] [--resume] [--only FILE]
                                                 the same seeded stratified JSONSchemaBench sample through real servers,
                                                 one at a time, 1 thread each: `localjudge serve` (llguidance, then
                                                 --schema-constraint automaton) and llama-cpp-python's server;
                                                 valid / invalid / declined / context / timeout / error per server
                                                 and category, answer time and first token (scripts/benchmarks/bench_schemas_e2e.py)
    python scripts/bench.py schemas-random --schemas PATH [--sample 200] [--n 10] [--max-tokens 256]  the same
                                                 sample (200 schemas) through serve's schema path, each decoded n times
                                                 on seeded random logits (no weights): ends, budget, validity; exit 1
                                                 on any broken guarantee (scripts/benchmarks/bench_schemas_random.py)
    python scripts/bench.py compile-guard --schemas PATH [--sample 160]  the same sample's compile latency before
                                                 decoding, in process vs through serve's compile guard (a child
                                                 process first), and whether outcomes agree (scripts/benchmarks/bench_compile_guard.py)
    python scripts/bench.py defaults [--rows 12] [--load N]  default options vs the previous release's settings and
                                                 the naive GBNF loop on the same RAG rows x groundedness, alone and
                                                 (with --load) beside N busy processes (scripts/benchmarks/bench_defaults.py)
    python scripts/bench.py conversations-models [--rows 24] [--model NAME ...] [--threads 1] [--out DIR]  the
                                                 installable models on the labelled multi-turn set: agreement of
                                                 conversation_completeness / deepeval_turn_relevancy with labels
                                                 true by construction (scripts/benchmarks/bench_conversations_models.py)
    python scripts/bench.py conversation-values [--n 20]  a per-turn run of N conversations x 10 turns on an instant
                                                 engine, every derived row value built vs only those the judge reads
                                                 (rows/min, same stored results? scripts/benchmarks/bench_conversation_values.py)
    python scripts/bench.py all
    python scripts/bench.py ray      [--rows 12] local vs Ray on this machine (rows/min, ratio, same outputs?), the
                                                 store's write rate and the driver's rate with free judgements

Each contender runs in its own subprocess (so peak RSS is its own). Ratios, not absolute times, are
the result: this machine is shared and noisy. Needs `numba` for outlines' stock path to be constrained
(`pip install numba`); without it outlines silently decodes unconstrained, which the valid % shows.
`serve` needs llama-cpp-python's server extras for the peer server (bench-only, not a localjudge dependency):
`pip install sse-starlette starlette-context pydantic-settings`.

This file holds the parser and the dispatch; each section lives in scripts/benchmarks/bench_<section>.py (shared
constants and helpers in scripts/benchmarks/bench_common.py, re-exported here so `from scripts.bench import DATA,
JUDGES, ...` keeps working). Run as `python scripts/bench.py` it puts the repository root on sys.path in place of
scripts/ (the one place that does), so the sections import as the package `scripts.benchmarks`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if not __package__:  # `python scripts/bench.py`: the repository root, not scripts/, heads sys.path
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from scripts.benchmarks.bench_cascade import section_cascade  # noqa: E402
from scripts.benchmarks.bench_common import (  # noqa: E402, F401  (re-exported: `from scripts.bench import X`)
    DATA,
    GPU_LAYERS,
    JUDGES,
    MAX_TOKENS,
    ROOT,
    SCHEMA,
    _llama,
    _valid,
    peak_rss_mb,
    prompts,
    sub,
    workload,
)
from scripts.benchmarks.bench_contenders import REUSE_ROWS, rows_limit, run_mode  # noqa: E402, F401
from scripts.benchmarks.bench_models import section_models  # noqa: E402
from scripts.benchmarks.bench_ray import FREE, RAY_MAP, ray_mode, section_ray  # noqa: E402, F401
from scripts.benchmarks.bench_serve import run_serve_mode, section_serve  # noqa: E402, F401
from scripts.benchmarks.bench_speed import (  # noqa: E402, F401
    cold_cli,
    section_batching,
    section_gpu,
    section_reuse,
    section_tokens,
    section_workload,
)
from scripts.benchmarks.bench_templates import section_templates  # noqa: E402
from scripts.benchmarks.bench_view import section_view  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "section",
        choices=[
            "tokens",
            "workload",
            "reuse",
            "batching",
            "models",
            "serve",
            "templates",
            "view",
            "cascade",
            "panel-reuse",
            "all",
            "_run",
            "ray",
            "_ray",
            "schemas",
            "constraints",
            "threads",
            "schemas-e2e",
            "compile-guard",
            "defaults",
            "_defaults",
            "trust-estimators",
            "trust-models",
            "trust-pairs",
            "gpu",
            "clients",
            "conversation",
            "conversations-models",
            "conversation-values",
            "schemas-random",
            "layouts",
            "controls",
        ],
    )
    ap.add_argument("--schemas", type=Path, help="a JSONSchemaBench checkout (`schemas`; never committed here)")
    ap.add_argument("--sample", type=int, default=40, help="schemas decoded end to end (`schemas`, stratified by category)")
    ap.add_argument("--max-tokens", type=int, default=None, help="output budget end to end (`schemas` 192, `schemas-e2e` 256)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per request (`schemas-e2e`)")
    ap.add_argument(
        "--contender", action="append", choices=["localjudge", "automaton", "llamacpp"], help="`schemas-e2e` (default: all)"
    )
    ap.add_argument("--out", type=Path, help="`schemas-e2e`: directory for the per-schema JSONL records")
    ap.add_argument("--resume", action="store_true", help="`schemas-e2e`: keep the records in --out, ask only the rest")
    ap.add_argument("--only", type=Path, help="`schemas-e2e`: a file of CATEGORY/NAME lines: ask only those of the sample")
    ap.add_argument("mode", nargs="?")
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--work", default=None)
    ap.add_argument("--below", type=float, default=0.8, help="the cascade section's --escalate-below")
    ap.add_argument("--load", type=int, default=0, help="`defaults`: busy-loop processes beside a second run of each")
    ap.add_argument("--model", action="append", help="models for the `models` section (default: smollm2-135m, gemma3-270m)")
    ap.add_argument("--trials", type=int, default=500, help="`trust-estimators`: seeded trials per cell")
    ap.add_argument("--seed", type=int, default=2026, help="`trust-estimators`: the simulation's seed")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="`trust-models`, `layouts` and `controls` (default 2 there): the model's CPU threads",
    )
    ap.add_argument("--labels", default="50,100,200", help="`trust-models`: label counts to draw")
    ap.add_argument("--draws", type=int, default=500, help="`trust-models`: seeded label draws per count")
    a = ap.parse_args()
    if a.section == "_ray":
        print(json.dumps(ray_mode(a.mode, a.rows, a.work)))
        return
    if a.section == "_run":
        print(json.dumps(run_mode(a.mode, a.rows, a.n)))
        return
    if a.section == "_defaults":
        from scripts.benchmarks import bench_defaults

        print(json.dumps(bench_defaults.run_contender(a.mode, a.rows)))
        return
    if not 0 <= a.load <= 64:
        ap.error(f"--load {a.load}: give 0 to 64 busy processes")
    print(f"# localjudge benchmark ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores)\n")
    if a.section in ("tokens", "all"):
        section_tokens(a.n)
    if a.section in ("workload", "all"):
        section_workload(a.rows)
    if a.section in ("reuse", "all"):
        section_reuse()
    if a.section in ("batching", "all"):
        section_batching(a.rows if a.section == "batching" else 300)
    if a.section == "ray":
        section_ray(a.rows if "--rows" in sys.argv else 12)
    if a.section == "models":
        section_models(a.n, a.model or ["smollm2-135m", "gemma3-270m"])
    if a.section == "serve":
        section_serve(a.rows)
    if a.section == "templates":
        section_templates(a.n)
    if a.section == "view":
        section_view(a.n if "--n" in sys.argv else 5)
    if a.section == "cascade":
        section_cascade(a.rows, a.below)
    if a.section == "gpu":  # needs a CUDA build of llama-cpp-python
        section_gpu(a.rows if "--rows" in sys.argv else 12)
    if a.section == "trust-estimators":  # issue 33: scripts/benchmarks/bench_trust_estimators.py (no model, seeded)
        from scripts.benchmarks import bench_trust_estimators

        bench_trust_estimators.main(["--trials", str(a.trials), "--seed", str(a.seed)])
    if a.section == "trust-models":  # issue 33: scripts/benchmarks/bench_trust_models.py (the model on scripts/data's labels)
        from scripts.benchmarks import bench_trust_models

        tm = ["--threads", str(a.threads), "--labels", a.labels, "--draws", str(a.draws), "--seed", str(a.seed)]
        tm += (["--rows", str(a.rows)] if "--rows" in sys.argv else []) + (["--model", a.model[-1]] if a.model else [])
        if rc := bench_trust_models.main(tm + (["--out", str(a.out)] if a.out else [])):
            sys.exit(rc)
    if a.section == "trust-pairs":  # issue 33: scripts/benchmarks/bench_trust_pairs.py (the pairwise judge on HHH pairs)
        from scripts.benchmarks import bench_trust_pairs

        tp = ["--threads", str(a.threads), "--draws", str(a.draws), "--seed", str(a.seed)]
        tp += ["--labels", a.labels] if "--labels" in sys.argv else []  # its own default fits 221 pairs
        tp += (["--rows", str(a.rows)] if "--rows" in sys.argv else []) + (["--model", a.model[-1]] if a.model else [])
        if rc := bench_trust_pairs.main(tp + (["--out", str(a.out)] if a.out else [])):
            sys.exit(rc)
    if a.section == "panel-reuse":  # issue 25: scripts/benchmarks/bench_trust.py
        from scripts.benchmarks import bench_trust

        bench_trust.section_panel_reuse(a.rows if "--rows" in sys.argv else 6)
    if a.section in ("schemas", "constraints", "threads"):  # issue 23: scripts/benchmarks/bench_constraints.py
        from scripts.benchmarks import bench_constraints

        if a.section == "schemas":
            if a.schemas is None:
                ap.error("schemas needs --schemas PATH (a JSONSchemaBench checkout)")
            bench_constraints.section_schemas(a.schemas, a.sample, a.max_tokens or 192)
        elif a.section == "threads":
            bench_constraints.section_threads(a.rows if "--rows" in sys.argv else 12)
        else:
            bench_constraints.section_constraints(a.rows if "--rows" in sys.argv else 12)
    if a.section == "defaults":  # issue 29: scripts/benchmarks/bench_defaults.py
        from scripts.benchmarks import bench_defaults

        bench_defaults.section_defaults(a.rows if "--rows" in sys.argv else 12, a.load)
    if a.section == "layouts":  # issue 46: scripts/benchmarks/bench_layouts.py
        from scripts.benchmarks import bench_layouts

        bench_layouts.section_layouts(a.rows if "--rows" in sys.argv else 300, a.threads if "--threads" in sys.argv else 2)
    if a.section == "controls":  # issue 47: scripts/benchmarks/bench_controls.py
        from scripts.benchmarks import bench_controls

        bench_controls.section_controls(
            a.rows if "--rows" in sys.argv else 60, a.threads if "--threads" in sys.argv else 2, Path(a.work) if a.work else None
        )
    if a.section == "compile-guard":  # issue 43: scripts/benchmarks/bench_compile_guard.py
        from scripts.benchmarks import bench_compile_guard

        if a.schemas is None:
            ap.error("compile-guard needs --schemas PATH (a JSONSchemaBench checkout)")
        bench_compile_guard.section_compile_guard(a.schemas, a.sample if "--sample" in sys.argv else 160)
    if a.section == "schemas-e2e":  # issue 23: scripts/benchmarks/bench_schemas_e2e.py
        from scripts.benchmarks import bench_schemas_e2e

        if a.schemas is None:
            ap.error("schemas-e2e needs --schemas PATH (a JSONSchemaBench checkout)")
        sample = a.sample if "--sample" in sys.argv else 160
        bench_schemas_e2e.section_schemas_e2e(
            a.schemas,
            sample,
            a.max_tokens or 256,
            a.timeout,
            a.contender,
            a.out,
            resume=a.resume,
            only=set(a.only.read_text().split()) if a.only else None,
        )
    if a.section == "schemas-random":  # issue 45: scripts/benchmarks/bench_schemas_random.py (no weights)
        from scripts.benchmarks import bench_schemas_random

        if a.schemas is None:
            ap.error("schemas-random needs --schemas PATH (a JSONSchemaBench checkout)")
        broken = bench_schemas_random.section_schemas_random(
            a.schemas, a.sample if "--sample" in sys.argv else 200, a.n if "--n" in sys.argv else 10, a.max_tokens or 256
        )
        sys.exit(1 if broken else 0)
    if a.section == "clients":  # issue 32: scripts/benchmarks/bench_clients.py (evaluation clients x our serve vs llama.cpp's)
        from scripts.benchmarks import bench_clients

        bench_clients.section_clients(threads=1)
        # issue 48: each framework's default judge and path with nothing configured (no alias, the served name only)
        bench_clients.section_clients(threads=1, rows=bench_clients.UNCONFIGURED, title=", nothing configured")
    if a.section == "conversation":  # issue 31: scripts/benchmarks/bench_conversation.py (per-turn KV reuse vs a cold cache)
        from scripts.benchmarks import bench_conversation

        bench_conversation.section_conversation(a.n if "--n" in sys.argv else 10, threads=1)
    if (
        a.section == "conversations-models"
    ):  # issue 31: scripts/benchmarks/bench_conversations_models.py (labelled multi-turn set)
        from scripts.benchmarks import bench_conversations_models as bcm

        cm = (["--conversations", str(a.rows)] if "--rows" in sys.argv else []) + ["--threads", str(a.threads)]
        cm += [x for m in a.model or [] for x in ("--model", m)] + (["--out", str(a.out)] if a.out else [])
        if rc := bcm.main(cm):
            sys.exit(rc)
    if a.section == "conversation-values":  # scripts/benchmarks/bench_conversation_values.py (only the row values a run reads)
        from scripts.benchmarks import bench_conversation_values

        bench_conversation_values.section_conversation_values(a.n if "--n" in sys.argv else 20)


if __name__ == "__main__":
    main()
