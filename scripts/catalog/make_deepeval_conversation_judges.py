"""Dev script: write DeepEval's LLM-judged conversational metric prompts as localjudge judge files
(localjudge/judges/builtin/deepeval_<name>.toml), from the installed deepeval package: the text its own
template bundle renders (`deepeval.templates.resolver.resolve_template`, multimodal off) with the turns left as
the judge's `{{deepeval_turns}}` variable. Run it again after a DeepEval upgrade;
tests/test_deepeval_conversation_judges_golden.py checks the files against the installed package."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scripts.catalog import last_turn_block

ROOT = Path(__file__).resolve().parents[2]
SENTINEL = "@@DEEPEVAL_TURNS@@"
URL = "https://github.com/confident-ai/deepeval/tree/main/deepeval/metrics/"

# name -> (DeepEval metric class, template method, the variable its turns fill, its description, source path)
PORTS = {
    "deepeval_turn_relevancy": (
        "TurnRelevancyMetric",
        "generate_verdicts",
        "sliding_window",
        "Whether the LAST assistant message is relevant to the messages before it. Per turn (--granularity turn, "
        "DeepEval's sliding window); DeepEval's score is the fraction of turns passing (DeepEval TurnRelevancyMetric).",
        "turn_relevancy/templates/generate_verdicts.txt",
    ),
}


def deepeval_prompt(metric: str, method: str, turns_var: str, turns: object) -> str:
    """The prompt DeepEval's `metric` sends from its `method` template with `turns` as the turns."""
    from deepeval.templates.resolver import resolve_template

    return resolve_template("metrics", metric, method, **{turns_var: turns, "multimodal": False, "strict": True})


# a window of turns as DeepEval's convert_turn_to_dict gives them: the golden prompt's input (tests/golden/<name>.txt)
GOLDEN_TURNS = [
    {"content": "Hi! I'm Léa — what's the {weather} in \"Lyon\"?", "role": "user"},
    {"content": "Sunny, 24 °C.", "role": "assistant"},
    {"content": "And tomorrow?", "role": "user"},
    {"content": "Isn't blue a nice colour?", "role": "assistant"},
]


def golden(name: str) -> str:
    """DeepEval's own prompt for `GOLDEN_TURNS`, as tests/golden/ stores messages (one user message)."""
    metric, method, turns_var, _, _ = PORTS[name]
    return f"===== user =====\n{deepeval_prompt(metric, method, turns_var, GOLDEN_TURNS)}\n"


def judge_file(name: str) -> str:
    metric, method, turns_var, description, path = PORTS[name]
    text = deepeval_prompt(metric, method, turns_var, SENTINEL)
    if text.count(SENTINEL) != 1 or "{{" in text:
        raise SystemExit(f"{name}: the rendered template cannot be held as a mustache template")
    template = text.replace(SENTINEL, "{{deepeval_turns}}")
    q = json.dumps  # TOML basic strings: JSON's escapes are TOML's
    return (
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);\n"
        "# written by scripts/catalog/make_deepeval_conversation_judges.py from the installed deepeval package: the text\n"
        f"# DeepEval's {metric}.{method} renders (multimodal off), its turns as {{{{deepeval_turns}}}}.\n"
        f"name = {q(name)}\n"
        f"description = {q(description)}\n"
        'version = "1"\n'
        "kind = 'single'\n"
        "pass_threshold = 0.5\n"
        "[source]\n"
        'project = "DeepEval"\n'
        'license = "Apache-2.0"\n'
        f"url = {q(URL + path)}\n"
        f"notes = {q(f'{metric} ({method}): its prompt byte for byte. The answer is decoded as yes_no_json: result is DeepEval verdict, rationale its reason.')}\n"
        "[[variables]]\n"
        "name = 'deepeval_turns'\n"
        "description = 'the turns as DeepEval prints them (localjudge.conversations.render.deepeval_turns_text)'\n"
        "[[messages]]\n"
        "role = 'user'\n"
        f"template = {q(template)}\n"
        "[output]\n"
        'kind = "yes_no_json"\n'
        "field_tokens = 96\n"
    ) + last_turn_block(name)


