"""serve's catalog of the evaluation frameworks' own judge prompts (issue 48), without a model: the shipped
framework_prompts.json is what the installed DeepEval and RAGAS render (an upgrade that changes a template fails
here, naming it), every contract is a tightening the framework's own pydantic model accepts, a bounded one (the
JSON closes within the budget), and a request whose messages are such a prompt is planned under its contract
whether it asks for free text, any object, or the framework's own schema (instructor's JSON mode, its system
message set aside); a prompt that differs by one character, or a request naming another schema, is not."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from serve_support import fill_contract, minimal_instance

from localjudge.engine.base import Message
from localjudge.formats.json_schema import JSONSchemaFormat
from localjudge.serve.core import plan as protocol
from localjudge.serve.core.catalog import Catalog, framework_contracts, framework_versions
from localjudge.serve.core.wire import ChatRequest

pytest.importorskip("deepeval")
pytest.importorskip("ragas")
ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "localjudge" / "serve" / "core" / "framework_prompts.json"


def _rows() -> list[dict[str, Any]]:
    return json.loads(FILE.read_text(encoding="utf-8"))


def _fill(c: Any, values: list[str]) -> list[Message]:
    """The contract's messages with `values` in its variables, in turn (what the framework sends for them)."""
    return [Message(role=r, content=t) for r, t in fill_contract(c, values)]


def test_the_file_is_what_the_installed_deepeval_and_ragas_render():
    from scripts.catalog import make_framework_prompt_catalog as mod

    on_disk = {r["judge"]: r for r in _rows()[1:] if r["judge"].split(".")[0] in ("deepeval", "ragas")}
    built = {r["judge"]: r for r in mod.merge([mod.deepeval_entries(), mod.ragas_entries()])[0]}
    changed = sorted(k for k in on_disk.keys() | built.keys() if on_disk.get(k) != built.get(k))
    assert not changed, f"rerun scripts/catalog/make_framework_prompt_catalog.py: these prompts changed: {changed}"
    import deepeval
    import ragas

    assert framework_versions()["deepeval"] == deepeval.__version__ and framework_versions()["ragas"] == ragas.__version__


def test_the_catalog_holds_the_metrics_the_frameworks_use_by_default():
    names = {c.judge for c in framework_contracts()}
    for must in (
        "deepeval.FaithfulnessMetric.generate_claims",
        "deepeval.FaithfulnessMetric.generate_truths",
        "deepeval.FaithfulnessMetric.generate_verdicts",
        "deepeval.FaithfulnessMetric.generate_reason",
        "deepeval.GEval.generate_evaluation_results",
        "deepeval.AnswerRelevancyMetric.generate_statements",
        "ragas.collections.answer_correctness.util.StatementGeneratorPrompt",
        "ragas.collections.faithfulness.util.NLIStatementPrompt",
        "ragas.legacy._faithfulness.StatementGeneratorPrompt",
        "ragas.legacy._faithfulness.NLIStatementPrompt",
        "promptfoo.llm-rubric",
        "promptfoo.model-graded-closedqa",
        "promptfoo.factuality",
        "inspect.model_graded_qa",
        "inspect.model_graded_fact",
    ):
        assert must in names, must
    assert len([n for n in names if n.startswith("deepeval.")]) >= 40 and len([n for n in names if n.startswith("ragas.")]) >= 20


@pytest.mark.parametrize("c", [c for c in framework_contracts() if c.client_schema is not None], ids=lambda c: c.judge)
def test_every_contract_is_bounded_and_its_answers_pass_the_frameworks_own_validator(c):
    fmt = JSONSchemaFormat(c.schema, field_tokens=80)
    assert fmt.max_tokens() < 4000, c.judge  # every list bounded: the JSON closes within the budget
    row = next(r for r in _rows()[1:] if r["judge"] == c.judge)
    path = row["source"].rsplit(" ", 1)[-1] if c.judge.startswith("deepeval.") else None
    instance = minimal_instance(c.schema)
    if path is not None:  # the schema class DeepEval validates the answer with
        mod, _, name = path.rpartition(".")
        getattr(importlib.import_module(mod), name).model_validate(instance)
    else:
        import jsonschema

        jsonschema.validate(instance, c.client_schema)
    import jsonschema

    jsonschema.validate(instance, c.schema)


