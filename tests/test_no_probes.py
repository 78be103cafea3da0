"""No `getattr`/`hasattr` used as a capability or format probe in localjudge/: what a format or an engine can do is
on its contract (`OutputFormat.constraint()`, `Engine.capabilities`, the constraint registry), never found out by
probing. Each remaining call is on the allow-list below with the reason it is no probe."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "localjudge"

FORWARD = "lazy module __getattr__: forwards a public name to the module that defines it"
FIELDS = "iterates a model's declared fields (pydantic model_fields, a fixed key list): no probe"
EXC = "reads an optional attribute of a caught exception (third-party exceptions differ)"
BY_NAME = "looks up a name the code itself chose (a registered 'module:attr', a tool's method, a function)"

# (file under localjudge/, text the call contains, why it is no probe)
ALLOWED: list[tuple[str, str, str]] = [
    (
        "serve/core/compile_guard.py",
        'getattr(engine, "vocab", None)',
        "which GGUF an engine's llguidance tokenizer reads: any engine may serve, a scripted one has none",
    ),
    (
        "serve/core/compile_guard.py",
        'getattr(vocab, "tokenizers", {})',
        "the same: whether the vocabulary gives llguidance a tokenizer",
    ),
    ("serve/core/compile_guard.py", 'getattr(engine, "info", None)', "the same: the model file of an engine that has one"),
    ("__init__.py", "getattr(import_module(", FORWARD),
    ("align/__init__.py", "getattr(import_module(", FORWARD),
    ("labels/__init__.py", "getattr(import_module(", FORWARD),
    ("models/__init__.py", "getattr(import_module(", FORWARD),
    ("store/__init__.py", "getattr(import_module(", FORWARD),
    ("serve/__init__.py", "getattr(app, name)", FORWARD),
    ("engine/__init__.py", "getattr(llama, name)", FORWARD),
    ("judges/pairwise.py", ".usage, k)", FIELDS),
    ("judges/pairwise.py", ".timings, k)", FIELDS),
    ("ensembles/panel.py", "getattr(r.result.usage, k)", FIELDS),
    ("ensembles/panel.py", "getattr(r.result.timings, k)", FIELDS),
    ("ensembles/members.py", "getattr(c, k)", FIELDS),
    ("ensembles/members.py", "getattr(r.counts, k)", FIELDS),
    ("view/stats.py", "getattr(rep, k)", FIELDS),
    ("formats/line_formats.py", "getattr(v, k)", FIELDS),
    ("labels/agreement.py", "getattr(r.result, use)", FIELDS),
    ("judges/spec.py", "getattr(self, key)", FIELDS),
    ("engine/llama_options.py", "getattr(self, k)", FIELDS),
    ("serve/core/plan.py", "getattr(req, key)", FIELDS),
    ("engine/server.py", "getattr(e, ", EXC),
    ("labels/importing.py", "getattr(e, 'msg'", EXC),
    ("models/hub.py", 'getattr(e, "response"', EXC),
    ("models/hub.py", 'getattr(getattr(e, "response", None), "status_code"', EXC),
    ("store/db.py", 'getattr(e, "sqlite_errorcode"', EXC),
    ("distributed/worker.py", 'getattr(e, "__dict__"', EXC),
    ("distributed/ray_executor.py", 'getattr(e, "cause"', EXC),
    ("statistics/correlation.py", "getattr(stats, fn_name)", BY_NAME),
    ("agent/tools.py", "getattr(self, name)", BY_NAME),
    ("engine/backends.py", "getattr(import_module(module), attr)", BY_NAME),
    ("constraints/registry.py", "getattr(import_module(module), attr)", BY_NAME),
    ("engine/backends.py", 'getattr(f.annotation, "__name__"', "spells a field's type for --help (typing objects differ)"),
    ("constraints/llg_search.py", 'getattr(c, "POSSESSIVE_REPEAT"', "sre opcode added in Python 3.11: a stdlib version check"),
    ("api.py", 'hasattr(data, "itertuples")', "a DataFrame (pandas or another) without importing pandas"),
    ("datasets/readers.py", 'hasattr(data, "itertuples")', "a DataFrame (pandas or another) without importing pandas"),
    ("datasets/row.py", 'hasattr(v, "tolist")', "a numpy value in a user's row, without importing numpy"),
    ("integrations/deepeval.py", 'getattr(schema, "__name__"', "DeepEval's schema class, matched by name (not imported)"),
    ("integrations/common.py", "getattr(value, k, None)", "a framework's document object (LangChain, MLflow): text by duck type"),
    (
        "formats/base.py",
        'getattr(own, "_strips_think"',
        "whether a subclass's parse is already wrapped (a marker this module sets)",
    ),
    ("formats/__init__.py", "getattr(obj, ", "checks a plugin's class, which may lack `kind`, to name the mistake"),
    ("engine/llama.py", "getattr(self, ", "close() after a failed __init__: the native handles may not exist yet"),
    ("judges/judge.py", 'getattr(self, "_shots"', "few-shot turns set later by align, absent before"),
    (
        "engine/capabilities.py",
        'getattr(engine_or_backend, "capabilities"',
        "THE capability reader: an engine from before capabilities declares none (tests/test_plugins.py)",
    ),
    ("engine/capabilities.py", 'getattr(obj, "scheme"', "names a backend (scheme) or else an engine (identity) in a message"),
    ("ensembles/members.py", "getattr(self.inner, attr)", "a wrapper's __getattr__ delegating to the engine it wraps"),
    (
        "ensembles/members.py",
        'getattr(eng, "close"',
        "close() is optional on the Engine contract (an engine holding no native resources has none)",
    ),
    (
        "run/plan.py",
        'getattr(j, "key_name"',
        "optional: a panel member's renamed judge (trust.members.RenamedJudge) is keyed as the judge it renames; a plugin judge has none",
    ),
]


def _calls() -> list[tuple[str, int, str]]:
    """(file under localjudge/, line, the call's source) of every getattr/hasattr call."""
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
                src = ast.get_source_segment(text, node) or ""
                out.append((path.relative_to(ROOT).as_posix(), node.lineno, " ".join(src.split())))
    return out


def test_every_getattr_or_hasattr_in_localjudge_is_allowed_with_a_reason():
    unexplained = [
        f"localjudge/{f}:{line}: {src}" for f, line, src in _calls() if not any(f == af and pat in src for af, pat, _ in ALLOWED)
    ]
    assert not unexplained, "probe(s) not on the allow-list (put the fact on a contract):\n" + "\n".join(unexplained)


def test_the_allow_list_names_only_calls_that_exist():
    calls = _calls()
    stale = [(af, pat) for af, pat, _ in ALLOWED if not any(f == af and pat in src for f, _, src in calls)]
    assert not stale, f"allow-list entries that match no call (remove them): {stale}"
    assert all(reason.strip() for *_, reason in ALLOWED)


def test_no_format_is_asked_for_llguidance_by_getattr():
    assert not [c for c in _calls() if "llg_grammar" in c[2]], "formats declare constraint(); ask the registry"
