"""Every DeepEval and RAGAS metric and every distinct contract serve's catalog holds (issue 48), sent as the
framework sends it over HTTP with nothing configured (the prompt its installed package renders, here for one RAG
case; no response_format, no max_tokens) to a real `localjudge serve` on a loopback port with the default model:
each answer finishes (`stop`, never `length`), names its contract, and parses with the framework's own validator
(DeepEval's `trim_and_load_json` and the metric's schema class; the RAGAS prompt's `output_model`).

One prompt per metric and per contract (`COVER`, 216 prompts -> 88), not all 216: the rest share a covered
prompt's contract, and tests/test_serve_framework_catalog.py checks without a model that each of the 216 is
recognised as itself and that its contract's answers pass the framework's validator. The 25 DeepEval templates
paired later (`PAIRED_LATER`) add one prompt per contract schema the cover lacks (8), not one per metric: the cover
of the 132 before stays as it was (77). So do the prompts RAGAS and DeepEval build at run time (`RUNTIME_LATER`, 12):
they add the 2 contract schemas the cover lacked (AspectCritic's verdict 0..1, SimpleCriteriaScore's score). The texts other settings send (G-Eval with a rubric, RAGAS prompts without
examples: `VARIANT`) share their base prompt's contract and stay out of the cover: one of each, and ArenaGEval's
winner for three contestants, is sent by test_contracts_read_from_the_request_hold_over_a_real_server.
Last, one prompt of each metric no prompt above belongs to (`_every_metric`: 7, e.g. DeepEval's audio metrics and
VerdictNode, RAGAS's legacy rubric metrics), so that every DeepEval and RAGAS metric the catalog holds is sent: 95."""

from __future__ import annotations

import importlib
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from serve_support import fill_contract, healthy, post, start_server

from localjudge.serve.core.catalog import Contract, framework_contracts, framework_rows

pytest.importorskip("deepeval")
pytest.importorskip("ragas")
pytestmark = [pytest.mark.system, pytest.mark.slow]
CASE = ["What is the capital of France?", "Paris is the capital of France.", "Paris is the capital and largest city of France."]
RAGAS_INPUT = '{\n    "question": "What is the capital of France?",\n    "answer": "Paris is the capital of France."\n}'
CONTRACTS = [c for c in framework_contracts() if c.framework in ("deepeval", "ragas")]


def _cover(contracts: list[Contract]) -> list[Contract]:
    """A prompt of each distinct contract schema, then one of each metric (the judge name but its last part) not
    yet sent: the longest prompt where there is a choice (the tightest fit of prompt and answer in the context)."""
    by_length = sorted(contracts, key=lambda c: -sum(map(len, (x for segs in c.segments for x in segs))))
    out: list[Contract] = []
    schemas: set[str] = set()
    metrics: set[str] = set()
    for c in by_length:
        key = json.dumps(c.schema, sort_keys=True)
        if key not in schemas:
            out.append(c)
            schemas.add(key)
            metrics.update(j.rsplit(".", 1)[0] for j in c.judge.split(","))
    for c in by_length:
        names = {j.rsplit(".", 1)[0] for j in c.judge.split(",")}
        if not names <= metrics:
            out.append(c)
            metrics |= names
    return out


# issue 48's second part: DeepEval templates the generator pairs through helpers, `template_class=`, `verdict_cls=`
# or a schema passed by position (each recognised and validated without a model in test_serve_framework_catalog.py)
PAIRED_LATER = frozenset(
    "deepeval." + n
    for n in (
        "ArenaGEval.generate_arena_winner ArenaGEval.generate_evaluation_steps ArenaGEval.rewrite_reason "
        "AudioGlitchMetric.generate_reason BinaryJudgement.generate_binary_verdict "
        "ConversationCompletenessMetric.generate_verdicts ConversationalGEval.generate_evaluation_results "
        "GEval.generate_strict_evaluation_results GEval.generate_strict_trace_evaluation_results "
        "GEval.generate_trace_evaluation_results GEval.generate_trace_evaluation_steps "
        "KnowledgeRetentionMetric.generate_verdict MCPTaskCompletionMetric.get_args_correctness_score "
        "MCPTaskCompletionMetric.get_task_completion_score MCPTaskCompletionMetric.get_tool_correctness_score "
        "MCPUseMetric.get_mcp_argument_correctness_prompt MCPUseMetric.get_primitive_correctness_prompt "
        "TaskCompletionMetric.extract_goal_and_outcome TaskCompletionMetric.extract_task_and_outcome_from_trace "
        "TaskNode.generate_task_output TranscriptionAccuracyMetric.generate_audio_reason "
        "TranscriptionAccuracyMetric.generate_audio_verdicts TranscriptionAccuracyMetric.generate_reason "
        "TranscriptionAccuracyMetric.generate_verdicts VerdictNode.generate_reason"
    ).split()
)


