"""The cases of the real-model judge tests (tests/test_judges_real*.py): two examples per built-in judge, the check
every result must pass, and the batched run that judges them as `localjudge run` does.

Each group of judge kinds is one test file; its cases are judged by the runner's own batched path
(`localjudge.evaluate` over rows that hold every variable of several judges, on an engine that decodes `n_parallel`
sequences side by side with KV reuse) in runs whose judges share no column they would read differently
(`conflict_free`: tests/test_judges_real.py checks that each run sends every judge exactly the prompts a direct
`judge.evaluate(**variables)` sends). Free-text fields are capped at a few tokens (DecodeOptions.field_tokens) to
keep the suite short; the constraint still closes every output.
"""

from __future__ import annotations

import json

import pytest

from localjudge.conversations import Conversation
from localjudge.conversations.deepeval_case import print_tools_called_text, tools_called_text
from localjudge.conversations.deepeval_trace import deepeval_trace_json
from localjudge.conversations.model import ToolCall
from localjudge.conversations.ragas_text import ragas_text
from localjudge.conversations.readers import from_messages
from localjudge.conversations.render import deepeval_rag_turns_text, deepeval_turns_text, expected_calls_text
from localjudge.engine import DecodeOptions
from localjudge.judges import get_judge

OPTS = DecodeOptions(field_tokens=6)
Q, A, CTX = "What is the capital of France?", "The capital of France is Paris.", "Paris is the capital of France."
RUBRIC = "[Is it correct?]\nScore 1: wrong\nScore 2: mostly wrong\nScore 3: partly right\nScore 4: mostly right\nScore 5: right"
Q2, A2, CTX2 = "Who wrote Hamlet?", "Hamlet was written by Charles Dickens.", "Hamlet is a tragedy by William Shakespeare."


