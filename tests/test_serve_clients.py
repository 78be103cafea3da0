"""Evaluation frameworks on their documented local-model path, pointed at a real `localjudge serve` on a
loopback port (the default model, one thread), 5 RAG cases each, every answer parsed by the client itself:

  * RAGAS `llm_factory` (instructor JSON mode: `json_object`, the schema only in the system message):
    the server constrains to the schema instructor states, so every row is scored;
  * DeepEval `LocalModel` (`deepeval set-local-model`; plain text, no response_format) with G-Eval, through an
    alias whose format is a JSON schema file of G-Eval's `{reason, score}`;
  * Inspect AI `model_graded_qa` through its OpenAI-compatible provider, through an alias whose format is a
    Lark grammar ending in `GRADE: C|P|I`;
  * promptfoo's `llm-rubric` (the npm CLI) with an openai provider, through an alias of the `{reason, pass,
    score}` schema (skipped, with the reason, when npm cannot install promptfoo).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from serve_support import get, healthy, promptfoo_cli, start_server

pytestmark = pytest.mark.slow

CASES = [
    ("What is the capital of France?", "Paris is the capital of France.", "Paris is the capital and largest city of France."),
    ("How many legs has a spider?", "A spider has six legs.", "Spiders have eight legs and two body parts."),
    ("Who wrote Hamlet?", "William Shakespeare wrote Hamlet.", "Hamlet is a tragedy written by William Shakespeare."),
    ("What does water boil at?", "Water boils at 100 degrees Celsius at sea level.", "At sea level, water boils at 100 C."),
    ("What is the largest planet?", "Mars is the largest planet.", "Jupiter is the largest planet in the Solar System."),
]
GEVAL_SCHEMA = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "score": {"type": "integer", "minimum": 0, "maximum": 10}},
    "required": ["reason", "score"],
    "additionalProperties": False,
}
RUBRIC_SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "pass": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["reason", "pass", "score"],
    "additionalProperties": False,
}
GRADE_GRAMMAR = 'start: REASON "\\nGRADE: " GRADE\nREASON: /[A-Za-z0-9 ,.\'-]{1,160}/\nGRADE: /[CPI]/\n'


@pytest.fixture(scope="module")
def clients_server(tmp_path_factory):
    """`serve --model-name judge` with three aliases: G-Eval's schema, promptfoo's rubric schema, Inspect's grammar."""
    d = tmp_path_factory.mktemp("aliases")
    (d / "geval.json").write_text(json.dumps(GEVAL_SCHEMA))
    (d / "rubric.json").write_text(json.dumps(RUBRIC_SCHEMA))
    (d / "grade.lark").write_text(GRADE_GRAMMAR)
    server = start_server(
        "--threads", "1", "--model-name", "judge", "--compile-timeout", "20",
        "--alias", "geval=judge", "--format", str(d / "geval.json"),
        "--alias", "rubric=judge", "--format", str(d / "rubric.json"),
        "--alias", "grader=judge", "--format", str(d / "grade.lark"),
    )  # fmt: skip
    yield server
    server.stop()


@pytest.mark.system
def test_models_and_tags_list_the_aliases(clients_server):
    status, body = get(clients_server.url, "/models")
    assert status == 200 and [m["id"] for m in body["data"]] == ["judge", "geval", "rubric", "grader"]
    base = clients_server.url.removesuffix("/v1")
    status, body = get(base, "/api/tags")
    assert status == 200 and [m["name"] for m in body["models"]] == ["judge", "geval", "rubric", "grader"]


@pytest.mark.system
def test_ragas_llm_factory_json_mode_scores_every_rag_case(clients_server):
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import Faithfulness

    llm = llm_factory("judge", provider="openai", client=AsyncOpenAI(base_url=clients_server.url, api_key="unused", timeout=1800))
    metric = Faithfulness(llm=llm)

    async def score_all() -> list[float]:
        return [
            (await metric.ascore(user_input=q, response=a, retrieved_contexts=[c])).value for q, a, c in CASES
        ]  # an instructor validation failure raises here

    values = asyncio.run(score_all())
    # every row parses in instructor (no validation error raised); NaN is RAGAS's score when the model's answer
    # lists no statements (a valid answer under the schema), so most rows, not all, are numbers
    assert len(values) == 5 and all(isinstance(v, float) and (math.isnan(v) or 0 <= v <= 1) for v in values), values
    assert sum(not math.isnan(v) for v in values) >= 3, values
    assert healthy(clients_server.url)["errors"] == 0


