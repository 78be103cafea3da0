"""What several sections of scripts/bench.py share: the committed RAG workload and its judges, the JSON schema the
naive contenders decode, the default model loaded bare (`_llama`), the validity check, and `sub` (one contender of
`bench.py _run` in its own process, so its peak RSS is its own). `from scripts.bench import X` still finds each of these."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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

    from localjudge.engine.layout import fast_layout
    from localjudge.engine.llama import default_threads
    from localjudge.models.registry import resolve_model

    return Llama(
        fast_layout(resolve_model(None)).path,  # the file localjudge's default loads (LOCALJUDGE_LAYOUT=shipped: as shipped)
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


# the script every contender subprocess runs (`bench.py _run MODE`)
BENCH = Path(__file__).resolve().parents[1] / "bench.py"


def sub(mode: str, rows: int, n: int) -> dict:
    r = subprocess.run(
        [sys.executable, str(BENCH), "_run", mode, "--rows", str(rows), "--n", str(n)],
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])