def examples(q: str, a: str, ctx: str) -> dict[str, dict]:
    return {
        "correctness": {"input": q, "output": a, "ground_truth": [ctx, "It is a fact."]},
        "groundedness": {"input": q, "output": a, "retrieval_context": ctx},
        "relevance_to_query": {"input": q, "output": a},
        "retrieval_relevance": {"input": q, "doc": [ctx, "Bananas are yellow."]},
        "safety": {"content": a},
        "guidelines": {
            "guidelines": ["The response must be in English.", "The response must be one sentence."],
            "input": q,
            "output": a,
        },
        "context_sufficiency": {"input": q, "ground_truth": a, "retrieval_context": ctx},
        "equivalence": {"output": a, "expected_output": ctx},
        "answer_similarity": {"input": q, "output": a, "targets": ctx},
        "faithfulness": {"input": q, "output": a, "context": ctx},
        "answer_correctness": {"input": q, "output": a, "targets": ctx},
        "answer_relevance": {"input": q, "output": a},
        "relevance": {"input": q, "output": a, "context": ctx},
        "diversity": {"question": q, "answer": a, "context": ctx},
        "creativity": {"question": q, "answer": a, "context": ctx},
        "rag_groundedness": {"question": q, "answer": a, "context": ctx},
        "coherence": {"question": q, "answer": a, "context": ctx},
        "pointwise": {"question": q, "answer": a, "context": ctx},
        "pairwise": {"question": q, "context": ctx, "answer_1": a, "answer_2": "I do not know."},
        "advanced_relevance": {"question": q, "answer": a, "context": ctx},
        "answer_relevancy": {"input": q, "output": a},
        "factuality": {"input": q, "expected": ctx, "output": a},
        # dedicated judge models' native formats (tests/test_judge_models.py has their own cases)
        "prometheus_absolute": {"instruction": q, "response": a, "rubric": RUBRIC},
        "prometheus_absolute_ref": {"instruction": q, "response": a, "reference_answer": ctx, "rubric": RUBRIC},
        "prometheus_relative": {"instruction": q, "answer_1": a, "answer_2": "I do not know.", "rubric": "[Is it correct?]"},
        "prometheus_relative_ref": {
            "instruction": q,
            "answer_1": a,
            "answer_2": "I do not know.",
            "reference_answer": ctx,
            "rubric": "[Is it correct?]",
        },
        "flow_judge_rubric": {"input": q, "context": ctx, "output": a, "criteria": "Is it correct?", "rubric": RUBRIC},
        "selene_absolute": {
            "user_input": q,
            "assistant_response": a,
            "rubric_objective": "Is it correct?",
            **{f"rubric_score_{i}_description": f"level {i}" for i in range(1, 6)},
        },
        "selene_pairwise": {"user_input": q, "answer_1": a, "answer_2": "I do not know.", "rubric_objective": "Is it correct?"},
        # MLflow's session-level judges: the conversation as localjudge.conversations.conversation_text renders it
        **{
            n: {"conversation": conversation(q, a)}
            for n in (
                "conversation_completeness",
                "conversational_role_adherence",
                "conversational_safety",
                "conversational_tool_call_efficiency",
                "knowledge_retention",
                "user_frustration",
            )
        },
        "conversational_guidelines": {"conversation": conversation(q, a), "guidelines": ["Answer in one sentence."]},
        # MLflow's tool-call judges: one call, rendered as MLflow renders it (conversations.render.tool_calls_text)
        **{
            n: {
                "request": q,
                "tools_called": f"Tool Call 1: search\n  Input Arguments: {{'query': {q!r}}}\n  Output: {ctx}",
                "available_tools": "- search: Search the web",
            }
            for n in ("tool_call_correctness", "tool_call_efficiency")
        },
        "tool_call_correctness_expected": {
            "request": q,
            "tools_called": f"Tool Call 1: search\n  Input Arguments: {{'query': {q!r}}}\n  Output: {ctx}",
            "available_tools": "- search: Search the web",
            "expected_calls": expected_calls_text([ToolCall(name="search", arguments={"query": q})]),
        },
        "completeness": {"inputs": q, "outputs": a},
        "fluency": {"outputs": a},
        # model-free: the model is given and not called
        **{
            f"tool_call_{m}": {
                "tool_call": '{"name": "search", "arguments": {"q": "x"}}',
                "tool_call_index": "0",
                "expected_tool_calls": '[{"name": "search", "arguments": {"q": "x"}}]',
            }
            for m in ("exact", "ordered", "subset")
        },
        "summarization": {"inputs": ctx, "outputs": a},
        # DeepEval's turn relevancy: the window as DeepEval prints turns (conversations.render.deepeval_turns_text)
        "deepeval_turn_relevancy": {"deepeval_turns": deepeval_turns_text(_conv(q, a))},
        # RAGAS's agent judges (kind ragas_agent): the conversation as RAGAS's pretty_repr prints it
        "agent_goal_accuracy": {"ragas_conversation": ragas_text(_conv(q, a)), "reference": f"The user learns: {ctx}"},
        "agent_goal_accuracy_without_reference": {"ragas_conversation": ragas_text(_conv(q, a))},
        "topic_adherence": {"ragas_conversation": ragas_text(_conv(q, a)), "reference_topics": ["geography"]},
        # DeepEval's agentic judges (kind deepeval_agentic): the input and one tool call as DeepEval prints them
        "deepeval_argument_correctness": {
            "deepeval_input": q,
            "deepeval_tools_called": tools_called_text([ToolCall(name="search", arguments={"query": q})]),
        },
        "deepeval_task_completion": {
            "deepeval_input": q,
            "deepeval_actual_output": a,
            "deepeval_tools_called_json": print_tools_called_text([ToolCall(name="search", arguments={"query": q})]),
        },
        # DeepEval's knowledge retention (kind deepeval_conversation): the turns as DeepEval prints them
        "deepeval_knowledge_retention": {"deepeval_turns": deepeval_turns_text(_conv(q, a))},
        "deepeval_conversation_completeness": {"deepeval_turns": deepeval_turns_text(_conv(q, a))},
        "deepeval_role_adherence": {"deepeval_turns": deepeval_turns_text(_conv(q, a)), "chatbot_role": "A helpful tutor."},
        "deepeval_topic_adherence": {"deepeval_turns": deepeval_turns_text(_conv(q, a)), "relevant_topics": '["geography"]'},
        # DeepEval's goal accuracy: the turns with the assistant's tool call as DeepEval holds them
        "deepeval_goal_accuracy": {"deepeval_tool_turns": _tool_turns(q, a)},
        # DeepEval's turn-level RAG judges: the turns with the answer's retrieval context (deepeval_rag_turns_text)
        "deepeval_turn_faithfulness": {"deepeval_rag_turns": deepeval_rag_turns_text(_rag_conv(q, a, ctx))},
        "deepeval_turn_contextual_relevancy": {"deepeval_rag_turns": deepeval_rag_turns_text(_rag_conv(q, a, ctx))},
        "deepeval_professionalism": {"deepeval_turns": deepeval_turns_text(_conv(q, a))},
        # MLflow's exact tool-call match (model-free, a conversation's whole call list)
        **{
            n: {
                "tool_calls": '[{"name": "search", "arguments": {"q": "x"}}]',
                "expected_tool_calls": '[{"name": "search", "arguments": {"q": "x"}}]',
            }
            for n in ("mlflow_tool_call_exact", "mlflow_tool_call_exact_ordered")
        },
        # DeepEval's trace-based agentic judges: a conversation with one tool call as DeepEval's trace dict
        "deepeval_step_efficiency": {"deepeval_trace_json": deepeval_trace_json(_tool_conv(q, a, ctx))},
        "deepeval_plan_adherence": {"deepeval_trace_json": deepeval_trace_json(_tool_conv(q, a, ctx))},
        # DeepEval's turn-level RAG judges that read the conversation's expected outcome
        "deepeval_turn_contextual_precision": {
            "deepeval_rag_turns": deepeval_rag_turns_text(_rag_conv(q, a, ctx)),
            "expected_outcome": a,
        },
        "deepeval_turn_contextual_recall": {
            "deepeval_rag_turns": deepeval_rag_turns_text(_rag_conv(q, a, ctx)),
            "expected_outcome": a,
        },
    }