DEEPEVAL_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from deepeval.metrics import GEval
    from deepeval.models import LocalModel
    from deepeval.test_case import LLMTestCase, LLMTestCaseParams

    metric = GEval(
        name="Faithfulness",
        evaluation_steps=["Check whether the actual output agrees with the retrieval context.",
                          "Penalise claims the retrieval context contradicts."],
        evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT, LLMTestCaseParams.RETRIEVAL_CONTEXT],
        async_mode=False,
    )
    assert isinstance(metric.model, LocalModel), type(metric.model)
    out = []
    for q, a, c in json.loads(sys.argv[1]):
        metric.measure(LLMTestCase(input=q, actual_output=a, retrieval_context=[c]))
        out.append(metric.score)
    print(json.dumps(out))
    """
)


@pytest.mark.system
def test_deepeval_local_model_scores_every_rag_case_through_an_alias(clients_server, tmp_path):
    deepeval = shutil.which("deepeval", path=str(Path(sys.executable).parent))
    if deepeval is None:
        pytest.skip("the deepeval CLI is not installed in this environment")
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
        "DEEPEVAL_RESULTS_FOLDER": str(tmp_path / "results"),
        "LOCAL_MODEL_API_KEY": "unused",
    }
    subprocess.run(
        [deepeval, "set-local-model", "--model=geval", f"--base-url={clients_server.url}"],
        cwd=tmp_path, env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", DEEPEVAL_SCRIPT, json.dumps(CASES)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    scores = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(scores) == 5 and all(isinstance(s, (int, float)) and 0 <= s <= 1 for s in scores), scores
    assert healthy(clients_server.url)["errors"] == 0


@pytest.mark.system
def test_inspect_model_graded_qa_grades_every_rag_case_through_an_alias(clients_server, monkeypatch, tmp_path):
    from inspect_ai import Task, eval
    from inspect_ai._util.error import PrerequisiteError
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.model._providers.providers import validate_openai_client
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import Generate, TaskState, solver

    try:  # inspect-ai 0.3.285's OpenAI-compatible provider needs openai >= 3.4.0
        validate_openai_client("OpenAI Compatible API")
    except PrerequisiteError as e:
        pytest.skip(f"Inspect's OpenAI-compatible provider cannot load here: {str(e).strip().splitlines()[0]}")
    monkeypatch.setenv("LJ_BASE_URL", clients_server.url)
    monkeypatch.setenv("LJ_API_KEY", "unused")
    answers = {q: a for q, a, _ in CASES}

    @solver
    def rag_answer():  # the RAG system's answer under test, as the solver's output
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.output = ModelOutput.from_content("rag", answers[state.input_text])
            return state

        return solve

    task = Task(
        dataset=[Sample(input=q, target=c) for q, _, c in CASES],
        solver=rag_answer(),
        scorer=model_graded_qa(model="openai-api/lj/grader"),
    )
    [log] = eval(task, model="openai-api/lj/judge", display="none", log_dir=str(tmp_path))
    assert log.status == "success", log.error
    grades = [s.scores["model_graded_qa"].value for s in log.samples]
    assert len(grades) == 5 and all(g in ("C", "P", "I") for g in grades), grades
    assert healthy(clients_server.url)["errors"] == 0


@pytest.mark.system
def test_promptfoo_llm_rubric_parses_every_rag_case_through_an_alias(clients_server, tmp_path):
    cli, why = promptfoo_cli()
    if cli is None:
        pytest.skip(why)
    provider = {"id": "openai:chat:rubric", "config": {"apiBaseUrl": clients_server.url, "apiKey": "unused"}}
    config = {
        "providers": [{"id": "echo"}],
        "prompts": ["{{answer}}"],
        "defaultTest": {"options": {"provider": provider}},
        "tests": [
            {
                "vars": {"answer": a},
                "assert": [{"type": "llm-rubric", "value": f"The answer agrees with this context: {c}"}],
            }
            for _, a, c in CASES
        ],
    }
    (tmp_path / "promptfooconfig.json").write_text(json.dumps(config))
    env = {**os.environ, "HOME": str(tmp_path), "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1"}
    subprocess.run(
        [str(cli), "eval", "-c", "promptfooconfig.json", "-o", "out.json", "--no-cache", "--no-progress-bar"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )  # fmt: skip  (exit 100 when a rubric fails: a verdict, not an error)
    results = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    reasons = [r["gradingResult"]["componentResults"][0]["reason"] for r in results]
    assert len(results) == 5, reasons
    assert not any(re.search(r"Could not extract JSON|Error", x) for x in reasons), reasons
    assert healthy(clients_server.url)["errors"] == 0


def test_the_docs_recipes_state_the_contracts_these_tests_run():
    docs = (Path(__file__).parent.parent / "docs/serve.md").read_text(encoding="utf-8")
    assert json.dumps(GEVAL_SCHEMA) in docs and json.dumps(RUBRIC_SCHEMA) in docs
    assert GRADE_GRAMMAR in docs
    assert "deepeval set-local-model --model=geval" in docs and "openai-api/lj/grader" in docs
