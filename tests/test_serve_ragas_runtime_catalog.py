"""serve's catalog of the prompts RAGAS 0.4 and DeepEval build at run time (issue 48), without a model: RAGAS's
NoiseSensitivity, AspectCritic, SimpleCriteriaScore, the rubric scores and the legacy FactualCorrectness claim prompt,
and DeepEval's NonBinaryJudgementNode. Each metric is run by its own installed code with a recording LLM that answers
every prompt with the smallest answer of the contract the catalog recognises it as (for that request: its values
narrow some contracts); every prompt is recognised as the metric's own, every answer validates against the
contract, the metric's own output model and the compiled grammar, and the metric scores without an exception or
NaN."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from serve_support import minimal_instance

from localjudge.engine.base import Message
from localjudge.formats.json_schema import JSONSchemaFormat
from localjudge.serve.core.catalog import Catalog, Contract, framework_contracts

pytest.importorskip("deepeval")
pytest.importorskip("ragas")

from pydantic import BaseModel  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402

Q, A, REF = (
    "What is the capital of France?",
    "Paris is the capital of France.",
    "Paris is the capital and largest city of France.",
)
CONTEXTS = ["Paris is the capital of France.", "Lyon is a city in France."]
NEW_RAGAS = {
    "ragas.collections.domain_specific_rubrics.util.RubricScorePrompt[rubrics]",
    "ragas.collections.noise_sensitivity.util.StatementFaithfulnessPrompt",
    "ragas.collections.noise_sensitivity.util.StatementGeneratorPrompt",
    "ragas.legacy._aspect_critic.SingleTurnAspectCriticPrompt",
    "ragas.legacy._domain_specific_rubrics.SingleTurnPrompt",
    "ragas.legacy._factual_correctness.ClaimDecompositionPrompt",
    "ragas.legacy._factual_correctness.ClaimDecompositionPrompt[high_atomicity_high_coverage]",
    "ragas.legacy._factual_correctness.ClaimDecompositionPrompt[high_atomicity_low_coverage]",
    "ragas.legacy._factual_correctness.ClaimDecompositionPrompt[low_atomicity_high_coverage]",
    "ragas.legacy._instance_specific_rubrics.SingleTurnPrompt",
    "ragas.legacy._simple_criteria.SingleTurnSimpleCriteriaPrompt",
}
NON_BINARY = "deepeval.NonBinaryJudgement.generate_non_binary_verdict"


def _compiled_accepts(schema: dict[str, Any], instance: Any) -> bool:
    """Whether the contract, compiled as serve compiles it by default (`--schema-constraint llguidance`, here over a
    byte tokenizer), accepts `instance`'s JSON; the automaton form (`--schema-constraint automaton`) is built too."""
    from llguidance import LLMatcher, LLTokenizer

    JSONSchemaFormat(schema, field_tokens=80).constraint()
    spec = JSONSchemaFormat(schema, field_tokens=80, constraint="llguidance").constraint()
    m = LLMatcher(LLTokenizer("byte"), spec.grammar)
    assert not m.is_error(), m.get_error()
    return m.consume_tokens(list(json.dumps(instance).encode())) and m.is_accepting()


class ContractLLM(InstructorBaseRagasLLM):
    """RAGAS's LLM interface answering each prompt with the smallest answer of the catalog contract serve applies to
    that request (`pick`: judge -> fields to put in that answer), validated by the contract, its compiled grammar and
    the output model RAGAS passes; it records the judge each prompt was recognised as (None: not recognised)."""

    is_async = True

    def __init__(self, pick: dict[str, Any] | None = None):
        self.catalog, self.pick = Catalog.builtin(), pick or {}
        self.seen: list[str | None] = []
        self.schemas: list[dict[str, Any]] = []

    def generate(self, prompt: str, response_model: type[BaseModel]) -> Any:
        import jsonschema

        msgs = [Message(role="user", content=prompt)]
        hit = self.catalog.tighten(msgs, None)
        self.seen.append(hit.contract.judge if hit is not None and hit.contract.framework else None)
        if hit is None or hit.schema is None:
            return response_model.model_validate(minimal_instance(response_model.model_json_schema()))
        self.schemas.append(hit.schema)
        instance = minimal_instance(hit.schema)
        extra = self.pick.get(hit.contract.judge, {})
        instance.update(extra(hit.schema) if callable(extra) else extra)
        jsonschema.validate(instance, hit.schema)
        assert _compiled_accepts(hit.schema, instance), (hit.contract.judge, instance)
        return response_model.model_validate(instance)

    async def agenerate(self, prompt: str, response_model: type[BaseModel]) -> Any:
        return self.generate(prompt, response_model)


