"""What building a conversation row's values costs a per-turn run: every derived value vs only those the judges read.

    python scripts/bench.py conversation-values [--n 20]
    python scripts/benchmarks/bench_conversation_values.py [--conversations 20] [--turns 10] [--real 3] [--threads 1]

`--conversations` conversations of `--turns` exchanges (each with a tool call and a retrieval context, so every
derived value has something to render) are judged per turn by MLflow's `conversation_completeness`, twice, on an
instant scripted engine (the dataset's own cost is what shows): `every value` builds all of
`ConversationDataset`'s derived values at every row (the dataset's `needs` ignored: what every run did before
`needs`), `read values only` builds only what the judge reads (the default). Both must store the same results byte for
byte; it prints rows per minute of each. With `--real N` the same on the default model at `--threads` for the first
N per-turn rows of one conversation, without the KV prefix cache so the second run reuses nothing of the
first (the model's time dominates there). Times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

JUDGE = "conversation_completeness"


def conversations(n: int, turns: int) -> list[dict[str, Any]]:
    """`n` conversations of `turns` exchanges: a question, a tool call and its result, an answer with its context."""
    out = []
    for c in range(n):
        messages: list[dict[str, Any]] = []
        for i in range(turns):
            call = {"id": f"c{c}t{i}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": i})}}
            messages += [
                {"role": "user", "content": f"Question {i} of conversation {c}: how many cats does Ana keep now? " * 3},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": f"Ana keeps {i + 1} cats in Porto."},
                {"role": "assistant", "content": f"Ana keeps {i + 1} cats, fed a {2 * (i + 1)} kg bag a month. " * 3},
            ]
        out.append({"id": f"conv{c}", "messages": messages})
    return out


@contextlib.contextmanager
def every_value() -> Iterator[None]:
    """Runs inside build every derived value at every row (a dataset's `needs` stays None, whatever the run sets)."""
    from localjudge.conversations.dataset import ConversationDataset

    ConversationDataset.needs = property(lambda self: None, lambda self, value: None)  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        del ConversationDataset.needs


def measure(data: list[dict[str, Any]], engine: Any, out: Path, limit: int | None = None) -> dict[str, Any]:
    """One per-turn run: its stored results (as results.jsonl holds them, run id, time and timings left out), rows and wall time."""
    import localjudge

    t0 = time.perf_counter()
    run = localjudge.evaluate(data, [JUDGE], engine=engine, out=out, conversation="turn", limit=limit)
    wall = time.perf_counter() - t0
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    for x in lines:
        x.pop("created_at", None), x.pop("run_id", None)
        x.get("result", {}).pop("timings", None)  # milliseconds: the machine's, not the run's
    return {"rows": len(list(run.results)), "wall_s": wall, "results": lines}


def _instant() -> Any:
    from localjudge.engine.base import ScriptedEngine

    return ScriptedEngine(lambda messages, fmt: json.dumps({"rationale": "complete", "result": "yes"}))


def section_conversation_values(n: int = 20, turns: int = 10, real: int = 0, threads: int = 1) -> None:
    """Print the section's table (docs/benchmarks.md, "Conversation rows: only the values a run reads")."""
    data = conversations(n, turns)
    rows: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as work:
        with every_value():
            eager = measure(data, _instant(), Path(work) / "eager")
        lazy = measure(data, _instant(), Path(work) / "lazy")
        rows.append((f"instant scripted engine, {n} x {turns} turns", eager, lazy))
        if real:
            from localjudge.engine.llama import LlamaEngine

            # no prefix cache: the second run must not take the first one's prompts from the KV cache
            engine = LlamaEngine(None, n_threads=threads, reuse_prefix=False)
            measure(data[1:2], engine, Path(work) / "warm", limit=1)  # the model loads before either run is timed
            with every_value():
                eager_real = measure(data[:1], engine, Path(work) / "eager-real", limit=real)
            lazy_real = measure(data[:1], engine, Path(work) / "lazy-real", limit=real)
            rows.append((f"default model, {threads} thread(s), first {real} turns", eager_real, lazy_real))
    for _, e, lz in rows:
        assert e["results"] == lz["results"], "building only the read values changed a stored result"
    print(f"\n## Conversation rows: only the values a run reads ({JUDGE}, per turn)\n")
    print("| run | rows | every value: rows/min | read values only: rows/min | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for name, e, lz in rows:
        before, after = 60 * e["rows"] / e["wall_s"], 60 * lz["rows"] / lz["wall_s"]
        print(f"| {name} | {lz['rows']} | {before:,.0f} | {after:,.0f} | {after / before:.2f}x |")
    print(f"\nstored results byte-identical in both modes: {', '.join(str(r[2]['rows']) for r in rows)} rows")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=20)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--real", type=int, default=0, help="per-turn rows judged on the default model (0: none)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    section_conversation_values(a.conversations, a.turns, a.real, a.threads)


if __name__ == "__main__":
    main()
