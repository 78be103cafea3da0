"""The per-request rules of serve's catalog (framework_prompts.json `from_prompt`): what a recognised framework
prompt's values say about its answer, read as bounded work on the request's text.

A framework contract is shared by every request of its prompt; some answers are only right for one request's values:
ArenaGEval's winner is one of the contestants that request names, a DeepEval DAG node's verdict one of the options its
prompt prints, a RAGAS NLI answer holds one verdict per statement listed, a G-Eval or RAGAS rubric score lies in the
rubric's range. `narrowing` reads one rule against one request's variable values (`Contract.values`) and returns what
the rule adds to its property; a value that does not read as the rule expects adds nothing, so the request keeps the
shared contract (every answer of which the framework's own schema takes). Each read is bounded: the bounded JSON loader,
a length bound before `ast.literal_eval`, a linear tokenizer (no regex over client text).
"""

from __future__ import annotations

import ast
from typing import Any

from ...jsonio import loads as bounded_loads


def narrowing(rule: dict[str, Any], values: list[list[str]], prop: dict[str, Any]) -> dict[str, Any]:
    """What one `from_prompt` rule adds to its property for a request's variable `values`: `{"enum": [...]}` (the keys
    of the object at `rule["key"]` of the JSON in variable `rule["keys_of"]`: ArenaGEval's contestant names; or the
    strings of the Python list literal every place `rule["options_of"]` names holds alike: a DeepEval DAG node's
    verdict options), `{"minItems": n, "maxItems": n}` (n the length of the list at `rule["key"]` of the JSON in
    variable `rule["count_of"]`: one RAGAS verdict per statement listed) or `{"minimum": a, "maximum": b}` within
    `prop`'s own bounds: the integers in the variables `rule["minimum"]` / `rule["maximum"]` name, each place of one
    the same (G-Eval's rubric score range); the lowest and highest N of the `scoreN_description` keys of a RAGAS
    rubric, printed as `key: value` lines in `rule["rubric_lines"]` (RubricsScore, DomainSpecificRubrics) or the keys
    of the JSON object at `rule["key"]` of variable `rule["rubric_keys"]` (InstanceRubrics); the one score range the
    text in `rule["range_in"]` states (SimpleCriteriaScore's definition, `Score 0 to 5 ...`). {} when the values do
    not read so."""
    if "rubric_lines" in rule or "rubric_keys" in rule or "range_in" in rule:
        return _within(prop, _rubric_or_range(rule, values))
    if "options_of" in rule:
        read = {values[m][g] for m, g in rule["options_of"]}
        options = _str_list(read.pop()) if len(read) == 1 else []
        return {"enum": options} if 0 < len(options) <= MAX_ENUM and len(set(options)) == len(options) else {}
    if "count_of" in rule:
        held = _held(values, rule["count_of"], rule["key"])
        n = len(held) if isinstance(held, list) else -1
        return {"minItems": n, "maxItems": n} if 0 <= n <= MAX_COUNT else {}
    if "keys_of" in rule:
        held = _held(values, rule["keys_of"], rule["key"])
        names = list(held) if isinstance(held, dict) else []
        return {"enum": names} if 0 < len(names) <= MAX_ENUM else {}
    out: list[int] = []
    for bound in ("minimum", "maximum"):
        read = {values[m][g].strip() for m, g in rule[bound]}
        text = read.pop() if len(read) == 1 else ""
        if not (0 < len(text) <= 6 and text.lstrip("-").isdigit()):
            return {}
        out.append(int(text))
    return _within(prop, (out[0], out[1]))


def _within(prop: dict[str, Any], bounds: tuple[int, int] | None) -> dict[str, Any]:
    """`{"minimum": a, "maximum": b}` for `bounds` (a, b) narrowed to `prop`'s own bounds; {} for None or an empty
    range."""
    if bounds is None:
        return {}
    low, high = max(bounds[0], prop.get("minimum", bounds[0])), min(bounds[1], prop.get("maximum", bounds[1]))
    return {"minimum": low, "maximum": high} if low <= high else {}


def _rubric_or_range(rule: dict[str, Any], values: list[list[str]]) -> tuple[int, int] | None:
    """The score range a `rubric_lines`, `rubric_keys` or `range_in` rule reads from a request's values (see
    `narrowing`), or None. Lines and stated ranges: every place the rule names holds the same text, at most
    MAX_LITERAL characters."""
    if "rubric_keys" in rule:
        held = _held(values, rule["rubric_keys"], rule["key"])
        return _score_span(list(held)) if isinstance(held, dict) else None
    places = rule.get("rubric_lines") or rule["range_in"]
    read = {values[m][g] for m, g in places}
    text = read.pop() if len(read) == 1 else ""
    if not 0 < len(text) <= MAX_LITERAL:
        return None
    if "range_in" in rule:
        return stated_range(text)
    # RAGAS prints the rubric as `"\n".join(f"{key}: {value}")`: a line that starts with a score key names one; the
    # others continue a value. The first line must name one (else this is no rubric of score keys).
    lines = text.split("\n")
    keys = [line.partition(": ")[0] for line in lines]
    if _score_of(keys[0]) is None:
        return None
    return _score_span([k for k in keys if _score_of(k) is not None])


