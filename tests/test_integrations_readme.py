"""The docs' "Use localjudge inside MLflow, DeepEval, RAGAS, pytest and pandas" snippets (docs/integrations.md,
once the README's), run verbatim, each in its own process with the default model, offline (a temporary
sqlite:/// MLflow tracking store)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from docs_snippets import section_snippets

PAGE = "docs/integrations.md"
HEADING = "Use localjudge inside MLflow, DeepEval, RAGAS, pytest and pandas"
NAMES = ["mlflow", "deepeval", "ragas", "pytest", "pandas"]
NEEDLES = ["mlflow.genai.evaluate", "LocalJudgeLLM", "LocalJudgeRagasLLM", "assert_judge", "pd.DataFrame"]
pytestmark = pytest.mark.slow


def snippets() -> list[str]:
    return section_snippets(PAGE, HEADING)


def test_the_section_has_one_snippet_per_framework():
    found = snippets()
    assert len(found) == len(NAMES)
    for needle, code in zip(NEEDLES, found, strict=True):
        assert needle in code


@pytest.mark.system
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
