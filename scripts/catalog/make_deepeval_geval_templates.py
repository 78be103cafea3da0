"""Dev script: write DeepEval's ConversationalGEval prompt texts to localjudge/judges/templates/deepeval_geval.toml,
from the installed deepeval package: the texts its template bundle renders (`resolve_template`) with each Jinja
variable left as a `{{name}}` placeholder, the results prompt once without and once with a rubric (its
`{% if rubric %}` blocks), and the output schemas of its pydantic models. The `deepeval_geval` judge kind
(judges/deepeval_geval.py) fills them per row. Run it again after a DeepEval upgrade;
tests/test_deepeval_geval.py checks the file against the installed package."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "localjudge/judges/templates/deepeval_geval.toml"
STEPS_VARS = ("criteria", "parameters")
RESULTS_VARS = ("evaluation_steps", "test_case_content", "turns", "parameters", "rubric")


def rendered(method: str, names: tuple[str, ...], **fixed: object) -> str:
    """DeepEval's `method` text with each of `names` as a `{{name}}` placeholder (`fixed` as given)."""
    from deepeval.templates.resolver import resolve_template

    values: dict[str, object] = {n: f"@@{n}@@" for n in names}
    values.update(fixed)
    text = resolve_template("metrics", "ConversationalGEval", method, **values)
    if "{{" in text or "{%" in text:
        raise SystemExit(f"{method}: the rendered template cannot be held as a mustache template")
    for n in names:
        if n in values and values[n] is not None:
            text = text.replace(f"@@{n}@@", "{{" + n + "}}")
    return text


def texts() -> str:
    import deepeval
    import deepeval.metrics.conversational_g_eval.schema as cgschema

    q = json.dumps  # TOML basic strings: JSON's escapes are TOML's
    steps = rendered("generate_evaluation_steps", STEPS_VARS)
    results = rendered("generate_evaluation_results", RESULTS_VARS, rubric=None)
    with_rubric = rendered("generate_evaluation_results", RESULTS_VARS)
    return (
        "# DeepEval ConversationalGEval's prompt texts (reproduced verbatim; Apache-2.0, attribution in NOTICE),\n"
        f"# written by scripts/catalog/make_deepeval_geval_templates.py from the installed deepeval {deepeval.__version__}.\n"
        "# deepeval/metrics/conversational_g_eval/templates/: each Jinja variable as a {{name}} placeholder.\n"
        f"generate_evaluation_steps = {q(steps)}\n"
        f"generate_evaluation_results = {q(results)}\n"
        f"generate_evaluation_results_rubric = {q(with_rubric)}\n"
        f"steps_schema = {q(json.dumps(cgschema.Steps.model_json_schema()))}\n"
        f"reason_score_schema = {q(json.dumps(cgschema.ReasonScore.model_json_schema()))}\n"
    )


if __name__ == "__main__":
    if "--check" in sys.argv:
        sys.exit(0 if OUT.read_text(encoding="utf-8") == texts() else 1)
    OUT.write_text(texts(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
