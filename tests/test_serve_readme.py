"""The docs' "Use localjudge as a judge server" snippets (docs/serve.md, once the README's), run verbatim (only
the URL changed to the test server's) against a real `localjudge serve`: the openai client, MLflow, RAGAS
and DeepEval lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from docs_snippets import section_snippets
from serve_support import ENV

PAGE = "docs/serve.md"
HEADING = "Use localjudge as a judge server"
pytestmark = pytest.mark.slow


def snippets() -> list[str]:
    return section_snippets(PAGE, HEADING)


def test_the_section_has_the_four_client_snippets():
    found = snippets()
    assert len(found) == 4
    for needle in ("from openai import OpenAI", "OPENAI_API_BASE", "instructor.Mode.TOOLS", "USE_LOCAL_MODEL"):
        assert sum(needle in s for s in found) == 1, needle


@pytest.mark.system
@pytest.mark.parametrize("index", range(4), ids=["openai", "mlflow", "ragas", "deepeval"])
def test_each_snippet_runs_against_a_real_server(judge_server, tmp_path, index):
    code = snippets()[index].replace("http://127.0.0.1:8000/v1", judge_server.url)
    env = {**os.environ, **ENV, "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=1500)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout.strip().splitlines()[-1]
    if index == 0:
        value = json.loads(out)
        assert value["result"] in ("yes", "no") and isinstance(value["rationale"], str)
    elif index == 1:
        assert out.split()[0]  # the feedback's value, then its rationale
    elif index == 2:
        assert 0.0 <= float(out) <= 1.0
    else:  # DeepEval's plain-text requests answered under its metrics' own contracts: a score, never unparsed JSON
        assert 0.0 <= float(out) <= 1.0
