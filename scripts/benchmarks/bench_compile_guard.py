"""Compile latency of client schemas in process and through serve's compile guard (issue 43), run through
scripts/bench.py; a dev tool.

    python scripts/bench.py compile-guard --schemas /path/to/jsonschemabench [--sample 160]

The same seeded stratified sample as `schemas-e2e` (`bench_schemas_e2e.pick`). For each schema, what serve does
before decoding: the format built (`FormatCache.get`: conversion, validation, relaxing what llguidance refuses)
and the engine's compile (the matcher and the close path from the start), timed per schema, each schema new to
the cache:

- `in process`: as before issue 43, llguidance reads the schema in the server's process;
- `guarded`: `serve.compile_guard.CompileGuard` (one child, started and warmed before the clock starts) reads it
  first in a child process, then the engine compiles the document the child answered;
- `guarded, repeated`: the same schemas again through the same guard (its cache answers; the format cache and the
  engine's compiled cache are emptied first, as for a new server that had seen them once).

Both paths must give the same outcome per schema (the same grammar document, or the same refusal); the table
counts the schemas where they differ. Compile times are medians and 95th percentiles in milliseconds.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from scripts.benchmarks.bench_constraints import load, pct
from scripts.benchmarks.bench_schemas_e2e import pick


def _outcome(fmt_cache: Any, engine: Any, schema: dict[str, Any]) -> tuple[str, float]:
    """(the grammar document or the refusal, milliseconds to build and compile the format)."""
    from localjudge.constraints.sandbox import CompileRefused
    from localjudge.errors import ConstraintError
    from localjudge.formats import SchemaError

    t0 = time.perf_counter()
    try:
        fmt = fmt_cache.get(schema, "x")
        engine.compile(fmt)
        out = "ok " + fmt.constraint().text()
    except (SchemaError, ConstraintError, CompileRefused) as e:
        out = "refused " + str(e)
    except RecursionError:
        out = "refused RecursionError"
    return out, (time.perf_counter() - t0) * 1000


def section_compile_guard(root: Path, sample: int = 160) -> None:
    """Print the compile-latency table of the sample, in process against guarded."""
    from localjudge.constraints.sandbox import CompileLimits
    from localjudge.engine.llama import LlamaEngine
    from localjudge.serve.core.compile_guard import CompileGuard, model_file
    from localjudge.serve.core.schemas import FormatCache

    schemas = pick(root, sample)
    engine = LlamaEngine(n_threads=1)
    guard = CompileGuard(model_file(engine), workers=1)
    guard.warm()

    def cache(isolator: Any) -> FormatCache:
        return FormatCache(None, None, CompileLimits(), isolator=isolator)

    def fresh_engine_cache() -> None:
        engine._fsm_cache.clear()

    times: dict[str, list[float]] = {"in process": [], "guarded": [], "guarded, repeated": []}
    outcomes: dict[str, list[str]] = {k: [] for k in times}
    for label, iso in (("in process", None), ("guarded", guard), ("guarded, repeated", guard)):
        fc = cache(iso)
        fresh_engine_cache()
        for _cat, _name, schema in schemas:
            out, ms = _outcome(fc, engine, schema)
            outcomes[label].append(out)
            times[label].append(ms)
    guard.close()
    base = outcomes["in process"]
    print(f"## compile latency, {len(schemas)} JSONSchemaBench schemas ({load()})\n")
    print("| path | median ms | p95 ms | max ms | refused | outcome differs from in process |")
    print("|---|---|---|---|---|---|")
    for label, xs in times.items():
        refused = sum(o.startswith("refused") for o in outcomes[label])
        differ = sum(a != b for a, b in zip(base, outcomes[label], strict=True))
        print(f"| {label} | {pct(xs, 0.5):.1f} | {pct(xs, 0.95):.1f} | {max(xs):.1f} | {refused} | {differ} |")
    print(f"\nchild questions: {guard.asked}, children stopped: {guard.stopped}")