# name -> (DeepEval metric class, its schema module, [(template method, its placeholders, output model)], description)
# for the several-call metrics (kind deepeval_conversation, localjudge/judges/deepeval_conversation.py)
STAGED = {
    "deepeval_knowledge_retention": (
        "KnowledgeRetentionMetric",
        "knowledge_retention",
        [
            ("extract_data", ("previous_turns", "user_message"), "Knowledge"),
            ("generate_verdict", ("llm_message", "accumulated_knowledge"), "KnowledgeRetentionVerdict"),
            ("generate_reason", ("attritions", "score"), "KnowledgeRetentionScoreReason"),
        ],
        "Whether the assistant keeps the facts the user gave earlier in the conversation: the facts of each user "
        "turn are extracted, then each assistant turn is checked for forgetting or contradicting them; score = the "
        "fraction of assistant turns that do not (DeepEval KnowledgeRetentionMetric).",
    ),
    "deepeval_conversation_completeness": (
        "ConversationCompletenessMetric",
        "conversation_completeness",
        [
            ("extract_user_intentions", ("turns",), "UserIntentions"),
            ("generate_verdicts", ("turns", "intention"), "ConversationCompletenessVerdict"),
            ("generate_reason", ("score", "intentions", "incompletenesses"), "ConversationCompletenessScoreReason"),
        ],
        "Whether the assistant satisfied what the user wanted over the conversation: the user's intentions are "
        "extracted, then each is checked against the conversation; score = the fraction satisfied (DeepEval "
        "ConversationCompletenessMetric).",
    ),
    "deepeval_role_adherence": (
        "RoleAdherenceMetric",
        "role_adherence",
        [
            ("extract_out_of_character_response_verdicts", ("turns", "role=chatbot_role"), "OutOfCharacterResponseVerdicts"),
            ("generate_reason", ("score", "role=chatbot_role", "out_of_character_responses"), "RoleAdherenceScoreReason"),
        ],
        "Whether the assistant stays in its role (the conversation's `chatbot_role`) in every turn: the "
        "out-of-character assistant turns are listed; score = the fraction of assistant turns in character "
        "(DeepEval RoleAdherenceMetric).",
    ),
    "deepeval_topic_adherence": (
        "TopicAdherenceMetric",
        "topic_adherence",
        [
            ("get_qa_pairs", ("conversation",), "QAPairs"),
            ("get_qa_pair_verdict", ("relevant_topics", "question", "response"), "RelevancyVerdict"),
            (
                "generate_reason",
                (
                    "success",
                    "score",
                    "threshold",
                    *(f"{k}_reason_line" for k in ("true_positives", "true_negatives", "false_positives", "false_negatives")),
                ),
                "TopicAdherenceReason",
            ),
        ],
        "Whether the assistant keeps to the row's `relevant_topics`: the question/answer pairs of each exchange are "
        "extracted, then each is classified as a true/false positive/negative against the topics; score = the "
        "fraction of true ones, 0 with no pair (DeepEval TopicAdherenceMetric).",
    ),
    "deepeval_goal_accuracy": (
        "GoalAccuracyMetric",
        "goal_accuracy",
        [
            ("get_accuracy_score", ("task", "steps_taken"), "GoalScore"),
            ("get_plan_evaluation_score", ("task", "steps_taken"), "PlanScore"),
            ("get_final_reason", ("goal_evaluations", "plan_evalautions", "final_score", "threshold"), None),
        ],
        "Whether the assistant achieved what the user asked in each exchange, and how well it planned and followed "
        "its plan (tool calls included): each exchange's goal and plan are scored 0-1; score = the mean of the goal "
        "mean and the plan mean (DeepEval GoalAccuracyMetric).",
    ),
    "deepeval_turn_faithfulness": (
        "TurnFaithfulnessMetric",
        "turn_faithfulness",
        [
            ("generate_truths", ("reference_context",), "Truths"),
            ("generate_claims", ("input=user_content", "assistant_output"), "Claims"),
            ("generate_verdicts", ("claims", "reference_context"), "Verdicts"),
            ("generate_reason", ("contradictions", "score"), "FaithfulnessScoreReason"),
            ("generate_final_reason", ("final_score", "success", "reasons"), "FaithfulnessScoreReason"),
        ],
        "Whether each assistant answer keeps to the passages retrieved for it (the turns' `retrieval_context`): per "
        "window of exchanges the truths of the passages and the claims of the answers are extracted and each claim "
        "checked against the truths; score = the mean over windows of the fraction of claims not contradicted "
        "(DeepEval TurnFaithfulnessMetric).",
    ),
    "deepeval_turn_contextual_relevancy": (
        "TurnContextualRelevancyMetric",
        "turn_contextual_relevancy",
        [
            ("generate_verdicts", ("input=user_content", "context"), "ContextualRelevancyVerdicts"),
            (
                "generate_reason",
                ("input=user_content", "irrelevant_statements", "relevant_statements", "score"),
                "ContextualRelevancyScoreReason",
            ),
            ("generate_final_reason", ("final_score", "success", "reasons"), "ContextualRelevancyScoreReason"),
        ],
        "Whether the passages retrieved for each assistant answer (the turns' `retrieval_context`) are relevant to "
        "what the user asked: per window of exchanges each passage's statements are judged relevant or not; score = "
        "the mean over windows of the fraction relevant (DeepEval TurnContextualRelevancyMetric).",
    ),
    "deepeval_turn_contextual_precision": (
        "TurnContextualPrecisionMetric",
        "turn_contextual_precision",
        [
            (
                "generate_verdicts",
                ("input=user_content", "expected_outcome", "document_count_str", "context_to_display"),
                "Verdicts",
            ),
            ("generate_reason", ("score", "input=user_content", "verdicts"), "ContextualPrecisionScoreReason"),
            ("generate_final_reason", ("final_score", "success", "reasons"), "ContextualPrecisionScoreReason"),
        ],
        "Whether the passages retrieved for each assistant answer (the turns' `retrieval_context`) that are useful to "
        "reach the row's `expected_outcome` are ranked above the useless ones: per window of exchanges each passage is "
        "judged useful or not; score = the mean over windows of the weighted precision (DeepEval "
        "TurnContextualPrecisionMetric).",
    ),
    "deepeval_turn_contextual_recall": (
        "TurnContextualRecallMetric",
        "turn_contextual_recall",
        [
            ("generate_verdicts", ("expected_outcome", "context_to_display"), "Verdicts"),
            (
                "generate_reason",
                ("score", "expected_outcome", "supportive_reasons", "unsupportive_reasons"),
                "ContextualRecallScoreReason",
            ),
            ("generate_final_reason", ("final_score", "success", "reasons"), "ContextualRecallScoreReason"),
        ],
        "Whether the passages retrieved for the assistant answers (the turns' `retrieval_context`) hold what the "
        "row's `expected_outcome` says: per window of exchanges each sentence of the expected outcome is judged "
        "attributable to the passages or not; score = the mean over windows of the fraction attributable (DeepEval "
        "TurnContextualRecallMetric).",
    ),
}
# a metric whose turns carry their tool calls reads `deepeval_tool_turns` (conversations/deepeval_tool_turns.py)
TOOL_TURNS = ("deepeval_goal_accuracy",)
# how a window's score is computed where it is not DeepEval's score_qag_verdicts
SCORED_BY = {"deepeval_turn_contextual_precision": "_calculate_interaction_score (weighted precision)"}
# DeepEval's Jinja PASS/FAIL branch (`final_score|float >= threshold|float`), held as the `{{result}}` the judge fills
BRANCH = ("Result: PASS", "Result: FAIL", "Result: {{result}}")
# the turn-level RAG ports read the turns with their retrieval contexts (conversations/render.py deepeval_rag_turns_text)
RAG_TURNS = {
    "deepeval_turn_faithfulness",
    "deepeval_turn_contextual_relevancy",
    "deepeval_turn_contextual_precision",
    "deepeval_turn_contextual_recall",
}