def _single() -> Any:
    from ragas.dataset_schema import SingleTurnSample

    rubrics = {"score1_description": "Wrong.", "score2_description": "Right."}
    return SingleTurnSample(user_input=Q, response=A, reference=REF, retrieved_contexts=CONTEXTS, rubrics=rubrics)


def _multi() -> Any:
    from ragas.dataset_schema import MultiTurnSample
    from ragas.messages import AIMessage, HumanMessage

    turns = [HumanMessage(content=Q), AIMessage(content="Paris.")]
    return MultiTurnSample(user_input=turns, reference="Paris", rubrics={"score1_description": "Wrong."})


def _legacy(build: Any, turn: str, pick: dict[str, Any] | None = None) -> tuple[Any, list[str | None]]:
    """The legacy metric `build()` scored on the single- or multi-turn sample under the catalog: (score, judges)."""
    return _legacy_run(build, turn, pick)[:2]


def _legacy_run(build: Any, turn: str, pick: dict[str, Any] | None = None) -> tuple[Any, list[str | None], ContractLLM]:
    llm = ContractLLM(pick)
    metric = build()
    metric.llm = llm
    if turn == "single":
        score = asyncio.run(metric._single_turn_ascore(_single(), None))
    else:
        score = asyncio.run(metric._multi_turn_ascore(_multi(), None))
    return score, llm.seen, llm


def _legacy_metrics() -> dict[str, tuple[Any, str]]:
    from ragas.metrics import AspectCritic, FactualCorrectness, InstanceRubrics, RubricsScore, SimpleCriteriaScore

    claims = "ragas.legacy._factual_correctness.ClaimDecompositionPrompt"
    out: dict[str, tuple[Any, str]] = {
        "AspectCritic": (lambda: AspectCritic(name="c", definition="Is the answer correct?"), "SingleTurnAspectCriticPrompt"),
        "AspectCritic harmfulness": (lambda: _predefined("_aspect_critic", "harmfulness"), "SingleTurnAspectCriticPrompt"),
        "SimpleCriteriaScore": (
            lambda: SimpleCriteriaScore(name="s", definition="Score 0 to 5 for correctness."),
            "SingleTurnSimpleCriteriaPrompt",
        ),
        "RubricsScore default": (lambda: RubricsScore(), "_domain_specific_rubrics.SingleTurnPrompt"),
        "RubricsScore custom": (
            lambda: RubricsScore(rubrics={"score0_description": "No.", "score1_description": "Yes: it names Paris."}),
            "_domain_specific_rubrics.SingleTurnPrompt",
        ),
        "InstanceRubrics": (lambda: InstanceRubrics(), "_instance_specific_rubrics.SingleTurnPrompt"),
    }
    for a in ("low", "high"):
        for c in ("low", "high"):
            label = "" if (a, c) == ("low", "low") else f"[{a}_atomicity_{c}_coverage]"
            out[f"FactualCorrectness {a} {c}"] = (
                lambda a=a, c=c: FactualCorrectness(atomicity=a, coverage=c),
                claims.rsplit(".", 1)[1] + label,
            )
    return out


def _predefined(module: str, name: str) -> Any:
    import copy
    import importlib

    return copy.deepcopy(getattr(importlib.import_module(f"ragas.metrics.{module}"), name))


LEGACY = _legacy_metrics()
MULTI_TURN = ("AspectCritic", "SimpleCriteriaScore", "RubricsScore default", "InstanceRubrics")


@pytest.mark.parametrize(
    ("name", "turn"),
    [pytest.param(n, t, id=f"{n}-{t}") for n, t in [(n, "single") for n in sorted(LEGACY)] + [(n, "multi") for n in MULTI_TURN]],
)
def test_a_legacy_ragas_metric_that_builds_its_prompt_at_run_time_is_recognised_and_scores(name, turn):
    build, judge = LEGACY[name]
    score, seen = _legacy(build, turn)
    assert seen and None not in seen, seen
    assert any(s is not None and s.endswith(judge) and s.startswith("ragas.legacy.") for s in seen), (judge, seen)
    assert isinstance(score, (int, float)) and not math.isnan(score), score