def _tool_turns(q: str, a: str) -> str:
    from localjudge.conversations.deepeval_tool_turns import deepeval_tool_turns_text

    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": json.dumps({"query": q})}}
    messages = [
        {"role": "user", "content": q},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": a},
        {"role": "assistant", "content": a},
    ]
    return deepeval_tool_turns_text(from_messages(messages))


def _tool_conv(q: str, a: str, ctx: str) -> Conversation:
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": json.dumps({"query": q})}}
    return from_messages(
        [
            {"role": "user", "content": q},
            {"role": "assistant", "content": "Plan: 1. search the web. 2. answer.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": ctx},
            {"role": "assistant", "content": a},
        ]
    )


def _conv(q: str, a: str) -> Conversation:
    return from_messages([{"role": "user", "content": q}, {"role": "assistant", "content": a}])


def _rag_conv(q: str, a: str, ctx: str) -> Conversation:
    return from_messages([{"role": "user", "content": q}, {"role": "assistant", "content": a, "retrieval_context": [ctx]}])


def conversation(q: str, a: str) -> str:
    turns = [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return json.dumps(turns, indent=2, ensure_ascii=False)


def check_typed(judge, r, engine):
    if not judge.traits.needs_model:  # model-free (tool_call_match): scored with no call; the examples match exactly
        assert (r.unscored_reason, r.score, r.passed, r.usage.calls, r.model_id) == (None, 1.0, True, 0, engine.model_id)
        return
    assert r.unscored_reason is None, r.error
    assert r.judge == judge.name and r.judge_version == judge.version and r.model_id == engine.model_id
    assert r.raw_text and r.verdict is not None and r.usage.calls >= 1 and r.usage.output_tokens > 0
    if r.score is not None:
        assert 0.0 <= r.score <= 1.0 and r.passed == (r.score >= judge.pass_threshold)
    kind, value = judge.kind, r.value
    fmt = judge.format
    if kind == "per_item":
        assert isinstance(value, list) and set(value) <= {"yes", "no"} and r.usage.calls == 2
    elif kind == "two_stage":
        assert isinstance(value, list) and set(value) <= {"yes", "no", "unsure"}
        assert len(value) == max(1, len(r.details["statements"])) and r.usage.calls == 2
    elif kind == "ragas_agent":  # RAGAS's chained calls; the score is RAGAS's arithmetic on their outputs
        assert r.usage.calls >= 2 and isinstance(value, float) and 0.0 <= value <= 1.0 and r.score == value
        if judge.spec.ragas_agent is not None and judge.spec.ragas_agent.metric != "topic_adherence":
            assert value in (0.0, 1.0)
    elif kind == "deepeval_agentic" and judge.spec.deepeval_agentic == "task_completion":  # task, then the verdict
        assert r.usage.calls == 2 and isinstance(value, float) and 0.0 <= value <= 1.0 and r.score == r.details["verdict"]
        assert isinstance(r.details["task"], str) and isinstance(r.details["outcome"], str)
    elif kind == "deepeval_agentic" and judge.spec.deepeval_agentic in ("step_efficiency", "plan_adherence"):
        # the task (and the plan), then the score: the model's, or 1 with no plan
        assert r.usage.calls in (2, 3) and isinstance(value, float) and 0.0 <= value <= 1.0 and r.score == value
        assert isinstance(r.details["task"], str) and isinstance(r.rationale, str)
    elif kind == "deepeval_agentic":  # DeepEval's verdicts then reason; the score is the fraction of yes
        verdicts = [v["verdict"] for v in r.details["verdicts"]]
        assert r.usage.calls == 2 and isinstance(value, float) and r.score == value
        assert value == (verdicts.count("yes") / len(verdicts) if verdicts else 1.0)
    elif kind == "deepeval_conversation":  # DeepEval's chained calls; the score is DeepEval's arithmetic on them
        assert r.usage.calls >= 2 and isinstance(value, float) and 0.0 <= value <= 1.0 and r.score == value
        assert isinstance(r.rationale, str)
        if judge.spec.deepeval_conversation is not None and judge.spec.deepeval_conversation.metric == "goal_accuracy":
            goals, plans = r.details["goal_scores"], r.details["plan_scores"]  # a goal and a plan score, the reason
            assert r.usage.calls == 3 and value == (goals[0]["score"] + plans[0]["score"]) / 2
    elif kind == "deepeval_geval":  # ConversationalGEval: steps (from the criteria), then the 0-10 score and reason
        assert r.usage.calls == 2 and len(r.details["evaluation_steps"]) >= 1 and isinstance(r.rationale, str)
        assert r.score == min(max(r.details["g_score"] / 10, 0.0), 1.0) and 0.0 <= r.score <= 1.0
    elif kind == "four_line":
        assert set(value) == {"accuracy", "comprehensiveness", "context_precision", "final"}
        assert value["final"] == round(
            (value["accuracy"] + value["comprehensiveness"] + value["context_precision"]) / 30 + 1e-9, 1
        )
    elif fmt.kind == "yes_no_json":
        assert value in ("yes", "no")
    elif fmt.kind in ("score_json", "score_lines"):
        assert fmt.range.lo <= value <= fmt.range.hi
    elif fmt.kind == "pairwise_json":
        assert value in (1, 2)
    elif fmt.kind == "choice":
        assert value in fmt.labels
    elif fmt.kind in ("prometheus", "flow_judge", "selene"):
        assert value in ((1, 2) if fmt.mode == "relative" else range(int(fmt.range.lo), int(fmt.range.hi) + 1))
    else:  # pragma: no cover - a new kind must be added here
        raise AssertionError(f"unchecked format {fmt.kind}")
    # what the model wrote parses again, on its own, to the same value (non-multi-call judges)
    if kind not in (
        "per_item",
        "two_stage",
        "four_line",
        "ragas_agent",
        "deepeval_agentic",
        "deepeval_conversation",
        "deepeval_geval",
    ):
        assert fmt.value(fmt.parse(r.raw_text)) == value


EXAMPLES = (examples(Q, A, CTX), examples(Q2, A2, CTX2))
# the test file of each judge kind: the several-call DeepEval conversation programs (their long prompts are most of
# the time), the other several-call programs, and the one-call (and model-free) kinds
GROUPS = {
    "conversation": ("deepeval_conversation",),
    "agentic": ("deepeval_agentic", "ragas_agent", "deepeval_geval"),
    "single": ("single", "per_item", "v1_metric", "four_line", "two_stage", "tool_call_match"),
}
N_PARALLEL = 4  # sequences the batch engine decodes side by side


def group_of(name: str) -> str:
    """The test file (group) a built-in judge's cases run in, by its kind."""
    kind = get_judge(name).kind
    return next(g for g, kinds in GROUPS.items() if kind in kinds)


def case_ids(group: str) -> list[tuple[str, int]]:
    """(judge, example index) of every case of a group: each judge's two examples, in catalog order."""
    return [(n, i) for n in EXAMPLES[0] if group_of(n) == group for i in (0, 1)]


def variable_names(name: str) -> set[str]:
    """Every name a judge reads a row's column by: its variables and their aliases."""
    return {n for v in get_judge(name).spec.variables for n in (v.name, *(v.aliases or ()))}


def conflict_free(names: list[str]) -> list[list[str]]:
    """The judges split into runs (first fit, in order) whose merged rows give each judge exactly its own example's
    values: two judges share a run only when every column both give holds the same value in both examples, and
    neither gives a column the other would read (a variable or alias) but does not give itself."""
    reads = {n: variable_names(n) for n in names}

    def fits(n: str, run: list[str]) -> bool:
        for m in run:
            for a, b in ((n, m), (m, n)):
                for k in EXAMPLES[0][b]:
                    if k in EXAMPLES[0][a]:
                        if any(ex[a][k] != ex[b][k] for ex in EXAMPLES):
                            return False
                    elif k in reads[a]:
                        return False
        return True

    runs: list[list[str]] = []
    for n in names:
        run = next((r for r in runs if fits(n, r)), None)
        if run is None:
            runs.append([n])
        else:
            run.append(n)
    return runs


def rows_for(names: list[str], indices: set[int]) -> list[dict]:
    """The run's rows: one per example index, each holding every column of the judges' examples."""
    rows = []
    for i in sorted(indices):
        row: dict = {"id": f"example-{i + 1}"}
        for n in names:
            row.update(EXAMPLES[i][n])
        rows.append(row)
    return rows


def judged(engine, cases: list[tuple[str, int]], out) -> dict[tuple[str, int], object]:
    """Each case's `JudgeResult`, judged by `localjudge.evaluate` (the batched runner) in conflict-free runs into
    `out`/run-K; a case's result is its judge's cell on its example's row."""
    import localjudge

    names = list(dict.fromkeys(n for n, _ in cases))
    got: dict[tuple[str, int], object] = {}
    for k, run in enumerate(conflict_free(names)):
        indices = {i for n, i in cases if n in run}
        res = localjudge.evaluate(rows_for(run, indices), run, engine=engine, options=OPTS, out=out / f"run-{k}")
        for r in res.results:
            got[(r.judge, int(r.row_id.rsplit("-", 1)[1]) - 1)] = r.result
    return {c: got[c] for c in cases}


def selected_cases(request, group: str) -> list[tuple[str, int]]:
    """The cases of this module that the session will run (all of the group when none is selected): a run of one
    test id judges that case alone."""
    chosen = [
        it.callspec.params["case"]
        for it in request.session.items
        if getattr(it, "module", None) is request.module and "case" in getattr(getattr(it, "callspec", None), "params", {})
    ]
    return chosen or case_ids(group)


def group_tests(group: str):
    """A group file's fixture and test: `results` judges the module's selected cases once (the batched runner on
    `batch_engine`); the test checks one case's result, named after its judge and example (`name-1`, `name-2`)."""

    @pytest.fixture(scope="module")
    def results(request, batch_engine, tmp_path_factory):
        return judged(batch_engine, selected_cases(request, group), tmp_path_factory.mktemp(group))

    @pytest.mark.model
    @pytest.mark.parametrize("case", case_ids(group), ids=lambda c: f"{c[0]}-{c[1] + 1}")
    def test_builtin_judge_gives_a_typed_scored_result_on_the_real_model(results, batch_engine, case):
        check_typed(get_judge(case[0]), results[case], batch_engine)

    return results, test_builtin_judge_gives_a_typed_scored_result_on_the_real_model
