"""JSONSchemaBench on seeded random logits (issue 45): serve's own path for a client schema, no weights.

    python scripts/bench.py schemas-random --schemas /path/to/jsonschemabench [--sample 200] [--n 10] [--max-tokens 256]

The same seeded stratified sample as `schemas-e2e` (`--sample / 8` schemas from each of the 8 largest categories,
drawn with `random.Random(f"0:{category}")`; 200 by default). Each schema goes the way `localjudge serve` takes a
`response_format` (`validate.check_schema`: types, sizes, the `$ref` chain; then `FormatCache.get`: the llguidance
format, or a `CheckedFormat` on a relaxation) and is decoded `--n` times (seeds 0..n-1) by tests/random_logits.py's
engine: the default model's real vocabulary and the product's own `DecodeJob` (masking, jump-forward, field budgets,
the close path) fed N(0, 3) random logits instead of a model's. So each decode is a random walk through what the
constraint allows, far from the few texts a model would write. Every decode is checked against the guarantees a
client relies on:

- it ends where the format may end (`eos` or `final`), never `budget` or `max_tokens` (a cut answer);
- it never uses more than `--max-tokens` output tokens;
- its text is valid against the schema it was constrained on (the `jsonschema` package, independent of the
  compiler; a relaxed schema's answers are counted against the schema as sent too: serve checks those and resamples).

A schema refused before decoding (a 400 in serve: too large, unsatisfiable, a keyword nothing can honour, a shortest
answer longer than --max-tokens) is `declined` and not decoded. Prints per category: schemas declined / decoded,
decodes, broken guarantees (any is a bug), and the relaxed schemas' answers valid as sent; then every broken case.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from scripts.benchmarks.bench_constraints import ROOT, load, pct, print_counts
from scripts.benchmarks.bench_schemas_e2e import pick, validate

COUNTS = ("n", "declined", "decoded", "decodes", "broken", "relaxed", "as_sent", "unchecked")  # per category


def section_schemas_random(root: Path, sample: int = 200, n: int = 10, max_tokens: int = 256) -> int:
    """Run the section; return the number of broken guarantees (the exit status's reason)."""
    from localjudge.constraints.sandbox import CompileLimits
    from localjudge.engine.base import DecodeOptions
    from localjudge.errors import ConstraintError, LocalJudgeError
    from localjudge.formats.json_schema import SchemaError
    from localjudge.serve.core import validate as serve_validate
    from localjudge.serve.core.checked import CheckedFormat
    from localjudge.serve.core.errors import APIError
    from localjudge.serve.core.schemas import FormatCache

    spec = importlib.util.spec_from_file_location("random_logits", ROOT / "tests" / "random_logits.py")
    assert spec is not None and spec.loader is not None
    helper = importlib.util.module_from_spec(spec)  # the unit tier's weights-free engine, a test helper (tests/ is
    spec.loader.exec_module(helper)  # not a package: some installed distributions ship their own `tests`)
    eng = helper.RandomLogitsEngine()
    cache = FormatCache(None, None, CompileLimits())  # serve's formats, compiled in this process (no isolator)
    opts = DecodeOptions(max_tokens=max_tokens)
    schemas = pick(root, sample)
    print(f"schemas-random: {len(schemas)} schemas x {n} seeds, max_tokens {max_tokens}, from {root} ({load()})", flush=True)
    rows: dict[str, dict[str, int]] = {}
    broken: list[str] = []
    ms: list[float] = []
    t_all = time.perf_counter()
    for cat, name, schema in schemas:
        c = rows.setdefault(cat, dict.fromkeys(COUNTS, 0))
        c["n"] += 1
        try:
            serve_validate.check_schema(schema, "response_format.json_schema.schema")
            fmt = cache.get(schema)
            eng.compile(fmt)
        except (APIError, SchemaError, ConstraintError, LocalJudgeError, RecursionError, ValueError):
            c["declined"] += 1
            continue
        relaxed = isinstance(fmt, CheckedFormat)
        c["decoded"] += 1
        for seed in range(n):
            t0 = time.perf_counter()
            try:
                g = eng.decode(fmt, seed, opts)
            except ConstraintError:  # the shortest answer is longer than max_tokens: serve's 400, before decoding
                c["declined"] += 1
                c["decoded"] -= 1
                break
            ms.append((time.perf_counter() - t0) * 1000)
            c["decodes"] += 1
            problems = []
            if g.stop_reason not in ("eos", "final"):
                problems.append(f"ended by {g.stop_reason}")
            if g.n_output_tokens > max_tokens:
                problems.append(f"{g.n_output_tokens} output tokens > max_tokens {max_tokens}")
            outcome, why = validate(g.text, fmt.schema)
            if outcome == "invalid":
                problems.append(f"invalid against the schema it was constrained on: {why}")
            elif outcome == "unchecked":
                c["unchecked"] += 1
            if relaxed:
                c["relaxed"] += 1
                c["as_sent"] += validate(g.text, fmt.original)[0] == "valid"
            if problems:
                c["broken"] += 1
                broken.append(f"{cat}/{name} seed {seed}: {'; '.join(problems)} | {g.text[:200]!r}")
    dt = time.perf_counter() - t_all
    print(
        f"{'category':16} {'schemas':>7} {'declined':>8} {'decoded':>7} {'decodes':>7} {'broken':>6} {'relaxed: valid as sent':>23}"
    )
    tot = print_counts(sorted(rows.items()), COUNTS, _row)
    print(
        f"{tot['decodes']} decodes in {dt:.0f} s ({load()}); per decode median {pct(ms, 0.5):.1f} ms, p95 "
        f"{pct(ms, 0.95):.1f} ms; {tot['unchecked']} answers jsonschema itself could not check (schema invalid or $ref unresolvable)"
    )
    print(f"broken guarantees: {len(broken)}")
    for line in broken:
        print("  " + line)
    return len(broken)


def _row(cat: str, c: dict[str, int]) -> str:
    relaxed = f"{c['as_sent']}/{c['relaxed']}" if c["relaxed"] else "-"
    return f"{cat:16} {c['n']:7} {c['declined']:8} {c['decoded']:7} {c['decodes']:7} {c['broken']:6} {relaxed:>23}"
