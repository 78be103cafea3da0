"""The evaluation clients of `bench.py clients`, each called with its own defaults on the 5 RAG cases (`CASES`).

One function per client x path, `fn(base_url, model) -> usable verdicts`: MLflow, DeepEval, RAGAS, LangChain,
openai-agents, promptfoo and Inspect AI, each pointed at the server under test by the client's own settings. A
verdict is usable when the client parsed it without error and it is a value of the judge's form; the error types of
the case calls that raised are appended to `ERRORS` (bench_clients.py clears it per row and shows the first).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

CASES = [  # (question, answer, retrieved context): the same 5 RAG cases as tests/test_serve_catalog.py
    ("What is the capital of France?", "Paris.", "Paris is the capital and largest city of France."),
    ("How many legs has a spider?", "Six.", "Spiders have eight legs and two body parts."),
    ("When was the Eiffel Tower completed?", "In 1889.", "The Eiffel Tower was completed in 1889 for the World's Fair."),
    ("What do bees make?", "Honey and wax.", "Honey bees produce honey and beeswax in their hives."),
    ("Who wrote Hamlet?", "Charles Dickens.", "Hamlet is a tragedy written by William Shakespeare."),
]
# DeepEval gives up on a call after its own per-attempt timeout: on a shared 2-core CPU one long answer may
# take longer, which would measure the machine, not the client; every other client here waits.
DEEPEVAL_ENV = {"DEEPEVAL_PER_ATTEMPT_TIMEOUT_SECONDS_OVERRIDE": "1800", "DEEPEVAL_PER_TASK_TIMEOUT_SECONDS_OVERRIDE": "3600"}
ERRORS: list[str] = []  # the error types of the row being measured, in order


def _host(base_url: str) -> str:
    return base_url.removesuffix("/v1")


def _mlflow_env(base_url: str) -> None:
    import mlflow

    os.environ.update(OPENAI_API_BASE=base_url, OPENAI_API_KEY="unused", MLFLOW_DISABLE_TELEMETRY="true")
    os.environ["OLLAMA_API_BASE"] = _host(base_url)
    mlflow.set_tracking_uri(f"sqlite:///{tempfile.mkdtemp(prefix='bench-clients-')}/mlflow.db")


def _yes_no(fb: object) -> bool:
    value = getattr(fb, "value", None)
    ok = getattr(fb, "error", None) is None and str(getattr(value, "value", value)) in ("yes", "no")
    if not ok:
        print(f"    not usable: value={value!r} error={getattr(fb, 'error', None)!r}"[:240], file=sys.stderr, flush=True)
    return ok


def _unit(x: object) -> bool:
    """A score of the judge's form: a number in [0, 1] (NaN, RAGAS's 'no statements', is not one)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x) and 0 <= x <= 1


def _count(one: Callable[[str, str, str], bool]) -> int:
    """Usable verdicts over CASES; a case whose client call raises is not usable (the others still run)."""
    n = 0
    for q, a, c in CASES:
        try:
            n += bool(one(q, a, c))
        except Exception as e:  # noqa: BLE001 - measured: the client's own parse/validation error
            ERRORS.append(type(e).__name__)
            print(f"    {type(e).__name__}: {str(e).strip()[:160]!r}", file=sys.stderr, flush=True)
    return n


def mlflow_is_grounded(base_url: str, model: str) -> int:
    """MLflow's built-in `is_grounded` (the RetrievalGroundedness scorer's judge) via `openai:/`."""
    from mlflow.genai.judges import is_grounded

    _mlflow_env(base_url)
    return _count(lambda q, a, c: _yes_no(is_grounded(request=q, response=a, context=c, model=f"openai:/{model}")))


def mlflow_is_grounded_ollama(base_url: str, model: str) -> int:
    """MLflow's `is_grounded` via LiteLLM's `ollama_chat/` provider (OLLAMA_API_BASE)."""
    from mlflow.genai.judges import is_grounded

    _mlflow_env(base_url)
    return _count(lambda q, a, c: _yes_no(is_grounded(request=q, response=a, context=c, model=f"ollama_chat:/{model}")))


def mlflow_is_correct(base_url: str, model: str) -> int:
    """MLflow's built-in `is_correct` (the Correctness scorer's judge) via `openai:/`."""
    from mlflow.genai.judges import is_correct

    _mlflow_env(base_url)
    return _count(lambda q, a, c: _yes_no(is_correct(request=q, response=a, expected_response=c, model=f"openai:/{model}")))


