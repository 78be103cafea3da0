"""Dev script: write localjudge/serve/core/framework_prompts.json, the judge prompts that evaluation frameworks send
a local model with their default settings, as serve's catalog recognises them (serve/core/catalog.py), each with
the output contract serve constrains the answer to.

Per prompt: its messages' roles and the fixed text between their variables (`segments`), and its contract:
  * DeepEval (every metric template of `deepeval/templates/metrics/templates.json` whose metric code pairs it with
    one pydantic schema: `_get_prompt("<method>", ...)` and `schema_cls=`/`verdicts_cls=` in the same function, or,
    for a template that rule leaves unpaired, `_more_pairs`: the same rule over every class of `deepeval.metrics`
    with the class `template_class=` names, the templates of the class's own helpers that function calls
    (`self._results_prompt(...)`), several templates with one schema, `verdict_cls=` and the schema passed by
    position; `PAIRS` by hand): the template rendered by DeepEval's own resolver with a sentinel for each variable
    the metric passes (a one-element list where the template loops over it, an object of sentinels where it reads
    attributes of it), and the schema; `UNSENT` names the templates left out for a reason the code shows;
  * RAGAS 0.4 (both APIs: the collections' `BasePrompt`s and the legacy `PydanticPrompt`s): the text before and
    after the input JSON, cut from the prompt's own first example (as `to_string` renders it), and the output model;
  * promptfoo (`llm-rubric`, `model-graded-closedqa`, `factuality`) and Inspect AI (`model_graded_qa`,
    `model_graded_fact`): the requests the real client sends, recorded by a loopback HTTP server (`record`) with
    sentinel values in every variable, and the contract their templates state and their parsers read
    (`{reason, pass, score}`; reasoning then `Y`/`N` twice; `{category: A-E, reason}`; a last line
    `GRADE: <letter>`).

A schema becomes a contract by `contract()`: only tightenings, so every answer stays valid for the framework's own
validator: `$ref`s inlined, every property required, no other properties, `Optional[X]` as X, arrays bounded
(`MAX_ITEMS`) and non-empty where the metric cannot score an empty list (`NON_EMPTY`), numbers bounded where the
prompt states the scale (`BOUNDS`). The framework's own schema is kept beside it (`client_schema`): a request that
sends that schema (instructor's JSON mode) gets the contract in its place.

Run it again after an upgrade of any of the four; tests/test_serve_framework_catalog.py checks the file against the
installed packages (promptfoo: the npm package tests/test_serve_clients.py installs)."""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "localjudge" / "serve" / "core" / "framework_prompts.json"
MARK = "LJVAR{}LJ"  # a variable's sentinel value (plain ASCII: survives JSON, Jinja, nunjucks and Python formatting)
_MARKS = re.compile(r"LJVAR\d+LJ")
MAX_ITEMS = 10  # every list of a contract: at most this many items, so the JSON always closes within the budget
MIN_ITEMS_BOUND = 3  # ... lowered, down to this, while the contract's budget is over BUDGET
BUDGET = 1600  # output tokens a contract may need at most (serve's default field_tokens, 80 a free string)
# lists the framework cannot score when empty (NaN, or a verdict per item the prompt lists): at least one item
NON_EMPTY = {"deepeval": {"verdicts", "steps"}, "ragas": {"statements"}}
# numbers whose scale the prompt states in words: (framework, schema title, property) -> (minimum, maximum)
# (RAGAS AspectCritic: "Use only 'Yes' (1) and 'No' (0) as verdict")
BOUNDS = {("deepeval", "ReasonScore", "score"): (0, 10), ("ragas", "AspectCriticOutput", "verdict"): (0, 1)}
# ... and where one template states another scale than the schema's other templates: (class, method) -> its bounds
# (G-Eval's strict prompts: "STRICTLY EITHER 1 ... OR 0", read as `int(score)`; the MCP metrics: "a float between 0
# and 1 inclusive")
TEMPLATE_BOUNDS = {
    ("GEval", "generate_strict_evaluation_results"): {("ReasonScore", "score"): (0, 1)},
    ("GEval", "generate_strict_trace_evaluation_results"): {("ReasonScore", "score"): (0, 1)},
    ("MCPTaskCompletionMetric", "get_args_correctness_score"): {("ArgsScore", "score"): (0, 1)},
    ("MCPTaskCompletionMetric", "get_task_completion_score"): {("TaskScore", "score"): (0, 1)},
    ("MCPTaskCompletionMetric", "get_tool_correctness_score"): {("ToolScore", "score"): (0, 1)},
    ("MCPUseMetric", "get_mcp_argument_correctness_prompt"): {("MCPArgsScore", "score"): (0, 1)},
    ("MCPUseMetric", "get_primitive_correctness_prompt"): {("MCPPrimitivesScore", "score"): (0, 1)},
}
# what a metric passes with its defaults for the variables a template branches on or indexes, so the catalog holds the
# prompt a default run sends (a sentinel there would render every optional section and a score range as the
# sentinel's characters): G-Eval with no rubric (its score range then 0..10) and no additional context
_NO_RUBRIC = {"rubric": None, "_additional_context": None, "score_range": (0, 10)}
DEFAULT_RUN = {
    ("GEval", "generate_evaluation_results"): _NO_RUBRIC,
    ("GEval", "generate_trace_evaluation_results"): _NO_RUBRIC,
    ("GEval", "generate_strict_evaluation_results"): {"_additional_context": None},
    ("GEval", "generate_strict_trace_evaluation_results"): {"_additional_context": None},
    ("ConversationalGEval", "generate_evaluation_results"): {"rubric": None},
}
# ... and the other texts a run with other settings sends, each its own entry (`deepeval.<class>.<method>[<name>]`): a
# G-Eval with a rubric (`rubric=[Rubric(score_range=..., expected_outcome=...)]`: the rubric's section, its wording,
# and the score range the rubric spans, G-Eval's `get_score_range`, rendered from the range's own sentinels). Strict
# G-Eval renders neither rubric nor range: a strict run with a rubric sends the default strict text.
_RANGE = (MARK.format(90), MARK.format(91))
_WITH_RUBRIC = {"_additional_context": None, "score_range": _RANGE}
VARIANTS = {
    ("GEval", "generate_evaluation_results"): {"rubric": _WITH_RUBRIC},
    ("GEval", "generate_trace_evaluation_results"): {"rubric": _WITH_RUBRIC},
    ("ConversationalGEval", "generate_evaluation_results"): {"rubric": {}},  # its prompt states 0 to 10 whatever the rubric
}
# contracts narrowed per request from a variable's text (serve/core/prompt_rules.py `narrowing`), a variable named as the
# template names it (`score_range[0]`: the range's first sentinel): ArenaGEval's winner one of the contestant names
# the request lists (`test_case_contents` is FormattedArenaTestCase's JSON, the names the keys of its
# `arena_test_cases`; DeepEval reads the winner as `dummy_to_real_names[winner]`, a KeyError for any other), G-Eval's
# score within the range a rubric's prompt states
_RUBRIC_RANGE = [{"property": "score", "minimum": "score_range[0]", "maximum": "score_range[1]"}]
FROM_PROMPT = {
    ("ArenaGEval", "generate_arena_winner", ""): [
        {"property": "winner", "keys_of": "test_case_contents", "key": "arena_test_cases"}
    ],
    ("GEval", "generate_evaluation_results", "rubric"): _RUBRIC_RANGE,
    ("GEval", "generate_trace_evaluation_results", "rubric"): _RUBRIC_RANGE,
    # NonBinaryJudgementNode's verdict one of the options the prompt lists (`options`, the node's verdict list printed
    # by Jinja as Python's repr, at both places the template prints it); its schema's Literal rejects any other
    ("NonBinaryJudgement", "generate_non_binary_verdict", ""): [{"property": "verdict", "options_of": "options"}],
}