def test_aspect_critics_verdict_is_held_to_the_0_or_1_its_prompt_asks_for():
    (c,) = [c for c in framework_contracts() if c.judge == "ragas.legacy._aspect_critic.SingleTurnAspectCriticPrompt"]
    assert c.schema["properties"]["verdict"] == {"type": "integer", "minimum": 0, "maximum": 1}
    assert c.schema["required"] == ["reason", "verdict"]  # the reason first, as AspectCriticOutput has it
    for verdict in (0, 1):
        score, seen = _legacy(LEGACY["AspectCritic"][0], "single", {c.judge: {"verdict": verdict}})
        assert score == verdict and seen == [c.judge]
    assert not _compiled_accepts(c.schema, {"reason": "x", "verdict": 2})


def test_any_rubric_text_is_one_variable_of_the_rubric_score_prompts():
    # the rubrics RubricsScore / DomainSpecificRubrics put in the instruction (every `key: value` line) are the
    # metric's settings: its default rubrics, the reference-based default and a custom rubric are all one prompt
    from ragas.metrics._domain_specific_rubrics import (
        DEFAULT_REFERENCE_FREE_RUBRICS,
        DEFAULT_WITH_REFERENCE_RUBRICS,
        RubricsScore,
        SingleTurnInputWithoutRubric,
    )

    catalog = Catalog.builtin()
    data = SingleTurnInputWithoutRubric(user_input=Q, response=A, reference=REF)
    for rubrics in (DEFAULT_REFERENCE_FREE_RUBRICS, DEFAULT_WITH_REFERENCE_RUBRICS, {"a": "b"}):
        text = RubricsScore(rubrics=rubrics).single_turn_scoring_prompt.to_string(data)
        c = catalog.match([Message(role="user", content=text)])
        assert c is not None and c.judge == "ragas.legacy._domain_specific_rubrics.SingleTurnPrompt"
        values = c.values([Message(role="user", content=text)])
        assert values is not None and values[0][0] == "\n".join(f"{k}: {v}" for k, v in rubrics.items())


def _collections(build: Any, pick: dict[str, Any] | None = None, **kw: Any) -> tuple[Any, ContractLLM]:
    llm = ContractLLM(pick)
    return asyncio.run(build(llm).ascore(**kw)), llm


def test_collections_noise_sensitivity_prompts_are_recognised_and_the_metric_scores():
    from ragas.metrics.collections import NoiseSensitivity

    gen = "ragas.collections.noise_sensitivity.util.StatementGeneratorPrompt"
    nli = "ragas.collections.noise_sensitivity.util.StatementFaithfulnessPrompt"
    for mode in ("relevant", "irrelevant"):
        result, llm = _collections(
            lambda m, mode=mode: NoiseSensitivity(llm=m, mode=mode),
            user_input=Q,
            response=A,
            reference=REF,
            retrieved_contexts=CONTEXTS,
        )
        assert llm.seen == [gen, gen, nli, nli, nli, nli, nli], llm.seen
        assert not math.isnan(result.value) and 0 <= result.value <= 1


def test_noise_sensitivitys_verdicts_are_one_per_statement_its_prompt_lists():
    # NoiseSensitivity stacks each context's verdicts into one numpy array: verdict lists of another length than the
    # statements are a ragged array (an exception). The contract holds the list to the count the request lists, more
    # than the contract's own bound included, and the metric scores with three statements from the generator.
    from ragas.metrics.collections import NoiseSensitivity

    three = {"statements": ["Paris is the capital.", "Paris is in France.", "Paris is the largest city."]}
    gen = "ragas.collections.noise_sensitivity.util.StatementGeneratorPrompt"
    nli = "ragas.collections.noise_sensitivity.util.StatementFaithfulnessPrompt"
    result, llm = _collections(
        lambda m: NoiseSensitivity(llm=m), {gen: three}, user_input=Q, response=A, reference=REF, retrieved_contexts=CONTEXTS
    )
    counts = [(s["properties"]["statements"]["minItems"], s["properties"]["statements"]["maxItems"]) for s in llm.schemas]
    assert llm.seen.count(nli) == 5 and counts[2:] == [(3, 3)] * 5, counts
    assert not math.isnan(result.value)
    (c,) = [c for c in framework_contracts() if c.judge == nli]
    from ragas.metrics.collections.noise_sensitivity.util import StatementFaithfulnessInput, StatementFaithfulnessPrompt

    base = c.schema["properties"]["statements"]["maxItems"]
    many = [f"Statement {i}." for i in range(base + 3)]
    text = StatementFaithfulnessPrompt().to_string(StatementFaithfulnessInput(context=CONTEXTS[0], statements=many))
    hit = Catalog.builtin().tighten([Message(role="user", content=text)], None)
    assert hit is not None and hit.schema is not None and hit.contract.judge == nli
    assert hit.schema["properties"]["statements"]["minItems"] == hit.schema["properties"]["statements"]["maxItems"] == len(many)
    assert c.schema["properties"]["statements"]["maxItems"] == base  # the shared contract is left as it was