def _score_of(key: str) -> int | None:
    """N for a RAGAS rubric key `scoreN_description` (N at most 6 ASCII digits), else None."""
    n = key.removeprefix("score").removesuffix("_description")
    ok = key.startswith("score") and key.endswith("_description") and 0 < len(n) <= 6 and n.isascii() and n.isdigit()
    return int(n) if ok else None


def _score_span(keys: list[str]) -> tuple[int, int] | None:
    """(lowest, highest) N of the `scoreN_description` keys among `keys` (others ignored: a rubric may carry notes),
    when there are at least two distinct N and no N twice (a repeated key is no dict's: not read); else None."""
    if len(keys) > MAX_ENUM:
        return None
    scores = [n for n in map(_score_of, keys) if n is not None]
    if len(scores) < 2 or len(set(scores)) != len(scores):
        return None
    return min(scores), max(scores)


# words that say a range that follows (within RANGE_LOOKBACK tokens) is the score's: "Score 0 to 5", "on a scale of
# 1-10", "rate it between 1 and 5"
SCORE_WORDS = frozenset(
    {"score", "scores", "scored", "scoring", "scale", "rate", "rated", "rating", "grade", "graded", "grading", "range", "points"}
)
RANGE_LOOKBACK = 4
_DASHES = frozenset("-\u2013\u2014")  # hyphen, en dash, em dash


def stated_range(text: str) -> tuple[int, int] | None:
    """The one integer score range `text` states (`Score 0 to 5`, `scale of 1-10`, `a score between 1 and 5`: two
    integers joined by "to", a dash or "between ... and", with a score word at most RANGE_LOOKBACK words before it),
    as (low, high); None when it states none, several different ones, a range of one value, or a number that is not
    a plain integer in such a place (`0.5 to 1`). Linear work over the text (a tokenizer; no regex)."""
    toks = _tokens(text)
    found: set[tuple[int, int]] = set()
    for i in range(len(toks)):
        if toks[i] == ("word", "between") and i + 3 < len(toks) and toks[i + 2] == ("word", "and"):
            pair = (toks[i + 1], toks[i + 3])
        elif i + 2 < len(toks) and (toks[i + 1] == ("word", "to") or toks[i + 1][0] == "dash"):
            pair = (toks[i], toks[i + 2])
        else:
            continue
        if pair[0][0] != "num" or pair[1][0] != "num":
            continue
        if not any(t[0] == "word" and t[1] in SCORE_WORDS for t in toks[max(0, i - RANGE_LOOKBACK) : i]):
            continue
        if any(not t[1].isdigit() or len(t[1]) > 6 for t in pair):  # `0.5 to 1`: a scale this integer cannot keep
            return None
        a, b = int(pair[0][1]), int(pair[1][1])
        if a == b:
            return None
        found.add((min(a, b), max(a, b)))
    return found.pop() if len(found) == 1 else None


def _tokens(text: str) -> list[tuple[str, str]]:
    """`text` as ("num", digits with any `.`/`,` between digits), ("word", lowercased letters and digits), ("dash",
    c) and ("punct", c) tokens; whitespace separates them."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c.isalnum():
            j = i
            while j < n and (
                text[j].isalnum() or (text[j] in ".," and j + 1 < n and text[j + 1].isdigit() and text[j - 1].isdigit())
            ):
                j += 1
            word = text[i:j]
            digits = word.replace(".", "").replace(",", "")
            out.append(("num", word) if digits.isascii() and digits.isdigit() else ("word", word.lower()))
            i = j
        else:
            out.append(("dash" if c in _DASHES else "punct", c))
            i += 1
    return out


def _held(values: list[list[str]], place: list[int], key: str) -> Any:
    """What the JSON object in the request's variable at `place` holds at `key`, read with the bounded loader (the
    client's text: depth-checked first); None when it does not read as such an object."""
    m, g = place
    try:
        return bounded_loads(values[m][g]).get(key)
    except (ValueError, AttributeError, IndexError, RecursionError):
        return None


MAX_ENUM = 100  # the most names a per-request enum takes (ArenaGEval's contestants); more: the contract's own string
MAX_COUNT = 50  # the most items a per-request count takes (RAGAS's verdicts per statement); more: the contract's bounds
MAX_LITERAL = 20_000  # the most characters of a Python list literal `_str_list` reads, or of a rubric or definition


def _str_list(text: str) -> list[str]:
    """The strings of `text` when it is a Python list literal of strings (how Jinja prints a list: `['a', "b's"]`),
    read with `ast.literal_eval` (no code runs) after a length bound; [] for anything else."""
    text = text.strip()
    if not (2 <= len(text) <= MAX_LITERAL and text[0] == "[" and text[-1] == "]"):
        return []
    try:
        held = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return []
    return held if isinstance(held, list) and all(isinstance(x, str) for x in held) else []
