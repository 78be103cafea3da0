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
                                                 labelling (scripts/bench_trust_estimators.py)
    python scripts/bench.py trust-models [--rows 300] [--model smollm2-135m] [--threads 1] [--labels 50,100,200]
                                                 [--draws 500] [--out DIR]  the same table measured: the model judges
                                                 the labelled TruthfulQA rows into a resumable run directory
                                                 (scripts/bench_trust_models.py)
    python scripts/bench.py panel-reuse [--rows 6]  a panel reusing an earlier solo run of a member vs a fresh panel
                                                 (scripts/bench_trust.py)
    python scripts/bench.py schemas --schemas PATH [--sample 40]   JSONSchemaBench coverage/compliance per category, and
                                                 constraints [--rows 12]: judges' formats under each constraint
                                                 (scripts/bench_constraints.py); threads [--rows 12]: rows/min
                                                 with 1 / physical / all cores, alone and beside a busy process
    python scripts/bench.py clients                    evaluation clients (MLflow ...) x path: usable verdicts, our serve vs
                                                 llama-cpp-python's server, one thread (scripts/bench_clients.py)
    python scripts/bench.py schemas-e2e --schemas PATH [--sample 160] [--max-tokens 256] [--timeout 120]
                                    [--contender localjudge|automaton|llamacpp ...] [--out DIR] [--resume] [--only FILE]
                                                 the same seeded stratified JSONSchemaBench sample through real servers,
                                                 one at a time, 1 thread each: `localjudge serve` (llguidance, then
                                                 --schema-constraint automaton) and llama-cpp-python's server;
                                                 valid / invalid / declined / context / timeout / error per server
                                                 and category, answer time and first token (scripts/bench_schemas_e2e.py)
    python scripts/bench.py defaults [--rows 12] [--load N]  default options vs the previous release's settings and
                                                 the naive GBNF loop on the same RAG rows x groundedness, alone and
                                                 (with --load) beside N busy processes (scripts/bench_defaults.py)
    python scripts/bench.py all
    python scripts/bench.py ray      [--rows 12] local vs Ray on this machine (rows/min, ratio, same outputs?), the
                                                 store's write rate and the driver's rate with free judgements