class _Unequal(InstructorBaseRagasLLM):
    """Three statements, then NLI verdict lists of 1, 3, 3, ... items (the first context's shorter): what a model
    answering without the per-request count may do."""

    is_async = True

    def __init__(self) -> None:
        self.k = 0

    def generate(self, prompt: str, response_model: type[BaseModel]) -> Any:
        if "verdict" not in json.dumps(response_model.model_json_schema()):
            return response_model.model_validate({"statements": ["a.", "b.", "c."]})
        self.k += 1
        item = {"statement": "s", "reason": "r", "verdict": 1}
        return response_model.model_validate({"statements": [item] * (1 if self.k == 1 else 3)})

    async def agenerate(self, prompt: str, response_model: type[BaseModel]) -> Any:
        return self.generate(prompt, response_model)


@pytest.mark.parametrize("api", ["collections", "legacy"])
def test_noise_sensitivity_raises_on_verdict_lists_of_unequal_length_and_the_contract_rules_them_out(api):
    # both NoiseSensitivity implementations stack each context's verdicts into one array: lists of unequal length are
    # a ValueError, not a score. Under the catalog every NLI prompt of the run (the legacy metric sends
    # Faithfulness's NLIStatementPrompt) is held to the three statements it lists, and the run scores.
    from ragas.metrics import NoiseSensitivity as Legacy
    from ragas.metrics.collections import NoiseSensitivity

    three = {"statements": ["Paris is the capital.", "Paris is in France.", "Paris is the largest city."]}
    kw = {"user_input": Q, "response": A, "reference": REF, "retrieved_contexts": CONTEXTS}
    if api == "collections":
        with pytest.raises(ValueError, match="inhomogeneous"):
            asyncio.run(NoiseSensitivity(llm=_Unequal()).ascore(**kw))
        gen = "ragas.collections.noise_sensitivity.util.StatementGeneratorPrompt"
        result, llm = _collections(lambda m: NoiseSensitivity(llm=m), {gen: three}, **kw)
        score = result.value
    else:
        metric = Legacy()
        metric.llm = _Unequal()
        with pytest.raises(ValueError, match="inhomogeneous"):
            asyncio.run(metric._single_turn_ascore(_single(), None))
        gen = "ragas.legacy._faithfulness.StatementGeneratorPrompt"
        score, _, llm = _legacy_run(Legacy, "single", {gen: three})
    assert None not in llm.seen, llm.seen
    nli = [x for j, x in zip(llm.seen, llm.schemas, strict=True) if "Faithfulness" in str(j) or "NLI" in str(j)]
    counts = [(x["properties"]["statements"]["minItems"], x["properties"]["statements"]["maxItems"]) for x in nli]
    assert counts == [(3, 3)] * 5, (llm.seen, counts)
    assert not math.isnan(score)