def _non_binary_schema() -> dict[str, Any]:
    """NonBinaryJudgementNode's schema (`_verdict_schema`: `create_model` with `verdict` a Literal of the node's verdict
    options, then `reason`), made by the node itself for two sentinel options, with `verdict` a string: the options
    are each request's own (FROM_PROMPT narrows it to those the prompt lists)."""
    from deepeval.metrics.dag import NonBinaryJudgementNode

    node = NonBinaryJudgementNode(criteria=MARK.format(0))
    for k in (80, 81):
        node.add_verdict(MARK.format(k), score=0)
    node._validate()
    schema = node._verdict_schema.model_json_schema()
    schema["properties"]["verdict"].pop("enum")
    return schema


# DeepEval templates whose metric makes the schema at run time: (class, method) -> (the schema's JSON schema, where
# it is made); no `client_schema` (no fixed schema a client sends), the contract narrowed per request
DYNAMIC = {
    ("NonBinaryJudgement", "generate_non_binary_verdict"): (
        _non_binary_schema,
        "deepeval.metrics.dag.nodes.NonBinaryJudgementNode._verdict_schema",
    )
}
# DeepEval metrics whose code renders a prompt in one function and asks for its schema in another
PAIRS = {
    ("GEval", "generate_evaluation_steps"): "deepeval.metrics.g_eval.schema.Steps",
    ("GEval", "generate_evaluation_results"): "deepeval.metrics.g_eval.schema.ReasonScore",
}
# DeepEval templates its installed code never sends with a fixed schema, and why (read in the code, DeepEval 4.3.1)
UNSENT = {
    **{
        (f"Conversational{c}", m): f"never rendered: the conversational DAG nodes render {c}'s template "
        f'(`template_class="{c}"` in deepeval/metrics/conversational_dag/nodes.py)'
        for c, m in (
            ("BinaryJudgement", "generate_binary_verdict"),
            ("NonBinaryJudgement", "generate_non_binary_verdict"),
            ("TaskNode", "generate_task_output"),
            ("VerdictNode", "generate_reason"),
        )
    },
    ("GoalAccuracyMetric", "get_final_reason"): "answered with free text: the metric sends it with `model.generate` "
    "(no schema) and keeps the text as its reason",
    ("ToolUseMetric", "get_tool_argument_final_reason"): "never rendered: the argument-correctness reason renders "
    "`get_tool_selection_final_reason` (deepeval/metrics/tool_use/tool_use.py)",
}
PROMPTFOO = Path.home() / ".cache" / "localjudge-tests" / "promptfoo-0.121" / "node_modules" / ".bin" / "promptfoo"


# ------------------------------------------------------------------------------------------ contracts


def contract(
    schema: dict[str, Any], framework: str, bounds: dict[tuple[str, str], tuple[int, int]] | None = None
) -> dict[str, Any]:
    """`schema` (a pydantic model's JSON schema) tightened as the module docstring says; its lists' bound is the
    largest (MAX_ITEMS down to MIN_ITEMS_BOUND) whose whole answer fits BUDGET tokens as serve counts them.
    `bounds` ((schema title, property) -> (minimum, maximum)): this prompt's own scales, over BOUNDS."""
    from localjudge.formats.json_schema import JSONSchemaFormat

    for most in range(MAX_ITEMS, MIN_ITEMS_BOUND - 1, -1):
        out = _contract(schema, framework, most, bounds or {})
        if JSONSchemaFormat(out, field_tokens=80).max_tokens() <= BUDGET:
            break
    return out


