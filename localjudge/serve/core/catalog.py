"""Known judge prompts, recognised in a chat request and tightened to their judge's own output contract.

Clients such as MLflow send localjudge's catalog prompts verbatim (MLflow's `is_grounded` is the built-in
`groundedness` judge, word for word) but with a looser schema than the prompt asks for: MLflow's
`{"result": string, "rationale": string}` lets a small model write `"yes|no"`, which MLflow reads as
"unknown". `Catalog.match` recognises a request whose messages are one of the built-in single-call
judges' prompts, and `Catalog.tighten` constrains its answer to that judge's JSON contract intersected
with what the client asked (a tightening only: every answer is still valid for the client's schema).

Recognition is bounded work, with no regex over client text: each prompt is cut into the fixed segments
between its variables (`Contract.segments`); a candidate is looked up by the sha256 of the first message's
leading fixed text (one dict lookup per distinct prefix length), then each message must start with its
first segment, end with its last and hold the others in order (`str.find`, linear). A request that
differs by one character from the template's fixed text is not a match.

It also holds the judge prompts evaluation frameworks send with their default settings (framework_prompts.json,
written by scripts/catalog/make_framework_prompt_catalog.py from the installed DeepEval, RAGAS, promptfoo and
Inspect AI): each with its contract, a tightening of the framework's own output schema (`Contract.client_schema`)
or, where the framework reads a text line, a Lark grammar (`Contract.grammar`). Such a contract applies whole to a
request that asks for free text, any object, or exactly the framework's own schema. `Catalog.known` (any entry)
also serves one rule of `protocol.plan`: a known judge prompt sent with exactly one tool and no tool_choice or
format (instructor's TOOLS mode through LiteLLM's `ollama_chat/`, which drops tool_choice) is answered with a
call of that tool.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from ...engine.base import Message
from ...judges.render import placeholders, render
from .prompt_rules import narrowing

PREFIX = 64  # characters of a prompt's leading fixed text that key the lookup
_SENTINEL = re.compile("\x00(\\d+)\x00")  # only ever run over our own templates
_PLAIN = frozenset({"type", "description", "title", "enum", "minimum", "maximum", "default", "examples"})
_COMBINED = frozenset({"anyOf", "oneOf", "allOf", "not", "$ref", "if", "then", "else", "const", "pattern", "format"})


@dataclass(frozen=True)
class Contract:
    """One catalog judge as the server recognises it: its messages' fixed text and its output schema."""

    judge: str
    fingerprint: str  # sha256 (12 hex digits) of the roles and fixed segments
    roles: tuple[str, ...]
    segments: tuple[tuple[str, ...], ...]  # per message: the fixed text between its variables
    schema: dict[str, Any]  # the judge's output contract (a JSON schema object; {} for a prompt only recognised)
    grammar: str | None = None  # a framework prompt whose answer is text: the Lark grammar of that text
    client_schema: dict[str, Any] | None = None  # a framework prompt: the schema the framework itself validates with
    framework: str = ""  # a framework prompt: whose (deepeval, ragas, promptfoo, inspect); "" for a built-in judge
    # a framework prompt whose contract depends on its values: rules (framework_prompts.json `from_prompt`) that
    # narrow `schema` per request from the text in its variables (`schema_for`)
    from_prompt: tuple[dict[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """How the response names it (`X-Localjudge-Contract`, `system_fingerprint`)."""
        return f"{self.judge}@{self.fingerprint}"

    def matches(self, messages: list[Message]) -> bool:
        """Whether `messages` are this judge's prompt with some values in its variables."""
        if len(messages) != len(self.roles):
            return False
        return all(
            m.role == r and _spans(m.content, s) is not None for m, r, s in zip(messages, self.roles, self.segments, strict=True)
        )

    def values(self, messages: list[Message]) -> list[list[str]] | None:
        """Per message, the text in each of its variables (each fixed segment found at its first place after the
        one before it, as `matches` reads them); None when `messages` are not this prompt."""
        if len(messages) != len(self.roles):
            return None
        out = []
        for m, r, s in zip(messages, self.roles, self.segments, strict=True):
            spans = _spans(m.content, s) if m.role == r else None
            if spans is None:
                return None
            out.append([m.content[i:j] for i, j in spans])
        return out

    def schema_for(self, messages: list[Message]) -> dict[str, Any]:
        """The contract for this request: `schema` with each `from_prompt` rule applied to the values `messages` hold
        (prompt_rules.py `narrowing`; bounded: one JSON parse, list literal, integer read or linear scan of one
        variable per rule). A rule whose values do not read as it expects leaves its property as `schema` has it (every
        such answer is still one the framework's schema takes)."""
        if not self.from_prompt:
            return self.schema
        values = self.values(messages)
        if values is None:
            return self.schema
        out = copy.deepcopy(self.schema)
        for rule in self.from_prompt:
            prop = out.get("properties", {}).get(rule["property"])
            if isinstance(prop, dict):
                prop.update(narrowing(rule, values, prop))
        return out


def _spans(text: str, segs: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """Where `text` holds each variable between the fixed segments `segs` (start, end); None when it is not them."""
    if len(segs) == 1:
        return [] if text == segs[0] else None
    first, last = segs[0], segs[-1]
    if len(text) < sum(map(len, segs)) or not text.startswith(first) or not text.endswith(last):
        return None
    pos, end = len(first), len(text) - len(last)
    out = []
    for s in segs[1:-1]:
        i = text.find(s, pos, end)
        if i < 0:
            return None
        out.append((pos, i))
        pos = i + len(s)
    out.append((pos, end))
    return out


def _segments(template: str, style: Any, expressions: dict[str, str]) -> tuple[str, ...]:
    names = placeholders(template, style, expressions)
    text = render(template, style, {n: f"\x00{i}\x00" for i, n in enumerate(names)}, expressions)
    return tuple(_SENTINEL.split(text)[::2])


@dataclass(frozen=True)
class Tightened:
    """What `Catalog.tighten` decided for one request."""

    contract: Contract
    schema: dict[str, Any] | None  # the schema to constrain to; None: kept the client's (see `note`)
    note: str = ""
    grammar: str | None = None  # the Lark grammar to constrain to instead (a framework prompt answered in text)

    @property
    def header(self) -> str:
        """The `X-Localjudge-Contract` value: the contract's label, and why it was not applied when it was not."""
        applied = self.schema is not None or self.grammar is not None
        return self.contract.label if applied else f"{self.contract.label}; not applied: {self.note}"


class Catalog:
    """The built-in single-call judges whose output contract is a JSON object, and the frameworks' judge prompts
    (framework_prompts.json), by prompt fingerprint."""

    def __init__(self, contracts: list[Contract]):
        self.contracts = contracts
        self._index: dict[str, list[Contract]] = {}
        for c in contracts:
            self._index.setdefault(_key(c.segments[0][0][:PREFIX]), []).append(c)
        self._lengths = sorted({min(PREFIX, len(c.segments[0][0])) for c in contracts})
        self._grammars: dict[str, Any] = {}

    @classmethod
    def builtin(cls) -> Catalog:
        """The catalog of localjudge's built-in judges (single-call, fixed messages, a JSON object contract)."""
        from ...judges.registry import list_judges

        frameworks = framework_contracts()
        # a built-in judge whose prompt is a framework's own text verbatim (deepeval_turn_relevancy is DeepEval's
        # TurnRelevancy prompt) is matched as the framework's: its client parses the fields the prompt names
        theirs = {(c.roles, c.segments) for c in frameworks}
        seen: dict[str, Contract] = {}
        for j in list_judges(plugins=False):
            spec, fmt = j.spec, j.format
            schema = fmt.json_schema() if fmt is not None else None
            t = j.traits  # a plain single-call judge: the file's own messages, no added text or verdict rules
            plain = t.single_call and t.built_from is None and not t.extra_text and not t.four_line_rules
            if not plain or spec.examples or len(spec.suffixes) > 1 or not spec.messages:
                continue
            if not isinstance(schema, dict) or schema.get("type") != "object" or not j.origin.startswith("builtin/"):
                continue
            segs = [_segments(m.template, spec.template_style, spec.expressions) for m in spec.messages]
            roles = tuple(m.role for m in spec.messages)
            variants = [segs] + [[*segs[:-1], (*segs[-1][:-1], segs[-1][-1] + x.text)] for x in spec.suffixes]
            for v in variants:  # MLflow's correctness appends its expected-facts suffix when given a list
                key = (roles, tuple(v))
                if key in theirs:
                    continue
                fp = hashlib.sha256(repr(key).encode()).hexdigest()[:12]
                same = seen.get(fp)  # two judges with the same prompt (and contract) are one entry, both named
                name = j.name if same is None else f"{same.judge},{j.name}"
                if same is None or same.schema == schema:
                    seen[fp] = Contract(name, fp, roles, tuple(v), schema)
        return cls([*seen.values(), *frameworks])

    def match(self, messages: list[Message]) -> Contract | None:
        """The catalog judge or framework prompt that `messages` are, or None."""
        if not messages:
            return None
        head = messages[0].content
        for n in self._lengths:
            for c in self._index.get(_key(head[:n]), ()):
                if c.matches(messages):
                    return c
        return None

    known = match  # the one-tool rule's name for it (protocol.plan)

    def grammar_format(self, grammar: str) -> Any:
        """The `GrammarFormat` of a contract's grammar, built once per catalog."""
        if grammar not in self._grammars:
            from ...formats.grammar import GrammarFormat

            self._grammars[grammar] = GrammarFormat(grammar)
        return self._grammars[grammar]

    def tighten(self, messages: list[Message], client: dict[str, Any] | None) -> Tightened | None:
        """For a request whose messages are a catalog prompt: its contract intersected with the client's
        schema (`client` None: free text, so the contract itself). None when the messages are no catalog prompt."""
        c = self.match(messages)
        if c is None:
            return None
        if c.grammar is not None:  # the framework reads a line of text: free text only
            if client is None:
                return Tightened(c, None, grammar=c.grammar)
            return Tightened(c, None, "the client asked for JSON; the contract is a line of text")
        own = c.client_schema is not None and client is not None and same_schema(client, c.client_schema)
        if c.framework and (client is None or client == {"type": "object"} or own):
            # a framework prompt: its contract (for this request's values) tightens the framework's own schema
            return Tightened(c, c.schema_for(messages))
        if client is None or client == {"type": "object"}:  # free text or any object: the contract itself, if plain
            props = c.schema.get("properties", {}).values()
            plain = all(isinstance(v, dict) and v.keys() <= _PLAIN for v in props)
            return Tightened(c, c.schema) if plain else Tightened(c, None, "the contract uses keywords beyond enum and bounds")
        merged, why = intersect(client, c.schema)
        return Tightened(c, merged, why)


@functools.cache
def framework_rows() -> tuple[dict[str, Any], ...]:
    """framework_prompts.json as shipped: a first row naming the framework versions it was made from (and the
    prompts left out), then one row per prompt (judge, source, roles, segments, schema or grammar, client_schema)."""
    from importlib.resources import files

    return tuple(json.loads(files(__package__).joinpath("framework_prompts.json").read_text(encoding="utf-8")))


def framework_contracts() -> list[Contract]:
    """The framework prompts of framework_prompts.json, each with its contract (a schema or a grammar)."""
    out = []
    for r in framework_rows()[1:]:
        roles, segs = tuple(r["roles"]), tuple(tuple(m) for m in r["segments"])
        fp = hashlib.sha256(repr((roles, segs)).encode()).hexdigest()[:12]
        framework = r["judge"].split(".", 1)[0]
        out.append(
            Contract(
                r["judge"],
                fp,
                roles,
                segs,
                r.get("schema") or {},
                r.get("grammar"),
                r.get("client_schema"),
                framework,
                tuple(r.get("from_prompt", ())),
            )
        )
    return out


def framework_versions() -> dict[str, str]:
    """The framework versions framework_prompts.json was made from."""
    return dict(framework_rows()[0]["versions"])


def same_schema(a: Any, b: Any) -> bool:
    """Whether two JSON schemas are the same but for their annotations (`title`, `description`): instructor
    restates a response model's schema with its own titles."""
    if isinstance(a, dict) and isinstance(b, dict):
        ka, kb = a.keys() - _NOTES, b.keys() - _NOTES
        return ka == kb and all(same_schema(a[k], b[k]) for k in ka)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_schema(x, y) for x, y in zip(a, b, strict=True))
    return a == b and type(a) is type(b)


_NOTES = frozenset({"title", "description"})


def markdown_table(catalog: Catalog) -> str:
    """The catalog as the markdown table docs/serve.md shows (a test checks the page holds exactly this)."""
    lines = ["| judge (built-in) | fingerprint | contract (JSON schema properties) |", "|---|---|---|"]
    for c in catalog.contracts:
        if c.framework:
            continue
        props = ", ".join(f"`{k}`{_values(v)}" for k, v in c.schema.get("properties", {}).items())
        lines.append(f"| {c.judge.replace(',', ', ')} | `{c.fingerprint}` | {props} |")
    return "\n".join(lines)


def _values(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return ": " + " \\| ".join(json.dumps(v) for v in prop["enum"])
    if "minimum" in prop and "maximum" in prop:
        return f": {prop.get('type', 'number')} {prop['minimum']}..{prop['maximum']}"
    return ""


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def intersect(client: dict[str, Any], contract: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The client's object schema with each property the contract also has narrowed to the contract's values
    (an `enum` added or intersected, numeric bounds raised/lowered): every instance valid for the result is
    valid for `client`. `(None, why)` when the two cannot be intersected this way (then the client's stands)."""
    if client.get("type") != "object" or not isinstance(client.get("properties"), dict) or _COMBINED & client.keys():
        return None, "the client's schema is not a plain object schema"
    props = dict(client["properties"])
    changed = False
    for name, want in contract.get("properties", {}).items():
        have = props.get(name)
        if have is None:
            continue
        merged = _narrow(have, want)
        if merged is None:
            return None, f"property {name!r} cannot take the contract's values"
        changed |= merged != have
        props[name] = merged
    if not changed:
        return None, "the contract adds nothing to the client's schema"
    return {**client, "properties": props}, ""


def _narrow(have: Any, want: dict[str, Any]) -> dict[str, Any] | None:
    if not isinstance(have, dict) or not have.keys() <= _PLAIN:
        return None
    t = have.get("type")
    out = dict(have)
    if "enum" in want:
        allowed = want["enum"] if "enum" not in have else [v for v in want["enum"] if v in have["enum"]]
        if not allowed or any(not _type_ok(t, v) for v in allowed):
            return None
        out["enum"] = list(allowed)
        return out
    wt = want.get("type")
    if wt in ("integer", "number") and t in ("integer", "number"):
        out["type"] = "integer" if "integer" in (t, wt) else "number"
        for key, pick in (("minimum", max), ("maximum", min)):
            if key in want:
                out[key] = pick(want[key], have[key]) if key in have else want[key]
        if "minimum" in out and "maximum" in out and out["minimum"] > out["maximum"]:
            return None
        return out
    return out if wt is None or wt == t else None


def _type_ok(t: Any, v: Any) -> bool:
    if t is None:
        return True
    kinds: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}
    k = kinds.get(t) if isinstance(t, str) else None
    return k is not None and isinstance(v, k) and (t == "boolean" or not isinstance(v, bool))