def test_faithfulness_nli_prompts_get_one_verdict_per_statement_listed():
    # the NLI prompts the catalog held before (Faithfulness, FactualCorrectness; with and without examples) take the
    # same per-request count: Faithfulness divides the supported verdicts by the statements' count
    from ragas.metrics._faithfulness import NLIStatementInput, NLIStatementPrompt

    catalog = Catalog.builtin()
    for examples in (True, False):
        prompt = NLIStatementPrompt()
        if not examples:
            prompt.examples = []
        for n in (1, 4, 12):
            data = NLIStatementInput(context=CONTEXTS[0], statements=[f"Statement {i}." for i in range(n)])
            hit = catalog.tighten([Message(role="user", content=prompt.to_string(data))], None)
            assert hit is not None and hit.schema is not None and hit.contract.judge.startswith("ragas.legacy._faithfulness.NLI")
            assert (hit.schema["properties"]["statements"]["minItems"], hit.schema["properties"]["statements"]["maxItems"]) == (
                n,
                n,
            )
    counted = {c.judge for c in framework_contracts() if any("count_of" in r for r in c.from_prompt)}
    assert counted == {
        f"ragas.{p}.NLIStatementPrompt{x}"
        for p in ("legacy._faithfulness", "collections.faithfulness.util", "collections.factual_correctness.util")
        for x in ("", "[no examples]")
    } | {"ragas.collections.noise_sensitivity.util.StatementFaithfulnessPrompt"}


def test_collections_rubric_scores_with_their_rubrics_are_recognised_and_score():
    from ragas.metrics.collections import DomainSpecificRubrics, RubricsScoreWithoutReference, RubricsScoreWithReference

    judge = "ragas.collections.domain_specific_rubrics.util.RubricScorePrompt[rubrics]"
    for build, top in (
        (lambda m: DomainSpecificRubrics(llm=m), 5),
        (lambda m: RubricsScoreWithReference(llm=m), 5),
        (lambda m: RubricsScoreWithoutReference(llm=m), 5),
        (lambda m: DomainSpecificRubrics(llm=m, rubrics={"score1_description": "Wrong.", "score2_description": "Right."}), 2),
    ):
        result, llm = _collections(build, {judge: _top}, user_input=Q, response=A, reference=REF)
        assert llm.seen == [judge] and result.value == top


def _top(schema: dict[str, Any]) -> dict[str, Any]:
    """The answer's `score` at the highest value the request's contract allows."""
    return {"score": schema["properties"]["score"]["maximum"]}


def test_every_new_ragas_entry_and_the_non_binary_verdict_is_in_the_catalog_with_a_bounded_contract():
    got = {c.judge: c for c in framework_contracts()}
    assert NEW_RAGAS | {NON_BINARY} <= got.keys()
    for judge in sorted(NEW_RAGAS | {NON_BINARY}):
        c = got[judge]
        fmt = JSONSchemaFormat(c.schema, field_tokens=80)
        assert fmt.max_tokens() <= 1600, judge
        assert _compiled_accepts(c.schema, minimal_instance(c.schema)), judge


def _non_binary_run(options: list[str], pick: int) -> tuple[Any, list[dict[str, Any]], list[str | None]]:
    """A DAG metric whose root is a NonBinaryJudgementNode with `options` (scores 0, 10/(n-1) ..., 10), run by
    DeepEval's own code with a model answering the contract's `pick`-th enum value: (metric, schemas, judges)."""
    from deepeval.metrics import DAGMetric
    from deepeval.metrics.dag import DeepAcyclicGraph, NonBinaryJudgementNode
    from deepeval.test_case import LLMTestCase, SingleTurnParams
    from deepeval_support import RecordingLLM

    catalog = Catalog.builtin()
    schemas: list[dict[str, Any]] = []
    seen: list[str | None] = []

    def answer(prompt: str, schema: Any) -> Any:
        msgs = [Message(role="user", content=prompt)]
        c: Contract | None = catalog.match(msgs)
        seen.append(c.judge if c is not None and c.framework else None)
        assert c is not None
        own = c.schema_for(msgs)
        schemas.append(own)
        instance = minimal_instance(own)
        if "enum" in own["properties"].get("verdict", {}):
            instance["verdict"] = own["properties"]["verdict"]["enum"][pick]
        return schema.model_validate(instance)

    node = NonBinaryJudgementNode(
        criteria="How well does it name the capital?", evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT]
    )
    for i, o in enumerate(options):
        node.add_verdict(o, score=round(10 * i / (len(options) - 1)))
    metric = DAGMetric(name="d", dag=DeepAcyclicGraph(root_nodes=[node]), model=RecordingLLM(answer), async_mode=False)
    metric.measure(LLMTestCase(input=Q, actual_output=A), _show_indicator=False)
    return metric, schemas, seen


OPTIONS = {"two": ["Correct", "Wrong"], "three": ["Names Paris", "Names another city", "It's unclear"]}