def test_a_deepeval_prompt_with_real_values_is_recognised_and_one_character_off_is_not():
    from deepeval.templates.resolver import resolve_template

    catalog = Catalog.builtin()
    text = resolve_template(
        "metrics",
        "FaithfulnessMetric",
        "generate_verdicts",
        claims=["Paris is in France.", "It is big."],
        retrieval_context="Paris is the capital.",
    )
    c = catalog.match([Message(role="user", content=text)])
    assert c is not None and c.judge == "deepeval.FaithfulnessMetric.generate_verdicts"
    hit = catalog.tighten([Message(role="user", content=text)], None)
    assert hit is not None and hit.schema == c.schema and hit.header == c.label
    verdicts = hit.schema["properties"]["verdicts"]
    assert verdicts["minItems"] == 1 and verdicts["maxItems"] == 10
    assert verdicts["items"]["properties"]["verdict"]["enum"] == ["yes", "no", "borderline"]
    assert catalog.match([Message(role="user", content=text.replace("JSON", "Json", 1))]) is None


def test_each_framework_prompt_filled_in_is_recognised_as_itself():
    catalog = Catalog.builtin()
    for c in framework_contracts():
        got = catalog.match(_fill(c, ["Paris is the capital of France."]))
        assert got is not None and got.label == c.label, (c.judge, got and got.judge)


def _plan(messages: list[dict[str, Any]], **extra: Any) -> protocol.Plan:
    req = ChatRequest.model_validate({"model": "m", "messages": messages, **extra})
    return protocol.plan(req, field_tokens=80, catalog=Catalog.builtin())


