"""Output formats: one object per output contract.

Each `OutputFormat` knows three things:
  * `regex()` – the decoding constraint (compiled by outlines-core in the engine);
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
Atla Selene); `FORMATS` / `make_format` here: the one registry of formats.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
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


def make_format(kind: str, **params: Any) -> OutputFormat:
    """Build a format by its kind name (`yes_no_json`, `score_json`, ...) with its parameters."""
    if kind not in FORMATS:
        raise InputError(f"unknown output format {kind!r}; known: {', '.join(FORMATS)}")
    if kind == "json_schema":  # a user's schema (a judge file, --prompt): llguidance unless the spec says otherwise
        params.setdefault("constraint", CLIENT_CONSTRAINT)
    try:
        return FORMATS[kind](**params)
    except TypeError as e:
        raise InputError(f"bad parameters for format {kind!r}: {e}") from None


__all__ = [
    "FORMATS",
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
    "make_format",
]