def _contract(
    schema: dict[str, Any], framework: str, most: int, bounds: dict[tuple[str, str], tuple[int, int]]
) -> dict[str, Any]:
    defs = schema.get("$defs", {})
    scales = {**BOUNDS, **{(framework, *k): v for k, v in bounds.items()}}

    def walk(s: dict[str, Any], title: str, name: str, depth: int) -> dict[str, Any]:
        if depth > 16:
            raise SystemExit(f"{title}: a recursive schema cannot be a contract")
        if "$ref" in s:
            s = defs[s["$ref"].rsplit("/", 1)[-1]]
        title = s.get("title", title) if s.get("type") == "object" else title
        branches = [b for b in s.get("anyOf", []) if b.get("type") != "null"]
        if "anyOf" in s and len(branches) == 1:  # Optional[X]: X
            return walk(branches[0], title, name, depth + 1)
        out = {k: copy.deepcopy(v) for k, v in s.items() if k not in ("title", "description", "default", "$defs")}
        if "anyOf" in out:
            out["anyOf"] = [walk(b, title, name, depth + 1) for b in s["anyOf"]]
        extra = s.get("additionalProperties")
        if out.get("type") == "object" and not s.get("properties") and isinstance(extra, dict):
            # Dict[str, X] (DeepEval's Knowledge.data): any keys, each value X, a string where X allows one (a list per
            # key would need about 3,500 tokens at --field-tokens 80; strings fit BUDGET); never the empty object
            branches = [b for b in extra.get("anyOf", [extra]) if b.get("type") != "null"]
            value = next((b for b in branches if b.get("type") == "string"), extra)
            out.update(properties={}, required=[], additionalProperties=walk(value, title, name, depth + 1))
        elif out.get("type") == "object":
            props = {k: walk(v, title, k, depth + 1) for k, v in s.get("properties", {}).items()}
            out.update(properties=props, required=list(props), additionalProperties=False)
        elif out.get("type") == "array":
            out["items"] = walk(s.get("items", {}), title, name, depth + 1)
            out["maxItems"] = min(out.get("maxItems", most), most)
            if name in NON_EMPTY.get(framework, ()):
                out["minItems"] = max(out.get("minItems", 0), 1)
        elif out.get("type") in ("integer", "number") and (framework, title, name) in scales:
            out["minimum"], out["maximum"] = scales[(framework, title, name)]
        return out

    return walk(schema, schema.get("title", ""), "", 0)


def segments(text: str) -> list[str]:
    """The fixed text between the sentinels of one rendered message."""
    return _MARKS.split(text)


def entry(judge: str, source: str, messages: list[tuple[str, str]], **contract_: Any) -> dict[str, Any]:
    return {
        "judge": judge,
        "source": source,
        "roles": [r for r, _ in messages],
        "segments": [segments(t) for _, t in messages],
        **contract_,
    }


# ------------------------------------------------------------------------------------------ DeepEval


def _pairs_in_code(cls: type) -> dict[str, str]:
    """`method -> schema class path` for each function of the metric's module that renders exactly one template
    (`_get_prompt("method", ...)`) and asks for exactly one schema (`schema_cls=` or `verdicts_cls=`)."""
    module = inspect.getmodule(cls)
    tree = ast.parse(inspect.getsource(module))
    out: dict[str, str] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        methods, schemas = set(), set()
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "_get_prompt" and node.args:
                if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    methods.add(node.args[0].value)
            for kw in node.keywords:
                if kw.arg in ("schema_cls", "verdicts_cls"):
                    schemas.add(ast.unparse(kw.value))
        if len(methods) == 1 and len(schemas) == 1:
            (m,), (s,) = methods, schemas
            obj: Any = module
            for part in s.split("."):
                obj = getattr(obj, part, None)
            if isinstance(obj, type):
                out[m] = f"{obj.__module__}.{obj.__qualname__}"
    return out


_BY_POSITION = {"generate_with_schema_and_extract", "a_generate_with_schema_and_extract"}  # (metric, prompt, schema)


def _schema_path(module: Any, expr: str) -> str | None:
    """The class `expr` (as written in `module`'s code) names, as `module.Class`; None where it is no class there."""
    obj: Any = module
    for part in expr.split("."):
        obj = getattr(obj, part, None)
    return f"{obj.__module__}.{obj.__qualname__}" if isinstance(obj, type) else None


def _strings(expr: ast.expr, fn: ast.AST) -> set[str]:
    """The strings `expr` may be: a constant, either branch of `a if c else b`, or what a name is assigned in `fn`
    (`method = "generate_audio_verdicts" if ... else "generate_verdicts"`)."""
    if isinstance(expr, ast.Constant):
        return {expr.value} if isinstance(expr.value, str) else set()
    if isinstance(expr, ast.IfExp):
        return _strings(expr.body, fn) | _strings(expr.orelse, fn)
    if isinstance(expr, ast.Name):
        assigned = (n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == expr.id)
        return set().union(*(_strings(v, fn) for v in assigned if not isinstance(v, ast.Name)))
    return set()


def _rendered(fn: ast.AST, cls_name: str, fns: dict[str, Any], module: Any, seen: set[str]) -> set[tuple[str, str]]:
    """`(template class, method)` of each template function `fn` of class `cls_name` renders, itself or through the
    class's own methods it calls (`fns`; `seen`: those already followed)."""
    out: set[tuple[str, str]] = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        f, args = node.func, node.args
        if f.attr == "_get_prompt" and args:
            owner = cls_name
            for kw in node.keywords:
                named = kw.value.value if isinstance(kw.value, ast.Constant) else None
                if isinstance(kw.value, ast.Name):  # a module constant
                    named = getattr(module, kw.value.id, None)
                if kw.arg == "template_class" and isinstance(named, str):
                    owner = named
            out |= {(owner, m) for m in _strings(args[0], fn) if not m.startswith("_experimental")}
        elif isinstance(f.value, ast.Name) and f.value.id == "self" and f.attr in fns and f.attr not in seen:
            out |= _rendered(fns[f.attr], cls_name, fns, module, seen | {f.attr})
    return out


