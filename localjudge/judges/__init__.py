"""The judge catalog: built-in judges as TOML data files, users' own files, and the `Judge` class.

    from localjudge.judges import get_judge
    judge = get_judge("correctness")
    result = judge.evaluate(engine, input="...", output="...", ground_truth=["fact 1", "fact 2"])

Adding a judge is adding a file (see `spec.py` for the schema and `builtin/` for examples).
"""

from __future__ import annotations

from .factory import make_conversational_geval_judge, make_custom_prompt_judge, make_instructions_judge, make_metric
from .judge import Judge
from .registry import get_judge, judge_from_dict, list_judges, load_judge_file, registry
from .spec import JudgeSpec

__all__ = [
    "Judge",
    "JudgeSpec",
    "get_judge",
    "judge_from_dict",
    "list_judges",
    "load_judge_file",
    "make_conversational_geval_judge",
    "make_custom_prompt_judge",
    "make_instructions_judge",
    "make_metric",
    "registry",
]
