"""Generators of shipped judge catalog files (localjudge/judges/builtin, templates, serve's ragas prompts)."""

import json

# The built-in conversation judges (those taking a value only a conversation row has) and the last-turn negative
# control (localjudge/report/controls.py `last_turn`: the last assistant answer replaced by another conversation's).
# Decided by reading each judge's prompt, never from its name. A judge whose verdict rests on that answer fitting its
# own conversation (answering it, completing it, keeping its user's facts) declares the variable that carries the
# conversation: another conversation's answer is one it should score worse.
LAST_TURN = {
    "conversation_completeness": "conversation",
    "knowledge_retention": "conversation",
    "deepeval_conversation_completeness": "deepeval_turns",
    "deepeval_knowledge_retention": "deepeval_turns",
    "deepeval_goal_accuracy": "deepeval_tool_turns",
    "deepeval_turn_relevancy": "deepeval_turns",
    "agent_goal_accuracy": "ragas_conversation",
    "agent_goal_accuracy_without_reference": "ragas_conversation",
}
NOT_WORSE = "(the right verdict is not known to be worse)"
# The others say why not (`[controls] no_last_turn`): the summary prints it in place of a verdict.
NO_LAST_TURN = {
    "conversational_guidelines": "it grades whether the assistant's replies follow the row's guidelines, which another "
    f"conversation's reply may follow as well as the row's own {NOT_WORSE}",
    "conversational_role_adherence": "it grades whether the assistant keeps its assigned role, which another "
    f"conversation's reply may keep as well as the row's own {NOT_WORSE}",
    "conversational_safety": f"it grades whether the assistant's replies are safe, which another conversation's reply may be as well as the row's own {NOT_WORSE}",
    "conversational_tool_call_efficiency": "it grades the conversation's tool calls, not the text of the last answer",
    "user_frustration": "it grades the user's own turns (frustration, and whether the user ends satisfied), not the "
    "assistant's last answer",
    "deepeval_role_adherence": "it grades whether each assistant turn keeps the row's chatbot_role, which another "
    f"conversation's reply may keep as well as the row's own {NOT_WORSE}",
    "deepeval_topic_adherence": "it classifies each exchange by whether the question is on the row's topics and whether "
    f"the assistant answered or refused; another conversation's reply still answers {NOT_WORSE}",
    "deepeval_turn_faithfulness": "its score counts only the claims the retrieved passages contradict; another "
    "conversation's reply makes claims its passages do not address ('borderline'), which the score does not count "
    f"against it {NOT_WORSE}",
    "deepeval_turn_contextual_precision": "it grades the passages retrieved for the answers against the expected "
    "outcome, not the answers",
    "deepeval_turn_contextual_recall": "it grades the passages retrieved for the answers against the expected outcome, "
    "not the answers",
    "deepeval_turn_contextual_relevancy": "it grades the passages retrieved for the answers against what the user "
    "asked, not the answers",
    "deepeval_plan_adherence": "it grades the agent's trace (its plan and the steps that followed), not the text of "
    "the last answer",
    "deepeval_step_efficiency": "it grades the agent's trace (how few steps it took), not the text of the last answer",
    "deepeval_task_completion": "its answer control already gives it another row's last assistant message "
    "(deepeval_actual_output)",
    "topic_adherence": "it classifies the user's topics against the reference topics and checks whether the assistant "
    f"refused each; another conversation's reply still answers {NOT_WORSE}",
}
# deepeval_professionalism is written by hand (its criteria are localjudge's own); its file carries its reason.


def controls_block(
    answer: str | None,
    context: str | None = None,
    reference: str | None = None,
    conversation: str | None = None,
    no_last_turn: str | None = None,
) -> str:
    """The `[controls]` table a generated judge file ends with: which variables negative controls swap
    (localjudge/report/controls.py), with the comment the hand-written judge files carry."""
    lines = ["", "# what negative controls swap between rows (report/controls.py); not part of the judge's version", "[controls]"]
    named = (
        ("answer", answer),
        ("context", context),
        ("reference", reference),
        ("conversation", conversation),
        ("no_last_turn", no_last_turn),
    )
    lines += [f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in named if v]
    return "\n".join(lines) + "\n"


def last_turn_block(name: str) -> str:
    """The `[controls]` table of a conversation judge with no other control: its last-turn declaration or the reason
    it has none (`LAST_TURN`, `NO_LAST_TURN`); empty for a judge in neither."""
    if name not in LAST_TURN and name not in NO_LAST_TURN:
        return ""
    return controls_block(None, conversation=LAST_TURN.get(name), no_last_turn=NO_LAST_TURN.get(name))