def _more_pairs() -> dict[tuple[str, str], str]:
    """`(template class, method) -> schema class path`, read from each class of every `deepeval.metrics` module: per
    function, the templates it renders (`_get_prompt("<method>")`, of the class `template_class=` names when that is
    a string the module holds, else of the class itself; with those of the class's own methods it calls,
    `self._results_prompt(...)`) and the schemas it asks for (`schema_cls=`, `verdicts_cls=`, a call's
    `verdict_cls=` where it has no `verdicts_cls=`, the schema `generate_with_schema_and_extract` gets by
    position). A function asking for one schema pairs each of its templates with it; a template two functions pair
    with different schemas, or with one that is no class of the module (a model made at run time), is not paired."""
    import deepeval.metrics

    found: dict[tuple[str, str], set[str | None]] = {}
    for info in pkgutil.walk_packages(deepeval.metrics.__path__, "deepeval.metrics."):
        try:
            module = importlib.import_module(info.name)
            tree = ast.parse(inspect.getsource(module))
        except Exception:  # noqa: BLE001 - an optional integration that cannot import here, or no source
            continue
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            fns = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for name, fn in fns.items():
                schemas: set[str | None] = set()
                for node in ast.walk(fn):
                    if not isinstance(node, ast.Call):
                        continue
                    kws = {kw.arg: kw.value for kw in node.keywords}
                    given = [kws[k] for k in ("schema_cls", "verdicts_cls") if k in kws]
                    if "verdict_cls" in kws and "verdicts_cls" not in kws:
                        given.append(kws["verdict_cls"])
                    callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                    if callee in _BY_POSITION and len(node.args) >= 3:
                        given.append(node.args[2])
                    schemas |= {_schema_path(module, ast.unparse(v)) for v in given}
                templates = _rendered(fn, cls.name, fns, module, {name})
                if len(schemas) == 1 and templates:
                    for t in templates:
                        found.setdefault(t, set()).update(schemas)
    return {t: next(iter(paths)) for t, paths in found.items() if len(paths) == 1 and None not in paths}


def _attr_vars(source: str) -> dict[str, list[str]]:
    """The variables a Jinja template reads attributes of (`{{ task.task }}`), with those attributes."""
    import jinja2
    from jinja2 import nodes

    out: dict[str, set[str]] = {}
    for n in jinja2.Environment().parse(source).find_all(nodes.Getattr):
        if isinstance(n.node, nodes.Name):
            out.setdefault(n.node.name, set()).add(n.attr)
    return {k: sorted(v) for k, v in out.items()}


def _loop_vars(source: str) -> set[str]:
    """The variables a Jinja template iterates over (`{% for x in NAME %}`): they are given as one-element lists."""
    import jinja2
    from jinja2 import nodes

    tree = jinja2.Environment().parse(source)
    return {n.iter.name for n in tree.find_all(nodes.For) if isinstance(n.iter, nodes.Name)}


def _printed_vars(source: str) -> set[str]:
    import jinja2
    from jinja2 import meta

    return set(meta.find_undeclared_variables(jinja2.Environment().parse(source)))


def deepeval_entries() -> tuple[list[dict[str, Any]], list[str]]:
    """(entries, the templates left out and why) from the installed deepeval."""
    from importlib.resources import files

    import deepeval.metrics
    from deepeval.templates.resolver import resolve_template

    bundle = json.loads(files("deepeval.templates.metrics").joinpath("templates.json").read_text(encoding="utf-8"))
    more = _more_pairs()
    out, skipped = [], []
    for cls_name in sorted(bundle):
        if cls_name.startswith("_"):
            continue
        cls = getattr(deepeval.metrics, cls_name, None)
        pairs = _pairs_in_code(cls) if isinstance(cls, type) else {}
        for (c, m), path in PAIRS.items():
            if c == cls_name:
                pairs[m] = path
        for method in sorted(bundle[cls_name]):
            if method.startswith("_experimental"):
                continue
            path = None if (cls_name, method) in UNSENT else pairs.get(method) or more.get((cls_name, method))
            made = DYNAMIC.get((cls_name, method))
            path = made[1] if made else path
            if path is None:
                why = UNSENT.get((cls_name, method), "no schema paired with it in the metric's code")
                skipped.append(f"{cls_name}.{method}: {why}")
                continue
            source = bundle[cls_name][method]
            loops, attrs = _loop_vars(source), _attr_vars(source)
            names = sorted(_printed_vars(source) - {"multimodal", "strict", "_fragments"})
            values: dict[str, Any] = {n: ([MARK.format(i)] if n in loops else MARK.format(i)) for i, n in enumerate(names)}
            for n in (n for n in names if n in attrs and n not in loops):  # an object: a sentinel in each attribute read
                values[n] = types.SimpleNamespace(**{a: MARK.format(len(values) + k) for k, a in enumerate(attrs[n])})
            marks = {f"{n}[{k}]": m for n, v in (("score_range", _RANGE),) for k, m in enumerate(v)}
            marks.update({n: v for n, v in values.items() if isinstance(v, str)})
            if made:
                schema = made[0]()
            else:
                mod, _, name = path.rpartition(".")
                schema = getattr(importlib.import_module(mod), name).model_json_schema()
            runs = {"": DEFAULT_RUN.get((cls_name, method), {}), **VARIANTS.get((cls_name, method), {})}
            for variant, settings in runs.items():
                try:
                    text = resolve_template("metrics", cls_name, method, multimodal=False, **{**values, **settings})
                except Exception as e:  # noqa: BLE001 - a template that needs more than strings: left out, named
                    skipped.append(f"{cls_name}.{method}: {type(e).__name__}: {e}")
                    continue
                rules = FROM_PROMPT.get((cls_name, method, variant))
                extra = {"from_prompt": [_located(r, text, marks) for r in rules]} if rules else {}
                label = f"[{variant}]" if variant else ""
                out.append(
                    entry(
                        f"deepeval.{cls_name}.{method}{label}",
                        f"deepeval/metrics templates.json {cls_name}.{method}{' with a ' + variant if variant else ''}; "
                        f"schema {path}",
                        [("user", text)],
                        schema=contract(schema, "deepeval", TEMPLATE_BOUNDS.get((cls_name, method))),
                        **({} if made else {"client_schema": schema}),
                        **extra,
                    )
                )
    return out, skipped