def static_values(metric: str, method: str) -> dict[str, object]:
    """The template values DeepEval fixes for a metric's call (its defaults, multimodal off): rendered into the file."""
    if (metric, method) == ("TurnFaithfulnessMetric", "generate_truths"):
        from deepeval.metrics.turn_faithfulness.turn_faithfulness import _turn_faithfulness_limit_description

        return {"limit_description": _turn_faithfulness_limit_description(None)}
    if (metric, method) == ("TurnContextualRelevancyMetric", "generate_verdicts"):
        from deepeval.metrics.turn_contextual_relevancy.turn_contextual_relevancy import (
            _contextual_relevancy_verdict_kwargs,
        )

        return dict(_contextual_relevancy_verdict_kwargs(False))
    if (metric, method) == ("TurnContextualPrecisionMetric", "generate_verdicts"):
        return {"multimodal_note": ""}  # _contextual_precision_verdict_fields' third value, multimodal off
    if (metric, method) == ("TurnContextualRecallMetric", "generate_verdicts"):
        from deepeval.metrics.turn_contextual_recall.turn_contextual_recall import _contextual_recall_verdict_kwargs

        fixed = dict(_contextual_recall_verdict_kwargs([], False))
        del fixed["context_to_display"]  # the window's passages: filled per call
        return fixed
    if (metric, method) == ("TurnContextualRecallMetric", "generate_reason"):
        return {"content_type": "sentence"}
    return {}


