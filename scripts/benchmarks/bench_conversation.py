"""Per-turn judging of one conversation: the KV cache of the shared history reused turn to turn, vs a cold cache.

    python scripts/bench.py conversation [--n 10]
    python scripts/benchmarks/bench_conversation.py [--turns 10] [--threads 1]

One conversation of `--turns` user/assistant exchanges is judged per turn (`conversation="turn"`, one row per
exchange seeing the exchanges before it) by MLflow's `knowledge_retention` on the default model, twice, each on
its own engine loaded beforehand: with prefix reuse (the default) and with `reuse_prefix=False` (every prompt
evaluated from an empty cache, as independent prompts are). It asserts that both give the same outputs byte for
byte and prints, per mode, the prompt tokens in all, those taken from the KV cache, those evaluated, and the wall
time of the run (model load excluded). Times depend on the machine and its load; token counts do not.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

JUDGE = "knowledge_retention"


def conversation(turns: int) -> dict[str, Any]:
    """A conversation of `turns` exchanges where each answer leans on facts the user gave earlier."""
    messages = []
    for i in range(turns):
        messages += [
            {"role": "user", "content": f"I am Ana, I live in Porto and I keep {i + 1} cats. What food should I buy?"},
            {"role": "assistant", "content": f"For {i + 1} cats in Porto, Ana, buy a {2 * (i + 1)} kg bag of dry food."},
        ]
    return {"id": "ana", "messages": messages}


def measure(turns: int, threads: int, reuse: bool, out: Path) -> dict[str, Any]:
    """One per-turn run: its outputs, token counts and wall time."""
    import localjudge
    from localjudge.engine.llama import LlamaEngine

    engine = LlamaEngine(None, n_threads=threads, reuse_prefix=reuse)
    t0 = time.perf_counter()
    run = localjudge.evaluate([conversation(turns)], [JUDGE], engine=engine, out=out, conversation="turn")
    wall = time.perf_counter() - t0
    rows = list(run.results)
    kv = run.summary.run["conversations"]["prompt_tokens"]
    return {"outputs": [r.result.raw_text for r in rows], "rows": len(rows), "wall_s": wall, **kv}


def shared(turns: int, window: int) -> list[tuple[int, int]]:
    """(prompt tokens, tokens in common with the previous per-turn prompt) per turn, with the model's tokenizer and
    chat template only (no decoding): what the KV cache can give each turn at most."""
    from localjudge.conversations import from_messages
    from localjudge.conversations.dataset import ConversationDataset, ConversationOptions
    from localjudge.engine.job import common_prefix
    from localjudge.engine.llama import LlamaEngine
    from localjudge.judges import get_judge

    engine, judge = LlamaEngine(None, n_threads=1), get_judge(JUDGE)
    conv = from_messages(conversation(turns)["messages"], id="ana")
    rows = ConversationDataset([conv], ConversationOptions(granularity="turn", window=window))
    out: list[tuple[int, int]] = []
    before: list[int] = []
    for row in rows:
        tokens = engine.prompt_tokens(judge.render(conversation=row.values["conversation"]))
        out.append((len(tokens), common_prefix(before, tokens)))
        before = tokens
    return out


def section_conversation(turns: int = 10, threads: int = 1) -> None:
    """Print the section's tables (docs/benchmarks.md, "Per-turn judging: KV reuse")."""
    print(f"\n## What consecutive per-turn prompts share ({JUDGE}, {turns} turns; tokens in common with the previous)\n")
    for window in (10, 3):
        print(f"window {window}: " + ", ".join(f"{c}/{n}" for n, c in shared(turns, window)))
    with tempfile.TemporaryDirectory() as work:
        warm = measure(turns, threads, True, Path(work) / "warm")
        cold = measure(turns, threads, False, Path(work) / "cold")
    assert warm["outputs"] == cold["outputs"], "prefix reuse changed an output"
    assert warm["total"] == cold["total"] and cold["cached"] == 0
    print(f"\n## Per-turn judging: KV reuse ({JUDGE}, one conversation of {turns} turns, {threads} thread(s))\n")
    print(f"same outputs with and without reuse: {warm['rows']}/{warm['rows']} byte-identical\n")
    print("| mode | prompt tokens | from the KV cache | evaluated | wall s |")
    print("|---|---:|---:|---:|---:|")
    for name, r in (("reuse (default)", warm), ("cold cache per prompt", cold)):
        print(f"| {name} | {r['total']} | {r['cached']} | {r['evaluated']} | {r['wall_s']:.1f} |")
    print(
        f"\nevaluated prompt tokens: {warm['evaluated'] / cold['evaluated']:.2f}x of independent prompts; "
        f"wall time {cold['wall_s'] / warm['wall_s']:.2f}x faster with reuse"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    section_conversation(a.turns, a.threads)


if __name__ == "__main__":
    main()