def test_free_text_any_object_and_the_frameworks_own_schema_all_get_the_contract():
    c = next(x for x in framework_contracts() if x.judge == "deepeval.FaithfulnessMetric.generate_claims")
    msgs = [{"role": "user", "content": m.content} for m in _fill(c, ["Paris is the capital of France."])]
    for extra in ({}, {"response_format": {"type": "json_object"}}):
        p = _plan(msgs, **extra)
        assert p.schema == c.schema and p.contract == c.label, extra
    own = {"type": "json_schema", "json_schema": {"name": "Claims", "schema": c.client_schema}}
    assert _plan(msgs, response_format=own).schema == c.schema
    other = {"type": "object", "properties": {"claims": {"type": "string"}}, "required": ["claims"]}
    p = _plan(msgs, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": other}})
    assert p.schema == other and "not applied" in (p.contract or "")  # never loosened, never replaced


def test_instructor_json_mode_is_recognised_behind_its_own_system_message():
    from localjudge.serve.core.json_mode import LEAD, OPENING, TAIL

    c = next(x for x in framework_contracts() if x.judge == "ragas.collections.answer_correctness.util.StatementGeneratorPrompt")
    user = _fill(c, ['{"question": "q", "answer": "a"}'])[0].content
    system = f"{OPENING}\n{LEAD}\n\n{json.dumps(c.client_schema, indent=2)}\n\n{TAIL}"
    p = _plan([{"role": "system", "content": system}, {"role": "user", "content": user}], response_format={"type": "json_object"})
    assert p.schema == c.schema and p.contract == c.label
    assert p.schema["properties"]["statements"]["minItems"] == 1  # RAGAS scores NaN when no statement is listed


def test_inspects_grader_prompt_gets_its_grade_line_grammar_and_only_as_text():
    c = next(x for x in framework_contracts() if x.judge == "inspect.model_graded_qa")
    assert c.grammar is not None and "GRADE: " in c.grammar and "[CI]" in c.grammar
    msgs = [{"role": m.role, "content": m.content} for m in _fill(c, ["What is 2+2?", "4", "4"])]
    p = _plan(msgs)
    assert p.fmt is not None and p.contract == c.label
    p = _plan(msgs, response_format={"type": "json_object"})
    assert p.schema == {"type": "object"} and "not applied" in (p.contract or "")


def test_without_the_catalog_nothing_is_tightened():
    c = next(x for x in framework_contracts() if x.judge == "promptfoo.llm-rubric")
    msgs = [{"role": m.role, "content": m.content} for m in _fill(c, ["Hello", "greets"])]
    req = ChatRequest.model_validate({"model": "m", "messages": msgs})
    p = protocol.plan(req, field_tokens=80, catalog=None)
    assert p.schema is None and p.fmt is None and p.contract is None
    p = _plan(msgs)
    assert p.schema == c.schema and set(p.schema["required"]) == {"reason", "pass", "score"}


def _accepts(grammar: str, text: str) -> bool:
    """Whether the Lark grammar (as serve compiles it) accepts `text` whole, byte by byte."""
    from llguidance import LLMatcher, LLTokenizer

    from localjudge.formats.grammar import GrammarFormat

    m = LLMatcher(LLTokenizer("byte"), GrammarFormat(grammar).constraint().grammar)
    return m.consume_tokens(list(text.encode())) and m.is_accepting()


# answers of each promptfoo contract's form, with what promptfoo 0.121 makes of them (matchesClosedQa: `pass` when
# the answer ends with Y, "does not meet" when with N; matchesFactuality: the JSON `category`, D failing by default)
CLOSEDQA_ANSWERS = {"The submission names Paris.\nY\nY": True, "It does not name the capital.\nN\nN": False}
FACTUALITY_ANSWERS = {json.dumps({"category": x, "reason": "r"}): x != "D" for x in "ABCDE"}


def test_promptfoos_closedqa_and_factuality_prompts_are_recognised_and_get_their_contracts():
    qa = next(x for x in framework_contracts() if x.judge == "promptfoo.model-graded-closedqa")
    msgs = [{"role": m.role, "content": m.content} for m in _fill(qa, ["What is the capital of France?", "Paris", "names Paris"])]
    p = _plan(msgs)
    assert p.fmt is not None and p.contract == qa.label and qa.grammar is not None
    for answer in CLOSEDQA_ANSWERS:  # promptfoo reads the last character: every answer of the grammar ends Y or N
        assert _accepts(qa.grammar, answer) and answer.rstrip()[-1] in "YN", answer
    for bad in ("x\nY\nN", "x\nY", "x", "x\nMaybe\nMaybe", "x\nY\nY\n"):
        assert not _accepts(qa.grammar, bad), bad
    fact = next(x for x in framework_contracts() if x.judge == "promptfoo.factuality")
    msgs = [{"role": m.role, "content": m.content} for m in _fill(fact, ["What is the capital of France?", "Paris", "Paris"])]
    p = _plan(msgs)
    assert p.schema == fact.schema and p.contract == fact.label
    assert fact.schema["required"] == ["category", "reason"] and fact.schema["additionalProperties"] is False
    assert fact.schema["properties"]["category"]["enum"] == list("ABCDE")  # parseFactualityJsonResponse: /^[A-E]$/
    assert JSONSchemaFormat(fact.schema, field_tokens=80).max_tokens() < 4000  # the reason bounded: the JSON closes
    import jsonschema

    for answer in [json.dumps(minimal_instance(fact.schema)), *FACTUALITY_ANSWERS]:
        jsonschema.validate(json.loads(answer), fact.schema)


NODE_PARSE = """
const [index, kind, answers] = process.argv.slice(1);
const { assertions } = await import(index);
const out = [];
for (const answer of JSON.parse(answers)) {
  const provider = { id: () => "recorded", callApi: async () => ({ output: answer }) };
  const fn = kind === "factuality" ? assertions.matchesFactuality : assertions.matchesClosedQa;
  const r = await fn("question", "expected", "output", { provider }, {});
  out.push({ pass: r.pass, reason: r.reason });
}
process.stdout.write(JSON.stringify(out));
process.exit(0);
"""


@pytest.mark.system
@pytest.mark.parametrize("kind", ["model-graded-closedqa", "factuality"])
def test_promptfoos_own_parser_reads_each_answer_of_the_contract_as_a_verdict(kind):
    """promptfoo 0.121's own `matchesClosedQa` / `matchesFactuality` (its library export, in node), its grading
    provider answering with answers of the contract's form: each a verdict (the expected pass), none an error."""
    import subprocess

    from serve_support import promptfoo_cli

    cli, why = promptfoo_cli()
    if cli is None:
        pytest.skip(why)
    answers = CLOSEDQA_ANSWERS if kind == "model-graded-closedqa" else FACTUALITY_ANSWERS
    index = (cli.parent.parent / "promptfoo" / "dist" / "src" / "index.js").as_uri()
    node = ["node", "--input-type=module", "-e", NODE_PARSE, index, kind, json.dumps(list(answers))]
    got = json.loads(subprocess.run(node, capture_output=True, text=True, timeout=120, check=True).stdout)
    for (answer, expected), r in zip(answers.items(), got, strict=True):
        assert r["pass"] is expected, (answer, r)
        assert not any(w in r["reason"] for w in ("malformed", "did not match", "Invalid category")), (answer, r)


def _recorded_run(build: Any, case: Any, fill: dict[str, Any] | None = None) -> tuple[Any, list[str | None]]:
    """DeepEval's own metric (`build(model)`) measured on `case` with a recording model that answers each prompt
    with the minimal answer of the catalog contract it is recognised as, for that request (`fill`: judge -> the fields to
    give content where the metric needs some to go on, or a function of that contract giving them), validated by the
    schema class the
    metric itself passes: (the metric, the judge of each prompt sent, None for a prompt the catalog does not hold as a
    framework prompt, answered from the schema for the run to go on)."""
    import jsonschema
    from deepeval_support import RecordingLLM

    from scripts.catalog.make_framework_prompt_catalog import contract

    catalog = Catalog.builtin()
    seen: list[str | None] = []

    def answer(prompt: str, schema: Any) -> Any:
        msgs = [Message(role="user", content=prompt)]
        c = catalog.match(msgs)
        seen.append(c.judge if c is not None and c.framework else None)
        if c is None or not c.framework:
            return schema.model_validate(minimal_instance(contract(schema.model_json_schema(), "deepeval")))
        own = c.schema_for(msgs)  # the contract serve applies to this request (its values narrowing it)
        instance = minimal_instance(own)
        extra = (fill or {}).get(c.judge, {})
        instance.update(extra(own) if callable(extra) else extra)
        jsonschema.validate(instance, own)  # still an answer of the contract
        return schema.model_validate(instance)

    metric = build(RecordingLLM(answer))
    metric.measure(case, _show_indicator=False)
    return metric, seen


def _deepeval(*names: str) -> list[str | None]:
    return [f"deepeval.{n}" for n in names]


def test_a_dag_metric_run_sends_its_nodes_prompts_each_recognised_and_answered_under_its_contract():
    from deepeval.metrics import DAGMetric
    from deepeval.metrics.dag import BinaryJudgementNode, DeepAcyclicGraph, TaskNode
    from deepeval.test_case import LLMTestCase, SingleTurnParams

    task = TaskNode(
        instructions="Extract the city named.", output_label="city", evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT]
    )
    verdict = task.add_node(BinaryJudgementNode(criteria="Does it name Paris?"))
    assert isinstance(verdict, BinaryJudgementNode)
    verdict.add_verdict(True, score=10)
    verdict.add_verdict(False, score=0)
    dag = DeepAcyclicGraph(root_nodes=[task])
    case = LLMTestCase(input="What is the capital of France?", actual_output="Paris.")
    metric, seen = _recorded_run(lambda m: DAGMetric(name="d", dag=dag, model=m, async_mode=False), case)
    assert seen == _deepeval(
        "TaskNode.generate_task_output", "BinaryJudgement.generate_binary_verdict", "VerdictNode.generate_reason"
    )
    assert metric.error is None and metric.score in (0, 1)