def staged_judge_file(name: str) -> str:
    """A deepeval_conversation judge file: each stage's prompt as DeepEval renders it (multimodal off), its
    placeholders as mustache variables the judge fills per call, its output the schema DeepEval asks for."""
    import importlib

    metric, module, stages, description = STAGED[name]
    schemas = importlib.import_module(f"deepeval.metrics.{module}.schema")
    scored_by = SCORED_BY.get(name, "score_qag_verdicts")
    q = json.dumps
    out = [
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);\n"
        "# written by scripts/catalog/make_deepeval_conversation_judges.py from the installed deepeval package: the texts\n"
        f"# DeepEval's {metric} renders (multimodal off), its template variables as mustache placeholders.\n",
        f"name = {q(name)}\n",
        f"description = {q(description)}\n",
        'version = "1"\n',
        'kind = "deepeval_conversation"\n',
        "pass_threshold = 0.5\n",
        "[deepeval_conversation]\n",
        f"metric = {q(name.removeprefix('deepeval_'))}\n",
        "[source]\n",
        'project = "DeepEval"\n',
        'license = "Apache-2.0"\n',
        f"url = {q(URL + module + '/templates')}\n",
        f"notes = {q(f'DeepEval 4.3.1 {metric}: its templates byte for byte, output schemas from its pydantic models; score as {scored_by} computes it.')}\n",
        "[[variables]]\n",
        *(
            [
                "name = 'deepeval_tool_turns'\n",
                "description = 'the turns as DeepEval holds them, tool calls included "
                "(localjudge.conversations.deepeval_tool_turns.deepeval_tool_turns_text)'\n",
            ]
            if name in TOOL_TURNS
            else [
                "name = 'deepeval_turns'\n",
                "description = 'the turns as DeepEval prints them (localjudge.conversations.render.deepeval_turns_text)'\n",
            ]
        ),
    ]
    if name in RAG_TURNS:
        out[-2:] = [
            "name = 'deepeval_rag_turns'\n",
            "description = 'the turns with their retrieval contexts, as DeepEval prints them "
            "(localjudge.conversations.render.deepeval_rag_turns_text)'\n",
        ]
    if any("role=chatbot_role" in holes for _, holes, _ in stages):
        out += [
            "[[variables]]\n",
            "name = 'chatbot_role'\n",
            "description = \"the assistant's role (DeepEval's ConversationalTestCase.chatbot_role): a column of the row\"\n",
        ]
    if any("relevant_topics" in holes for _, holes, _ in stages):
        out += [
            "[[variables]]\n",
            "name = 'relevant_topics'\n",
            'description = "the topics the assistant should keep to (DeepEval\'s relevant_topics): a list column of the row"\n',
        ]
    if any("expected_outcome" in holes for _, holes, _ in stages):
        out += [
            "[[variables]]\n",
            "name = 'expected_outcome'\n",
            "description = \"what the conversation should achieve (DeepEval's ConversationalTestCase.expected_outcome): "
            'a column of the row"\n',
        ]
    for method, holes, model in stages:
        named = dict(h.split("=") if "=" in h else (h, h) for h in holes)  # DeepEval's name -> the placeholder
        sentinels = {h: f"@@{h.upper()}@@" for h in named}
        text = deepeval_prompt_with(metric, method, {**sentinels, **static_values(metric, method)})
        if "final_score" in named and "threshold" in named:  # a PASS/FAIL branch (GoalAccuracy's final reason)
            text = _branch_as_variable(metric, method, sentinels, text)
        if "{{" in text.replace(BRANCH[2], "") or any(text.count(v) != 1 for v in sentinels.values()):
            raise SystemExit(f"{name}.{method}: the rendered template cannot be held as a mustache template")
        for h, v in sentinels.items():
            text = text.replace(v, "{{" + named[h] + "}}")
        out += [
            "[[stages]]\n",
            f"name = {q(method)}\n",
            "[[stages.messages]]\n",
            "role = 'user'\n",
            f"template = {q(text)}\n",
            "[stages.output]\n",
        ]
        if model is None:  # DeepEval asks for free text (no schema)
            out += ['kind = "text"\n', "max_tokens = 256\n"]
        else:
            schema = json.dumps(getattr(schemas, model).model_json_schema())
            out += ['kind = "json_schema"\n', f"schema = {q(schema)}\n", "field_tokens = 64\n"]
    return "".join(out) + last_turn_block(name)  # the last-turn control, or why none (scripts/catalog)


