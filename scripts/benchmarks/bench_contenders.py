"""`bench.py _run MODE`: one contender, measured in this process and returned as JSON (`run_mode`): the raw / GBNF /
outlines / localjudge paths of the `tokens` and `workload` sections, `models`' per-model speed, `batching`'s and
`reuse`'s checks; `serve_*` modes are scripts/benchmarks/bench_serve.py's."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from scripts.benchmarks.bench_common import (
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
    workload,
)
from scripts.benchmarks.bench_serve import run_serve_mode

REUSE_ROWS = int(os.environ.get("BENCH_REUSE_ROWS", "40"))


def rows_limit(rows: list) -> int:
    return min(len(rows), REUSE_ROWS)


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

        from localjudge import evaluate
        from localjudge.engine import DecodeOptions, load_engine
        from localjudge.judges import get_judge

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

        from localjudge import evaluate
        from localjudge.engine import load_engine
        from localjudge.judges import get_judge

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