def test_task_completion_arena_and_conversation_completeness_runs_send_recognised_prompts_only():
    """The templates the catalog holds since the pairing rule reads helpers, `verdict_cls=` and schemas passed by
    position, each sent by a run of its own metric with default settings: every prompt of the run recognised, every
    contract answer accepted by the schema the metric passes, the run scored without error."""
    from deepeval.metrics import ArenaGEval, ConversationCompletenessMetric, TaskCompletionMetric
    from deepeval.test_case import ArenaTestCase, Contestant, ConversationalTestCase, LLMTestCase, SingleTurnParams, Turn

    one = LLMTestCase(input="Book a table for two at eight.", actual_output="Booked: two people, 8 pm.")
    metric, seen = _recorded_run(lambda m: TaskCompletionMetric(model=m, async_mode=False), one)
    assert seen == _deepeval("TaskCompletionMetric.extract_goal_and_outcome", "TaskCompletionMetric.generate_verdict")
    assert metric.error is None

    # the winner: the contract's own first answer, one of the contestant names this request lists
    contestants = [
        Contestant(name=n, test_case=LLMTestCase(input="Capital of France?", actual_output=a))
        for n, a in (("A", "Paris"), ("B", "Lyon"))
    ]
    params = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
    arena = ArenaTestCase(contestants=contestants)
    metric, seen = _recorded_run(
        lambda m: ArenaGEval(name="a", criteria="Correct?", evaluation_params=params, model=m, async_mode=False), arena
    )
    assert seen == _deepeval(
        "ArenaGEval.generate_evaluation_steps", "ArenaGEval.generate_arena_winner", "ArenaGEval.rewrite_reason"
    )
    assert metric.winner in ("A", "B")

    turns = [
        Turn(role="user", content="My name is Léa. What is the capital of France?"),
        Turn(role="assistant", content="Paris, Léa."),
        Turn(role="user", content="And of Italy?"),
        Turn(role="assistant", content="Rome."),
    ]
    conv = ConversationalTestCase(turns=turns)
    # an intention to check, else the metric sends no verdict prompt (KnowledgeRetentionMetric is not run here: its
    # extract_data contract holds `data` to {}, so a run under the contract finds no knowledge to send a verdict on)
    fill = {"deepeval.ConversationCompletenessMetric.extract_user_intentions": {"intentions": ["Learn two capitals."]}}
    metric, seen = _recorded_run(lambda m: ConversationCompletenessMetric(model=m, async_mode=False), conv, fill)
    assert "deepeval.ConversationCompletenessMetric.generate_verdicts" in seen and None not in seen and metric.error is None