def _located(rule: dict[str, Any], text: str, marks: dict[str, str]) -> dict[str, Any]:
    """A FROM_PROMPT rule with each variable it names as the places it holds in the one-message prompt `text`:
    `[message, variable index]` (one place for `keys_of`, every place for a bound or `options_of`)."""
    order = _MARKS.findall(text)

    def places(var: str) -> list[list[int]]:
        found = [[0, i] for i, m in enumerate(order) if m == marks[var]]
        if not found:
            raise SystemExit(f"{var}: not in the rendered prompt")
        return found

    out = dict(rule)
    for k in ("keys_of", "minimum", "maximum", "options_of"):
        if k in rule:
            out[k] = places(rule[k])[0] if k == "keys_of" else places(rule[k])
    return out


# ------------------------------------------------------------------------------------------ RAGAS


def _cut(prompt: Any, examples: bool = True) -> tuple[str, str]:
    """The prompt's fixed text before and after its input JSON, from its own first example; `examples` False: as the
    prompt renders with its examples set to [] (RAGAS then leaves out the examples section)."""
    data = prompt.examples[0][0]
    if not examples:
        prompt = copy.copy(prompt)
        prompt.examples = []
    text = prompt.to_string(data)
    js = data.model_dump_json(indent=4, exclude_none=True)
    i = text.rindex(js)
    return text[:i], text[i + len(js) :]


def _prompts_in(package: str, base: type) -> list[tuple[str, Any]]:
    """(`module.Class`, an instance) of every `base` subclass with examples defined in `package`'s modules."""
    pkg = importlib.import_module(package)
    found: dict[str, Any] = {}
    for info in pkgutil.walk_packages(pkg.__path__, package + "."):
        try:
            mod = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - an optional integration that cannot import here
            continue
        for name, obj in vars(mod).items():
            if isinstance(obj, type) and issubclass(obj, base) and obj is not base and obj.__module__ == mod.__name__:
                try:
                    inst = obj()
                except Exception:  # noqa: BLE001 - a prompt that needs constructor arguments: not a fixed text
                    continue
                if getattr(inst, "examples", None) and getattr(inst, "output_model", None) is not None:
                    found[f"{obj.__module__}.{name}"] = inst
    return sorted(found.items())


def ragas_entries() -> tuple[list[dict[str, Any]], list[str]]:
    from ragas.prompt import PydanticPrompt
    from ragas.prompt.metrics.base_prompt import BasePrompt

    out: list[dict[str, Any]] = []
    skipped: list[str] = []
    for api, package, base in (
        ("collections", "ragas.metrics.collections", BasePrompt),
        ("legacy", "ragas.metrics", PydanticPrompt),
    ):
        found = _prompts_in(package, base)
        # each prompt as its metric sends it, then (after all of them, so the file's earlier entries keep their
        # order) as it sends it with its examples set to []: the same contract
        for examples, label in ((True, ""), (False, "[no examples]")):
            for path, prompt in found:
                if api == "legacy" and path.startswith("ragas.metrics.collections."):
                    continue
                try:
                    before, after = _cut(prompt, examples)
                except (ValueError, AttributeError, TypeError) as e:
                    if examples:
                        skipped.append(f"{path}: {type(e).__name__}: {e}")
                    continue
                schema = prompt.output_model.model_json_schema()
                judge = f"ragas.{api}.{path.removeprefix(package + '.')}{label}"
                same = [r for r in out if r["segments"] == [[before, after]] and r["client_schema"] == schema]
                if same:  # one prompt defined in two modules: one entry, both named; a prompt whose own
                    if not label:  # to_string renders no examples (ClaimDecompositionPrompt): no second entry
                        same[0]["source"] += f", {path}"
                    continue
                out.append(
                    {
                        "judge": judge,
                        "source": path,  # the class; the judge name says how it was rendered
                        "roles": ["user"],
                        "segments": [[before, after]],
                        "schema": contract(schema, "ragas"),
                        "client_schema": schema,
                        **_per_request(prompt, 0),
                    }
                )
    return out + runtime_entries(out), skipped


# RAGAS metrics whose prompt the metric builds at run time (none of these classes has examples of its own, so
# `_prompts_in` cannot render them): (api, `module.Class` of the metric, its settings with sentinels where the metric puts
# them in the instruction, a label for a text other settings send). Each prompt the metric holds is rendered by its own
# `to_string` on a sentinel input: AspectCritic's and SimpleCriteriaScore's definition and the rubrics' text (every
# `key: value` line of the dict, one variable) are variables of the instruction; FactualCorrectness's claim prompt is
# sent with the examples of its atomicity and coverage (low, low by default: no label).
_SETTING, _SETTING_END = MARK.format(0), MARK.format(1)
RUNTIME: list[tuple[str, str, dict[str, Any], str]] = [
    ("legacy", "ragas.metrics._aspect_critic.AspectCritic", {"name": "m", "definition": _SETTING}, ""),
    ("legacy", "ragas.metrics._simple_criteria.SimpleCriteriaScore", {"name": "m", "definition": _SETTING}, ""),
    ("legacy", "ragas.metrics._domain_specific_rubrics.RubricsScore", {"rubrics": {_SETTING: _SETTING_END}}, ""),
    ("legacy", "ragas.metrics._instance_specific_rubrics.InstanceRubrics", {}, ""),
    *(
        (
            "legacy",
            "ragas.metrics._factual_correctness.FactualCorrectness",
            {"atomicity": a, "coverage": c},
            "" if (a, c) == ("low", "low") else f"[{a}_atomicity_{c}_coverage]",
        )
        for a in ("low", "high")
        for c in ("low", "high")
    ),
    ("collections", "ragas.metrics.collections.noise_sensitivity.metric.NoiseSensitivity", {}, ""),
    (
        "collections",
        "ragas.metrics.collections.domain_specific_rubrics.metric.DomainSpecificRubrics",
        {"rubrics": {_SETTING: _SETTING_END}},
        "[rubrics]",
    ),
]