def _new_schemas(cover: list[Contract], later: list[Contract]) -> list[Contract]:
    """The longest prompt of `later` for each contract schema `cover` does not send."""
    have = {json.dumps(c.schema, sort_keys=True) for c in cover}
    out: dict[str, Contract] = {}
    for c in sorted(later, key=lambda c: -sum(map(len, (x for segs in c.segments for x in segs)))):
        out.setdefault(json.dumps(c.schema, sort_keys=True), c)
    return [c for k, c in out.items() if k not in have]


# issue 48's third part: the prompts RAGAS builds at run time (AspectCritic, SimpleCriteriaScore, the rubric scores,
# NoiseSensitivity, legacy FactualCorrectness's claim prompt) and DeepEval's NonBinaryJudgement (each recognised and
# scored by its own metric without a model in test_serve_ragas_runtime_catalog.py): one prompt per contract schema
# the cover lacks, as for PAIRED_LATER. NonBinaryJudgement's schema is made per node (no class to validate with; its
# verdict enum is the request's): test_contracts_read_from_the_request_hold_over_a_real_server sends it.
RUNTIME_LATER = frozenset(
    [
        "deepeval.NonBinaryJudgement.generate_non_binary_verdict",
        "ragas.collections.domain_specific_rubrics.util.RubricScorePrompt[rubrics]",
        "ragas.collections.noise_sensitivity.util.StatementFaithfulnessPrompt",
        "ragas.collections.noise_sensitivity.util.StatementGeneratorPrompt",
        "ragas.legacy._aspect_critic.SingleTurnAspectCriticPrompt",
        "ragas.legacy._domain_specific_rubrics.SingleTurnPrompt",
        "ragas.legacy._instance_specific_rubrics.SingleTurnPrompt",
        "ragas.legacy._simple_criteria.SingleTurnSimpleCriteriaPrompt",
        *(
            f"ragas.legacy._factual_correctness.ClaimDecompositionPrompt{x}"
            for x in ("", "[high_atomicity_high_coverage]", "[high_atomicity_low_coverage]", "[low_atomicity_high_coverage]")
        ),
    ]
)
# DeepEval's TurnRelevancy verdicts prompt is the built-in deepeval_turn_relevancy's text; the catalog held it as the
# judge's ({rationale, result}, which DeepEval cannot read) until the framework's contract won: always sent
MATCHED_AS_BUILTIN_BEFORE = "deepeval.TurnRelevancyMetric.generate_verdicts"
# the texts other settings send (`[rubric]` G-Eval, `[no examples]` RAGAS): each shares its base prompt's contract
# schema, so none enters the cover; test_contracts_read_from_the_request_hold_over_a_real_server sends one of each
VARIANT = [c for c in CONTRACTS if c.judge.endswith("]")]
_BEFORE = _cover(
    [
        c
        for c in CONTRACTS
        if c.judge not in PAIRED_LATER | RUNTIME_LATER and c.judge != MATCHED_AS_BUILTIN_BEFORE and c not in VARIANT
    ]
)
_PAIRED = _new_schemas(_BEFORE, [c for c in CONTRACTS if c.judge in PAIRED_LATER])
_RUNTIME = _new_schemas([*_BEFORE, *_PAIRED], [c for c in CONTRACTS if c.judge in RUNTIME_LATER and c.client_schema is not None])
_SCHEMAS = [*_BEFORE, *_PAIRED, *[c for c in CONTRACTS if c.judge == MATCHED_AS_BUILTIN_BEFORE], *_RUNTIME]


def _metrics(c: Contract) -> set[str]:
    """The metrics a catalog entry's prompt belongs to (its judge names but their last part)."""
    return {j.rsplit(".", 1)[0] for j in c.judge.split(",")}


def _every_metric(sent: list[Contract], pool: list[Contract]) -> list[Contract]:
    """The longest prompt of each metric in `pool` that no prompt of `sent` belongs to: the issue asks for every
    metric the catalog holds over a real server, and the schema cover of the later groups adds only new schemas."""
    have = set().union(*(_metrics(c) for c in sent))
    out: list[Contract] = []
    for c in sorted(pool, key=lambda c: -sum(map(len, (x for segs in c.segments for x in segs)))):
        if not _metrics(c) <= have:
            out.append(c)
            have |= _metrics(c)
    return out


