"""Which engine should compile the judges' own (regex) formats: the automaton or llguidance? (docs/constraints.md)

For three built-in judge formats, on the default model with one thread: the compile time of each engine (the
automaton without its disk cache, so a first compile is measured), then the decode time of a few rows under each
and whether the outputs are the same. Prints a JSON line per (format, engine) and a Markdown table.

    python scripts/benchmarks/bench_constraint_engines.py --rows 3
"""

from __future__ import annotations

import argparse
import json
import time

from localjudge import constraints
from localjudge.constraints.automaton import compile_regex
from localjudge.engine import DecodeOptions, Message, load_engine
from localjudge.formats import make_format

FORMATS = [("yes_no_json", {}), ("score_json", {"min": 1, "max": 5}), ("pairwise_json", {})]
QUESTIONS = ["What is 2+2? Answer: 4", "Capital of France? Answer: Lyon", "Is water wet? Answer: yes, mostly"]


def _decode(engine, fmt, rows: int) -> tuple[float, list[str]]:
    texts = []
    t0 = time.perf_counter()
    for q in (QUESTIONS * rows)[:rows]:
        gen = engine.generate([Message(role="user", content=f"Judge this answer. {q}")], fmt, DecodeOptions(seed=0))
        texts.append(gen.text)
    return (time.perf_counter() - t0) * 1000 / rows, texts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3)
    args = ap.parse_args()
    engine = load_engine(None, n_threads=1)
    llg = constraints.get("llguidance")
    rows = []
    for kind, params in FORMATS:
        fmt = make_format(kind, **params)
        spec = fmt.constraint()
        t0 = time.perf_counter()
        compile_regex(spec.text(), engine.vocab, use_cache=False)
        auto_compile = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        llg.compile(spec, engine.vocab)
        llg_compile = (time.perf_counter() - t0) * 1000
        auto_ms, auto_texts = _decode(engine, fmt, args.rows)  # the registry's pick: the automaton
        order = dict(constraints.registry.BUILTIN)
        constraints.registry.BUILTIN.clear()
        constraints.registry.BUILTIN.update({"llguidance": order["llguidance"], "automaton": order["automaton"]})
        try:
            llg_ms, llg_texts = _decode(engine, fmt, args.rows)
        finally:
            constraints.registry.BUILTIN.clear()
            constraints.registry.BUILTIN.update(order)
        for name, comp, dec in (("automaton", auto_compile, auto_ms), ("llguidance", llg_compile, llg_ms)):
            row = {"format": kind, "engine": name, "compile_ms": round(comp, 1), "decode_ms_per_row": round(dec, 1)}
            row["same_text"] = auto_texts == llg_texts
            print(json.dumps(row))
            rows.append(row)
    print("\n| format | engine | compile ms | decode ms/row | same text |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['format']} | {r['engine']} | {r['compile_ms']} | {r['decode_ms_per_row']} | {r['same_text']} |")


if __name__ == "__main__":
    main()
