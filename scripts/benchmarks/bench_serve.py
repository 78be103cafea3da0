"""`bench.py serve [--rows 4]`: the same judgements in-process, through `localjudge serve` (1 and 8 clients) and
through llama-cpp-python's own OpenAI server with the same client; `run_serve_mode` is one of them (`_run serve_*`)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from scripts.benchmarks.bench_common import DATA, JUDGES, peak_rss_mb, sub, workload


def _post(url: str, body: dict) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=1800) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, {"error": e.read()[:300].decode("utf-8", "replace")}


def run_serve_mode(mode: str, rows: int) -> dict:
    """serve_inproc: the batch runner in this process. serve_http1 / serve_http8: `localjudge serve` with 1 or 8
    client threads (n_parallel 1 / 8). serve_llamacpp: llama-cpp-python's OpenAI server, 1 client, the same
    requests (response_format json_schema); serve_llamacpp_native: its own json_object + schema extension."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    from localjudge.engine.llama import default_threads
    from localjudge.errors import ParseError
    from localjudge.judges import get_judge
    from localjudge.models.registry import resolve_model
    from scripts.benchmarks.bench_constraints import free_port, start_server

    items = [(get_judge(name), vars_) for name, vars_ in workload(rows)]
    if mode == "serve_inproc":
        from localjudge import evaluate
        from localjudge.engine import load_engine

        eng = load_engine()
        for name in JUDGES:
            eng.compile(get_judge(name).format)
        data = [json.loads(x) for x in DATA.read_text().splitlines() if x.strip()][:rows]
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            run = evaluate(data, list(JUDGES), engine=eng, out=out)
            valid = sum(r.result.scored for r in run.results)
        return {"n": len(items), "wall_s": time.perf_counter() - t0, "valid": valid, "errors": 0, "rss_mb": peak_rss_mb()}
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    clients = 8 if mode == "serve_http8" else 1
    if mode.startswith("serve_http"):
        cli = str(Path(sys.executable).parent / "localjudge")
        cmd = [cli, "serve", "--port", str(port), "--no-precompile", "--option", f"n_parallel={clients}"]
        name = "smollm2-135m"
    else:
        path = resolve_model(None).path
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", path, "--n_ctx", "4096", "--port", str(port)]
        cmd += ["--n_threads", str(default_threads()), "--n_threads_batch", str(default_threads()), "--model_alias", "judge"]
        name = "judge"
    proc = start_server(cmd, url)
    try:

        def body(judge, vars_) -> dict:
            fmt = judge.output_formats[0]
            msgs = [m.model_dump() for m in judge.render(**vars_)]
            schema = fmt.json_schema()
            rf = (
                {"type": "json_object", "schema": schema}
                if mode == "serve_llamacpp_native"
                else {"type": "json_schema", "json_schema": {"name": fmt.kind, "schema": schema, "strict": True}}
            )
            return {"model": name, "messages": msgs, "response_format": rf, "max_tokens": fmt.max_tokens(), "temperature": 0}

        for judge in {id(j): j for j, _ in items}.values():  # warm-up: each format's constraint built once, untimed
            _post(url, {**body(judge, items[[j for j, _ in items].index(judge)][1]), "max_tokens": 8})

        def one(item) -> tuple[bool, bool]:
            judge, vars_ = item
            status, answer = _post(url, body(judge, vars_))
            if status != 200:
                return False, True
            try:
                judge.output_formats[0].parse(answer["choices"][0]["message"]["content"] or "")
                return True, False
            except (ParseError, KeyError, TypeError):
                return False, False

        t0 = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            res = list(pool.map(one, items))
        wall = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(60)
    return {"n": len(items), "wall_s": wall, "valid": sum(v for v, _ in res), "errors": sum(e for _, e in res), "rss_mb": 0}


def section_serve(rows: int) -> None:
    n = rows * len(JUDGES)
    print(f"## Judge server: {rows} CoQA RAG rows x {len(JUDGES)} judges = {n} judgements (default model)\n")
    print("| path | rows/min | ratio to in-process | valid typed verdicts | HTTP errors |")
    print("|---|---|---|---|---|")
    res = {}
    for mode, label in (
        ("serve_inproc", "in-process `localjudge run`"),
        ("serve_http1", "`localjudge serve`, 1 client (json_schema)"),
        ("serve_http8", "`localjudge serve --option n_parallel=8`, 8 clients"),
        ("serve_llamacpp", "llama-cpp-python server, 1 client, same requests (json_schema)"),
        ("serve_llamacpp_native", "llama-cpp-python server, 1 client, its json_object + schema"),
    ):
        res[mode] = r = sub(mode, rows, 0)
        if "error" in r:
            print(f"| {label} | error: {r['error']} | | | |")
            continue
        if r["errors"] == r["n"]:  # every request refused: no rate to speak of
            print(f"| {label} | - (every request failed) | - | 0% | {r['errors']} |")
            continue
        rpm = r["n"] / r["wall_s"] * 60
        base = res["serve_inproc"]
        ratio = rpm / (base["n"] / base["wall_s"] * 60) if "error" not in base else float("nan")
        print(f"| {label} | {rpm:.1f} | {ratio:.2f} | {100 * r['valid'] / r['n']:.0f}% | {r['errors']} |")
