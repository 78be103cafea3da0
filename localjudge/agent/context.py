"""The trace judge's conversation and its context window: each action and the reply to it (`Turn`),
rendered as messages, and the compaction that summarises, then drops, the oldest tool results while
prompt + the next action's token budget would exceed the engine's `n_ctx`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..engine.base import Engine, Message
from ..errors import PromptTooLongError


@dataclass(eq=False)
class Turn:
    """One action and the reply to it, as the conversation shows it."""

    number: int  # 1-based action number
    action_text: str
    label: str  # e.g. "list_spans(page=1)"
    result: str
    nudge: str = ""
    invalid: bool = False  # the reply is an error about the action itself (not a tool result)
    ref: Turn | None = None  # an identical earlier call whose result is still shown in full
    state: Literal["full", "summary", "dropped"] = "full"
    summary_chars: int = 240

    def body(self) -> str:
        """The reply as shown now: in full, summarised, dropped, or a pointer to an identical earlier call."""
        if self.ref is not None and self.ref.state == "full":
            return f"(same call as action {self.ref.number}; its result is shown above)"
        if self.state == "full":
            return self.result
        if self.state == "summary":
            head = self.result[: self.summary_chars]
            if len(head) == len(self.result):
                return head
            return head + (
                f"…[summarised to save context: {len(self.result) - len(head)} of {len(self.result)} chars cut; "
                f"call {self.label} again to see it all]"
            )
        if self.invalid:
            return "[dropped to save context]"
        return f"[result dropped to save context ({len(self.result)} chars); call {self.label} again if you need it]"

    def result_message(self) -> str:
        """The user message answering this action: the tool result (or the error) and the budget line."""
        head = "Error in your last action" if self.invalid else f"Result of {self.label}"
        return f"{head}:\n{self.body()}" + (f"\n\n{self.nudge}" if self.nudge else "")


def render_turns(head: list[Message], turns: list[Turn]) -> list[Message]:
    """The conversation: the opening messages, then each action and the reply to it."""
    msgs = list(head)
    for t in turns:
        msgs.append(Message(role="assistant", content=t.action_text))
        msgs.append(Message(role="user", content=t.result_message()))
    return msgs


def fit_context(
    engine: Engine, head: list[Message], turns: list[Turn], reserve: int, at_action: int, log: list[dict]
) -> list[Message]:
    """Messages that leave `reserve` tokens free in the context window: older results shrink first."""
    n_ctx = int(engine.n_ctx or 0)  # 0: an engine that does not know its window
    msgs = render_turns(head, turns)
    if not n_ctx:
        return msgs
    while (n := engine.count_tokens(msgs)) + reserve > n_ctx:
        older, last = turns[:-1], turns[-1:]
        victim = (
            next((t for t in older if t.state == "full"), None)
            or next((t for t in older if t.state == "summary"), None)
            or next((t for t in last if t.state != "dropped"), None)
        )
        if victim is None:
            raise PromptTooLongError(
                f"the trace prompt alone is {n} tokens + {reserve} for the action > context window "
                f"{n_ctx}; shorten the instructions or raise --n-ctx",
                n_prompt=n,
                n_ctx=n_ctx,
                budget=reserve,
            )
        victim.state = "summary" if victim.state == "full" else "dropped"
        log.append(
            {
                "at_action": at_action,
                "turn": turns.index(victim) + 1,
                "tool": victim.label,
                "to": victim.state,
                "prompt_tokens_before": n,
            }
        )
        msgs = render_turns(head, turns)
    return msgs