# RUNTIME metrics whose setting (`_SETTING`'s variable) states the scale of the output's `score`: a rule of
# serve/core/prompt_rules.py `narrowing` reading it per request. The rubrics' `key: value` lines give the lowest and
# highest `scoreN_description` (RAGAS asks for a score by them; its output model takes any integer: in a real run the
# default model answered 20 to a 1-5 rubric); SimpleCriteriaScore's definition states its range in words
# ("Score 0 to 5 for correctness", RAGAS's own example).
SETTING_RULES = {
    "ragas.metrics._simple_criteria.SimpleCriteriaScore": "range_in",
    "ragas.metrics._domain_specific_rubrics.RubricsScore": "rubric_lines",
    "ragas.metrics.collections.domain_specific_rubrics.metric.DomainSpecificRubrics": "rubric_lines",
}


def _per_request(prompt: Any, var: int) -> dict[str, Any]:
    """A RAGAS prompt's per-request rules (serve/core/prompt_rules.py `narrowing`), `{}` for none. Where its input lists
    `statements` and its output lists `statements` with a `verdict` each (the NLI prompts), the output holds exactly
    as many items as the request lists (`count_of` the input JSON, variable `var` of the one message): NoiseSensitivity
    stacks each context's verdicts into one numpy array, so another length is a ragged array, an exception, not a
    score; Faithfulness divides the supported verdicts by the statements' count. Where its input carries `rubrics`
    and its output a `score` (InstanceRubrics), the score lies within the rubric's `scoreN_description` keys
    (`rubric_keys`)."""
    given = prompt.input_model.model_json_schema().get("properties", {})
    out = contract(prompt.output_model.model_json_schema(), "ragas")["properties"]
    rules = []
    statements = out.get("statements", {})
    if given.get("statements", {}).get("type") == "array" and "verdict" in statements.get("items", {}).get("properties", {}):
        rules.append({"property": "statements", "count_of": [0, var], "key": "statements"})
    if "rubrics" in given and out.get("score", {}).get("type") == "integer":
        rules.append({"property": "score", "rubric_keys": [0, var], "key": "rubrics"})
    return {"from_prompt": rules} if rules else {}


def _sentinel_input(model: Any, start: int) -> Any:
    """An instance of the prompt's input model with a sentinel in each field (`[sentinel]` for a list, `{sentinel:
    sentinel}` for a dict), numbered from `start`."""
    from pydantic import TypeAdapter, ValidationError

    values: dict[str, Any] = {}
    for k, (name, field) in enumerate(model.model_fields.items()):
        m = MARK.format(start + k)
        for v in (m, [m], {m: m}):
            try:
                values[name] = TypeAdapter(field.annotation).validate_python(v)
                break
            except ValidationError:
                continue
    return model.model_construct(**values)


def _input_object(text: str, marks: list[str]) -> tuple[int, int]:
    """Where the input JSON object holding every one of `marks` starts and ends in `text`."""
    first = min(text.index(m) for m in marks)
    last = max(text.index(m) + len(m) for m in marks)
    decoder = json.JSONDecoder()
    p = first
    while True:
        p = text.rindex("{", 0, p)
        try:
            _, end = decoder.raw_decode(text, p)
        except ValueError:
            continue
        if end >= last:
            return p, end


def _runtime_prompts(api: str, path: str, settings: dict[str, Any]) -> list[tuple[str, Any]]:
    """(`module.Class`, the instance) of each prompt the metric `path` built with `settings` holds."""
    from ragas.llms.base import InstructorBaseRagasLLM
    from ragas.prompt import PydanticPrompt
    from ragas.prompt.metrics.base_prompt import BasePrompt

    class NoLLM(InstructorBaseRagasLLM):  # a collections metric's `llm` argument: the generator only renders prompts
        def generate(self, prompt: str, response_model: Any) -> Any:
            raise NotImplementedError

        async def agenerate(self, prompt: str, response_model: Any) -> Any:
            raise NotImplementedError

    mod, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(mod), name)
    metric = cls(llm=NoLLM(), **settings) if api == "collections" else cls(**settings)
    held = [v for v in vars(metric).values() if isinstance(v, (PydanticPrompt, BasePrompt))]
    return [(f"{type(p).__module__}.{type(p).__qualname__}", p) for p in held]