def test_deepevals_turn_relevancy_prompt_gets_deepevals_contract_not_the_built_in_judges():
    # the built-in deepeval_turn_relevancy is DeepEval's TurnRelevancy prompt word for word; a DeepEval client
    # sending it reads `verdict` (TurnRelevancyVerdict), so the framework's contract wins over the judge's
    from deepeval.metrics.turn_relevancy.schema import TurnRelevancyVerdict

    catalog = Catalog.builtin()
    (c,) = [c for c in catalog.contracts if c.judge == "deepeval.TurnRelevancyMetric.generate_verdicts"]
    assert not [b for b in catalog.contracts if not b.framework and b.segments == c.segments]
    assert set(c.schema["required"]) == {"verdict", "reason"} and c.framework == "deepeval"
    TurnRelevancyVerdict.model_validate({"verdict": "yes", "reason": "r"})
    assert "deepeval_turn_relevancy" not in {b.judge for b in catalog.contracts}


def test_knowledge_retentions_extraction_contract_admits_the_knowledge_it_asks_for():
    # DeepEval's Knowledge.data is Dict[str, str | list[str]]: a contract of the empty object left every turn without
    # knowledge, so the metric never asked its verdicts; the contract takes any keys with string values (a tightening)
    from deepeval.metrics.knowledge_retention.schema import Knowledge

    (c,) = [c for c in framework_contracts() if c.judge == "deepeval.KnowledgeRetentionMetric.extract_data"]
    fmt = JSONSchemaFormat(c.schema, field_tokens=80)
    answer = json.dumps({"data": {"Full Name": "Emily Chen", "Current Location": "Berlin"}})
    assert fmt.parse(answer).value == {"data": {"Full Name": "Emily Chen", "Current Location": "Berlin"}}
    assert Knowledge.model_validate_json(answer).data == {"Full Name": "Emily Chen", "Current Location": "Berlin"}
    assert fmt.max_tokens() <= 1600  # the budget a contract may need


