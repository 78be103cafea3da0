"""The README's "Use localjudge inside MLflow, DeepEval, RAGAS, pytest and pandas" snippets, run verbatim,
each in its own process with the default model, offline (a temporary sqlite:/// MLflow tracking store)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
NAMES = ["mlflow", "deepeval", "ragas", "pytest", "pandas"]
NEEDLES = ["mlflow.genai.evaluate", "LocalJudgeLLM", "LocalJudgeRagasLLM", "assert_judge", "pd.DataFrame"]
pytestmark = pytest.mark.slow


def snippets() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use localjudge inside MLflow, DeepEval, RAGAS, pytest and pandas", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_section_has_one_snippet_per_framework():
    found = snippets()
    assert len(found) == len(NAMES)
    for needle, code in zip(NEEDLES, found, strict=True):
        assert needle in code


@pytest.mark.parametrize("index", range(len(NAMES)), ids=NAMES)
def test_each_snippet_runs_with_the_default_model(tmp_path, _localjudge_home, index):
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "MLFLOW_MODEL_CATALOG_URI": "",
        "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
        "RAGAS_DO_NOT_TRACK": "true",
    }
    r = subprocess.run(
        [sys.executable, "-c", snippets()[index]], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout.strip().splitlines()
    if NAMES[index] == "mlflow":
        assert "correctness/mean" in out[-1] and "relevance_to_query/mean" in out[-1]
    elif NAMES[index] in ("deepeval", "ragas"):
        assert 0.0 <= float(out[-1]) <= 1.0
    elif NAMES[index] == "pandas":
        assert out[-1].split()[1] in ("yes", "no") and 0.0 <= float(out[-1].split()[2]) <= 1.0
