"""Constraint benchmarks (issue 23), run through scripts/bench.py; a dev tool, never imported by the package.

    python scripts/bench.py schemas --schemas /path/to/jsonschemabench [--sample 40] [--max-tokens 192]
        JSONSchemaBench per category: the offline compile coverage of every schema (the automaton path's
        compiler, localjudge's llguidance path, llguidance alone with its default options), compile median
        and p95; then end to end on a stratified sample under llguidance: declined (a 400 naming the
        feature) / answered / answered-valid (the `jsonschema` package) / answered-invalid (must be 0),
        and time to the first token on a new schema.
    python scripts/bench.py constraints [--rows 12]
        the judges' own formats under each constraint, same prompts: us of mask time per token (p50/p99),
        rows/min and valid %, and whether the outputs are the same.

The schemas are never committed (their repository states no licence): point --schemas at a checkout.
Every figure is printed with the load average, and everything runs with one llama.cpp thread.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def load() -> str:
    """The load average, as printed beside each figure."""
    a, b, c = os.getloadavg()
    return f"load {a:.1f}/{b:.1f}/{c:.1f}"


def pct(xs: list[float], q: float) -> float:
    """The q-quantile of xs (0 when empty)."""
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def print_counts(
    rows: Iterable[tuple[str, dict[str, int]]], keys: Sequence[str], row: Callable[[str, dict[str, int]], str]
) -> dict[str, int]:
    """Print `row(category, counts)` for each category in the order given, then `row("all", sums)`; return the
    sums over `keys`."""
    tot = dict.fromkeys(keys, 0)
    for cat, c in rows:
        for k in tot:
            tot[k] += c[k]
        print(row(cat, c))
    print(row("all", tot))
    return tot


def bench_schemas(root: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(category, file name, schema) of every JSONSchemaBench schema under root/data, sorted."""
    out = []
    for cat in sorted(p for p in (root / "data").iterdir() if p.is_dir()):
        for f in sorted(cat.glob("*.json")):
            try:
                schema = json.loads(f.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(schema, dict):
                out.append((cat.name, f.stem, schema))
    return out


def section_schemas(root: Path, sample: int, max_tokens: int) -> None:
    """Offline coverage on every schema, then end to end on a stratified sample."""
    import llguidance

    from localjudge.constraints.llg import LLGEngine
    from localjudge.constraints.sandbox import CompileLimits
    from localjudge.engine import Message
    from localjudge.engine.base import DecodeOptions
    from localjudge.engine.llama import LlamaEngine
    from localjudge.errors import ConstraintError, LocalJudgeError
    from localjudge.formats.json_schema import JSONSchemaFormat, SchemaError
    from localjudge.serve.core.schemas import FormatCache

    eng = LlamaEngine(None, n_threads=1)
    relaxing = FormatCache(None, None, CompileLimits())  # serve's formats: a schema with what llguidance refuses, relaxed
    schemas = bench_schemas(root)
    tok = LLGEngine().vocab(eng.vocab).tokenizer  # llguidance's tokenizer over the model's vocabulary, built once
    cats: dict[str, dict[str, int]] = {}
    ms: list[float] = []
    errors: dict[str, int] = {}
    usable: dict[str, list[tuple[str, dict]]] = {}
    gap: dict[str, int] = {}
    print(f"schemas: {len(schemas)} from {root} ({load()})", flush=True)
    t_all = time.perf_counter()
    for cat, name, schema in schemas:
        c = cats.setdefault(cat, {"n": 0, "automaton": 0, "llg_raw": 0, "localjudge": 0, "serve": 0, "unsat": 0})
        c["n"] += 1
        try:
            JSONSchemaFormat(schema, constraint="automaton")
            c["automaton"] += 1
        except (SchemaError, RecursionError):
            pass
        except Exception as e:  # noqa: BLE001 - a bench counts what the compiler does with real schemas
            errors[f"automaton {type(e).__name__}"] = errors.get(f"automaton {type(e).__name__}", 0) + 1
        raw = False
        try:  # llguidance alone, default options: grammar + first token mask
            m = llguidance.LLMatcher(tok, llguidance.LLMatcher.grammar_from_json_schema(schema), log_level=0)
            if not m.is_error():
                m.compute_bitmask()
                raw = not m.is_error()
                c["llg_raw"] += raw
        except Exception:  # noqa: BLE001
            pass
        t0 = time.perf_counter()
        try:
            fmt = JSONSchemaFormat(schema, constraint="llguidance")
            eng.compile(fmt)
            ms.append((time.perf_counter() - t0) * 1000)
            c["localjudge"] += 1
            c["serve"] += 1
            usable.setdefault(cat, []).append((name, schema))
        except SchemaError as e:
            try:  # serve constrains on a relaxation and checks each answer (issue 32)
                eng.compile(relaxing.get(schema))
                c["serve"] += 1
            except (SchemaError, ConstraintError, LocalJudgeError, RecursionError, ValueError):
                pass
            if raw:
                _count_gap(str(e), gap, c)
        except ConstraintError as e:
            if raw:  # the gap: llguidance alone accepts it, localjudge declines it; why
                _count_gap(str(e), gap, c)
        except (LocalJudgeError, RecursionError, ValueError) as e:
            errors[f"llguidance {type(e).__name__}"] = errors.get(f"llguidance {type(e).__name__}", 0) + 1
    print(f"offline coverage in {time.perf_counter() - t_all:.0f} s ({load()}); unexpected errors: {errors or 'none'}")
    print(f"{'category':16} {'n':>5} {'automaton accepts':>18} {'llguidance alone':>17} {'localjudge+llg':>15} {'serve':>15}")
    tot = print_counts(cats.items(), ("n", "automaton", "llg_raw", "localjudge", "serve", "unsat"), _row)
    print(
        f"llguidance alone, excluding the {tot['unsat']} schemas its own check proves unsatisfiable (localjudge refuses "
        f"them): {tot['llg_raw'] - tot['unsat']}; localjudge {tot['localjudge']}"
    )
    print(f"accepted by llguidance alone, declined by localjudge: {sum(gap.values())}, by reason:")
    for why, n in sorted(gap.items(), key=lambda kv: -kv[1]):
        print(f"  {n:5}  {why}")
    print(
        f"compile of a new schema (format + llguidance + close path): median {pct(ms, 0.5):.1f} ms, p95 {pct(ms, 0.95):.1f} ms, max {max(ms):.0f} ms"
    )
    _end_to_end(eng, schemas, sample, max_tokens, Message, DecodeOptions, JSONSchemaFormat, (SchemaError, ConstraintError))


GAP_REASONS = (  # (pattern in localjudge's refusal, the reason printed)
    ("bytes, more than", "size bound: schema bytes (MAX_SCHEMA_BYTES)"),
    ("nesting deeper", "size bound: nesting depth"),
    ("properties in", "size bound: properties"),
    ("enum/const values", "size bound: enum/const values"),
    ("Unsatisfiable", "unsatisfiable (llguidance's own check, on the schema as sent)"),
    ("no completion", "no completion found (bounded close-path search; includes llguidance lexer dead ends)"),
    ("Unimplemented", "feature refusal (unimplemented keyword)"),
    ("not supported", "feature refusal (not supported)"),
)


def _count_gap(msg: str, gap: dict[str, int], c: dict[str, int]) -> None:
    """Count one schema llguidance alone accepts and localjudge declines, by reason (and as unsatisfiable)."""
    why = gap_reason(msg)
    gap[why] = gap.get(why, 0) + 1
    if why.startswith("unsatisfiable"):
        c["unsat"] += 1


def gap_reason(msg: str) -> str:
    """The reason of one localjudge refusal of a schema llguidance alone accepts."""
    return next((why for pat, why in GAP_REASONS if pat in msg), f"other: {msg[:60]}")


def _row(cat: str, c: dict[str, int]) -> str:
    n = max(1, c["n"])
    f = lambda k: f"{c[k]} ({100 * c[k] / n:.0f} %)"  # noqa: E731
    return f"{cat:16} {c['n']:>5} {f('automaton'):>18} {f('llg_raw'):>17} {f('localjudge'):>15} {f('serve'):>15}"


def _end_to_end(eng, schemas, sample, max_tokens, Message, DecodeOptions, JSONSchemaFormat, declined_errors) -> None:
    import jsonschema

    by_cat: dict[str, list] = {}
    for cat, name, schema in schemas:
        by_cat.setdefault(cat, []).append((name, schema))
    per = max(1, sample // len(by_cat))
    picked = [(cat, *items[(i * len(items)) // per]) for cat, items in by_cat.items() for i in range(per)]
    counts = {"declined": 0, "answered": 0, "valid": 0, "invalid": 0, "error": 0}
    ttft: list[float] = []
    invalid: list[str] = []
    reasons: dict[str, int] = {}
    t0 = time.perf_counter()
    n_tokens = 0
    for cat, name, schema in picked:
        msgs = [Message(role="user", content="Answer with one JSON instance of this schema:\n" + json.dumps(schema)[:1500])]
        try:
            fmt = JSONSchemaFormat(schema, constraint="llguidance", max_tokens=max_tokens)
            gen = eng.generate(msgs, fmt, DecodeOptions(max_tokens=max_tokens))
        except declined_errors as e:
            counts["declined"] += 1
            reasons[str(e)[:70]] = reasons.get(str(e)[:70], 0) + 1
            continue
        except Exception as e:  # noqa: BLE001
            counts["error"] += 1
            print(f"  error {cat}/{name}: {type(e).__name__}: {str(e)[:120]}")
            continue
        counts["answered"] += 1
        n_tokens += gen.n_output_tokens
        ttft.append(gen.compile_ms + gen.prompt_ms)
        try:
            jsonschema.validate(json.loads(gen.text), schema)
            counts["valid"] += 1
        except jsonschema.exceptions.SchemaError:  # the schema itself is not valid JSON Schema: count as valid output
            counts["valid"] += 1
        except Exception as e:  # noqa: BLE001
            counts["invalid"] += 1
            invalid.append(f"{cat}/{name}: {str(e).splitlines()[0][:100]}")
    dt = time.perf_counter() - t0
    print(
        f"end to end, {len(picked)} schemas ({per} per category), max_tokens {max_tokens}, 1 thread ({load()}): {counts}; "
        f"time to first token median {pct(ttft, 0.5):.0f} ms, p95 {pct(ttft, 0.95):.0f} ms; {n_tokens} tokens in {dt:.0f} s"
    )
    for x in invalid:
        print("  invalid:", x)
    for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  declined {n}: {why}")


def section_constraints(rows: int) -> None:
    """The judges' formats under the automaton and under llguidance (their regex as its grammar)."""
    from localjudge.engine import Message
    from localjudge.engine.base import DecodeOptions
    from localjudge.engine.llama import LlamaEngine
    from localjudge.formats import FORMATS, make_format

    eng = LlamaEngine(None, n_threads=1)
    params = {"choice": {"labels": ["A", "B", "C"]}}
    kinds = []
    for k in FORMATS:
        try:
            make_format(k, **params.get(k, {})).regex()
            kinds.append(k)
        except Exception:  # noqa: BLE001 - formats that need parameters a bench cannot guess, or have no regex
            pass
    qs = [
        "Is the answer 'Paris' correct for 'What is the capital of France?' Give a rationale.",
        "Rate from 1 to 5 how helpful 'Drink water' is for 'How do I stay hydrated?'.",
        "Is the response 'The sky is green' grounded in the context 'The sky is blue'?",
        "Compare response 1 'yes' and response 2 'no' for 'Is water wet?'.",
    ]
    work = [(k, qs[i % len(qs)]) for i in range(rows) for k in kinds[i % len(kinds) : i % len(kinds) + 1]]
    res = {}
    for name in ("automaton", "llguidance"):
        times: list[float] = []
        texts = []
        valid = 0
        t0 = time.perf_counter()
        for kind, q in work:
            fmt = make_format(kind, **params.get(kind, {}))
            if name == "llguidance":
                fmt = _ViaLLG(fmt)
            gen = _timed(eng, [Message(role="user", content=q)], fmt, DecodeOptions(), times)
            texts.append(gen.text)
            try:
                fmt.parse(gen.text)
                valid += 1
            except Exception:  # noqa: BLE001
                pass
        dt = time.perf_counter() - t0
        res[name] = texts
        print(
            f"{name:10}: {len(work)} rows, {60 * len(work) / dt:.1f} rows/min, valid {100 * valid / len(work):.0f} %, "
            f"mask+advance per token p50 {pct(times, 0.5):.0f} us p99 {pct(times, 0.99):.0f} us ({load()})"
        )
    same = sum(a == b for a, b in zip(res["automaton"], res["llguidance"], strict=True))
    print(f"same output under both: {same}/{len(work)}")


class _ViaLLG:
    """A judge format decoded by llguidance: its regex as llguidance's grammar, everything else delegated."""

    def __init__(self, fmt):
        import llguidance

        self._fmt = fmt
        self._g = llguidance.LLMatcher.grammar_from_regex(fmt.regex())

    def llg_grammar(self) -> str:
        return self._g

    def __getattr__(self, name):
        return getattr(self._fmt, name)


def _timed(eng, msgs, fmt, opts, times: list[float]):
    """Generate, recording the constraint's time per step (choices + settle + advance) in us."""
    from localjudge.engine import job

    orig = job.DecodeJob.step

    def step(self, logits):
        t = time.perf_counter()
        out = orig(self, logits)
        times.append((time.perf_counter() - t) * 1e6)
        return out

    job.DecodeJob.step = step  # type: ignore[method-assign]
    try:
        return eng.generate(msgs, fmt, opts)
    finally:
        job.DecodeJob.step = orig  # type: ignore[method-assign]


def _spin(stop) -> None:  # pragma: no cover - a competing CPU-bound process
    x = 0
    while not stop.is_set():
        x = (x * 1103515245 + 12345) % (1 << 31)


def section_threads(rows: int) -> None:
    """rows/min of one judge with n_threads = 1, the physical cores and every logical core, each alone and
    beside one competing CPU-bound process (llama.cpp's threads wait for each other at every step, so a
    busy core slows them all). Not for a shared machine: it uses every core."""
    import multiprocessing as mp

    from localjudge.engine.llama import LlamaEngine
    from localjudge.engine.threads import default_threads, physical_cores, usable_cpus
    from localjudge.judges import get_judge

    logical = len(usable_cpus())
    physical = physical_cores()
    print(f"logical CPUs {logical}, physical cores {physical}, default n_threads {default_threads()}", flush=True)
    judge = get_judge("relevance_to_query")
    work = [{"input": f"What is {i} + {i}?", "output": f"It is {2 * i}."} for i in range(rows)]
    for n in sorted({1, physical, logical}):
        eng = LlamaEngine(None, n_threads=n)
        for competing in (False, True):
            stop = mp.Event()
            proc = mp.Process(target=_spin, args=(stop,)) if competing else None
            if proc is not None:
                proc.start()
            t0 = time.perf_counter()
            judge.evaluate_many(eng, work)
            dt = time.perf_counter() - t0
            if proc is not None:
                stop.set()
                proc.join()
            print(
                f"n_threads {n:2} {'beside a busy process' if competing else 'alone':22}: {60 * rows / dt:5.1f} rows/min ({load()})"
            )
        eng.close()


# ------------------------------------------------------------------ servers (bench.py serve, bench_schemas_e2e)


def free_port() -> int:
    """A free TCP port on loopback."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(cmd: list[str], url: str, env: dict | None = None):
    """Start an OpenAI-compatible server and return its process once `url`/models answers (exit when it cannot)."""
    import subprocess
    import urllib.request

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/models", timeout=2).read()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"server exited with {proc.returncode}: {' '.join(cmd)}") from None
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"server did not start: {' '.join(cmd)}")