Each contender runs in its own subprocess (so peak RSS is its own). Ratios, not absolute times, are
the result: this machine is shared and noisy. Needs `numba` for outlines' stock path to be constrained
(`pip install numba`); without it outlines silently decodes unconstrained, which the valid % shows.
`serve` needs llama-cpp-python's server extras for the peer server (bench-only, not a localjudge dependency):
`pip install sse-starlette starlette-context pydantic-settings`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "scripts" / "data" / "coqa_rag_60.jsonl"
JUDGES = {  # judge -> variables taken from a workload row
    "groundedness": lambda r: {"input": r["input"], "output": r["output"], "retrieval_context": r["context"]},
    "correctness": lambda r: {"input": r["input"], "output": r["output"], "ground_truth": r["expected"]},
    "relevance_to_query": lambda r: {"input": r["input"], "output": r["output"]},
}
SCHEMA = {
    "type": "object",
    "properties": {"rationale": {"type": "string"}, "result": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["rationale", "result"],
}
MAX_TOKENS = 256  # what a careful user gives an unconstrained-length rationale
# layers offloaded to the GPU by every model this script loads (section `gpu` sets -1; 0 = CPU, as before)
GPU_LAYERS = int(os.environ.get("BENCH_GPU_LAYERS", "0"))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def workload(rows: int) -> list[tuple[str, dict]]:
    lines = [json.loads(x) for x in DATA.read_text().splitlines() if x.strip()][:rows]
    return [(j, f(r)) for r in lines for j, f in JUDGES.items()]


def prompts(rows: int):
    """(judge, rendered chat prompt text, messages) for each judgement, rendered by localjudge's catalog."""
    from localjudge.engine import load_engine
    from localjudge.judges import get_judge

    eng = load_engine()
    out = []
    for name, vars_ in workload(rows):
        msgs = get_judge(name).render(**vars_)
        out.append((name, eng.render_prompt(msgs), msgs))
    return eng, out


def _llama():
    from llama_cpp import Llama

    from localjudge.engine.llama import default_threads
    from localjudge.models.registry import resolve_model

    return Llama(
        resolve_model(None).path,
        n_ctx=4096,
        n_threads=default_threads(),
        n_threads_batch=default_threads(),
        n_gpu_layers=GPU_LAYERS,
        verbose=False,
    )


def _valid(text: str) -> bool:
    from localjudge.errors import ParseError
    from localjudge.formats import YesNoJSON

    try:
        YesNoJSON().parse(text)
        return True
    except ParseError:
        return False


# ---------------------------------------------------------------------------------------------- contenders


def run_mode(mode: str, rows: int, n_tokens_prompts: int) -> dict:
    if mode.startswith("model_speed:"):  # one model's prompt and generation speed on judge prompts (section `models`)
        from localjudge.engine import DecodeOptions, load_engine
        from localjudge.formats import YesNoJSON
        from localjudge.judges import get_judge
        from localjudge.models.registry import resolve_model

        name = mode.split(":", 1)[1]
        eng = load_engine(name)
        pp_tok = pp_ms = gen_tok = gen_ms = 0.0
        for judge, vars_ in workload(max(2, rows // 3))[:n_tokens_prompts]:
            msgs = get_judge(judge).render(**vars_)
            eng.reset()
            g = eng.generate(msgs, YesNoJSON(field_tokens=32), DecodeOptions())
            pp_tok += g.n_prompt_tokens
            pp_ms += g.prompt_ms
            gen_tok += g.n_output_tokens - g.n_forced_tokens
            gen_ms += g.decode_ms
        size = Path(resolve_model(name).path).stat().st_size
        return {
            "size_mb": size / 1e6,
            "pp_tok_s": pp_tok / pp_ms * 1000,
            "gen_ms_per_tok": gen_ms / max(gen_tok, 1),
            "rss_mb": peak_rss_mb(),
        }
    if mode == "speeds":  # raw prompt-processing and generation speed of llama.cpp on this machine
        eng, items = prompts(max(2, rows // 3))
        from localjudge.engine import DecodeOptions
        from localjudge.formats import YesNoJSON

        pp_tok = pp_ms = gen_tok = gen_ms = 0.0
        for _, _, msgs in items[:6]:
            eng.reset()
            g = eng.generate(msgs, YesNoJSON(), DecodeOptions(constrained=False, max_tokens=64))
            pp_tok += g.n_prompt_tokens
            pp_ms += g.prompt_ms
            gen_tok += g.n_output_tokens
            gen_ms += g.decode_ms
        return {"pp_tok_s": pp_tok / pp_ms * 1000, "gen_ms_per_tok": gen_ms / max(gen_tok, 1), "rss_mb": peak_rss_mb()}
    if mode in ("localjudge", "localjudge_fast", "localjudge_tokens", "localjudge_noreuse") or (
        mode.startswith("localjudge_p") and mode[len("localjudge_p") :].isdigit()
    ):
        import tempfile

        from localjudge.engine import DecodeOptions, load_engine
        from localjudge.judges import get_judge
        from localjudge.runner import evaluate

        n_par = int(mode[len("localjudge_p") :]) if mode.startswith("localjudge_p") else 1
        gpu = {"n_gpu_layers": GPU_LAYERS} if GPU_LAYERS else {}
        eng = load_engine(reuse_prefix=mode != "localjudge_noreuse", n_parallel=n_par, **gpu)
        for name in JUDGES:  # compile each judge's format once, outside the timed part (cached on disk anyway)
            eng.compile(get_judge(name).format)
            eng.compile(get_judge(name).format.fast())
        res = []
        t0 = time.perf_counter()
        if mode == "localjudge_tokens":
            for name, vars_ in workload(n_tokens_prompts)[:n_tokens_prompts]:
                eng.reset()
                r = get_judge(name).evaluate(eng, **vars_)
                res.append(r)
        else:  # the batch runner, as a user runs it
            data = [json.loads(x) for x in DATA.read_text().splitlines() if x.strip()][:rows]
            with tempfile.TemporaryDirectory() as out:
                run = evaluate(data, list(JUDGES), engine=eng, out=out, options=DecodeOptions(fast=(mode == "localjudge_fast")))
                res = [row.result for row in run.results]
        wall = time.perf_counter() - t0
        res = [
            {
                "valid": r.scored,
                "out": r.usage.output_tokens,
                "prompt": r.usage.prompt_tokens,
                "cached": r.usage.cached_prompt_tokens,
                "decode_ms": r.timings.decode_ms,
            }
            for r in res
        ]
        return {
            "n": len(res),
            "wall_s": wall,
            "valid": sum(x["valid"] for x in res),
            "out_tokens": sum(x["out"] for x in res),
            "prompt_tokens": sum(x["prompt"] for x in res),
            "cached_tokens": sum(x["cached"] for x in res),
            "decode_ms": sum(x["decode_ms"] for x in res),
            "rss_mb": peak_rss_mb(),
        }
    if mode in ("engine_free_tokens", "engine_nojump_tokens"):  # our loop without the mask / without jump-forward
        from localjudge.engine import DecodeOptions
        from localjudge.engine.llama import LlamaEngine
        from localjudge.formats import YesNoJSON

        eng = LlamaEngine(None, jump_forward=False)
        _, items = prompts(n_tokens_prompts)
        res = []
        for _, _, msgs in items[:n_tokens_prompts]:
            eng.reset()
            free = mode == "engine_free_tokens"
            g = eng.generate(msgs, YesNoJSON(), DecodeOptions(constrained=not free, max_tokens=64 if free else None))
            res.append({"valid": _valid(g.text), "out": g.n_output_tokens, "decode_ms": g.decode_ms})
        return {
            "n": len(res),
            "valid": sum(x["valid"] for x in res),
            "out_tokens": sum(x["out"] for x in res),
            "decode_ms": sum(x["decode_ms"] for x in res),
            "rss_mb": peak_rss_mb(),
        }
    if mode in ("batch_p1", "batch_p4"):  # the batch runner one row at a time vs 4 rows side by side
        import tempfile

        from localjudge.engine import load_engine
        from localjudge.judges import get_judge
        from localjudge.runner import evaluate

        eng = load_engine(n_parallel=1 if mode == "batch_p1" else 4)
        src = [json.loads(x) for x in (ROOT / "scripts" / "data" / "truthfulqa_labelled_300.jsonl").read_text().splitlines()]
        data = [{"input": r["question"], "output": r["answer"]} for r in src[:rows]]
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            run = evaluate(data, [get_judge("relevance_to_query"), get_judge("safety")], engine=eng, out=out)
            res = [[r.row_index, r.judge, r.result.raw_text, r.result.value] for r in run.results]
        return {"wall_s": time.perf_counter() - t0, "results": res, "rss_mb": peak_rss_mb()}
    if mode == "reuse":  # prefix reuse must not change verdicts: same judge, KV reused vs reset before every call
        from localjudge.engine import load_engine
        from localjudge.judges import get_judge

        eng = load_engine()
        j = get_judge("relevance_to_query")
        rows = [json.loads(x) for x in (ROOT / "scripts" / "data" / "truthfulqa_labelled_300.jsonl").read_text().splitlines()]
        same = n = 0
        diffs = []
        for r in [r for r in rows if r["question"].strip() and r["answer"].strip()][: rows_limit(rows)]:
            v = {"input": r["question"], "output": r["answer"]}
            warm = j.evaluate(eng, **v)
            eng.reset()
            cold = j.evaluate(eng, **v)
            n += 1
            same += warm.raw_text == cold.raw_text
            if warm.raw_text != cold.raw_text and len(diffs) < 3:
                diffs.append([warm.raw_text, cold.raw_text])
        return {"n": n, "identical": same, "diffs": diffs, "rss_mb": peak_rss_mb()}
    if mode in ("gbnf", "gbnf_tokens", "raw_tokens"):
        from llama_cpp import LlamaGrammar

        eng, items = prompts(rows if mode == "gbnf" else n_tokens_prompts)
        llm = _llama()
        grammar = None if mode == "raw_tokens" else LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
        res = []
        t0 = time.perf_counter()
        for _, text, _ in items if mode == "gbnf" else items[:n_tokens_prompts]:
            t1 = time.perf_counter()
            if mode != "gbnf":  # per-token figures: measure the prompt alone first, on a cold cache
                llm.reset()
                llm.create_completion(text, max_tokens=1, temperature=0)
                t_prompt = time.perf_counter() - t1
                llm.reset()
                t1 = time.perf_counter()
            out = llm.create_completion(text, max_tokens=MAX_TOKENS if mode == "gbnf" else 64, temperature=0, grammar=grammar)
            dt = time.perf_counter() - t1
            n_out = out["usage"]["completion_tokens"]
            res.append(
                {
                    "valid": _valid(out["choices"][0]["text"]),
                    "out": n_out,
                    "prompt": out["usage"]["prompt_tokens"],
                    "decode_ms": (dt - (t_prompt if mode != "gbnf" else 0)) * 1000,
                }
            )
        wall = time.perf_counter() - t0
        return {
            "n": len(res),
            "wall_s": wall,
            "valid": sum(x["valid"] for x in res),
            "out_tokens": sum(x["out"] for x in res),
            "prompt_tokens": sum(x["prompt"] for x in res),
            "decode_ms": sum(x["decode_ms"] for x in res),
            "rss_mb": peak_rss_mb(),
        }
    if mode in ("outlines", "outlines_tokens"):
        import outlines
        from outlines.types import JsonSchema

        eng, items = prompts(rows if mode == "outlines" else n_tokens_prompts)
        llm = _llama()
        model = outlines.from_llamacpp(llm, chat_mode=False)
        out_type = JsonSchema(json.dumps(SCHEMA))
        model("Hi", out_type, max_tokens=4)  # warm-up: index compile and numba JIT are not per-row costs
        res = []
        t0 = time.perf_counter()
        for _, text, _ in items if mode == "outlines" else items[:n_tokens_prompts]:
            t1 = time.perf_counter()
            if mode != "outlines":  # per-token figures: the prompt alone first, then the call on a cold cache
                llm.reset()
                llm.create_completion(text, max_tokens=1, temperature=0)
                t_prompt = time.perf_counter() - t1
                llm.reset()
                t1 = time.perf_counter()
            txt = model(text, out_type, max_tokens=MAX_TOKENS if mode == "outlines" else 64, temperature=0.0)
            dt = time.perf_counter() - t1
            n_out = len(llm.tokenize(txt.encode(), add_bos=False, special=False))
            res.append(
                {
                    "valid": _valid(txt),
                    "out": n_out,
                    "decode_ms": (dt - (t_prompt if mode != "outlines" else 0)) * 1000,
                    "prompt": len(llm.tokenize(text.encode(), special=True)),
                }
            )
        wall = time.perf_counter() - t0
        return {
            "n": len(res),
            "wall_s": wall,
            "valid": sum(x["valid"] for x in res),
            "out_tokens": sum(x["out"] for x in res),
            "prompt_tokens": sum(x["prompt"] for x in res),
            "decode_ms": sum(x["decode_ms"] for x in res),
            "rss_mb": peak_rss_mb(),
        }
    if mode.startswith("serve_"):
        return run_serve_mode(mode, rows)
    raise SystemExit(f"unknown mode {mode}")


# ------------------------------------------------------------------------------------------- serve


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

    from bench_constraints import free_port, start_server

    from localjudge.engine.llama import default_threads
    from localjudge.errors import ParseError
    from localjudge.judges import get_judge
    from localjudge.models.registry import resolve_model

    items = [(get_judge(name), vars_) for name, vars_ in workload(rows)]
    if mode == "serve_inproc":
        from localjudge.engine import load_engine
        from localjudge.runner import evaluate

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


REUSE_ROWS = int(os.environ.get("BENCH_REUSE_ROWS", "40"))


def rows_limit(rows: list) -> int:
    return min(len(rows), REUSE_ROWS)


def sub(mode: str, rows: int, n: int) -> dict:
    r = subprocess.run(
        [sys.executable, __file__, "_run", mode, "--rows", str(rows), "--n", str(n)], capture_output=True, text=True, timeout=7200
    )
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


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


# ------------------------------------------------------------------------------------------ ray

RAY_MAP = {"retrieval_context": "context", "ground_truth": "expected"}
FREE = '{"rationale": "ok", "result": "yes"}'  # a valid answer for the three yes/no JSON judges, at no cost


def _ray_data(rows: int, path: Path) -> Path:
    lines = [x for x in DATA.read_text().splitlines() if x.strip()]
    path.write_text("".join(lines[i % len(lines)] + "\n" for i in range(rows)))
    return path


def ray_mode(mode: str, rows: int, work: str) -> dict:
    """One contender of the `ray` section, in its own process: `local`, `local1` (1 thread), `ray`, `store`,
    `driver_local`, `driver_ray`."""
    from localjudge.runner import evaluate

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
        [sys.executable, __file__, "_ray", mode, "--rows", str(rows), "--work", work],
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


def section_models(n: int, names: list[str]) -> None:
    """Prompt and generation speed of each local model on the same judge prompts, side by side, each in its own
    process; and what that predicts for the curated hub models by file size (decoding a token reads every weight
    once: time ~ file size; prompt processing is compute: also ~ size at a similar quantisation). The second
    measured model checks how far that rule holds."""
    from localjudge.models.registry import registry

    print(f"## Models: {n} judge prompts each (coqa RAG rows, groundedness/correctness/relevance_to_query)\n")
    res = {name: sub(f"model_speed:{name}", 3 * n, n) for name in names}
    base = res[names[0]]
    print("| model | file MB | prompt tok/s | gen ms/token | size ratio | gen ratio | prompt ratio | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in res.items():
        if "error" in r:
            print(f"| {name} | error: {r['error']} | | | | | | |")
            continue
        print(
            f"| {name} | {r['size_mb']:.0f} | {r['pp_tok_s']:.0f} | {r['gen_ms_per_tok']:.1f} | {r['size_mb'] / base['size_mb']:.2f} "
            f"| {r['gen_ms_per_tok'] / base['gen_ms_per_tok']:.2f} | {base['pp_tok_s'] / r['pp_tok_s']:.2f} | {r['rss_mb']:.0f} |"
        )
    if "error" in base:
        return
    print("\nPredicted from the first model by file size (not measured: those files are not on this machine):\n")
    print(
        "| curated model | size | gen s/token | prompt tok/s | 600-token prompt + 200 feedback tokens | verdict only (--fast) |"
    )
    print("|---|---|---|---|---|---|")
    for name, e in registry()["models"].items():
        if "hub" not in e:
            continue
        mb = float(str(e.get("size", "0")).split()[0]) * 1000
        k = mb / base["size_mb"]
        gen = base["gen_ms_per_tok"] * k / 1000
        pp = base["pp_tok_s"] / k
        print(f"| {name} | {e['size']} | {gen:.2f} | {pp:.1f} | {600 / pp + 200 * gen:.0f} s | {600 / pp + 5 * gen:.0f} s |")


def section_templates(n: int) -> None:
    """The default model's chat template on a judge-sized prompt: in-process Jinja (before) vs the bounded
    child-process renderer (engine/template.py, now), side by side."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from localjudge.engine.template import ChatTemplate
    from localjudge.models.files import gguf_metadata
    from localjudge.models.registry import resolve_model

    src = gguf_metadata(resolve_model(None).path)["chat_template"]
    msgs = [{"role": "system", "content": "You are a judge. " * 20}, {"role": "user", "content": "x" * 4000}]
    ctx = dict(messages=msgs, add_generation_prompt=True, bos_token="", eos_token="")
    t = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(src)
    n = max(n, 1) * 100
    t0 = time.perf_counter()
    for _ in range(n):
        want = t.render(**ctx)
    inproc = (time.perf_counter() - t0) / n * 1000
    bounded = ChatTemplate(src, "bench")
    t0 = time.perf_counter()
    for _ in range(n):
        got = bounded.render(**ctx)
    child = (time.perf_counter() - t0) / n * 1000
    bounded.close()
    print(f"\n## Chat-template rendering: in-process vs bounded child process ({n} renders, 4 KB message)\n")
    print("| renderer | ms per render | ratio |\n|---|---|---|")
    print(f"| in-process Jinja sandbox (before) | {inproc:.3f} | 1.00 |")
    print(f"| child process, time + memory limits (now) | {child:.3f} | {child / inproc:.2f} |")
    print(f"identical output: {got == want}")


def section_view(n: int, sizes: tuple[int, ...] = (1_000, 10_000, 100_000)) -> None:
    """`localjudge view` page times on synthetic runs of each size, one server over all of them (medians of n)."""
    import statistics
    import tempfile

    sys.path.insert(0, str(ROOT / "tests"))
    from view_support import ViewServer, make_run

    def ms(server: ViewServer, paths: list[str]) -> float:
        t0 = time.perf_counter()
        for p in paths:
            status, _, _ = server.request(p)
            assert status == 200, p
        return (time.perf_counter() - t0) * 1000

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for size in sizes:
            t0 = time.perf_counter()
            make_run(root / f"rows{size}", size, fast=True)
            print(f"built a {size}-row run through the store in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        t0 = time.perf_counter()
        server = ViewServer("--runs-root", str(root))
        started = time.perf_counter() - t0
        try:
            rows_out: list[tuple[int, dict[str, float]]] = []
            for size in sizes:
                rid = f"rows{size}"
                api = f"/api/runs/{rid}/rows"
                first = [f"/runs/{rid}", f"/api/runs/{rid}/status", api + "?page=1"]
                pages = size // 50
                q = f"{api}?q=question%20{size // 3}"
                t = {
                    "first page": statistics.median(ms(server, first) for _ in range(n)),
                    "next page": statistics.median(ms(server, [f"{api}?page={p}"]) for p in range(2, 2 + 2 * n)),
                    "middle page": statistics.median(ms(server, [f"{api}?page={pages // 2}"]) for _ in range(n)),
                    "last page": statistics.median(ms(server, [f"{api}?page={pages}"]) for _ in range(n)),
                    "sorted by expected": statistics.median(ms(server, [f"{api}?sort=-expected"]) for _ in range(n)),
                    "sorted by score, middle": statistics.median(
                        ms(server, [f"{api}?sort=score&page={pages // 2}"]) for _ in range(n)
                    ),
                    # opening the run page (in "first page") starts the trigram index; the first search waits for it
                    "search, first": ms(server, [q]),
                }
                t["search"] = statistics.median(ms(server, [f"{api}?q=question%20{size // 3 + k}"]) for k in range(1, n + 1))
                t["queue (uncertain), first open"] = ms(server, [f"/api/runs/{rid}/queue?judge=polite&order=uncertain"])
                t["queue (uncertain), next item"] = statistics.median(
                    ms(server, [f"/api/runs/{rid}/queue?judge=polite&order=uncertain&pos={k}"]) for k in range(1, n + 1)
                )
                rows_out.append((size, t))
        finally:
            server.stop()
        # the search index persists in the run directory: a later session's first search reads it
        server = ViewServer("--runs-root", str(root))
        try:
            for size, t in rows_out:
                t["search, first after a restart"] = ms(server, [f"/api/runs/rows{size}/rows?q=question%20{size // 5}"])
        finally:
            server.stop()
    names = list(rows_out[0][1])
    print("## localjudge view: ms per request over HTTP (median), synthetic runs, 1 judge\n")
    print("| rows | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for size, t in rows_out:
        print(f"| {size:,} | " + " | ".join(f"{t[k]:.1f}" for k in names) + " |")
    base = rows_out[0][1]
    for size, t in rows_out[1:]:
        print(f"\nratio {size:,} / {rows_out[0][0]:,}: " + ", ".join(f"{k} {t[k] / base[k]:.2f}x" for k in names))
    last = rows_out[-1][1]
    print(f"\nat {rows_out[-1][0]:,} rows (goal: each < 300 ms): " + ", ".join(f"{k} {last[k]:.0f} ms" for k in names))
    print(f"server start, opening all {len(sizes)} runs (the view's indexes created on first open): {started:.1f} s")
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"load average at the end: {load}")


def section_cascade(rows: int, below: float) -> None:
    """A cascade (smollm2-135m first, gemma3-270m below `below`) against gemma3-270m on every row, side by side: the
    same rows, judge (correctness), --probs and one thread; each a fresh CLI process and run directory, after a
    one-row warm-up of both models (compiled indexes cached in one temporary LOCALJUDGE_HOME)."""
    import tempfile

    print(f"## Cascade: {rows} coqa rows, correctness, --probs, --threads 1, escalate below {below}\n")
    work = Path(tempfile.mkdtemp(prefix="bench-cascade-"))
    env = {**os.environ, "LOCALJUDGE_HOME": str(work / "home"), "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "localjudge", "run", str(DATA), "-j", "correctness", "--probs", "--threads", "1", "-q"]

    def run(name: str, extra: list[str], limit: int) -> float:
        t0 = time.perf_counter()
        subprocess.run(
            [*base, "--limit", str(limit), "--out", str(work / name), *extra], env=env, check=False, capture_output=True
        )
        return time.perf_counter() - t0

    run("warm-strong", ["--model", "gemma3-270m"], 1)
    run("warm-first", ["--model", "smollm2-135m"], 1)
    t_strong = run("strong", ["--model", "gemma3-270m"], rows)
    t_casc = run("cascade", ["--model", "smollm2-135m", "--escalate-to", "gemma3-270m", "--escalate-below", str(below)], rows)
    summary = json.loads((work / "cascade" / "summary.json").read_text())["run"]["cascade"]["judges"]["correctness"]

    def verdicts(name: str) -> dict[int, object]:
        lines = (work / name / "results.jsonl").read_text().splitlines()
        return {r["row_index"]: r["result"]["value"] for r in map(json.loads, lines) if r["judge"] == "correctness"}

    strong, casc = verdicts("strong"), verdicts("cascade")
    same = sum(strong.get(i) == v for i, v in casc.items())
    print("| path | wall s | vs strong alone | escalated | verdict = strong alone's |")
    print("|---|---|---|---|---|")
    print(f"| gemma3-270m on every row | {t_strong:.1f} | 1.00 | - | - |")
    print(
        f"| cascade smollm2-135m -> gemma3-270m | {t_casc:.1f} | {t_casc / t_strong:.2f} | "
        f"{summary['escalated']}/{summary['n']} ({summary['fraction_escalated']:.0%}) | {same}/{len(casc)} |"
    )
    est = summary["time_saved_ms_estimated"]
    print(f"\nThe run's own estimate of time saved (from per-row timings): {'n/a' if est is None else f'{est / 1000:.1f} s'}")


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
            "defaults",
            "_defaults",
            "trust-estimators",
            "trust-models",
            "gpu",
            "clients",
            "conversation",
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
    ap.add_argument("--threads", type=int, default=1, help="`trust-models`: the model's CPU threads")
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
        import bench_defaults

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
    if a.section == "trust-estimators":  # issue 33: scripts/bench_trust_estimators.py (no model, seeded)
        import bench_trust_estimators

        bench_trust_estimators.main(["--trials", str(a.trials), "--seed", str(a.seed)])
    if a.section == "trust-models":  # issue 33: scripts/bench_trust_models.py (the model on scripts/data's labels)
        import bench_trust_models

        tm = ["--threads", str(a.threads), "--labels", a.labels, "--draws", str(a.draws), "--seed", str(a.seed)]
        tm += (["--rows", str(a.rows)] if "--rows" in sys.argv else []) + (["--model", a.model[-1]] if a.model else [])
        if rc := bench_trust_models.main(tm + (["--out", str(a.out)] if a.out else [])):
            sys.exit(rc)
    if a.section == "panel-reuse":  # issue 25: scripts/bench_trust.py
        import bench_trust

        bench_trust.section_panel_reuse(a.rows if "--rows" in sys.argv else 6)
    if a.section in ("schemas", "constraints", "threads"):  # issue 23: scripts/bench_constraints.py
        import bench_constraints

        if a.section == "schemas":
            if a.schemas is None:
                ap.error("schemas needs --schemas PATH (a JSONSchemaBench checkout)")
            bench_constraints.section_schemas(a.schemas, a.sample, a.max_tokens or 192)
        elif a.section == "threads":
            bench_constraints.section_threads(a.rows if "--rows" in sys.argv else 12)
        else:
            bench_constraints.section_constraints(a.rows if "--rows" in sys.argv else 12)
    if a.section == "defaults":  # issue 29: scripts/bench_defaults.py
        import bench_defaults

        bench_defaults.section_defaults(a.rows if "--rows" in sys.argv else 12, a.load)
    if a.section == "schemas-e2e":  # issue 23: scripts/bench_schemas_e2e.py
        import bench_schemas_e2e

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
    if a.section == "clients":  # issue 32: scripts/bench_clients.py (evaluation clients x our serve vs llama.cpp's)
        import bench_clients

        bench_clients.section_clients(threads=1)
    if a.section == "conversation":  # issue 31: scripts/bench_conversation.py (per-turn KV reuse vs a cold cache)
        import bench_conversation

        bench_conversation.section_conversation(a.n if "--n" in sys.argv else 10, threads=1)


if __name__ == "__main__":
    main()