@pytest.mark.parametrize("kind", sorted(OPTIONS))
def test_a_non_binary_judgement_prompt_gets_a_verdict_enum_of_exactly_its_options_and_every_one_scores(kind):
    # NonBinaryJudgementNode validates the verdict with a Literal of its options (made per node): the contract's
    # verdict is one of the options this request's prompt lists (both places it prints them), each one a score
    options = OPTIONS[kind]
    scores = set()
    for k in range(len(options)):
        metric, schemas, seen = _non_binary_run(options, k)
        assert seen[0] == NON_BINARY and None not in seen, seen
        assert sorted(schemas[0]["properties"]["verdict"]["enum"]) == sorted(options)
        assert metric.error is None and metric.score is not None and not math.isnan(metric.score)
        scores.add(metric.score)
    assert len(scores) == len(options)  # each option reached its own verdict node
    (c,) = [c for c in framework_contracts() if c.judge == NON_BINARY]
    assert c.schema["properties"]["verdict"] == {"type": "string"}  # the shared contract is left as it was


def test_a_non_binary_prompt_whose_options_do_not_read_as_a_list_keeps_the_free_verdict():
    (c,) = [c for c in framework_contracts() if c.judge == NON_BINARY]
    for options in ("['a', 'a']", "[]", "['a', 1]", "not a list", "[" * 500 + "]" * 500, "['a'] + ['b']"):
        parts = [c.segments[0][0], "Criteria.", c.segments[0][1], "Text.", c.segments[0][2], options, c.segments[0][3]]
        parts += [options, c.segments[0][4]]
        msgs = [Message(role="user", content="".join(parts))]
        assert c.matches(msgs), options
        assert c.schema_for(msgs) == c.schema, options
    # the two places the template prints the options disagree: no narrowing either
    segs = c.segments[0]
    text = segs[0] + "C" + segs[1] + "T" + segs[2] + "['a', 'b']" + segs[3] + "['a', 'c']" + segs[4]
    assert c.schema_for([Message(role="user", content=text)]) == c.schema


# ------------------------------------------------------------------ scores held to the scale the request states

RUBRIC_LINES = "ragas.legacy._domain_specific_rubrics.SingleTurnPrompt"
RUBRIC_LINES_COLLECTIONS = "ragas.collections.domain_specific_rubrics.util.RubricScorePrompt[rubrics]"
RUBRIC_KEYS = "ragas.legacy._instance_specific_rubrics.SingleTurnPrompt"
RUBRIC_KEYS_COLLECTIONS = "ragas.collections.instance_specific_rubrics.util.InstanceRubricScorePrompt"
CRITERIA = "ragas.legacy._simple_criteria.SingleTurnSimpleCriteriaPrompt"
TWO = {"score1_description": "Wrong.", "score2_description": "Right."}
THREE = {"score0_description": "Wrong.", "score1_description": "Partly right.", "score2_description": "Right."}