def runtime_entries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The RUNTIME prompts' entries, each text once (a metric's single- and multi-turn prompts send one text: one
    entry naming both); a text `rows` already holds (FactualCorrectness's NLI prompt) is left to that entry."""
    out: list[dict[str, Any]] = []
    for api, path, settings, label in RUNTIME:
        package = "ragas.metrics.collections" if api == "collections" else "ragas.metrics"
        for source, prompt in _runtime_prompts(api, path, settings):
            fields = list(prompt.input_model.model_fields)
            data = _sentinel_input(prompt.input_model, 10)
            text = prompt.to_string(data)
            marks = [m for m in (MARK.format(10 + k) for k in range(len(fields))) if m in text]
            i, j = _input_object(text, marks)
            before, after = text[:i], text[j:]
            if _SETTING_END in before:  # the rubrics, from the first key to the last value: one variable
                head, rest = before.split(_SETTING, 1)
                before = head + _SETTING + rest.split(_SETTING_END, 1)[1]
            segs = [*_MARKS.split(before), after]
            if _MARKS.search(after):
                raise SystemExit(f"{source}: a sentinel after the input")
            order = _MARKS.findall(before)
            schema = prompt.output_model.model_json_schema()
            if any(r["segments"] == [segs] and r["client_schema"] == schema for r in rows):
                continue
            same = [r for r in out if r["segments"] == [segs] and r["client_schema"] == schema]
            if same:
                same[0]["source"] += f", {source}"
                continue
            extra = _per_request(prompt, len(segs) - 2)
            if path in SETTING_RULES:  # the setting is one variable of the instruction: every place it is printed
                kind = SETTING_RULES[path]
                rule = {"property": "score", kind: [[0, i] for i, m in enumerate(order) if m == _SETTING]}
                if not rule[kind] or "score" not in schema.get("properties", {}):
                    raise SystemExit(f"{source}: no setting or no score for {kind}")
                extra = {"from_prompt": [*extra.get("from_prompt", []), rule]}
            out.append(
                {
                    "judge": f"ragas.{api}.{source.removeprefix(package + '.')}{label}",
                    "source": source,
                    "roles": ["user"],
                    "segments": [segs],
                    "schema": contract(schema, "ragas"),
                    "client_schema": schema,
                    **extra,
                }
            )
    return out


# ------------------------------------------------------------------------------------------ recorded clients


class _Recorder(BaseHTTPRequestHandler):
    answer = ""
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        reply = {
            "id": "rec",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "m"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": type(self).answer}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def record(answer: str, run: Any, timeout: float = 300) -> dict[str, Any]:
    """The first chat request body `run(base_url)` sends, answered with `answer`. `run` goes on in a daemon thread:
    the client's own bookkeeping after its first call (Inspect's task display) is not waited for."""
    _Recorder.answer, _Recorder.bodies = answer, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = threading.Thread(target=run, args=(f"http://127.0.0.1:{server.server_address[1]}/v1",), daemon=True)
    client.start()
    try:
        for _ in range(int(timeout * 10)):
            if _Recorder.bodies or not client.is_alive():
                break
            client.join(0.1)
        if not _Recorder.bodies:
            raise SystemExit(f"{getattr(run, '__qualname__', run)}: the client sent no chat request")
        return dict(_Recorder.bodies[0])
    finally:
        server.shutdown()


def _messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]) for m in body["messages"]]


RUBRIC = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "pass": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["reason", "pass", "score"],
    "additionalProperties": False,
}


# promptfoo's three default model-graded assertions: (type, the test's vars and the assertion's value, the answer
# the recorder gives, the contract). Each contract is what promptfoo 0.121's own parser reads, in
# node_modules/promptfoo/dist/src/graders-D8C-P60-.js of 0.121.20 (the bundle dist/src/main.js imports; from
# src/matchers/llmGrading.ts; the prompts at lines 1494 and 1536, the parsers at 1916-1958 and 2043-2095):
#   * llm-rubric: `matchesLlmRubric` -> `runJsonGradingPrompt` with DEFAULT_GRADING_PROMPT: a JSON object
#     {reason, pass, score};
#   * model-graded-closedqa: `matchesClosedQa` with OPENAI_CLOSED_QA_PROMPT: `pass` is
#     `resp.output.trimEnd().endsWith("Y")`, a text ending in neither Y nor N is "Model grader produced a malformed
#     response"; the prompt asks for reasoning, then Y or N on its own line, then the letter again on a new line;
#   * factuality: `matchesFactuality` with PROMPTFOO_FACTUALITY_PROMPT: `parseFactualityJsonResponse` reads the
#     first JSON object (`extractFirstJsonObject`), its `category` a string that trimmed and upper-cased is one
#     of A-E (anything else: "Invalid category value"), `reason` optional; failing JSON,
#     `parseLegacyFactualityResponse` looks for `(A)`..`(E)`. The prompt asks for {"category", "reason"} in that
#     order, "valid JSON with no additional text".
# So closedqa's contract is a grammar (one reasoning line of Inspect's character set, then the letter on its own line
# and again on the next, as the prompt asks: promptfoo reads only the last) and factuality's a schema (`category`
# the five letters, both properties required, no others: the prompt's order; serve's --field-tokens bounds `reason`).
CLOSEDQA = 'start: REASON "\\n" VERDICT\nVERDICT: "Y\\nY" | "N\\nN"\nREASON: /[A-Za-z0-9 ,.\'-]{1,300}/\n'
FACTUALITY = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": ["A", "B", "C", "D", "E"]},
        "reason": {"type": "string"},
    },
    "required": ["category", "reason"],
    "additionalProperties": False,
}
PROMPTFOO_ASSERTIONS: list[tuple[str, dict[str, int], str, dict[str, Any]]] = [
    ("llm-rubric", {"answer": 0, "value": 1}, '{"reason": "r", "pass": true, "score": 1}', {"schema": RUBRIC}),
    ("model-graded-closedqa", {"answer": 0, "value": 1}, "Reasoning.\nY\nY", {"grammar": CLOSEDQA}),
    ("factuality", {"answer": 0, "value": 1}, '{"category": "C", "reason": "r"}', {"schema": FACTUALITY}),
]
PROMPTFOO_PROMPTS = {  # the constant each assertion's default prompt is, in promptfoo's source
    "llm-rubric": "DEFAULT_GRADING_PROMPT",
    "model-graded-closedqa": "OPENAI_CLOSED_QA_PROMPT",
    "factuality": "PROMPTFOO_FACTUALITY_PROMPT",
}


