"""Served model aliases with a default output contract: `serve --alias NAME=MODEL --format FORMAT`.

Some clients cannot send a `response_format` (DeepEval's `LocalModel`, promptfoo's `llm-rubric` grader,
Inspect's `model_graded_qa`): they describe the answer they want in the prompt only. An alias is one more
name for the served model whose requests, when they send no `response_format` (and no tools that force a
call), are constrained to the alias's FORMAT:

  * a catalog format kind (`yes_no_json`, `score_json`, `result_json`, `choice`, ...: `localjudge formats`);
    one with a JSON schema is constrained as that schema, the others by their own constraint;
  * a JSON schema file (`*.json`), checked like a client `json_schema` (size, `$ref` depth, metaschema);
  * a Lark grammar file (`*.lark`, llguidance's dialect), like `response_format: {"type": "grammar"}`.

A client's own `response_format` always wins (the alias only fills the gap). Aliases are listed by
`/v1/models` and `/api/tags` beside the served name. Every bad spec is an `AliasError` with one line
naming the alias and what to do; the CLI turns it into a usage error (exit 2) before the model loads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import jsonio
from ...errors import InputError
from ...formats import GrammarError, GrammarFormat, JSONSchemaFormat, OutputFormat, SchemaError, format_kinds, make_format
from ...formats.llg_schema import LLG_MAX_SCHEMA_BYTES
from .errors import APIError
from .validate import check_schema

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}")
MAX_GRAMMAR_BYTES = 64 << 10  # a Lark grammar file is read up to this size


class AliasError(InputError):
    """A bad `--alias`/`--format` pair (one line, naming the alias); a usage error: the CLI exits 2."""

    exit_code = 2


@dataclass(frozen=True)
class Alias:
    """One served name: the model it stands for and its default output contract."""

    name: str
    model: str
    source: str  # FORMAT as given on the command line (shown in /v1/models)
    schema: dict[str, Any] | None  # the JSON schema to constrain to, or None for `fmt`
    fmt: OutputFormat | None  # a non-JSON-schema format (a grammar, a line format)


def parse_aliases(specs: tuple[str, ...], formats: tuple[str, ...], field_tokens: int = 80) -> dict[str, Alias]:
    """The aliases of `--alias NAME=MODEL` options paired in order with `--format FORMAT` options (files read and
    checked, formats built); `AliasError` for anything wrong. `check_models` checks MODEL once the model is known."""
    if len(specs) != len(formats):
        raise AliasError(f"--alias given {len(specs)} times and --format {len(formats)} times; give one --format per --alias")
    out: dict[str, Alias] = {}
    for spec, source in zip(specs, formats, strict=True):
        name, sep, model = spec.partition("=")
        if not sep or not NAME.fullmatch(name) or not model:
            raise AliasError(f"--alias {spec!r}: expected NAME=MODEL (NAME: letters, digits, . _ : / -; MODEL: the served model)")
        if name in out:
            raise AliasError(f"--alias {spec!r}: the name {name!r} is already served; pick another")
        schema, fmt = _contract(name, source, field_tokens)
        out[name] = Alias(name, model, source, schema, fmt)
    return out


def check_models(aliases: dict[str, Alias], served: str) -> None:
    """`AliasError` unless every alias stands for `served` (the server's model name) and none is named like it."""
    for a in aliases.values():
        if a.model != served:
            raise AliasError(f"--alias {a.name}={a.model}: this server serves {served!r}; write {a.name}={served}")
        if a.name == served:
            raise AliasError(f"--alias {a.name}={a.model}: {a.name!r} is the served model's own name; pick another")


def _contract(name: str, source: str, field_tokens: int) -> tuple[dict[str, Any] | None, OutputFormat | None]:
    where = f"--format {source!r} (alias {name})"
    if source.endswith((".json", ".lark")):
        path = Path(source)
        try:
            raw = path.read_bytes()[: max(LLG_MAX_SCHEMA_BYTES, MAX_GRAMMAR_BYTES) + 1]
        except OSError as e:
            raise AliasError(f"{where}: cannot read the file ({e.strerror}); give an existing file") from None
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            raise AliasError(f"{where}: the file is not UTF-8 text") from None
        if source.endswith(".lark"):
            if len(raw) > MAX_GRAMMAR_BYTES:
                raise AliasError(f"{where}: the grammar is larger than {MAX_GRAMMAR_BYTES} bytes; simplify it")
            try:
                return None, GrammarFormat(text)
            except GrammarError as e:
                raise AliasError(f"{where}: {e}") from None
        try:
            schema = jsonio.loads(text, max_depth=jsonio.PARSER_DEPTH)
        except (json.JSONDecodeError, RecursionError) as e:
            raise AliasError(f"{where}: not JSON ({e}); give a JSON schema file") from None
        return _checked(schema, where, field_tokens), None
    try:
        fmt = make_format(source, field_tokens=field_tokens)
    except InputError:
        raise AliasError(
            f"{where}: not a *.json schema file, a *.lark grammar file or a format ({', '.join(format_kinds())})"
        ) from None
    schema = fmt.json_schema()
    return (_checked(schema, where, field_tokens), None) if schema is not None else (None, fmt)


def _checked(schema: Any, where: str, field_tokens: int) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise AliasError(f"{where}: the schema must be a JSON object")
    try:
        check_schema(schema, "schema")
        JSONSchemaFormat(schema, field_tokens=field_tokens)
    except APIError as e:
        raise AliasError(f"{where}: {e.message}") from None
    except SchemaError as e:
        raise AliasError(f"{where}: {e}") from None
    return schema