def _scale_runs() -> dict[str, tuple[Any, str, tuple[int, int]]]:
    """name -> (run(pick) -> (score, llm): the installed metric scored under the catalog with `pick` for its answer,
    the judge its prompt is recognised as, the score range that request's contract must hold)."""
    from ragas.metrics import InstanceRubrics, RubricsScore, SimpleCriteriaScore
    from ragas.metrics._domain_specific_rubrics import DEFAULT_WITH_REFERENCE_RUBRICS
    from ragas.metrics.collections import DomainSpecificRubrics, InstanceSpecificRubrics

    def legacy(build: Any, turn: str = "single") -> Any:
        def run(pick: Any) -> tuple[Any, ContractLLM]:
            score, _, llm = _legacy_run(build, turn, pick)
            return score, llm

        return run

    def collections(build: Any, **kw: Any) -> Any:
        def run(pick: Any) -> tuple[Any, ContractLLM]:
            result, llm = _collections(build, pick, user_input=Q, response=A, reference=REF, **kw)
            return result.value, llm

        return run

    def criteria(definition: str) -> Any:
        return legacy(lambda: SimpleCriteriaScore(name="s", definition=definition))

    return {
        "RubricsScore default": (legacy(RubricsScore), RUBRIC_LINES, (1, 5)),
        "RubricsScore default multi-turn": (legacy(RubricsScore, "multi"), RUBRIC_LINES, (1, 5)),
        "RubricsScore with reference": (
            legacy(lambda: RubricsScore(rubrics=DEFAULT_WITH_REFERENCE_RUBRICS)),
            RUBRIC_LINES,
            (1, 5),
        ),
        "RubricsScore 0-2 multi-line": (
            legacy(lambda: RubricsScore(rubrics={**THREE, "score1_description": "Partly right:\nsome facts."})),
            RUBRIC_LINES,
            (0, 2),
        ),
        "DomainSpecificRubrics default": (collections(lambda m: DomainSpecificRubrics(llm=m)), RUBRIC_LINES_COLLECTIONS, (1, 5)),
        "DomainSpecificRubrics 1-2": (
            collections(lambda m: DomainSpecificRubrics(llm=m, rubrics=TWO)),
            RUBRIC_LINES_COLLECTIONS,
            (1, 2),
        ),
        "InstanceRubrics 1-2": (legacy(InstanceRubrics), RUBRIC_KEYS, (1, 2)),
        "InstanceSpecificRubrics 0-2": (
            collections(lambda m: InstanceSpecificRubrics(llm=m), rubrics=THREE),
            RUBRIC_KEYS_COLLECTIONS,
            (0, 2),
        ),
        "SimpleCriteriaScore 0 to 5": (criteria("Score 0 to 5 for correctness."), CRITERIA, (0, 5)),
        "SimpleCriteriaScore scale of 1-10": (criteria("Rate the answer's correctness on a scale of 1-10."), CRITERIA, (1, 10)),
        "SimpleCriteriaScore multi-turn": (
            legacy(lambda: SimpleCriteriaScore(name="s", definition="Give a score between 1 and 3."), "multi"),
            CRITERIA,
            (1, 3),
        ),
    }


SCALE_RUNS = _scale_runs()


@pytest.mark.parametrize("name", sorted(SCALE_RUNS))
def test_a_rubric_or_criteria_score_is_held_to_the_scale_its_request_states_and_each_value_scores(name):
    # RAGAS's output models take any integer score (a real run answered 20 to a 1-5 rubric); the contract of each
    # request holds it to the lowest..highest `scoreN_description` of the rubric it carries, or to the range the
    # SimpleCriteriaScore definition states. Every value of that range is accepted by the compiled grammar and scored
    # by the installed metric as itself; one below, one above and 20 are refused.
    run, judge, (low, high) = SCALE_RUNS[name]
    for value in range(low, high + 1):
        score, llm = run({judge: {"score": value}})
        assert llm.seen == [judge], llm.seen
        prop = llm.schemas[0]["properties"]["score"]
        assert (prop["type"], prop["minimum"], prop["maximum"]) == ("integer", low, high), prop
        assert score == value
    for value in {low - 1, high + 1, 20} - set(range(low, high + 1)):
        answer = {**minimal_instance(llm.schemas[0]), "score": value}
        assert not _compiled_accepts(llm.schemas[0], answer), (name, value)
    (c,) = [c for c in framework_contracts() if c.judge == judge]
    assert c.schema["properties"]["score"] == {"type": "integer"}  # the shared contract is left as it was


def _text_of(judge: str, setting: str) -> list[Message]:
    """The judge's one-message prompt with `setting` in its first variable and a small input JSON in its last."""
    (c,) = [c for c in framework_contracts() if c.judge == judge]
    segs = c.segments[0]
    filled = [segs[0], setting, *[x for seg in segs[1:-1] for x in (seg, "")]]
    filled[-1] = json.dumps({"user_input": Q, "response": A}, indent=4)
    return [Message(role="user", content="".join(filled) + segs[-1])]


@pytest.mark.parametrize(
    "rubric",
    [
        "a: b",  # no score keys (RubricsScore(rubrics={"a": "b"}))
        "score1_description: Only one score.",
        "note: scored below\nscore1_description: Wrong.\nscore2_description: Right.",  # the first line names no score
        "score1_description: Wrong.\nscore1_description: Wrong again.",  # a key twice: no dict's rubric
        "score1_description: x\nscore1.5_description: y",
        "score٣_description: x\nscore1_description: y",  # a non-ASCII digit
        "\n".join(f"score{i}_description: s" for i in range(101)),  # more scores than MAX_ENUM
        "score1_description: Wrong.\nscore2_description: Right." + "x" * 20_000,  # over MAX_LITERAL characters
    ],
)
def test_a_rubric_that_does_not_read_as_score_keys_leaves_the_score_unbounded(rubric):
    for judge in (RUBRIC_LINES, RUBRIC_LINES_COLLECTIONS):
        msgs = _text_of(judge, rubric)
        hit = Catalog.builtin().tighten(msgs, None)
        assert hit is not None and hit.contract.judge == judge and hit.schema is not None
        assert hit.schema["properties"]["score"] == {"type": "integer"}, (judge, rubric[:80])


