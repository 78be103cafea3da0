"""localjudge: LLM-as-a-judge that runs on your own machine.

    import localjudge
    r = localjudge.judge("correctness", input="What is 2+2?", output="4", ground_truth="4")
    print(r.value, r.score, r.rationale)

Public names are imported lazily so `import localjudge` (and `localjudge --help`) stays instant.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "judge": "api",
    "run_format": "api",
    "load_engine": "engine",
    "ScriptedEngine": "engine",
    "DecodeOptions": "engine",
    "Message": "engine",
    "Generation": "engine",
    "JudgeResult": "results",
    "OutputFormat": "formats",
    "make_format": "formats",
    "YesNoJSON": "formats",
    "ScoreJSON": "formats",
    "PairwiseJSON": "formats",
    "ScoreLines": "formats",
    "FourLine": "formats",
    "Choice": "formats",
    "Statements": "formats",
    "VerdictList": "formats",
    "resolve_model": "models",
    "get_judge": "judges",
    "list_judges": "judges",
    "load_judge_file": "judges",
    "Judge": "judges",
    "evaluate": "frames",
    "LocalJudgeError": "errors",
    "ParseError": "errors",
    "InputError": "errors",
    "ModelError": "errors",
    "PromptTooLongError": "errors",
    "StorageError": "errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'localjudge' has no attribute {name!r}")
    return getattr(import_module(f"localjudge.{mod}"), name)