def mlflow_make_judge(base_url: str, model: str) -> int:
    """MLflow's `make_judge` with a yes/no feedback type via `openai:/`."""
    from mlflow.genai.judges import make_judge

    _mlflow_env(base_url)
    judge = make_judge(
        name="concise",
        instructions="Is the answer in {{ outputs }} a concise reply to the question in {{ inputs }}? Answer yes or no.",
        model=f"openai:/{model}",
        feedback_value_type=Literal["yes", "no"],
    )
    return _count(lambda q, a, c: _yes_no(judge(inputs={"question": q}, outputs=a)))


DEEPEVAL_RUN = """
import json, sys
from deepeval.metrics import FaithfulnessMetric, GEval
from deepeval.models import LocalModel
from deepeval.test_case import LLMTestCase, LLMTestCaseParams

metric = {metric}
assert isinstance(metric.model, LocalModel), type(metric.model)
out = []
for q, a, c in json.loads(sys.argv[1]):
    try:
        metric.measure(LLMTestCase(input=q, actual_output=a, retrieval_context=[c]))
        out.append(metric.score if metric.error is None else None)
    except Exception as e:
        print(type(e).__name__, str(e)[:160], file=sys.stderr)
        out.append(None)
print(json.dumps(out))
"""  # the metric's scores on CASES (argv[1]) in a child process whose HOME holds `deepeval set-local-model`'s settings
DEEPEVAL_GEVAL = DEEPEVAL_RUN.replace(
    "{metric}",
    """GEval(
    name="Faithfulness",
    evaluation_steps=["Check whether the actual output agrees with the retrieval context.",
                      "Penalise claims the retrieval context contradicts."],
    evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT, LLMTestCaseParams.RETRIEVAL_CONTEXT],
    async_mode=False,
)""",
)
DEEPEVAL_FAITHFULNESS = DEEPEVAL_RUN.replace("{metric}", "FaithfulnessMetric(async_mode=False)")  # its defaults


def deepeval_local_model(base_url: str, model: str) -> int:
    """DeepEval G-Eval on `LocalModel` (`deepeval set-local-model`), in its own process and HOME."""
    return _deepeval_local(DEEPEVAL_GEVAL, base_url, model)


def _deepeval_local(script: str, base_url: str, model: str) -> int:
    cli = str(Path(sys.executable).parent / "deepeval")
    with tempfile.TemporaryDirectory(prefix="bench-deepeval-") as d:
        env = {**os.environ, **DEEPEVAL_ENV, "HOME": d, "DEEPEVAL_TELEMETRY_OPT_OUT": "1", "LOCAL_MODEL_API_KEY": "unused"}
        env["DEEPEVAL_RESULTS_FOLDER"] = str(Path(d) / "results")
        run = dict(cwd=d, env=env, capture_output=True, text=True)
        subprocess.run([cli, "set-local-model", f"--model={model}", f"--base-url={base_url}"], check=True, timeout=120, **run)
        done = subprocess.run([sys.executable, "-c", script, json.dumps(CASES)], timeout=3600, **run)
        for line in done.stderr.strip().splitlines()[-10:]:
            print(f"    {line[:200]}", file=sys.stderr, flush=True)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "deepeval failed")
        return sum(_unit(s) for s in json.loads(done.stdout.strip().splitlines()[-1]))


def deepeval_local_faithfulness(base_url: str, model: str) -> int:
    """DeepEval's FaithfulnessMetric (its defaults: reason included) on `LocalModel` (`deepeval set-local-model`)."""
    return _deepeval_local(DEEPEVAL_FAITHFULNESS, base_url, model)


def deepeval_ollama_model(base_url: str, model: str) -> int:
    """DeepEval's FaithfulnessMetric on `OllamaModel` (Ollama's /api/chat with the metric's schema)."""
    os.environ.update(DEEPEVAL_ENV, DEEPEVAL_TELEMETRY_OPT_OUT="1")  # before deepeval reads its settings
    from deepeval.metrics import FaithfulnessMetric
    from deepeval.models import OllamaModel
    from deepeval.test_case import LLMTestCase

    llm = OllamaModel(model=model, base_url=_host(base_url), temperature=0)

    def one(q: str, a: str, c: str) -> bool:
        metric = FaithfulnessMetric(model=llm, async_mode=False, include_reason=False)
        metric.measure(LLMTestCase(input=q, actual_output=a, retrieval_context=[c]))
        return metric.error is None and _unit(metric.score)

    with tempfile.TemporaryDirectory(prefix="bench-deepeval-") as d:
        cwd = os.getcwd()
        os.chdir(d)  # deepeval writes its cache and results under the working directory
        try:
            return _count(one)
        finally:
            os.chdir(cwd)