def test_a_default_geval_run_sends_prompts_the_catalog_holds():
    # G-Eval with no rubric and no additional context (its defaults; the score range then 0..10), given its steps or
    # its criteria, plain or strict: every prompt it sends is recognised as G-Eval's (the catalog held the text with
    # every optional section rendered, and a score range as a sentinel's characters, which no run sends)
    from deepeval.metrics import GEval
    from deepeval.test_case import LLMTestCase, LLMTestCaseParams

    params = [LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT]
    case = LLMTestCase(input="What is the capital of France?", actual_output="Paris.")
    steps = {"evaluation_steps": ["Check the answer.", "Penalise errors."]}
    for kwargs, strict, sent in (
        (steps, False, ["deepeval.GEval.generate_evaluation_results"]),
        (
            {"criteria": "Correct?"},
            False,
            ["deepeval.GEval.generate_evaluation_steps", "deepeval.GEval.generate_evaluation_results"],
        ),
        (steps, True, ["deepeval.GEval.generate_strict_evaluation_results"]),
    ):
        build = lambda m, kw=kwargs, st=strict: GEval(  # noqa: E731
            name="g", evaluation_params=params, model=m, async_mode=False, strict_mode=st, **kw
        )
        metric, seen = _recorded_run(build, case)
        assert seen == sent, (kwargs, strict, seen)


def _arena(n: int) -> Any:
    """An ArenaTestCase of `n` contestants (real names `model-1`..), each answering the same question differently."""
    from deepeval.test_case import ArenaTestCase, Contestant, LLMTestCase

    answers = ["Paris", "Lyon", "Marseille", "Nice"][:n]
    return ArenaTestCase(
        contestants=[
            Contestant(name=f"model-{i + 1}", test_case=LLMTestCase(input="Capital of France?", actual_output=a))
            for i, a in enumerate(answers)
        ]
    )


@pytest.mark.parametrize("n", [2, 3])
def test_an_arena_winner_prompt_gets_a_winner_enum_of_exactly_the_contestants_it_lists(n):
    # DeepEval reads the winner as dummy_to_real_names[winner] (a KeyError for any other name): the contract's winner
    # is one of the (dummy) names this request's prompt lists, read from the prompt as DeepEval's own code renders it
    from deepeval.metrics import ArenaGEval
    from deepeval.metrics.arena_g_eval.utils import format_arena_test_case
    from deepeval.metrics.g_eval.utils import construct_g_eval_params_string, number_evaluation_steps
    from deepeval.test_case import SingleTurnParams
    from deepeval_support import RecordingLLM

    params = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
    steps = ["Prefer the correct answer."]
    metric = ArenaGEval(name="a", evaluation_steps=steps, evaluation_params=params, model=RecordingLLM(lambda p, s: None))
    formatted, dummy_to_real = format_arena_test_case(params, _arena(n))
    prompt = metric._get_prompt(
        "generate_arena_winner",
        evaluation_steps=number_evaluation_steps(metric.evaluation_steps),
        test_case_contents=formatted,
        parameters=construct_g_eval_params_string(params),
        multimodal=False,
    )
    msgs = [Message(role="user", content=prompt)]
    hit = Catalog.builtin().tighten(msgs, None)
    assert hit is not None and hit.contract.judge == "deepeval.ArenaGEval.generate_arena_winner"
    assert hit.schema is not None
    winner = hit.schema["properties"]["winner"]
    assert sorted(winner["enum"]) == sorted(dummy_to_real) and len(winner["enum"]) == n
    assert hit.contract.schema["properties"]["winner"] == {"type": "string"}  # the shared contract is left as it was
    # the same prompt with contestants that are no JSON object (a hand-made request): the contract's free string
    head, rest = prompt.split("\n\nContestants:\n", 1)
    other = head + "\n\nContestants:\nAlice and Bob\n\nParameters:\n" + rest.split("\n\nParameters:\n", 1)[1]
    assert Catalog.builtin().tighten([Message(role="user", content=other)], None).schema == hit.contract.schema


