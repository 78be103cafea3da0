"""The chat-template render worker: a child process that compiles and renders untrusted Jinja templates.

Run by `engine/template.py` as `python -I _template_worker.py MEMORY_BYTES [IMPORT_DIR ...]` (the
directories holding jinja2 and markupsafe go first on the path); imports nothing of localjudge
(only the standard library and jinja2), so it runs the same from a wheel or a checkout. Protocol: one JSON
object per line on stdin, `{"src": TEMPLATE, "ctx": {...}, "max_chars": N}` (no "ctx": compile only); one
JSON line back per request: `{"ok": TEXT}`, `{"refused": MESSAGE}` (the template's `raise_exception`) or
`{"error": "Kind: message", "stage": "compile" | "render"}`. Limits: the address space (RLIMIT_AS, where the
platform has it), output text and any `*` repetition over `max_chars`; the parent enforces the time limit
by killing this process. It exits when stdin closes (the parent went away).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

MAX_POWER_BITS = 1 << 16  # `a ** b` results longer than this many bits are refused (big ints block in C)


def main() -> None:
    """Serve render requests on stdin/stdout until stdin closes."""
    memory = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    sys.path[:0] = sys.argv[2:]
    if memory > 0:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        except (ImportError, ValueError, OSError):  # no RLIMIT_AS (macOS, Windows): the time limit still holds
            pass
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

    limit = {"chars": 1 << 24}

    class Refused(Exception):
        pass

    class BoundedEnvironment(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "*":
                for seq, n in ((left, right), (right, left)):
                    if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > limit["chars"]:
                        raise SecurityError(f"a repetition of {len(seq)} x {n} items is over the {limit['chars']:,} limit")
            if operator == "**" and isinstance(left, int) and isinstance(right, int):
                if right > 0 and abs(left) > 1 and abs(left).bit_length() * right > MAX_POWER_BITS:
                    raise SecurityError(f"{left} ** {right} is too large")
            return super().call_binop(context, operator, left, right)

    def raise_exception(msg: Any) -> None:
        raise Refused(str(msg))

    env = BoundedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: time.strftime(fmt)
    templates: dict[str, Any] = {}
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        reply: dict[str, Any]
        stage = "compile"
        try:
            req = json.loads(line)
            src = req["src"]
            t = templates.get(src)
            if t is None:
                t = templates[src] = env.from_string(src)
            stage = "render"
            if "ctx" in req:
                limit["chars"] = int(req.get("max_chars") or limit["chars"])
                pieces, n = [], 0
                for piece in t.generate(**req["ctx"]):
                    n += len(piece)
                    if n > limit["chars"]:
                        raise SecurityError(f"the output is over the {limit['chars']:,}-character limit")
                    pieces.append(piece)
                reply = {"ok": "".join(pieces)}
            else:
                reply = {"ok": ""}
        except Refused as e:
            reply = {"refused": str(e)}
        except MemoryError:
            reply = {"error": "MemoryError: over the memory limit", "stage": stage}
        except RecursionError:
            reply = {"error": "RecursionError: recursion too deep", "stage": stage}
        except Exception as e:  # every other failure of an untrusted template is reported, not raised
            reply = {"error": f"{type(e).__name__}: {e}", "stage": stage}
        try:
            data = json.dumps(reply).encode() + b"\n"
        except MemoryError:
            data = b'{"error": "MemoryError: over the memory limit", "stage": "render"}\n'
        out.write(data)
        out.flush()


if __name__ == "__main__":
    main()