def _ragas_faithfulness(llm: object) -> int:
    import asyncio

    from ragas.metrics.collections import Faithfulness

    metric = Faithfulness(llm=llm)

    async def one(q: str, a: str, c: str) -> bool:
        return _unit((await metric.ascore(user_input=q, response=a, retrieved_contexts=[c])).value)

    async def all_cases() -> int:  # one event loop: the async client's connections belong to it
        n = 0
        for q, a, c in CASES:
            try:
                n += await one(q, a, c)
            except Exception as e:  # noqa: BLE001 - measured: instructor's validation error
                ERRORS.append(type(e).__name__)
                print(f"    {type(e).__name__}: {str(e).strip()[:160]!r}", file=sys.stderr, flush=True)
        return n

    return asyncio.run(all_cases())


def ragas_openai(base_url: str, model: str) -> int:
    """RAGAS Faithfulness on `llm_factory` with the OpenAI client (instructor JSON mode, json_object)."""
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory

    client = AsyncOpenAI(base_url=base_url, api_key="unused", timeout=1800)
    return _ragas_faithfulness(llm_factory(model, provider="openai", client=client))


def ragas_litellm_ollama(base_url: str, model: str) -> int:
    """RAGAS Faithfulness on `llm_factory(adapter="litellm")`: instructor over LiteLLM's `ollama_chat/`."""
    import instructor
    import litellm
    from ragas.llms import llm_factory

    client = instructor.from_litellm(litellm.acompletion)
    llm = llm_factory(f"ollama_chat/{model}", provider="litellm", client=client, adapter="litellm", api_base=_host(base_url))
    return _ragas_faithfulness(llm)


def ragas_legacy_langchain(base_url: str, model: str) -> int:
    """RAGAS's legacy Faithfulness (`ragas.metrics.Faithfulness`) on `LangchainLLMWrapper(ChatOpenAI(...))`, its
    documented LangChain path: plain text requests, no max_tokens."""
    import asyncio
    import warnings

    from langchain_openai import ChatOpenAI
    from ragas.dataset_schema import SingleTurnSample
    from ragas.llms import LangchainLLMWrapper

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import Faithfulness

        llm = LangchainLLMWrapper(ChatOpenAI(model=model, base_url=base_url, api_key="unused", timeout=1800))
        metric = Faithfulness(llm=llm)

    async def all_cases() -> int:
        n = 0
        for q, a, c in CASES:
            try:
                sample = SingleTurnSample(user_input=q, response=a, retrieved_contexts=[c])
                n += _unit(await metric.single_turn_ascore(sample))
            except Exception as e:  # noqa: BLE001 - measured: RAGAS's own parse error or LLMDidNotFinishException
                ERRORS.append(type(e).__name__)
                print(f"    {type(e).__name__}: {str(e).strip()[:160]!r}", file=sys.stderr, flush=True)
        return n

    return asyncio.run(all_cases())


class Grade(BaseModel):
    """The LangChain rows' structured answer."""

    grounded: bool = Field(description="whether the answer is supported by the context")
    reason: str


def _langchain(llm: object) -> int:
    structured = llm.with_structured_output(Grade)  # type: ignore[attr-defined]
    return _count(
        lambda q, a, c: isinstance(
            structured.invoke(f"Question: {q}\nAnswer: {a}\nContext: {c}\nIs the answer supported?"), Grade
        )
    )


def langchain_openai(base_url: str, model: str) -> int:
    """LangChain `ChatOpenAI(...).with_structured_output(Grade)` (its default: json_schema)."""
    from langchain_openai import ChatOpenAI

    return _langchain(ChatOpenAI(model=model, base_url=base_url, api_key="unused", temperature=0, max_tokens=160))


def langchain_ollama(base_url: str, model: str) -> int:
    """LangChain `ChatOllama(...).with_structured_output(Grade)` (Ollama's `format` = the schema)."""
    from langchain_ollama import ChatOllama

    return _langchain(ChatOllama(model=model, base_url=_host(base_url), temperature=0, num_predict=160))


