"""Output formats: one object per output contract.

Each `OutputFormat` knows three things:
  * `constraint()` – the decoding constraint as a typed value (`constraints.Regex`, `JSONSchema`, `Lark`; the
    constraint registry picks the engine that compiles it); `regex()` for a format whose constraint is a regex;
  * `parse(text)` – raw text (constrained or not) → typed pydantic verdict, or `ParseError`;
  * `normalise(verdict)` – the verdict as a score in [0, 1] (None where a format has no score).

Free-text fields are unbounded in the regex (char-bounded regexes explode the index) and bounded
in *tokens* instead: `field_tokens` is the per-field budget the engine enforces, and `max_tokens()`
the whole output's budget. The engine forces a field closed once its budget is spent, so every
output closes by construction.

Layout: `base.py` (the `OutputFormat` contract, verdict models, the public lenient parsing helpers),
`json_formats.py` (yes/no, score, pairwise, statements, verdict lists), `line_formats.py`
(score lines, four-line rubric, label choice), `result_json.py` (the instructions judge's typed
result), `json_schema.py` (any JSON schema, e.g. a client's response_format), `text.py` (free text, no
constraint), `judge_models.py` (the native formats of dedicated judge models: Prometheus 2, Flow-Judge,
Atla Selene); `FORMATS` / `make_format` here: the one registry of formats. An installed package adds
formats through the `localjudge.formats` entry point group (plugins.py): `format_class` looks one up
the first time its kind is asked for and adds it to `FORMATS`.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..store.format_spec import FormatSpec
from .base import (
    JSON_STR,
    ChoiceVerdict,
    FourLineVerdict,
    NumberRange,
    OutputFormat,
    PairwiseVerdict,
    ScoreLinesVerdict,
    ScoreVerdict,
    StatementsVerdict,
    StatementVerdict,
    VerdictListVerdict,
    YesNoVerdict,
)
from .grammar import GrammarError, GrammarFormat, GrammarVerdict
from .json_formats import PairwiseJSON, ScoreJSON, Statements, VerdictList, YesNoJSON
from .json_schema import CLIENT_CONSTRAINT, JSONSchemaFormat, SchemaError, SchemaVerdict
from .judge_models import FeedbackFormat, FeedbackVerdict, FlowJudge, Prometheus, Selene
from .line_formats import Choice, FourLine, ScoreLines
from .result_json import ResultJSON, ResultVerdict
from .text import PlainText, TextVerdict

FORMATS: dict[str, type[OutputFormat]] = {
    cls.kind: cls
    for cls in (
        YesNoJSON,
        ScoreJSON,
        PairwiseJSON,
        ScoreLines,
        FourLine,
        Choice,
        Statements,
        VerdictList,
        ResultJSON,
        JSONSchemaFormat,
        PlainText,
        GrammarFormat,
    )
}
# the native formats of dedicated judge models (Prometheus 2, Flow-Judge, Atla Selene): judge_models.py
FORMATS.update({cls.kind: cls for cls in (Prometheus, FlowJudge, Selene)})


def format_class(kind: str) -> type[OutputFormat] | None:
    """The format class of `kind`: a built-in one, else an installed plugin's (loaded and registered on first
    use); None when neither has it. A plugin that fails to load raises a one-line `PluginError`."""
    cls = FORMATS.get(kind)
    if cls is not None:
        return cls
    from ..registry import plugins

    ep = plugins.find(plugins.FORMATS, kind)
    if ep is None:
        return None
    obj = plugins.load(ep)
    if not (isinstance(obj, type) and issubclass(obj, OutputFormat)):
        raise plugins.PluginError(f"{plugins.describe(ep)} gives {obj!r}, not an OutputFormat subclass; point it at one")
    if getattr(obj, "kind", None) != kind:
        raise plugins.PluginError(f"{plugins.describe(ep)}: the class's kind is {getattr(obj, 'kind', None)!r}; make it {kind!r}")
    FORMATS[kind] = obj
    return obj


def format_kinds() -> list[str]:
    """Every format kind: the built-in ones, then those installed plugins declare (not imported)."""
    from ..registry import plugins

    return list(FORMATS) + [k for k in plugins.names(plugins.FORMATS) if k not in FORMATS]


def make_format(kind: str | FormatSpec, **params: Any) -> OutputFormat:
    """Build a format by its kind name (`yes_no_json`, `score_json`, ...) with its parameters, or from a typed
    `FormatSpec` (a stored result's format: `make_format(spec)`)."""
    if isinstance(kind, FormatSpec):
        params = {**kind.params, **params}
        kind = kind.kind
    cls = format_class(kind)
    if cls is None:
        raise InputError(f"unknown output format {kind!r}; known: {', '.join(format_kinds())}")
    if kind == "json_schema":  # a user's schema (a judge file, --prompt): llguidance unless the spec says otherwise
        params.setdefault("constraint", CLIENT_CONSTRAINT)
    try:
        return cls(**params)
    except TypeError as e:
        raise InputError(f"bad parameters for format {kind!r}: {e}") from None


__all__ = [
    "FORMATS",
    "FormatSpec",
    "JSON_STR",
    "Choice",
    "ChoiceVerdict",
    "FeedbackFormat",
    "FeedbackVerdict",
    "FlowJudge",
    "FourLine",
    "FourLineVerdict",
    "GrammarError",
    "GrammarFormat",
    "GrammarVerdict",
    "JSONSchemaFormat",
    "NumberRange",
    "OutputFormat",
    "PairwiseJSON",
    "PairwiseVerdict",
    "PlainText",
    "Prometheus",
    "ResultJSON",
    "ResultVerdict",
    "SchemaError",
    "SchemaVerdict",
    "ScoreJSON",
    "ScoreLines",
    "ScoreLinesVerdict",
    "ScoreVerdict",
    "Selene",
    "Statements",
    "StatementsVerdict",
    "StatementVerdict",
    "TextVerdict",
    "VerdictList",
    "VerdictListVerdict",
    "YesNoJSON",
    "YesNoVerdict",
    "format_class",
    "format_kinds",
    "make_format",
]
