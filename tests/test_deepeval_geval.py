"""Kind `deepeval_geval` (DeepEval's ConversationalGEval) sends, call for call, the prompts the installed deepeval
package's own ConversationalGEval sends with `async_mode=False` on a model without logprobs (the real metric run with
a recording model answering canned JSON), and gives DeepEval's score and reason on the same answers: criteria turned
into steps, steps given, a rubric, conversation-level params, strict mode. Its prompt texts match the package's; a
bad `[deepeval_geval]` field is a one-line error naming the judge file and the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM  # noqa: E402
from integrations_support import scripted  # noqa: E402

from localjudge.conversations import from_messages  # noqa: E402
from localjudge.conversations.render import deepeval_turns_text  # noqa: E402
from localjudge.errors import JudgeSpecError  # noqa: E402
from localjudge.judges import get_judge, load_judge_file, make_conversational_geval_judge  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = [
    ("user", 'Hi! I\'m Léa — my "order" {#42} never arrived.'),
    ("assistant", "I'm sorry to hear that. Could you give me the order number?"),
    ("user", "It's 42. Fix it now!"),
    ("assistant", "Whatever. Not my problem."),
]
SHORT = [("user", "Thanks!"), ("assistant", "You're welcome, have a nice day.")]
NO_ASSISTANT = [("user", "Hello? Anyone there?")]
CRITERIA = "Determine whether the assistant stays polite and resolves the user's problem."
STEPS = ["Check every assistant turn is polite.", "Check the user's problem is resolved by the end."]
RUBRIC = [
    {"score_range": (7, 10), "expected_outcome": "Polite and helpful throughout."},
    {"score_range": (0, 3), "expected_outcome": "Rude or unhelpful."},
    {"score_range": (4, 6), "expected_outcome": "Mixed."},
]


def answer(prompt: str) -> dict:
    """Canned answers, the same for DeepEval and for us: steps for the steps call; a score that depends on the
    conversation (3 when "Not my problem" is in it, 10 for a one-exchange thanks, else 6)."""
    if "generate 3-4 concise evaluation steps" in prompt:
        return {"steps": ["Step one: politeness.", 'Step two: "resolution" {ok}.']}
    score = 3 if "Not my problem" in prompt else 10 if "welcome" in prompt else 6
    return {"reason": f"reason for {score}", "score": score}


def _theirs(turns, params, **kw):
    from deepeval.metrics import ConversationalGEval
    from deepeval.metrics.g_eval.utils import Rubric
    from deepeval.test_case import ConversationalTestCase, MultiTurnParams, Turn

    prompts: list[str] = []
    rubric = [Rubric(**r) for r in kw.pop("rubric")] if kw.get("rubric") else None
    kw.pop("rubric", None)
    values = kw.pop("values", {})
    metric = ConversationalGEval(
        name="polite",
        evaluation_params=[MultiTurnParams(p) for p in params],
        model=RecordingLLM(lambda p, schema: json.dumps(answer(p)), prompts),
        async_mode=False,
        rubric=rubric,
        **kw,
    )
    case = ConversationalTestCase(turns=[Turn(role=r, content=c) for r, c in turns], **values)
    metric.measure(case, _show_indicator=False)
    return metric.score, metric.reason, prompts


def _ours(turns, params, **kw):
    values = kw.pop("values", {})
    judge = make_conversational_geval_judge("polite", evaluation_params=params, **kw)
    prompts: list[str] = []

    def reply(msgs, fmt):
        (m,) = msgs
        prompts.append(m.content)
        return json.dumps(answer(m.content), ensure_ascii=False)

    conv = from_messages([{"role": r, "content": c} for r, c in turns])
    res = judge.evaluate(scripted(reply), deepeval_turns=deepeval_turns_text(conv), **values)
    return res, prompts


CASES = {
    "criteria": (SUPPORT, ["content"], {"criteria": CRITERIA}),
    "criteria_role_first": (SHORT, ["role", "content"], {"criteria": CRITERIA}),
    "steps_given": (SUPPORT, ["content", "role"], {"evaluation_steps": STEPS}),
    "steps_no_assistant": (NO_ASSISTANT, ["content"], {"evaluation_steps": STEPS}),
    "rubric": (SUPPORT, ["content"], {"criteria": CRITERIA, "rubric": RUBRIC}),
    "scenario_outcome": (
        SHORT,
        ["scenario", "content", "expected_outcome"],
        {"criteria": CRITERIA, "values": {"scenario": "A thankful {user}.", "expected_outcome": 'A "polite" close.'}},
    ),
    "strict_fails": (SUPPORT, ["content"], {"criteria": CRITERIA, "strict_mode": True}),
    "strict_passes": (SHORT, ["content"], {"evaluation_steps": STEPS, "strict_mode": True, "rubric": RUBRIC}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_deepeval_geval_sends_the_real_metrics_prompts_and_gives_its_score_and_reason(case):
    turns, params, kw = CASES[case]
    score, reason, their_prompts = _theirs(turns, list(params), **json.loads(json.dumps(kw)) | _rubric(kw))
    res, our_prompts = _ours(turns, list(params), **kw)
    assert our_prompts == their_prompts
    assert len(our_prompts) == (1 if "evaluation_steps" in kw else 2)
    assert res.score == pytest.approx(score) and res.rationale == reason
    assert res.passed == (score >= (1 if kw.get("strict_mode") else 0.5))


def _rubric(kw: dict) -> dict:
    return {"rubric": [dict(r, score_range=tuple(r["score_range"])) for r in kw["rubric"]]} if "rubric" in kw else {}


def test_the_builtin_example_sends_the_real_metrics_prompts_for_its_criteria():
    judge = get_judge("deepeval_professionalism")
    cfg = judge.spec.deepeval_geval
    assert cfg is not None and cfg.criteria
    score, reason, their_prompts = _theirs(SUPPORT, ["content", "role"], criteria=cfg.criteria)
    prompts: list[str] = []

    def reply(msgs, fmt):
        prompts.append(msgs[0].content)
        return json.dumps(answer(msgs[0].content))

    conv = from_messages([{"role": r, "content": c} for r, c in SUPPORT])
    res = judge.evaluate(scripted(reply), deepeval_turns=deepeval_turns_text(conv))
    assert prompts == their_prompts and res.score == score and res.rationale == reason


def test_an_unparseable_score_is_unscored_naming_the_stage_and_keeps_the_steps():
    judge = make_conversational_geval_judge("polite", criteria=CRITERIA)
    answers = iter([json.dumps({"steps": ["one"]}), "not json"])
    conv = from_messages([{"role": r, "content": c} for r, c in SHORT])
    res = judge.evaluate(scripted(lambda msgs, fmt: next(answers)), deepeval_turns=deepeval_turns_text(conv))
    assert res.score is None and res.unscored_reason == "parse_error"
    assert res.error.startswith("generate_evaluation_results:")


@pytest.mark.system
def test_the_prompt_texts_file_matches_the_installed_package():
    script = ROOT / "scripts/catalog/make_deepeval_geval_templates.py"
    assert subprocess.run([sys.executable, str(script), "--check"], cwd=ROOT).returncode == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('criteria = "  "', "deepeval_geval"),
        ("evaluation_steps = []", "deepeval_geval"),
        ("strict_mode = true", "deepeval_geval"),  # neither criteria nor steps
        ('criteria = "x"\nevaluation_params = ["content", "tags"]', "deepeval_geval.evaluation_params.1"),
        ('criteria = "x"\nevaluation_params = []', "deepeval_geval"),
        (
            'criteria = "x"\n[[deepeval_geval.rubric]]\nscore_range = [3, 11]\nexpected_outcome = "y"',
            "deepeval_geval.rubric.0.score_range",
        ),
        ('criteria = "x"\ncriterion = "typo"', "deepeval_geval.criterion"),
    ],
)
def test_a_bad_geval_field_is_a_one_line_error_naming_the_file_and_field(tmp_path, body, field):
    path = tmp_path / "mine.toml"
    path.write_text(f'name = "mine"\nkind = "deepeval_geval"\n[deepeval_geval]\n{body}\n', encoding="utf-8")
    with pytest.raises(JudgeSpecError) as e:
        load_judge_file(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and f"key '{field}'" in msg


def test_overlapping_rubric_bands_are_refused_naming_both():
    with pytest.raises(JudgeSpecError, match=r"overlap: \[0, 5\] and \[5, 10\]"):
        make_conversational_geval_judge(
            "p",
            criteria="x",
            rubric=[{"score_range": (5, 10), "expected_outcome": "a"}, {"score_range": (0, 5), "expected_outcome": "b"}],
        )


def test_a_conversation_level_param_is_a_required_variable_of_the_judge():
    judge = make_conversational_geval_judge("p", criteria="x", evaluation_params=["content", "scenario"])
    assert "scenario" in judge.required_variables and "deepeval_turns" in judge.required_variables


# ------------------------------------------------------------------ per-turn retrieval_context and tools_called

RAG_TOOLS = [
    ("user", "Where is my order #42? I'm Léa.", None, []),
    (
        "assistant",
        'It shipped on Monday and arrives "tomorrow" {by noon}.',
        ["Order 42: shipped Monday.", "Carrier 'FastPost' delivers in 2 days."],
        [
            {"name": "lookup_order", "input_parameters": {"order_id": 42, "note": "Léa's"}, "output": "shipped 'Monday'"},
            {"name": "ping", "input_parameters": None, "output": None},
        ],
    ),
    ("user", "Thanks! Not my problem anymore.", None, []),
    ("assistant", "You're welcome, have a nice day.", [], [{"name": "close_ticket", "input_parameters": {}, "output": "ok"}]),
]
EXTRA_CASES = {
    "retrieval_context": (["retrieval_context"], {"criteria": CRITERIA}),
    "tools_called": (["tools_called"], {"evaluation_steps": STEPS}),
    "both_mixed_with_old": (
        ["tools_called", "scenario", "content", "retrieval_context", "expected_outcome"],
        {"criteria": CRITERIA, "values": {"scenario": "A {lost} order.", "expected_outcome": "Resolved."}},
    ),
    "rag_role_first_rubric": (["role", "retrieval_context"], {"criteria": CRITERIA, "rubric": RUBRIC}),
    "tools_strict": (["content", "tools_called", "role"], {"evaluation_steps": STEPS, "strict_mode": True}),
}


def _rag_tools_case(values: dict):
    from deepeval.test_case import ConversationalTestCase, ToolCall, Turn

    turns = [
        Turn(role=r, content=c, retrieval_context=rc, tools_called=[ToolCall(**t) for t in calls] or None)
        for r, c, rc, calls in RAG_TOOLS
    ]
    return ConversationalTestCase(turns=turns, **values)


@pytest.mark.parametrize("case", sorted(EXTRA_CASES))
def test_deepeval_geval_sends_the_real_metrics_prompts_with_retrieval_context_and_tools_called(case):
    from deepeval.metrics import ConversationalGEval
    from deepeval.test_case import MultiTurnParams

    from localjudge.conversations.deepeval_tool_turns import deepeval_tool_turns_text
    from localjudge.conversations.readers import from_deepeval
    from localjudge.conversations.render import deepeval_rag_turns_text

    params, kw = EXTRA_CASES[case]
    kw = dict(kw)
    values = kw.pop("values", {})
    their_prompts: list[str] = []
    metric = ConversationalGEval(
        name="polite",
        evaluation_params=[MultiTurnParams(p) for p in params],
        model=RecordingLLM(lambda p, schema: json.dumps(answer(p)), their_prompts),
        async_mode=False,
        **{k: v for k, v in kw.items() if k != "rubric"},
        **_rubric_models(kw),
    )
    metric.measure(_rag_tools_case(values), _show_indicator=False)

    judge = make_conversational_geval_judge("polite", evaluation_params=list(params), **kw)
    conv = from_deepeval(_rag_tools_case(values))
    turns = {"deepeval_rag_turns": deepeval_rag_turns_text(conv), "deepeval_tool_turns": deepeval_tool_turns_text(conv)}
    our_prompts: list[str] = []

    def reply(msgs, fmt):
        our_prompts.append(msgs[0].content)
        return json.dumps(answer(msgs[0].content), ensure_ascii=False)

    res = judge.evaluate(scripted(reply), **{k: v for k, v in turns.items() if k in judge.required_variables}, **values)
    assert our_prompts == their_prompts
    assert ("Retrieval Context" in our_prompts[-1]) == ("retrieval_context" in params)
    assert ("ToolCall(" in our_prompts[-1]) == ("tools_called" in params)
    assert res.score == pytest.approx(metric.score) and res.rationale == metric.reason


def _rubric_models(kw: dict) -> dict:
    from deepeval.metrics.g_eval.utils import Rubric

    return {"rubric": [Rubric(**r) for r in kw["rubric"]]} if "rubric" in kw else {}


def test_a_turn_field_param_reads_the_turn_value_that_holds_it_instead_of_deepeval_turns(tmp_path):
    path = tmp_path / "mine.toml"
    body = 'criteria = "x"\nevaluation_params = ["tools_called", "retrieval_context"]\n'
    path.write_text(f'name = "mine"\nkind = "deepeval_geval"\n[deepeval_geval]\n{body}', encoding="utf-8")
    both = load_judge_file(path)
    assert {"deepeval_rag_turns", "deepeval_tool_turns"} <= set(both.required_variables)
    assert "deepeval_turns" not in both.required_variables
    rag = make_conversational_geval_judge("p", criteria="x", evaluation_params=["retrieval_context"])
    assert "deepeval_rag_turns" in rag.required_variables and "deepeval_tool_turns" not in rag.required_variables


def test_rag_and_tool_turns_from_different_conversations_are_a_one_line_error():
    from localjudge.errors import InputError

    judge = make_conversational_geval_judge("p", evaluation_steps=STEPS, evaluation_params=["retrieval_context", "tools_called"])
    a = deepeval_turns_text(from_messages([{"role": r, "content": c} for r, c in SHORT]))
    b = deepeval_turns_text(from_messages([{"role": r, "content": c} for r, c in SUPPORT]))
    with pytest.raises(InputError, match="'deepeval_rag_turns' and 'deepeval_tool_turns' hold different turns") as e:
        judge.evaluate(scripted(lambda m, f: "{}"), deepeval_rag_turns=a, deepeval_tool_turns=b)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("param", ["context", "user_description", "chatbot_role"])
def test_the_params_deepeval_itself_cannot_print_are_refused_saying_why(tmp_path, param):
    from deepeval.metrics import ConversationalGEval
    from deepeval.test_case import MultiTurnParams

    metric = ConversationalGEval(
        name="p",
        evaluation_params=[MultiTurnParams(param)],
        evaluation_steps=STEPS,
        model=RecordingLLM(lambda p, s: "{}"),
        async_mode=False,
    )
    with pytest.raises(KeyError):  # DeepEval 4.3.1 has no label for it: the day it prints one, port it
        metric.measure(_rag_tools_case({param: ["c"] if param == "context" else "c"}), _show_indicator=False)
    path = tmp_path / "mine.toml"
    path.write_text(
        f'name = "mine"\nkind = "deepeval_geval"\n[deepeval_geval]\ncriteria = "x"\nevaluation_params = ["{param}"]\n',
        encoding="utf-8",
    )
    with pytest.raises(JudgeSpecError) as e:
        load_judge_file(path)
    msg = str(e.value)
    assert "\n" not in msg and "key 'deepeval_geval.evaluation_params.0'" in msg and "KeyError" in msg


def test_a_refused_param_named_in_the_python_api_is_a_one_line_error_saying_why():
    with pytest.raises(JudgeSpecError) as e:
        make_conversational_geval_judge("p", criteria="x", evaluation_params=["content", "metadata"])
    assert "\n" not in str(e.value) and "evaluation_params.1" in str(e.value) and "row column is text" in str(e.value)


@pytest.mark.model
def test_a_tools_called_and_retrieval_context_judge_scores_a_conversation_file_with_the_real_model(tmp_path):
    from click.testing import CliRunner

    from localjudge.cli import main

    (tmp_path / "tools_ok.toml").write_text(
        'name = "tools_ok"\nkind = "deepeval_geval"\n[deepeval_geval]\n'
        'evaluation_steps = ["Check the tools called fit the user\'s request."]\n'
        'evaluation_params = ["tools_called", "retrieval_context"]\n',
        encoding="utf-8",
    )
    call = {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"id": 42}'}}
    messages = [
        {"role": "user", "content": "Where is order 42?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
        {"role": "assistant", "content": "It shipped."},
    ]
    (tmp_path / "c.json").write_text(json.dumps({"messages": messages}), encoding="utf-8")
    argv = ["judge", "tools_ok", "--judges-dir", str(tmp_path), "--conversation", str(tmp_path / "c.json"), "--threads", "1"]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code in (0, 1), r.output  # 1: the verdict failed; never a missing-column error
    assert '"deepeval_score"' in r.output and "no deepeval_tool_turns column" not in r.output