# sent by test_contracts_read_from_the_request_hold_over_a_real_server with the values their rules read
PER_REQUEST = frozenset(
    [
        "deepeval.ArenaGEval.generate_arena_winner",
        "deepeval.NonBinaryJudgement.generate_non_binary_verdict",
    ]
)
COVER = [
    *_SCHEMAS,
    *_every_metric(
        _SCHEMAS, [c for c in CONTRACTS if c not in VARIANT and c.judge not in PER_REQUEST and c.client_schema is not None]
    ),
]
# what the runtime prompts put in the instruction: the default rubrics' lines (RubricsScore, DomainSpecificRubrics),
# else a definition (AspectCritic, SimpleCriteriaScore)
DEFINITION = "Is the answer correct and complete?"


def _setting(c: Contract) -> str:
    """A runtime prompt's instruction variable as a default run fills it."""
    if "Scoring Rubrics:" not in c.segments[0][0]:
        return DEFINITION
    from ragas.metrics.collections.domain_specific_rubrics.util import DEFAULT_REFERENCE_FREE_RUBRICS, format_rubrics

    return format_rubrics(DEFAULT_REFERENCE_FREE_RUBRICS)


def _request(c: Contract, model: str) -> dict[str, Any]:
    values = [RAGAS_INPUT] if c.judge.startswith("ragas.") else CASE
    if c.judge.startswith("ragas.") and len(c.segments[0]) == 3:  # a definition or rubrics, then the input
        values = [_setting(c), RAGAS_INPUT]
    return {"model": model, "messages": [{"role": r, "content": t} for r, t in fill_contract(c, values)]}


def _validator(c: Contract) -> Any:
    """The pydantic model the framework validates this prompt's answer with."""
    row = next(r for r in framework_rows()[1:] if r["judge"] == c.judge)
    if c.judge.startswith("deepeval."):
        mod, _, name = row["source"].rsplit(" ", 1)[-1].rpartition(".")
        return getattr(importlib.import_module(mod), name)
    mod, _, name = row["source"].split(",")[0].rpartition(".")
    return getattr(importlib.import_module(mod), name)().output_model


@pytest.fixture(scope="module")
def server(_localjudge_home):
    # one thread (the suite runs two workers on two cores); free strings of 32 tokens, not 80, to keep the 77 answers
    # short: every field is still bounded, so the JSON must close within the contract's budget all the same
    s = start_server("--threads", "1", "--option", "n_parallel=4", "--field-tokens", "32", "--compile-timeout", "60")
    yield s
    s.stop()


def test_every_deepeval_and_ragas_prompt_is_answered_in_full_and_parses_with_the_frameworks_validator(server):
    from deepeval.models.llms.utils import trim_and_load_json  # what LocalModel parses answers with

    def one(c: Contract) -> str | None:
        status, out, headers = post(server.url, _request(c, server.model), timeout=1800)
        if status != 200:
            return f"{c.judge}: HTTP {status} {out}"
        choice = out["choices"][0]
        if choice["finish_reason"] != "stop":
            return f"{c.judge}: finish_reason {choice['finish_reason']}"
        if headers.get("x-localjudge-contract") != c.label:
            return f"{c.judge}: contract {headers.get('x-localjudge-contract')!r}"
        try:
            _validator(c).model_validate(trim_and_load_json(choice["message"]["content"]))
        except Exception as e:  # noqa: BLE001 - the framework's own parse or validation error, named per prompt
            return f"{c.judge}: {type(e).__name__}: {str(e)[:200]}"
        return None

    with ThreadPoolExecutor(4) as pool:
        failed = [x for x in pool.map(one, COVER) if x is not None]
    assert not failed, "\n".join(failed)
    assert len(CONTRACTS) >= 130 and len({json.dumps(c.schema, sort_keys=True) for c in COVER}) >= 40
    assert healthy(server.url)["errors"] == 0