def openai_agents(base_url: str, model: str) -> int:
    """openai-agents `Agent(output_type=Grade)` on its default `OpenAIResponsesModel` (/v1/responses)."""
    import asyncio

    import agents
    from openai import AsyncOpenAI
    from openai.types.responses.response_usage import InputTokensDetails

    class Details(InputTokensDetails):  # agents 0.13.6 builds usage without the field openai 2.54 requires
        cache_write_tokens: int = 0

    agents.usage.InputTokensDetails = Details  # type: ignore[attr-defined]
    agents.set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
    judge = agents.Agent(
        name="groundedness",
        instructions="Decide whether the answer is grounded in the context.",
        output_type=Grade,
        model=agents.OpenAIResponsesModel(model=model, openai_client=client),
        model_settings=agents.ModelSettings(max_tokens=96),
    )

    async def all_cases() -> int:
        n = 0
        for q, a, c in CASES:
            try:
                out = await agents.Runner.run(judge, f"Question: {q}\nAnswer: {a}\nContext: {c}")
                n += isinstance(out.final_output, Grade)
            except Exception as e:  # noqa: BLE001 - measured: the agent's parse error
                ERRORS.append(type(e).__name__)
                print(f"    {type(e).__name__}: {str(e).strip()[:160]!r}", file=sys.stderr, flush=True)
        return n

    return asyncio.run(all_cases())


def promptfoo_rubric(base_url: str, model: str) -> int:
    """promptfoo 0.121 (npm CLI) `llm-rubric` with an `openai:chat:` grader pointed at the server."""
    cli = Path.home() / ".cache" / "localjudge-tests" / "promptfoo-0.121" / "node_modules" / ".bin" / "promptfoo"
    if not cli.exists():
        raise FileNotFoundError(f"{cli}: run tests/test_serve_clients.py once (it npm-installs promptfoo@0.121)")
    provider = {"id": f"openai:chat:{model}", "config": {"apiBaseUrl": base_url, "apiKey": "unused"}}
    tests = [
        {"vars": {"answer": a}, "assert": [{"type": "llm-rubric", "value": f"The answer agrees with this context: {c}"}]}
        for _, a, c in CASES
    ]
    config = {
        "providers": [{"id": "echo"}],
        "prompts": ["{{answer}}"],
        "defaultTest": {"options": {"provider": provider}},
        "tests": tests,
    }
    with tempfile.TemporaryDirectory(prefix="bench-promptfoo-") as d:
        (Path(d) / "promptfooconfig.json").write_text(json.dumps(config))
        env = {**os.environ, "HOME": d, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1"}
        cmd = [str(cli), "eval", "-c", "promptfooconfig.json", "-o", "out.json", "--no-cache", "--no-progress-bar"]
        subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=1800)  # exit 100: a failed rubric
        results = json.loads((Path(d) / "out.json").read_text())["results"]["results"]
    graded = [r.get("gradingResult") or {} for r in results]
    parts = [(g.get("componentResults") or [{}])[0] for g in graded]
    return sum(
        isinstance(p.get("pass"), bool) and not re.search(r"Could not extract JSON|Error", str(p.get("reason"))) for p in parts
    )


def inspect_model_graded_qa(base_url: str, model: str) -> int:
    """Inspect AI `model_graded_qa` graded through its OpenAI-compatible provider (`openai-api/lj/...`), in a child
    process of its own: a second `eval` in one process, against the next server under the same model name, waited
    with no request in flight (measured 2026-12-07, Inspect AI 0.3.x: the `--no-catalog-formats` cell, after the first
    server's had finished, still waiting after 30 minutes, while a fresh process got that server's 5 grades in a
    minute)."""
    code = "import sys\nfrom scripts.benchmarks.bench_client_calls import _inspect_graded\nprint(_inspect_graded(*sys.argv[1:]))"
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", code, base_url, model], cwd=root, env=env, capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "inspect failed")
    return int(done.stdout.strip().splitlines()[-1])


def _inspect_graded(base_url: str, model: str) -> int:
    """`inspect_model_graded_qa`'s count, in the process that calls it."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import Generate, TaskState, solver

    os.environ.update(LJ_BASE_URL=base_url, LJ_API_KEY="unused")
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
        scorer=model_graded_qa(model=f"openai-api/lj/{model}"),
    )
    with tempfile.TemporaryDirectory(prefix="bench-inspect-") as d:  # the log's samples are read from d
        [log] = eval(task, model=f"openai-api/lj/{model}", display="none", log_dir=d, fail_on_error=False)
        scores = [(s.scores or {}).get("model_graded_qa") for s in log.samples or []]
    return sum(s is not None and s.value in ("C", "P", "I") for s in scores)
