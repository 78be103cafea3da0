"""JSONSchemaBench end to end through real servers (issue 23), run through scripts/bench.py; a dev tool.

    python scripts/bench.py schemas-e2e --schemas /path/to/jsonschemabench [--sample 160] [--max-tokens 256]
        [--timeout 120] [--contender localjudge --contender automaton --contender llamacpp] [--out DIR]

The same seeded stratified sample of schemas is sent, with the `openai` client, to each contender in turn,
each a real server on a loopback port with one llama.cpp thread, the same model (the default GGUF), the same
context (--n-ctx, 4096), the same max_tokens and temperature 0:

- `localjudge`: `localjudge serve` (client schemas compiled by llguidance, the default), `json_schema`;
- `automaton`: `localjudge serve --schema-constraint automaton` (outlines-core's automaton), `json_schema`;
- `llamacpp`: llama-cpp-python's own server (`python -m llama_cpp.server`), `response_format:
  {"type": "json_object", "schema": ...}`, its own way (it answers 500 to the standard json_schema). Needs its
  server extras, bench-only: `pip install sse-starlette starlette-context pydantic-settings`.

The sample: the `--categories` (default: the 8 categories with the most schemas, which leaves out the two
smallest, Github_ultra and WashingtonPost), `--sample / len(categories)` schemas from each, drawn with
`random.Random(f"{seed}:{category}")` from the category's schemas sorted by file name (`--seed`, default 0).
The prompt carries the schema's JSON (cut at 1,500 characters, as the `schemas` section's in-process run does);
the constraint always gets the whole schema.

Each request is streamed (time to first token = the first content delta; every schema is new to the server;
localjudge streams the bytes its schema forces, such as `{"`, as soon as the request is accepted, before the
prompt is evaluated, so the second delta's time is recorded too: the first token the model chose, or near it)
and ends in exactly one outcome: `declined` (a 4xx naming what is refused), `context` (the 400 for a prompt
the context cannot hold), `timeout` (no answer within --timeout seconds), `error` (5xx, a broken stream, a
connection error), or, when answered, `valid` / `invalid` against the schema (the `jsonschema` package, the
schema's `$schema` draft or Draft 2020-12; `format` is not asserted, as the draft says) / `unchecked` (a
schema `jsonschema` itself cannot check: invalid as a schema, or an unresolvable `$ref`). Answers stopped by
max_tokens (finish_reason "length") are counted too: for llama-cpp-python such an answer is cut JSON.
A server that dies on a schema (llama-cpp-python's segfaults on some) makes that schema an `error` and is
started again. The per-schema records are written as JSONL to --out (one file per contender, a line per
schema as it ends; `--resume` keeps them and asks only the rest; `--report DIR` reprints the tables).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scripts.benchmarks.bench_constraints import ROOT, bench_schemas, load, pct

OUTCOMES = ("declined", "context", "timeout", "error", "valid", "invalid", "unchecked")
CONTENDERS = {
    "localjudge": "`localjudge serve` (llguidance)",
    "automaton": "`localjudge serve --schema-constraint automaton`",
    "llamacpp": "llama-cpp-python server (json_object + schema)",
}
PROMPT = "Answer with one JSON instance of this schema:\n"
N_CTX = 4096


def pick(root: Path, sample: int = 160, categories: list[str] | None = None, seed: int = 0) -> list[tuple[str, str, dict]]:
    """(category, file name, schema) of the seeded stratified sample (see the module docstring)."""
    by_cat: dict[str, list[tuple[str, dict]]] = {}
    for cat, name, schema in bench_schemas(root):
        by_cat.setdefault(cat, []).append((name, schema))
    if categories is None:
        categories = sorted(sorted(by_cat), key=lambda c: -len(by_cat[c]))[:8]
    missing = [c for c in categories if c not in by_cat]
    if missing:
        raise SystemExit(f"--categories: {', '.join(missing)} not under {root / 'data'}; have {', '.join(sorted(by_cat))}")
    per = max(1, sample // len(categories))
    out = []
    for cat in sorted(categories):
        items = by_cat[cat]
        for i in sorted(random.Random(f"{seed}:{cat}").sample(range(len(items)), min(per, len(items)))):
            out.append((cat, *items[i]))
    return out


def validate(answer: str, schema: dict) -> tuple[str, str]:
    """(outcome, why) of an answer against the schema: valid, invalid (with the first error) or unchecked."""
    import jsonschema
    import referencing.exceptions

    try:
        value = json.loads(answer)
    except ValueError as e:
        return "invalid", f"not JSON: {e}"
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        error = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    except jsonschema.exceptions.SchemaError as e:
        return "unchecked", f"not a valid schema: {e.message[:200]}"
    except (referencing.exceptions.Unresolvable, jsonschema.exceptions._WrappedReferencingError) as e:
        return "unchecked", f"unresolvable $ref: {str(e)[:200]}"
    except RecursionError:
        return "unchecked", "jsonschema recursed too deep"
    if error is None:
        return "valid", ""
    where = "/".join(str(p) for p in error.absolute_path)
    return "invalid", f"at /{where}: {error.message[:300]}"


def request_body(style: str, schema: dict, max_tokens: int) -> dict[str, Any]:
    """The chat request's keywords for the openai client: the standard json_schema, or llama-cpp-python's own."""
    rf = (
        {"type": "json_object", "schema": schema}
        if style == "json_object"
        else {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}
    )
    msgs = [{"role": "user", "content": PROMPT + json.dumps(schema)[:1500]}]
    return {"messages": msgs, "response_format": rf, "max_tokens": max_tokens, "temperature": 0, "seed": 0}


def ask(client: Any, model: str, style: str, schema: dict, max_tokens: int, timeout: float) -> dict[str, Any]:
    """One streamed request; its record (outcome, times, answer, finish reason, tokens, message)."""
    import httpx
    import openai

    rec: dict[str, Any] = {"ttft_s": None, "t2_s": None, "answer_s": None, "finish_reason": None, "tokens": None, "answer": None}
    t0 = time.perf_counter()
    text, chunks = [], 0
    try:
        stream = client.chat.completions.create(
            model=model, stream=True, stream_options={"include_usage": True}, **request_body(style, schema, max_tokens)
        )
        with stream:
            for ch in stream:
                if ch.usage is not None:
                    rec["tokens"] = ch.usage.completion_tokens
                for c in ch.choices:
                    if c.delta.content:
                        if rec["ttft_s"] is None:
                            rec["ttft_s"] = time.perf_counter() - t0
                        elif rec["t2_s"] is None:
                            rec["t2_s"] = time.perf_counter() - t0
                        text.append(c.delta.content)
                        chunks += 1
                    if c.finish_reason:
                        rec["finish_reason"] = c.finish_reason
                if time.perf_counter() - t0 > timeout:
                    rec.update(outcome="timeout", message=f"still generating after {timeout:.0f} s")
                    return rec
    except openai.APITimeoutError:
        rec.update(outcome="timeout", message=f"no answer within {timeout:.0f} s")
        return rec
    except openai.APIStatusError as e:
        rec["status"] = e.status_code
        msg = _message(e)
        kind = "context" if "context" in msg.lower() else "declined" if e.status_code < 500 else "error"
        rec.update(outcome=kind, message=msg[:400])
        return rec
    except (openai.APIError, httpx.HTTPError) as e:  # an error inside the stream, a connection dropped mid-answer
        rec.update(outcome="error", message=f"{type(e).__name__}: {str(e)[:300]}")
        return rec
    finally:
        rec["answer_s"] = time.perf_counter() - t0
    answer = "".join(text)
    rec["answer"] = answer[:4000]
    if rec["tokens"] is None:
        rec["tokens"] = chunks  # llama-cpp-python streams one token per chunk and sends no usage
    rec["outcome"], rec["why"] = validate(answer, schema)
    return rec


def _message(e: Any) -> str:
    body = e.body if isinstance(e.body, dict) else {}
    err = body.get("error", body)
    msg = err.get("message") if isinstance(err, dict) else None
    return str(msg or e.message or e)


# `python -m llama_cpp.server`, with its weights loaded as localjudge loads them on a llama.cpp build that uses Intel
# AMX (engine/llama_amx.py): there llama-cpp-python's own AMX layout segfaults on the first token, ours or its server's
LLAMA_SERVER = (
    "import runpy, llama_cpp\n"
    "from localjudge.engine.llama_amx import no_amx_weights\n"
    "with no_amx_weights(llama_cpp):\n"
    "    runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)\n"
)


def start(contender: str, home: str, threads: int = 1, n_ctx: int = N_CTX) -> tuple[subprocess.Popen, str, str, str]:
    """Start a contender's server on a free loopback port (localjudge's with `home` as its LOCALJUDGE_HOME):
    (process, base URL, model name, request style)."""
    from scripts.benchmarks.bench_constraints import free_port as _free_port
    from scripts.benchmarks.bench_constraints import start_server as _start

    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    if contender in ("localjudge", "automaton"):
        cli = str(Path(sys.executable).parent / "localjudge")
        cmd = [cli, "serve", "--port", str(port), "--threads", str(threads), "--n-ctx", str(n_ctx), "--no-precompile"]
        cmd += ["--model-name", "judge", "--schema-constraint", "automaton" if contender == "automaton" else "llguidance"]
        # a fresh home: every schema is new to the server (no automaton cached by an earlier run)
        env = {**os.environ, "LOCALJUDGE_HOME": home}
        return _start(cmd, url, env), url, "judge", "json_schema"
    if contender == "llamacpp":
        from localjudge.models.registry import resolve_model

        cmd = [sys.executable, "-c", LLAMA_SERVER, "--model", resolve_model(None).path, "--n_ctx", str(n_ctx)]
        cmd += ["--port", str(port), "--n_threads", str(threads), "--n_threads_batch", str(threads), "--model_alias", "judge"]
        return _start(cmd, url), url, "judge", "json_object"
    raise SystemExit(f"--contender: {contender!r} is not one of {', '.join(CONTENDERS)}")


def run_contender(
    contender: str,
    items: Iterable[tuple[str, str, dict]],
    max_tokens: int = 256,
    timeout: float = 120,
    out: Path | None = None,
    threads: int = 1,
    resume: bool = False,
) -> list[dict[str, Any]]:
    """Every (category, name, schema) through one contender's server, one request at a time; the records
    (also appended to out/<contender>.jsonl as each ends, so a cut run keeps what it finished; with `resume`,
    the schemas already there are not asked again)."""
    import openai

    records: list[dict[str, Any]] = []
    sink = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{contender}.jsonl"
        if resume and path.exists():
            records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        sink = path.open("a" if resume else "w")
    done = {(r["category"], r["name"]) for r in records}
    items = [x for x in items if (x[0], x[1]) not in done]
    if not items:  # a finished run, resumed: nothing to ask
        if sink is not None:
            sink.close()
        return records
    home = tempfile.TemporaryDirectory(prefix="bench-e2e-")
    proc, url, model, style = start(contender, home.name, threads)
    try:
        client = openai.OpenAI(base_url=url, api_key="bench", timeout=timeout, max_retries=0)
        for cat, name, schema in items:
            rec = {"server": contender, "category": cat, "name": name, "max_tokens": max_tokens}
            rec.update(ask(client, model, style, schema, max_tokens, timeout))
            rec["hit_max_tokens"] = hit_max_tokens(rec)
            if rec["outcome"] in ("error", "timeout") and _exited(proc):  # this schema took the server down
                rec["server_exit"] = proc.returncode
                rec["message"] = f"{rec.get('message') or ''} (the server exited with {proc.returncode}; restarted)"
                proc, url, model, style = start(contender, home.name, threads)
                client = openai.OpenAI(base_url=url, api_key="bench", timeout=timeout, max_retries=0)
            records.append(rec)
            if sink is not None:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
    finally:
        if sink is not None:
            sink.close()
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        home.cleanup()
    return records


def _exited(proc: subprocess.Popen, wait: float = 5.0) -> bool:
    """Whether the server process has exited (waiting up to `wait` s: a crash closes the socket first)."""
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        return False
    return True


def hit_max_tokens(rec: dict[str, Any]) -> bool:
    """Whether an answer used its whole max_tokens: stopped for length (llama-cpp-python: cut JSON), or
    closed by localjudge exactly at its budget (a complete instance, finish_reason "stop")."""
    return rec.get("finish_reason") == "length" or (rec.get("tokens") or 0) >= rec.get("max_tokens", 1 << 30)


def counts(records: list[dict[str, Any]]) -> dict[str, int]:
    """n, each outcome, answered (valid + invalid + unchecked) and hit_max_tokens."""
    c = {"n": len(records), **{k: 0 for k in OUTCOMES}}
    for r in records:
        c[r["outcome"]] += 1
    c["answered"] = c["valid"] + c["invalid"] + c["unchecked"]
    c["hit_max_tokens"] = sum(hit_max_tokens(r) for r in records)
    return c


def report(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Markdown lines: the table per server, per category, times, and each localjudge failure."""
    lines = [
        "| server | answered, valid | answered, invalid | unchecked | declined | context / timeout / error "
        "| hit max_tokens | answer s median / p95 | first delta s median / p95 | second delta s median / p95 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for who, recs in results.items():
        c = counts(recs)
        ans = [r["answer_s"] for r in recs if r["outcome"] in ("valid", "invalid", "unchecked")]
        ttft = [r["ttft_s"] for r in recs if r["ttft_s"] is not None]
        t2 = [r["t2_s"] for r in recs if r.get("t2_s") is not None]
        lines.append(
            f"| {CONTENDERS.get(who, who)} | **{c['valid']}** | {c['invalid']} | {c['unchecked']} | {c['declined']} "
            f"| {c['context']} / {c['timeout']} / {c['error']} | {c['hit_max_tokens']} "
            f"| {pct(ans, 0.5):.1f} / {pct(ans, 0.95):.1f} | {pct(ttft, 0.5):.2f} / {pct(ttft, 0.95):.2f} "
            f"| {_q(t2, 0.5)} / {_q(t2, 0.95)} |"
        )
    cats = sorted({r["category"] for recs in results.values() for r in recs})
    lines += ["", "valid / invalid / declined / other, per category:", ""]
    lines += ["| category | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for cat in cats:
        cells = []
        for recs in results.values():
            c = counts([r for r in recs if r["category"] == cat])
            other = c["unchecked"] + c["context"] + c["timeout"] + c["error"]
            cells.append(f"{c['valid']} / {c['invalid']} / {c['declined']} / {other}")
        lines.append(f"| {cat} | " + " | ".join(cells) + " |")
    for who, recs in results.items():
        if who == "llamacpp":
            continue
        for r in recs:
            if r["outcome"] in ("invalid", "timeout", "error", "context"):
                lines.append(
                    f"- {who} {r['outcome']}: {r['category']}/{r['name']}: {r.get('why') or r.get('message')} "
                    f"answer {(r.get('answer') or '')[:160]!r}"
                )
        why: dict[str, int] = {}
        for r in recs:
            if r["outcome"] == "declined":
                key = (r.get("message") or "")[:90]
                why[key] = why.get(key, 0) + 1
        for msg, n in sorted(why.items(), key=lambda kv: -kv[1])[:12]:
            lines.append(f"- {who} declined {n}: {msg}")
    return lines


def _q(xs: list[float], q: float) -> str:
    return f"{pct(xs, q):.2f}" if xs else "-"


def section_schemas_e2e(
    root: Path,
    sample: int = 160,
    max_tokens: int = 256,
    timeout: float = 120,
    contenders: list[str] | None = None,
    out: Path | None = None,
    categories: list[str] | None = None,
    seed: int = 0,
    resume: bool = False,
    only: set[str] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The whole section: pick the sample (`only`: just these CATEGORY/NAME of it), run each contender in
    turn, print the tables."""
    items = [x for x in pick(root, sample, categories, seed) if only is None or f"{x[0]}/{x[1]}" in only]
    cats = sorted({c for c, _, _ in items})
    print(
        f"## JSONSchemaBench end to end through servers: {len(items)} schemas ({', '.join(cats)}), seed {seed}, "
        f"max_tokens {max_tokens}, timeout {timeout:.0f} s, n_ctx {N_CTX}, 1 thread each, temperature 0\n",
        flush=True,
    )
    results: dict[str, list[dict[str, Any]]] = {}
    for who in contenders or list(CONTENDERS):
        t0 = time.perf_counter()
        print(f"{who}: starting ({load()})", flush=True)
        results[who] = run_contender(who, items, max_tokens, timeout, out, resume=resume)
        print(f"{who}: {counts(results[who])} in {time.perf_counter() - t0:.0f} s ({load()})", flush=True)
    print()
    print("\n".join(report(results)))
    return results


def load_records(out: Path) -> dict[str, list[dict[str, Any]]]:
    """The records an earlier run wrote to `out` (contender -> records), in the contenders' order."""
    files = {f.stem: f for f in out.glob("*.jsonl")}
    return {who: [json.loads(x) for x in files[who].read_text().splitlines() if x.strip()] for who in CONTENDERS if who in files}


def main(argv: list[str] | None = None) -> None:
    """Standalone entry point (bench.py's `schemas-e2e` section calls section_schemas_e2e the same way)."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schemas", type=Path, help="a JSONSchemaBench checkout (never committed here)")
    ap.add_argument("--report", type=Path, help="print the tables of an earlier run's --out directory, run nothing")
    ap.add_argument("--sample", type=int, default=160)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--contender", action="append", choices=list(CONTENDERS))
    ap.add_argument("--category", action="append", help="a category to sample (repeatable; default: the 8 largest)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="directory for the per-schema JSONL records")
    ap.add_argument("--resume", action="store_true", help="keep the records already in --out; ask only the rest")
    ap.add_argument("--only", type=Path, help="a file of CATEGORY/NAME lines: ask only those schemas of the sample")
    a = ap.parse_args(argv)
    if a.report is not None:
        print("\n".join(report(load_records(a.report))))
        return
    if a.schemas is None:
        ap.error("--schemas PATH (a JSONSchemaBench checkout) or --report DIR")
    only = set(a.only.read_text().split()) if a.only else None
    section_schemas_e2e(a.schemas, a.sample, a.max_tokens, a.timeout, a.contender, a.out, a.category, a.seed, a.resume, only)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