def _per_request_prompts() -> list[tuple[str, str, Any]]:
    """(judge, prompt, check of the parsed answer): ArenaGEval's winner prompt for three contestants and a rubric
    G-Eval's results prompt (range 1..5), each rendered by DeepEval's own code, and RAGAS's statement prompt with its
    examples set to []."""
    import random

    from deepeval.metrics.arena_g_eval.utils import format_arena_test_case
    from deepeval.metrics.g_eval.utils import Rubric, format_rubrics, get_score_range
    from deepeval.templates.resolver import resolve_template
    from deepeval.test_case import ArenaTestCase, Contestant, LLMTestCase, SingleTurnParams
    from ragas.metrics._faithfulness import StatementGeneratorInput, StatementGeneratorPrompt

    random.seed(48)
    params = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
    contestants = [
        Contestant(name=n, test_case=LLMTestCase(input=CASE[0], actual_output=a))
        for n, a in (("m1", "Paris."), ("m2", "Lyon."), ("m3", "Paris, on the Seine."))
    ]
    formatted, names = format_arena_test_case(params, ArenaTestCase(contestants=contestants))
    arena = resolve_template(
        "metrics",
        "ArenaGEval",
        "generate_arena_winner",
        multimodal=False,
        evaluation_steps="1. Prefer the correct answer.",
        test_case_contents=formatted,
        parameters="Input and Actual Output",
    )
    rubric = [Rubric(score_range=(1, 2), expected_outcome="Wrong."), Rubric(score_range=(3, 5), expected_outcome="Right.")]
    geval = resolve_template(
        "metrics",
        "GEval",
        "generate_evaluation_results",
        multimodal=False,
        evaluation_steps="1. Check the answer.",
        test_case_content=f"Input:\n{CASE[0]}\n\nActual Output:\n{CASE[1]}",
        parameters="Input and Actual Output",
        rubric=format_rubrics(rubric),
        score_range=get_score_range(rubric),
        _additional_context=None,
    )
    ragas = StatementGeneratorPrompt()
    ragas.examples = []
    statements = ragas.to_string(StatementGeneratorInput(question=CASE[0], answer=CASE[2]))
    # a DAG node's non-binary verdict (its options printed by DeepEval's own node code) and NoiseSensitivity's verdicts
    # for three statements (rendered by the metric's own prompt)
    from deepeval.metrics.dag import NonBinaryJudgementNode
    from ragas.metrics.collections.noise_sensitivity.util import StatementFaithfulnessInput, StatementFaithfulnessPrompt

    node = NonBinaryJudgementNode(criteria="Does the answer name the capital of France?")
    for option in ("Names Paris", "Names another city", "Names no city"):
        node.add_verdict(option, score=0)
    node._validate()
    options = node._verdict_options
    choice = resolve_template(
        "metrics",
        "NonBinaryJudgement",
        "generate_non_binary_verdict",
        multimodal=False,
        criteria=node.criteria,
        text=f"Actual Output:\n{CASE[1]}",
        options=options,
    )
    three = ["Paris is the capital of France.", "Paris is the largest city of France.", "Lyon is the capital of France."]
    nli = StatementFaithfulnessPrompt().to_string(StatementFaithfulnessInput(context=CASE[2], statements=three))
    return [
        ("deepeval.ArenaGEval.generate_arena_winner", arena, lambda a: a["winner"] in names),
        ("deepeval.GEval.generate_evaluation_results[rubric]", geval, lambda a: 1 <= a["score"] <= 5),
        ("ragas.legacy._faithfulness.StatementGeneratorPrompt[no examples]", statements, lambda a: a["statements"]),
        (
            "deepeval.NonBinaryJudgement.generate_non_binary_verdict",
            choice,
            lambda a: node._verdict_schema.model_validate(a).verdict in options,
        ),
        ("ragas.collections.noise_sensitivity.util.StatementFaithfulnessPrompt", nli, lambda a: len(a["statements"]) == 3),
    ]


def test_contracts_read_from_the_request_hold_over_a_real_server(server):
    """The contracts a request's own values narrow (ArenaGEval's winner among the contestants it lists, a rubric
    G-Eval's score within the range it states, a DAG node's non-binary verdict among the options it lists, RAGAS's NLI
    verdicts one per statement it lists) and a RAGAS prompt without its examples, each sent as the framework renders
    it: answered in full under the contract it names, the answer what the framework reads."""
    from deepeval.models.llms.utils import trim_and_load_json

    by_judge = {c.judge: c for c in CONTRACTS}
    for judge, prompt, check in _per_request_prompts():
        c = by_judge[judge]
        status, out, headers = post(server.url, {"model": server.model, "messages": [{"role": "user", "content": prompt}]})
        assert status == 200, (judge, out)
        choice = out["choices"][0]
        assert choice["finish_reason"] == "stop" and headers.get("x-localjudge-contract") == c.label, (judge, choice)
        answer = trim_and_load_json(choice["message"]["content"])
        if c.client_schema is not None:  # NonBinaryJudgement's schema is its node's: `check` validates with it
            _validator(c).model_validate(answer)
        assert check(answer), (judge, answer)
