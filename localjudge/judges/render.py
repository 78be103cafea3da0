"""Template rendering for judge prompts: three placeholder styles, value formatting, neutralisation.

Styles (a judge's `template_style`), each a single left-to-right pass, so a value that itself
contains placeholder syntax is never expanded again:
  * ``mustache`` – MLflow's `{{var}}` / `{{ var }}` (and autoevals' `{{{var}}}`); text that is not a
    declared placeholder is left as it is (MLflow's JSON examples keep their single braces).
  * ``format`` – Python `str.format` style of the RAG metric set and MLflow's v1 template: `{var}`, with `{{`
    and `}}` standing for literal braces.
  * ``js`` – a JavaScript template literal (Mastra): `${var}`, or `${<expression>}` where the judge
    maps the exact expression text to a derived variable (`expressions`); everything else is literal.

Values are turned into text by `format_value` (how lists and dicts print is a per-variable choice,
matching what the source library does), after `neutralise` has been applied to every judged string.

Delimiter neutralisation: a judged text must not be able to close the prompt's own delimiters
(inspect_ai's idea). Before a value is inserted, every `</tag` whose tag name is one of the
prompt's own XML-style tags (found in its templates, plus tags the judge generates itself such as
`<guideline>` or the keys of an XML-rendered dict) gets a backslash: `</document>` becomes
`<\\/document>`; the model still reads it, but it no longer closes `<document>`. Judges whose
delimiters are not XML tags (Factuality's `[END DATA]`) list extra `[text, replacement]` pairs.
Values without such sequences are inserted byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

Style = Literal["mustache", "format", "js"]

_MUSTACHE = re.compile(r"\{\{\{\s*([A-Za-z_][\w.]*)\s*\}\}\}|\{\{\s*([A-Za-z_][\w.]*)\s*\}\}")
_FORMAT = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_JS = re.compile(r"\$\{([^}]*)\}")
_TAG = re.compile(r"</?([A-Za-z][\w-]*)>")


class TemplateError(ValueError):
    """A template that cannot be rendered (bad syntax, undeclared placeholder, missing value)."""


def placeholders(template: str, style: Style, expressions: Mapping[str, str] | None = None) -> list[str]:
    """The variable names a template refers to, in order of first appearance."""
    names: list[str] = []
    if style == "mustache":
        found = [m.group(1) or m.group(2) for m in _MUSTACHE.finditer(template)]
    elif style == "format":
        found = []
        for m in _FORMAT.finditer(template):
            tok = m.group(0)
            if tok in ("{{", "}}"):
                continue
            if m.group(1) is None:
                raise TemplateError(f"single {tok!r} in a format-style template; write {tok * 2!r} for a literal brace")
            name = m.group(1).strip()
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise TemplateError(f"placeholder {{{m.group(1)}}} is not a plain variable name")
            found.append(name)
    elif style == "js":
        found = []
        for m in _JS.finditer(template):
            expr = m.group(1).strip()
            if expressions and expr in expressions:
                found.append(expressions[expr])
            elif re.fullmatch(r"[A-Za-z_]\w*", expr):
                found.append(expr)
            else:
                raise TemplateError(f"template expression ${{{expr}}} is neither a variable nor a declared expression")
    else:
        raise TemplateError(f"unknown template style {style!r}; use mustache, format or js")
    for n in found:
        if n not in names:
            names.append(n)
    return names


def render(
    template: str, style: Style, values: Mapping[str, str], expressions: Mapping[str, str] | None = None, partial: bool = False
) -> str:
    """Substitute `values` (already text) into `template`.

    A placeholder without a value raises TemplateError, unless `partial`: then it is kept as written
    (mustache/js), or kept as `{name}` (format) so the result is still a template.
    """

    if style == "mustache":

        def sub(m: re.Match) -> str:
            name = m.group(1) or m.group(2)
            if name in values:
                return values[name]
            if partial or "." in name:
                return m.group(0)
            raise TemplateError(f"no value for {{{{{name}}}}}")

        return _MUSTACHE.sub(sub, template)

    if style == "format":

        def sub(m: re.Match) -> str:
            tok = m.group(0)
            if tok == "{{":
                return "{{" if partial else "{"
            if tok == "}}":
                return "}}" if partial else "}"
            if m.group(1) is None:
                raise TemplateError(f"single {tok!r} in a format-style template")
            name = m.group(1).strip()
            if name in values:
                return escape_braces(values[name]) if partial else values[name]
            if partial:
                return tok
            raise TemplateError(f"no value for {{{name}}}")

        return _FORMAT.sub(sub, template)

    if style == "js":

        def sub(m: re.Match) -> str:
            expr = m.group(1).strip()
            name = expressions.get(expr, expr) if expressions else expr
            if name in values:
                return values[name]
            if partial:
                return m.group(0)
            raise TemplateError(f"no value for ${{{expr}}}")

        return _JS.sub(sub, template)

    raise TemplateError(f"unknown template style {style!r}")


def escape_braces(text: str) -> str:
    """Literal text made safe to embed in a format-style template."""
    return text.replace("{", "{{").replace("}", "}}")


def tags_in(texts: Iterable[str]) -> set[str]:
    """Names of the XML-style tags that occur in `texts` (`<document>` and `</document>` → document)."""
    out: set[str] = set()
    for t in texts:
        out.update(m.group(1) for m in _TAG.finditer(t))
    return out


def neutralise(value: Any, tags: set[str], pairs: Iterable[tuple[str, str]] = ()) -> Any:
    """`value` with every closing sequence of the prompt's own delimiters defused (see module doc).

    Strings are processed; lists and dicts are processed item by item (dict keys are left alone);
    anything else is returned unchanged.
    """
    if isinstance(value, str):
        out = value
        if tags and "</" in out:
            pat = re.compile(r"</(" + "|".join(re.escape(t) for t in sorted(tags, key=len, reverse=True)) + r")(?![\w-])", re.I)
            out = pat.sub(lambda m: "<\\/" + m.group(1), out)
        for old, new in pairs:
            if old:
                out = out.replace(old, new)
        return out
    if isinstance(value, list | tuple):
        return [neutralise(v, tags, pairs) for v in value]
    if isinstance(value, dict):
        return {k: neutralise(v, tags, pairs) for k, v in value.items()}
    return value


ListFormat = Literal["str", "dash_lines", "indented_dash_lines", "tag_lines", "lines", "js_array", "json", "json_utf8"]
DictFormat = Literal["str", "xml_fields", "xml_blocks", "json", "json_utf8"]


def _py_str(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _js_str(value: Any) -> str:
    """JavaScript's String(x) for the JSON-like values a data row holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""  # Array.prototype.toString prints null/undefined items as empty
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    if isinstance(value, list):
        return ",".join(_js_str(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def format_value(value: Any, list_format: ListFormat = "str", dict_format: DictFormat = "str", item_tag: str = "") -> str:
    """A variable's value as prompt text.

    list_format (lists; a plain string counts as a one-item list for `tag_lines`):
      str        Python's str(): MLflow inserts `str(context)`
      dash_lines "\\n- a\\n- b" (MLflow's correctness expected facts)
      indented_dash_lines "  - a\\n    - b" (MLflow's context sufficiency expected facts)
      tag_lines  "<tag>a</tag>\\n<tag>b</tag>" (MLflow's guidelines)
      lines      one item per line
      js_array   "a,b" (a JavaScript array in a template literal)
      json       json.dumps(indent=2, ASCII-escaped) (MLflow's instructions judge)
      json_utf8  json.dumps(indent=2, ensure_ascii=False), any value (MLflow 3.17's `_safe_json_dumps`)
    dict_format (dicts): str | xml_fields ("<key>value</key>" lines, MLflow's guidelines context) | json | json_utf8 |
      xml_blocks ("<key>\\nvalue\\n</key>" blocks, key lower-cased with spaces as '_': Flow Judge's format_vars)
    """
    if list_format == "json_utf8" and not isinstance(value, dict) or dict_format == "json_utf8" and isinstance(value, dict):
        try:
            return json.dumps(value, default=str, indent=2, ensure_ascii=False)
        except (TypeError, ValueError):
            return str(value)
    if list_format == "json" and not isinstance(value, dict) or dict_format == "json" and isinstance(value, dict):
        try:
            return json.dumps(value, default=str, indent=2)
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, dict):
        if dict_format == "xml_fields":
            return "\n".join(f"<{k}>{_py_str(v)}</{k}>" for k, v in value.items())
        if dict_format == "xml_blocks":
            tags = [str(k).lower().replace(" ", "_") for k in value]
            return "\n".join(f"<{t}>\n{_py_str(v)}\n</{t}>" for t, v in zip(tags, value.values(), strict=True))
        return _py_str(value)
    if list_format == "tag_lines" and isinstance(value, str):
        value = [value]
    if isinstance(value, list | tuple):
        items = list(value)
        if list_format == "dash_lines":
            return "\n- ".join([""] + [_py_str(v) for v in items])
        if list_format == "indented_dash_lines":
            return "  " + "\n    - ".join([""] + [_py_str(v) for v in items]).strip()
        if list_format == "tag_lines":
            return "\n".join(f"<{item_tag}>{_py_str(v)}</{item_tag}>" for v in items)
        if list_format == "lines":
            return "\n".join(_py_str(v) for v in items)
        if list_format == "js_array":
            return _js_str(items)
        return str(items)
    if list_format == "js_array":
        return _js_str(value)
    return _py_str(value)