def _branch_as_variable(metric: str, method: str, sentinels: dict[str, str], text: str) -> str:
    """The template with DeepEval's PASS/FAIL branch as `{{result}}`: the sentinels render PASS (each `|float` is
    0.0); rendered again with a failing score and threshold, only that word and the two numbers may differ."""
    failing = deepeval_prompt_with(metric, method, {**sentinels, "final_score": 0, "threshold": 1})
    expected = text.replace(sentinels["final_score"], "0").replace(sentinels["threshold"], "1")
    if text.count(BRANCH[0]) != 1 or failing != expected.replace(BRANCH[0], BRANCH[1]):
        raise SystemExit(f"{metric}.{method}: its PASS/FAIL branch is not where the judge file holds it")
    return text.replace(BRANCH[0], BRANCH[2])


def deepeval_prompt_with(metric: str, method: str, values: dict[str, object]) -> str:
    """The prompt DeepEval's `metric` sends from its `method` template with `values` as its variables."""
    from deepeval.templates.resolver import resolve_template

    return resolve_template("metrics", metric, method, **values, multimodal=False, strict=True)


def main() -> None:
    for name in STAGED:
        out = ROOT / "localjudge" / "judges" / "builtin" / f"{name}.toml"
        out.write_text(staged_judge_file(name), encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)}", file=sys.stderr)
    for name in PORTS:
        out = ROOT / "localjudge" / "judges" / "builtin" / f"{name}.toml"
        out.write_text(judge_file(name), encoding="utf-8")
        (ROOT / "tests" / "golden" / f"{name}.txt").write_text(golden(name), encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)} and tests/golden/{name}.txt", file=sys.stderr)


if __name__ == "__main__":
    main()