@pytest.mark.parametrize("n", [2, 3])
def test_deepevals_arena_metric_accepts_every_winner_the_contract_allows(n):
    """ArenaGEval's own run (steps, winner, reason rewrite) with a recording model answering each enum value of the
    winner prompt's contract in turn, DeepEval's name shuffles seeded alike: every run names a real contestant, none
    raises, and the n values name the n contestants."""
    import random

    from deepeval.metrics import ArenaGEval
    from deepeval.test_case import SingleTurnParams

    params = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
    winners = set()
    for k in range(n):
        pick = {"deepeval.ArenaGEval.generate_arena_winner": lambda s, k=k: {"winner": s["properties"]["winner"]["enum"][k]}}
        random.seed(48)  # format_arena_test_case shuffles the dummy names and the contestants' order
        metric, seen = _recorded_run(
            lambda m: ArenaGEval(name="a", criteria="Correct?", evaluation_params=params, model=m, async_mode=False),
            _arena(n),
            pick,
        )
        assert None not in seen and "deepeval.ArenaGEval.generate_arena_winner" in seen
        assert metric.winner in {f"model-{i + 1}" for i in range(n)}, metric.winner
        winners.add(metric.winner)
    assert winners == {f"model-{i + 1}" for i in range(n)}  # each enum value a distinct contestant


RUBRICS = {  # rubric bands -> the score range G-Eval's get_score_range gives them
    "0-5": ([((0, 2), "Wrong or missing."), ((3, 5), "Correct.")], (0, 5)),
    "1-7": ([((1, 3), "Wrong."), ((4, 6), "Partly right."), ((7, 7), "Right.")], (1, 7)),
    "0-10": ([((0, 4), "Wrong."), ((5, 10), "Right.")], (0, 10)),
}


@pytest.mark.parametrize("bands", sorted(RUBRICS))
def test_a_geval_with_a_rubric_is_recognised_and_its_score_held_to_the_rubrics_range(bands):
    # a rubric changes G-Eval's results prompt (its Rubric section, its wording, the score range it spans): that prompt
    # is recognised, its score bounded to the range this request's prompt states; DeepEval reads both ends into 0..1
    from deepeval.metrics import GEval
    from deepeval.metrics.g_eval.utils import Rubric
    from deepeval.test_case import LLMTestCase, SingleTurnParams

    rubric, (lo, hi) = RUBRICS[bands]
    params = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
    case = LLMTestCase(input="What is the capital of France?", actual_output="Paris.")
    judge = "deepeval.GEval.generate_evaluation_results[rubric]"
    scores = {}
    for end in ("minimum", "maximum"):
        got: list[dict[str, Any]] = []
        fill = {judge: lambda s, end=end, got=got: got.append(s) or {"score": s["properties"]["score"][end]}}

        def build(m: Any) -> Any:
            bands_ = [Rubric(score_range=r, expected_outcome=o) for r, o in rubric]
            return GEval(
                name="g", evaluation_params=params, evaluation_steps=["Check it."], rubric=bands_, model=m, async_mode=False
            )

        metric, seen = _recorded_run(build, case, fill)
        assert seen == [judge]
        (schema,) = got
        assert (schema["properties"]["score"]["minimum"], schema["properties"]["score"]["maximum"]) == (lo, hi)
        assert metric.error is None
        scores[end] = metric.score
    assert scores == {"minimum": 0, "maximum": 1}

    # strict G-Eval renders neither rubric nor range: a strict run with the rubric sends the strict prompt, 0 or 1
    strict = lambda m: GEval(  # noqa: E731
        name="g",
        evaluation_params=params,
        evaluation_steps=["Check it."],
        rubric=[Rubric(score_range=r, expected_outcome=o) for r, o in rubric],
        strict_mode=True,
        model=m,
        async_mode=False,
    )
    metric, seen = _recorded_run(strict, case)
    assert seen == ["deepeval.GEval.generate_strict_evaluation_results"] and metric.error is None


def test_a_trace_geval_prompt_with_a_rubric_gets_the_rubrics_score_range():
    from deepeval.metrics.g_eval.utils import Rubric, format_rubrics, get_score_range
    from deepeval.templates.resolver import resolve_template

    rubric = [Rubric(score_range=r, expected_outcome=o) for r, o in RUBRICS["1-7"][0]]
    text = resolve_template(
        "metrics",
        "GEval",
        "generate_trace_evaluation_results",
        multimodal=False,
        evaluation_steps="1. Check the tool calls.",
        trace_json=json.dumps({"name": "agent", "type": "agent", "input": "q", "output": "a", "children": []}, indent=2),
        rubric=format_rubrics(rubric),
        score_range=get_score_range(rubric),
        _additional_context=None,
    )
    hit = Catalog.builtin().tighten([Message(role="user", content=text)], None)
    assert hit is not None and hit.contract.judge == "deepeval.GEval.generate_trace_evaluation_results[rubric]"
    assert hit.schema is not None and hit.schema["properties"]["score"] == {"type": "number", "minimum": 1, "maximum": 7}


