"""RAGAS's rubric and criteria scores pointed at a running server: how many of the bench's 5 RAG cases get a score
within the scale the metric's prompt states (issue 48: RAGAS's output models take any integer).

    python -m scripts.benchmarks.bench_ragas_scales http://127.0.0.1:8000/v1 [--model judge]

The server is started by hand (`localjudge serve --threads 1 --n-ctx 2048 --model-name judge`), so the same run can
measure a build of another commit. Three metrics, each on its default local path with nothing configured beyond the
served name: the legacy RubricsScore (default rubric, 1-5) and SimpleCriteriaScore (definition "Score 0 to 5 for
correctness.", RAGAS's own example) on `LangchainLLMWrapper(ChatOpenAI)`, and the collections DomainSpecificRubrics
(default rubric, 1-5) on `llm_factory` + `AsyncOpenAI`. Each line prints the count in range and every score (an
exception's type where the metric raised)."""

from __future__ import annotations

import argparse
import asyncio
import warnings
from typing import Any

from scripts.benchmarks.bench_client_calls import CASES

DEFINITION = "Score 0 to 5 for correctness."


def _legacy(url: str, model: str) -> dict[str, tuple[Any, tuple[int, int]]]:
    from langchain_openai import ChatOpenAI
    from ragas.llms import LangchainLLMWrapper

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import RubricsScore, SimpleCriteriaScore

        llm = LangchainLLMWrapper(ChatOpenAI(model=model, base_url=url, api_key="unused", timeout=1800))
        return {
            "legacy RubricsScore (default rubric, 1-5)": (RubricsScore(llm=llm), (1, 5)),
            f"legacy SimpleCriteriaScore ({DEFINITION!r})": (
                SimpleCriteriaScore(name="s", definition=DEFINITION, llm=llm),
                (0, 5),
            ),
        }


def _line(name: str, scores: list[Any], low: int, high: int) -> str:
    ok = sum(isinstance(x, (int, float)) and not isinstance(x, bool) and low <= x <= high for x in scores)
    return f"{name}: {ok}/{len(CASES)} in {low}..{high}; scores {[str(x)[:12] for x in scores]}"


async def measure(url: str, model: str) -> list[str]:
    """One line per metric: the scores in range over CASES, and the scores."""
    from openai import AsyncOpenAI
    from ragas.dataset_schema import SingleTurnSample
    from ragas.llms import llm_factory
    from ragas.metrics.collections import DomainSpecificRubrics

    out = []
    for name, (metric, (low, high)) in _legacy(url, model).items():
        scores: list[Any] = []
        for q, a, c in CASES:
            try:
                sample = SingleTurnSample(user_input=q, response=a, retrieved_contexts=[c], reference=c)
                scores.append(await metric.single_turn_ascore(sample))
            except Exception as e:  # noqa: BLE001 - measured: the metric's own error
                scores.append(type(e).__name__)
        out.append(_line(name, scores, low, high))
    llm = llm_factory(model, provider="openai", client=AsyncOpenAI(base_url=url, api_key="unused", timeout=1800))
    rubrics = DomainSpecificRubrics(llm=llm)
    scores = []
    for q, a, c in CASES:
        try:
            scores.append((await rubrics.ascore(user_input=q, response=a, reference=c)).value)
        except Exception as e:  # noqa: BLE001 - measured: the metric's own error
            scores.append(type(e).__name__)
    out.append(_line("collections DomainSpecificRubrics (default rubric, 1-5)", scores, 1, 5))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", help="the server's OpenAI base URL, e.g. http://127.0.0.1:8000/v1")
    ap.add_argument("--model", default="judge", help="the served model name (default judge)")
    a = ap.parse_args(argv)
    for line in asyncio.run(measure(a.url, a.model)):
        print(line, flush=True)


if __name__ == "__main__":
    main()