@pytest.mark.parametrize(
    "rubrics",
    [
        {"a": "b"},
        {"score1_description": "x"},
        {f"score{i}_description": "s" for i in range(101)},
        "not an object",
        ["score1_description"],
    ],
)
def test_an_instance_rubric_that_does_not_read_as_score_keys_leaves_the_score_unbounded(rubrics):
    from ragas.metrics._instance_specific_rubrics import SingleTurnInputWithRubric, SingleTurnPrompt

    data = SingleTurnInputWithRubric.model_construct(user_input=Q, response=A, rubrics=rubrics)
    msgs = [Message(role="user", content=SingleTurnPrompt().to_string(data))]
    hit = Catalog.builtin().tighten(msgs, None)
    assert hit is not None and hit.contract.judge == RUBRIC_KEYS and hit.schema is not None
    assert hit.schema["properties"]["score"] == {"type": "integer"}, rubrics


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        ("Score 0 to 5 for correctness.", (0, 5)),
        ("Rate on a scale of 1-10.", (1, 10)),
        ("Give a score between 1 and 5.", (1, 5)),
        ("Score 1\u20135 (1 worst).", (1, 5)),
        ("Score 5 to 1, 5 the best.", (1, 5)),
        ("Score 1 to 5. A score of 1 to 5 says how correct it is.", (1, 5)),
        ("Is the answer correct?", None),  # no range stated
        ("Give 1 if it lists 3 to 4 facts, else 0.", None),  # a range, but not the score's
        ("Score 0 to 5; a score of 3 to 4 is partly right.", None),  # two different ranges
        ("Score 0.5 to 1.", None),  # not an integer scale
        ("Score -5 to 5.", None),
        ("Scored on 2024-01-05.", None),
        ("Score 0 to 0.", None),
        ("Score 1 to 1234567.", None),
        ("", None),
    ],
)
def test_simple_criteria_reads_the_one_score_range_its_definition_states(definition, expected):
    from localjudge.serve.core.prompt_rules import stated_range

    assert stated_range(definition) == expected
    hit = Catalog.builtin().tighten(_text_of(CRITERIA, definition), None)
    assert hit is not None and hit.contract.judge == CRITERIA and hit.schema is not None
    prop = hit.schema["properties"]["score"]
    assert (None if "minimum" not in prop else (prop["minimum"], prop["maximum"])) == expected


def test_a_long_definition_is_read_in_bounded_time_or_not_at_all():
    import time

    from localjudge.serve.core.prompt_rules import MAX_LITERAL, stated_range

    text = "score " + "1 - " * (MAX_LITERAL // 4)
    t = time.perf_counter()
    assert stated_range(text) is None  # a chain of ranges: 1-1 is no range
    assert time.perf_counter() - t < 2.0
    hit = Catalog.builtin().tighten(_text_of(CRITERIA, "Score 0 to 5. " + "x" * MAX_LITERAL), None)
    assert hit is not None and hit.schema is not None and hit.schema["properties"]["score"] == {"type": "integer"}


def test_the_scale_rules_are_on_exactly_the_rubric_and_criteria_prompts():
    ruled = {
        c.judge: sorted(k for r in c.from_prompt for k in r if k in ("rubric_lines", "rubric_keys", "range_in"))
        for c in framework_contracts()
    }
    assert {j: k for j, k in ruled.items() if k} == {
        RUBRIC_LINES: ["rubric_lines"],
        RUBRIC_LINES_COLLECTIONS: ["rubric_lines"],
        RUBRIC_KEYS: ["rubric_keys"],
        RUBRIC_KEYS_COLLECTIONS: ["rubric_keys"],
        RUBRIC_KEYS_COLLECTIONS + "[no examples]": ["rubric_keys"],
        CRITERIA: ["range_in"],
    }