def test_a_conversational_geval_with_a_rubric_is_recognised():
    # ConversationalGEval's prompt with a rubric (its own wording and Rubric section; it states 0 to 10 whatever the
    # bands, and DeepEval divides by 10): recognised, answered under the 0..10 contract, scored without error
    from deepeval.metrics import ConversationalGEval
    from deepeval.metrics.g_eval.utils import Rubric
    from deepeval.test_case import ConversationalTestCase, MultiTurnParams, Turn

    turns = [Turn(role="user", content="Capital of France?"), Turn(role="assistant", content="Paris.")]
    judge = "deepeval.ConversationalGEval.generate_evaluation_results[rubric]"
    metric, seen = _recorded_run(
        lambda m: ConversationalGEval(
            name="c",
            evaluation_params=[MultiTurnParams.CONTENT],
            evaluation_steps=["Check the answers."],
            rubric=[Rubric(score_range=r, expected_outcome=o) for r, o in RUBRICS["0-5"][0]],
            model=m,
            async_mode=False,
        ),
        ConversationalTestCase(turns=turns),
        {judge: lambda s: {"score": s["properties"]["score"]["maximum"]}},
    )
    assert seen == [judge] and metric.error is None and metric.score == 1


def _ragas_prompt(path: str) -> Any:
    """An instance of the RAGAS prompt class `module.Class` (a row's source)."""
    mod, _, name = path.rpartition(".")
    return getattr(importlib.import_module(mod), name)()


NO_EXAMPLES = [r for r in _rows()[1:] if r["judge"].startswith("ragas.") and r["judge"].endswith("[no examples]")]


@pytest.mark.parametrize("row", NO_EXAMPLES, ids=lambda r: r["judge"])
def test_a_ragas_prompt_with_its_examples_set_to_none_is_recognised_with_the_same_contract(row):
    # RAGAS leaves the examples section out of a prompt whose examples are [] (a user's few-shot-free prompt): that
    # text is recognised and answered under the same contract as the prompt with its examples
    prompt = _ragas_prompt(row["source"].split(" ", 1)[0])
    data = prompt.examples[0][0]
    prompt.examples = []
    text = prompt.to_string(data)
    assert "EXAMPLES" not in text
    catalog = Catalog.builtin()
    c = catalog.match([Message(role="user", content=text)])
    assert c is not None and c.judge == row["judge"]
    (full,) = [x for x in framework_contracts() if x.judge == row["judge"].removesuffix("[no examples]")]
    assert c.schema == full.schema and c.client_schema == full.client_schema


def test_ragas_faithfulness_prompts_without_examples_on_real_values_get_their_contracts():
    from ragas.metrics._faithfulness import NLIStatementInput, StatementGeneratorInput, StatementGeneratorPrompt
    from ragas.metrics.collections.faithfulness.util import NLIStatementPrompt

    catalog = Catalog.builtin()
    gen = StatementGeneratorPrompt()
    gen.examples = []
    text = gen.to_string(StatementGeneratorInput(question="Where is the Louvre?", answer="In Paris. It opened in 1793."))
    hit = catalog.tighten([Message(role="user", content=text)], None)
    assert hit is not None and hit.contract.judge == "ragas.legacy._faithfulness.StatementGeneratorPrompt[no examples]"
    assert hit.schema is not None and hit.schema["properties"]["statements"]["minItems"] == 1
    nli = NLIStatementPrompt()
    nli.examples = []
    data = NLIStatementInput(context="The Louvre is in Paris.", statements=["The Louvre is in Paris.", "It is in Rome."])
    text = nli.to_string(nli.input_model.model_validate(data.model_dump()))
    hit = catalog.tighten([Message(role="user", content=text)], None)
    assert hit is not None and hit.contract.judge == "ragas.collections.faithfulness.util.NLIStatementPrompt[no examples]"
