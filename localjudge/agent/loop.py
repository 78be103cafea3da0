"""The trace judge's agent loop: prompt, constrained actions, tools, rating.

1. The system message is MLflow's trace prompt (verbatim, below) with `{evaluation_rating_fields}`
   rendered from the user's result type and `{instructions}` the user's text. A user message lists
   the tools and the JSON action shapes (localjudge's text).
2. Each turn the engine decodes one `ActionFormat` action: the union of the tool calls and the
   rating. A tool call is run and its bounded result appended, closed by a line saying what is left
   of the budgets; the rating ends the loop. The action space narrows only where that is honest:
   * the first action is a tool call (`first_action="tool"`, default): the prompt's own step 2 says
     to gather information with the tools first, and a 135M model otherwise rates blind;
   * `get_trace_info`, and `list_spans` once every page is shown, leave the union while their
     results are still in the context (calling them again cannot show anything new);
   * with `max_tool_calls=K` (opt-in, default None) the action after K tool calls is the rating
     alone, as the prompt announces; the result says so (`details["rating_after_tool_budget"]`).
3. After `max_iterations` actions without a rating the result is unscored with reason
   `max_iterations`, never a made-up verdict.
4. Context: before every turn the prompt is measured with `engine.count_tokens`; while prompt +
   the action's token budget would exceed `engine.n_ctx`, the oldest tool results are summarised,
   then dropped, each with a note telling the model how to get them back (`details["context_compactions"]`).

The result records every tool call (name, arguments, size of the result) in `details["tool_calls"]` (outcome.py
builds it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

from ..engine.base import DecodeOptions, Engine, Message, canonical_hash
from ..errors import InputError, ParseError, PromptTooLongError, UnscoredReason
from ..formats import OutputFormat
from ..judges.protocol import SequentialJudge
from ..store.results import JudgeResult
from .actions import ActionFormat, RatingAction, RatingType, ToolAction
from .context import Turn, fit_context
from .outcome import Transcript, trace_result
from .prompt import (
    INSTRUCTIONS_JUDGE_TRACE_PROMPT_TEMPLATE,
    JUDGE_BASE_PROMPT,
    RATIONALE_DESCRIPTION,
    rating_example,
    rating_fields,
    render_trace_prompt,
    tools_message,
)
from .tools import TOOL_SPECS, SearchTimeLimit, ToolLimits, ToolSpec, TraceTools, clip
from .trace import load_trace

__all__ = [  # the prompt's names stay importable from here, where they were defined before prompt.py
    "INSTRUCTIONS_JUDGE_TRACE_PROMPT_TEMPLATE",
    "JUDGE_BASE_PROMPT",
    "JUDGE_VERSION",
    "RATIONALE_DESCRIPTION",
    "TraceJudge",
    "judge_trace",
    "rating_example",
    "rating_fields",
    "render_trace_prompt",
    "tools_message",
]

JUDGE_VERSION = "1"

# ------------------------------------------------------------------------------------------ judge


class TraceJudge(SequentialJudge):
    """MLflow's trace-based instructions judge on a local engine; configure once, judge many traces.

    It implements the judge contract (one variable, `trace`), so `localjudge.evaluate(data, [TraceJudge(...)])`
    judges a column of traces, one row at a time."""

    def __init__(
        self,
        instructions: str,
        result_type: str | RatingType | type = "yes/no",
        *,
        max_iterations: int = 10,
        field_tokens: int = 48,
        limits: ToolLimits | None = None,
        first_action: Literal["tool", "any"] = "tool",
        max_tool_calls: int | None = None,
        rationale_first: bool = False,
        retire_exhausted: bool = True,
        pass_threshold: float = 0.5,
        name: str = "instructions_trace",
    ):
        if not instructions or not str(instructions).strip():
            raise InputError("instructions are empty; say what the judge should check in the trace")
        if first_action not in ("tool", "any"):
            raise InputError(f"first_action must be 'tool' or 'any', got {first_action!r}")
        least = 2 if first_action == "tool" else 1
        if max_iterations < least:
            raise InputError(f"max_iterations must be >= {least} (the first action is a tool call), got {max_iterations}")
        if max_tool_calls is not None and max_tool_calls < (1 if first_action == "tool" else 0):
            raise InputError(f"max_tool_calls must be >= 1 when the first action is a tool call, got {max_tool_calls}")
        self.instructions = str(instructions)
        self.rating = RatingType.parse(result_type)
        self.max_iterations = int(max_iterations)
        self.field_tokens = int(field_tokens)
        self.limits = limits or ToolLimits()
        self.first_action = first_action
        self.max_tool_calls = max_tool_calls
        self.rationale_first = rationale_first
        self.pass_threshold = float(pass_threshold)
        self.retire_exhausted = retire_exhausted
        self.name = name
        self.required_variables, self.optional_variables = ["trace"], []  # the judge contract: one variable
        self.fmt = self._format(TOOL_SPECS, True)
        self._formats: dict[tuple, ActionFormat] = {}

    def _format(self, tools: tuple[ToolSpec, ...], allow_rating: bool) -> ActionFormat:
        return ActionFormat(
            self.rating,
            tools,
            allow_tools=bool(tools),
            allow_rating=allow_rating,
            field_tokens=self.field_tokens,
            rationale_first=self.rationale_first,
        )

    def format_for(self, action: int, retired: set[str], n_tool_calls: int = 0) -> ActionFormat:
        """The action format of turn `action` (1-based): tool calls only on the first turn when
        `first_action="tool"`; tools in `retired` left out; the rating alone once `max_tool_calls`
        tool calls were made. At most a handful of distinct regexes per judge."""
        allow_rating = not (action == 1 and self.first_action == "tool")
        spent = self.max_tool_calls is not None and n_tool_calls >= self.max_tool_calls
        tools = () if spent else tuple(t for t in TOOL_SPECS if t.name not in retired)
        key = (tuple(t.name for t in tools), allow_rating)
        if key not in self._formats:
            self._formats[key] = self._format(tools, allow_rating)
        return self._formats[key]

    def spec(self) -> dict[str, Any]:
        """Everything that changes the output (for cache keys)."""
        return {
            "judge": self.name,
            "version": JUDGE_VERSION,
            "instructions": self.instructions,
            "rating": self.rating.spec(),
            "max_iterations": self.max_iterations,
            "field_tokens": self.field_tokens,
            "limits": self.limits.model_dump(),
            "first_action": self.first_action,
            "max_tool_calls": self.max_tool_calls,
            "rationale_first": self.rationale_first,
            "retire_exhausted": self.retire_exhausted,
            "pass_threshold": self.pass_threshold,
            "format": self.fmt.spec(),
        }

    def messages(self) -> list[Message]:
        """The opening messages: the system prompt, then the tool catalogue and action shapes."""
        return [
            Message(role="system", content=render_trace_prompt(self.instructions, self.rating, self.rationale_first)),
            Message(
                role="user", content=tools_message(self.rating, self.max_iterations, self.rationale_first, self.max_tool_calls)
            ),
        ]

    def nudge(self, actions_done: int, tool_calls_done: int) -> str:
        """The line closing each tool result: what is left of the budgets."""
        left = self.max_iterations - actions_done
        if left <= 0:
            return "No action left."
        if self.max_tool_calls is not None:
            tools_left = self.max_tool_calls - tool_calls_done
            if tools_left <= 0:
                return "No tool call left: give your final evaluation rating now."
            return (
                f"{left} action(s) left, at most {tools_left} of them tool calls. Call another tool, or give your final "
                "evaluation rating if you have enough information."
            )
        return f"{left} action(s) left. Call another tool, or give your final evaluation rating if you have enough information."

    @staticmethod
    def _retired(tools: TraceTools, turns: list[Turn]) -> set[str]:
        """Tools with a finite set of calls, all of whose results are still shown in full: calling
        them again cannot tell the model anything new (get_trace_info, list_spans once every page is shown)."""
        shown = {t.label for t in turns if t.state == "full" and not t.invalid and t.ref is None}
        out = set()
        if "get_trace_info()" in shown:
            out.add("get_trace_info")
        if all(f"list_spans(page={p})" in shown for p in range(1, tools.n_pages + 1)):
            out.add("list_spans")
        return out

    def judge(self, trace: Any, engine: Engine, options: DecodeOptions | None = None) -> JudgeResult:
        """Judge one trace (a Trace, parsed JSON, JSON text or a path); a bad trace raises `InputError`."""
        tr = load_trace(trace)
        tools = TraceTools(tr, self.limits)
        head = self.messages()
        turns: list[Turn] = []
        log = Transcript(tr)
        gens, calls, invalid, compactions = log.gens, log.calls, log.invalid, log.compactions
        seen: dict[str, Turn] = {}
        t0 = time.perf_counter()

        def result(**kw: Any) -> JudgeResult:
            return trace_result(self, log, time.perf_counter() - t0, model_id=str(engine.model_id), **kw)

        for i in range(self.max_iterations):
            retired = self._retired(tools, turns) if self.retire_exhausted else set()
            fmt = self.format_for(i + 1, retired, len(calls))
            try:
                budget = options.max_tokens if options is not None and options.max_tokens else fmt.max_tokens()
                msgs = fit_context(engine, head, turns, budget + 8, i + 1, compactions)
                gen = engine.generate(msgs, fmt, options)
            except PromptTooLongError as e:
                return result(unscored_reason=UnscoredReason.PROMPT_TOO_LONG, error=str(e))
            gens.append(gen)
            try:
                action = fmt.parse(gen.text)
            except ParseError as e:
                invalid.append({"action": i + 1, "error": e.reason, "text": clip(gen.text, 200)})
                turns.append(
                    Turn(
                        i + 1,
                        gen.text,
                        "invalid action",
                        f"not a valid action ({e.reason}). Reply with one JSON "
                        "object: a tool call or the final evaluation rating.",
                        self.nudge(i + 1, len(calls)),
                        invalid=True,
                    )
                )
                continue
            if isinstance(action, RatingAction):
                return result(action=action, raw_text=gen.text, rating_only=not fmt.tools)
            assert isinstance(action, ToolAction)
            label = action.label()
            try:
                out = tools.call(action.tool, action.arguments)
            except SearchTimeLimit as e:  # a time limit refuses; it never feeds the model a machine-speed answer
                return result(unscored_reason=UnscoredReason.TOOL_TIME_LIMIT, error=str(e))
            prev = seen.get(label)
            ref = prev if prev is not None and prev.state == "full" and prev.result == out else None
            calls.append(
                {
                    "action": i + 1,
                    "name": action.tool,
                    "arguments": action.arguments,
                    "result_chars": len(out),
                    "truncated": "…[truncated:" in out,
                    "error": out.startswith("Error:"),
                    "repeat": prev is not None,
                }
            )
            turn = Turn(i + 1, gen.text, label, out, self.nudge(i + 1, len(calls)), ref=ref)
            if ref is None:
                seen[label] = turn
            turns.append(turn)
        return result(
            unscored_reason=UnscoredReason.MAX_ITERATIONS,
            error=f"no rating after {self.max_iterations} actions; raise max_iterations or simplify the instructions",
        )

    # ----------------------------------------------------------------------------- judge contract
    # The runner hashes `render(trace=...)` into the cache key and calls `evaluate(engine, options,
    # trace=...)` row by row; a bad trace is an InputError, recorded as an unscored `input_error` row.

    @property
    def format(self) -> ActionFormat:
        """The action format of a turn where every tool and the rating are allowed."""
        return self.fmt

    @property
    def output_formats(self) -> list[OutputFormat]:
        """The action format (what the cache key records)."""
        return [self.fmt]

    @property
    def version(self) -> str:
        """Hash of everything that changes the output except the trace (prompt text, caps, limits)."""
        return "trace-" + canonical_hash(self.spec())[3:19]

    def render(self, **variables: Any) -> list[Message]:
        """The messages that determine the output: the prompt, plus the `trace` as canonical JSON
        (the model reads the trace only through the tools; this is for cache keys)."""
        tr = load_trace(variables.get("trace"))
        return [*self.messages(), Message(role="user", content=tr.model_dump_json())]

    def evaluate(self, engine: Engine, options: DecodeOptions | None = None, **variables: Any) -> JudgeResult:
        """Judge the row's `trace` (a bad or missing trace raises `InputError`)."""
        trace = variables.get("trace")
        if trace is None:
            raise InputError(f"judge {self.name!r} needs a trace; map a column to the variable 'trace'")
        return self.judge(trace, engine, options)

    def judge_value(self, value: Any, engine: Engine, options: DecodeOptions | None = None) -> JudgeResult:
        """One row's trace value (JSON text, parsed JSON, or a path); a bad trace is an unscored result
        with reason `invalid_trace`, so one bad row does not stop a run."""
        try:
            tr = load_trace(value)
        except InputError as e:
            return JudgeResult(
                judge=self.name,
                judge_version=self.version,
                format=self.fmt.kind,
                unscored_reason=UnscoredReason.INVALID_TRACE,
                error=str(e),
                model_id=engine.model_id,
            )
        return self.judge(tr, engine, options)

    def judge_column(
        self,
        values: Iterable[Any],
        engine: Engine,
        options: DecodeOptions | None = None,
        progress: Callable[[int, JudgeResult], None] | None = None,
    ) -> list[JudgeResult]:
        """Judge a column of traces, one `JudgeResult` per value, in order."""
        out = []
        for i, v in enumerate(values):
            r = self.judge_value(v, engine, options)
            out.append(r)
            if progress is not None:
                progress(i, r)
        return out


def judge_trace(
    trace: Any,
    instructions: str,
    result_type: str | RatingType | type = "yes/no",
    engine: Engine | None = None,
    max_iterations: int = 10,
    **kwargs: Any,
) -> JudgeResult:
    """Judge one trace against `instructions` with the trace tools; `engine` None = the default model.

    `kwargs` go to `TraceJudge` (field_tokens, limits, first_action, name) or, for `options`, to the engine.
    """
    options = kwargs.pop("options", None)
    judge = TraceJudge(instructions, result_type, max_iterations=max_iterations, **kwargs)
    if engine is None:
        from ..engine import load_engine

        engine = load_engine()
    return judge.judge(trace, engine, options)