def promptfoo_config(url: str, kind: str, marks: dict[str, int]) -> dict[str, Any]:
    """A promptfooconfig that grades one echoed answer with assertion `kind` through an OpenAI-compatible server
    at `url`, nothing else configured: each variable (and the assertion's value) the sentinel `marks` names."""
    provider = {"id": "openai:chat:m", "config": {"apiBaseUrl": url, "apiKey": "unused"}}
    values = {k: MARK.format(i) for k, i in marks.items()}
    value = values.pop("value")
    return {
        "providers": [{"id": "echo"}],
        "prompts": ["{{answer}}"],  # the echo provider answers the prompt itself: the test's input is its output
        "defaultTest": {"options": {"provider": provider}},
        "tests": [{"vars": values, "assert": [{"type": kind, "value": value}]}],
    }


def run_promptfoo(config: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    """`promptfoo eval` on `config` in a scratch HOME (no telemetry, no update check, no cache, nothing written)."""
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "promptfooconfig.json").write_text(json.dumps(config))
        env = {**os.environ, "HOME": d, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1"}
        cmd = [str(PROMPTFOO), "eval", "-c", "promptfooconfig.json", "--no-cache", "--no-progress-bar", "--no-write", *extra]
        return subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=300)


def promptfoo_entries() -> tuple[list[dict[str, Any]], list[str]]:
    if not PROMPTFOO.exists():
        raise SystemExit(f"{PROMPTFOO}: run tests/test_serve_clients.py once (it npm-installs promptfoo@0.121)")
    version = json.loads((PROMPTFOO.parent.parent / "promptfoo" / "package.json").read_text())["version"]
    out = []
    for kind, marks, answer, contract_ in PROMPTFOO_ASSERTIONS:

        def run(url: str, kind: str = kind, marks: dict[str, int] = marks) -> None:
            run_promptfoo(promptfoo_config(url, kind, marks))

        body = record(answer, run)
        source = f"promptfoo {version} {PROMPTFOO_PROMPTS[kind]}"
        out.append(entry(f"promptfoo.{kind}", source, _messages(body), **contract_))
    return out, []


def _grade_grammar(text: str) -> str:
    """A reasoning line, then `GRADE: <letter>` for the letters the prompt offers (C, I and, with partial credit, P)."""
    letters = "CPI" if "GRADE: P" in text else "CI"
    return f'start: REASON "\\nGRADE: " GRADE\nREASON: /[A-Za-z0-9 ,.\'-]{{1,160}}/\nGRADE: /[{letters}]/\n'


INSPECT = """
import os, sys, tempfile
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai import scorer as scorers
from inspect_ai.solver import Generate, TaskState, solver

@solver
def answer():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output = ModelOutput.from_content("rag", sys.argv[3])
        return state
    return solve

os.environ.update(LJREC_BASE_URL=sys.argv[1], LJREC_API_KEY="unused")
scorer = getattr(scorers, sys.argv[2])(model="openai-api/ljrec/m")
task = Task(dataset=[Sample(input=sys.argv[4], target=sys.argv[5])], solver=answer(), scorer=scorer)
with tempfile.TemporaryDirectory() as d:
    eval(task, model="openai-api/ljrec/m", display="none", log_dir=d)
"""


def inspect_entries() -> tuple[list[dict[str, Any]], list[str]]:
    import inspect_ai

    out = []
    for name in ("model_graded_qa", "model_graded_fact"):
        procs: list[subprocess.Popen[bytes]] = []

        def run(url: str, name: str = name, procs: list[subprocess.Popen[bytes]] = procs) -> None:
            # its own process: Inspect's task display outlives the call
            args = [url, name, MARK.format(2), MARK.format(0), MARK.format(1)]
            procs.append(
                subprocess.Popen([sys.executable, "-c", INSPECT, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
            procs[-1].wait()

        try:
            body = record("Reasoning.\nGRADE: C", run)
        finally:
            for p in procs:
                p.kill()
                p.wait()
        msgs = _messages(body)
        out.append(
            entry(
                f"inspect.{name}",
                f"inspect_ai {inspect_ai.__version__} inspect_ai.scorer.{name} (default template and instructions)",
                msgs,
                grammar=_grade_grammar(msgs[-1][1]),
            )
        )
    return out, []


# ------------------------------------------------------------------------------------------ the file


def merge(parts: list[tuple[list[dict[str, Any]], list[str]]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The parts' entries in order, one text under two names (DeepEval's image metrics share templates) as one
    entry naming both; and every part's left-out prompts. A prompt whose text is also a built-in judge's is kept: the
    catalog gives the framework's contract precedence (serve/core/catalog.py `Catalog.builtin`)."""
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for got, why in parts:
        skipped += why
        for r in got:
            same = next((x for x in rows if (x["roles"], x["segments"]) == (r["roles"], r["segments"])), None)
            if same is None:
                rows.append(r)
            elif (same.get("schema"), same.get("grammar")) == (r.get("schema"), r.get("grammar")):
                same["judge"] += "," + r["judge"]
            else:
                skipped.append(f"{r['judge']}: the same text as {same['judge']} with another contract")
    return rows, skipped


def build() -> tuple[list[dict[str, Any]], list[str]]:
    """(the file's rows, the prompts left out with why)."""
    import deepeval
    import inspect_ai
    import ragas

    rows, skipped = merge([part() for part in (deepeval_entries, ragas_entries, promptfoo_entries, inspect_entries)])
    versions = {"deepeval": deepeval.__version__, "ragas": ragas.__version__, "inspect_ai": inspect_ai.__version__}
    versions["promptfoo"] = next(r["source"].split()[1] for r in rows if r["judge"].startswith("promptfoo."))
    return [{"versions": versions, "left_out": skipped}, *rows], skipped


def main() -> int:
    rows, skipped = build()
    OUT.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(rows) - 1} prompts; left out {len(skipped)}:")
    for s in skipped:
        print("  " + s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
