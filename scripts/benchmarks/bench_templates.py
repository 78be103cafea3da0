"""`bench.py templates [--n 6]`: the default model's chat template rendered in-process vs by the bounded child process."""

from __future__ import annotations

import time


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
