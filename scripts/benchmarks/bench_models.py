"""`bench.py models [--n 6] [--model NAME ...]`: prompt / generation speed per local model, and what it predicts for
the curated hub models by file size."""

from __future__ import annotations

from scripts.benchmarks.bench_common import sub


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
