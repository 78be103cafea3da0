"""Conversations as rows of a run: each conversation becomes the rows its judges see.

A run is told how (`ConversationOptions`, the `conversation` field of the `RunSpec`), and reads its conversations
from a `messages` column of any dataset (JSONL / CSV / Parquet / DataFrame / records: an OpenAI-style list, or
it as JSON text), from the sessions of an MLflow tracking store (`MlflowSessions`) or from OpenTelemetry
trace files (`OtelTraces`). The granularity decides
the rows:

* `session`: one row per conversation, whose `conversation` column is the whole conversation as MLflow renders
  it (`conversation_text`);
* `turn`: one row per unit interaction (DeepEval's turns: a user turn and what answers it), whose `conversation`
  is that unit and up to `window - 1` units before it (`turn_windows`), so a per-turn judge sees the turn it
  judges last;
* `tool_call`: one row per call the assistant made (in conversation order), with `tool_call` (`{name,
  arguments}`), `tool_call_index` (0-based) and `expected_tool_calls` (the conversation's, else the data row's
  column of that name: a list of `{name, arguments}` or its JSON text; absent when neither has it, so a judge
  needing it gives an unscored `missing_value` result naming the column), whose `conversation` is the whole
  conversation (with tool calls). The model-free `tool_call_exact` / `_ordered` / `_subset` judges read these.

Every row also has `conversation_with_tool_calls` (MLflow's tool-call judges read that one: `route_columns`),
`tools_called` and `available_tools` (MLflow's `format_tools_called` / `format_available_tools`), `expected_calls`
(the expected calls as MLflow's `_format_expected_calls` prints them, what `tool_call_correctness_expected` reads:
`expected_calls_text`; from the conversation's `expected_tool_calls`, else the data row's column of that name; absent
when neither has a non-empty list, or when the row's value cannot be read as calls), `tool_calls` (every call the
assistant made, a JSON list of `{name, arguments}`), `expected_tool_calls` (the conversation's own as such a list,
else the data row's column as given; what the model-free `mlflow_tool_call_exact` judges read), `deepeval_turns`
(the turns as DeepEval's conversational templates print them: `deepeval_turns_text`), `deepeval_rag_turns` (the
same with each assistant turn's retrieval context: `deepeval_rag_turns_text`), `deepeval_tool_turns` (the same with
each assistant turn's tool calls: `deepeval_tool_turns_text`) and `ragas_conversation` (the
conversation as RAGAS's `MultiTurnSample.pretty_repr` prints it, what the `ragas_agent` judges read: `ragas_text`)
unless the data has columns of those names, and keeps the data row's other columns. Those derived values are
the `DERIVED` table; a run sets `needs` to the columns its judges read, and a row then builds only those (with
`--truncate-conversation`, at each bisection step too); without it (the Python API, export, the view) it builds them all. A row's `Position` (conversation id, turn
index) is stored with its results (store migration 005_conversations). A conversation that cannot be read (not JSON, nested
more than 100 levels deep, no messages, a tool call's arguments with a number that is not finite) is one row with
the error (naming its source row and the field), so the other conversations still run; so is a row whose id an
earlier row already has (the later one: a conversation's id keys its stored transcript and its rows).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from .. import jsonio
from ..datasets import ColumnSpec, Dataset, Position, Row
from ..errors import InputError
from .deepeval_case import actual_output_text, call_outputs, input_text, print_tools_called_text, tools_called_text
from .deepeval_tool_turns import deepeval_tool_turns_text
from .deepeval_trace import deepeval_trace_json
from .framework_cases import case_conversations, case_list_framework
from .model import Conversation, ToolCall
from .ragas_text import ragas_text
from .readers import from_messages
from .render import (
    available_tools_text,
    conversation_text,
    deepeval_rag_turns_text,
    deepeval_turns_text,
    expected_calls_text,
    tool_calls_text,
    turn_windows,
)

if TYPE_CHECKING:
    from ..judges.spec import Variable

Granularity = Literal["session", "turn", "tool_call"]
CONVERSATION, WITH_TOOLS = "conversation", "conversation_with_tool_calls"
EXPECTED = "expected_tool_calls"  # a tool_call row's reference calls (a session row's too: mlflow_tool_call_exact)
CALLS = "tool_calls"  # every call the assistant made, a JSON list of {name, arguments} (mlflow_tool_call_exact)
EXPECTED_TEXT = "expected_calls"  # the reference calls as MLflow prints them (tool_call_correctness_expected)
DEEPEVAL_TURNS = "deepeval_turns"  # the turns as DeepEval's conversational templates print them (deepeval_* judges)
# the turns with their retrieval contexts (deepeval_turn_* RAG judges: judges/deepeval_turn_rag.py)
DEEPEVAL_RAG_TURNS = "deepeval_rag_turns"
RAGAS_CONVERSATION = "ragas_conversation"  # the conversation as RAGAS's pretty_repr prints it (ragas_agent judges)
# DeepEval's LLMTestCase input and tools_called (deepeval_agentic judges; conversations/deepeval_case.py); a
# tool_call row's are its call's: the user turns before it, and it alone
DEEPEVAL_INPUT, DEEPEVAL_TOOLS = "deepeval_input", "deepeval_tools_called"
# and its actual_output and tools_called as TaskCompletion prints them (deepeval_task_completion)
DEEPEVAL_OUTPUT, DEEPEVAL_TOOLS_JSON = "deepeval_actual_output", "deepeval_tools_called_json"
DEEPEVAL_TOOL_TURNS = "deepeval_tool_turns"  # the turns with their tools_called printed (deepeval_goal_accuracy)
DEEPEVAL_TRACE = "deepeval_trace_json"  # the trace DeepEval's trace-based metrics print (conversations/deepeval_trace.py)
_PER_CALL = frozenset({DEEPEVAL_INPUT, DEEPEVAL_TOOLS, DEEPEVAL_TOOLS_JSON})  # a tool_call row's are its call's own


class ConversationOptions(BaseModel):
    """How a run judges conversations: `granularity` (`session`: one result per conversation; `turn`: one per
    unit interaction), `window` (units a per-turn row sees, the judged one included; DeepEval's default 10),
    `messages_column` (where a dataset row holds its conversation), `truncate` (a row whose prompt does not fit the
    model's context keeps its last turns that fit, the number left out recorded on its results; without it, such a
    row is an unscored `prompt_too_long` result naming the tokens needed and the context)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    granularity: Granularity = "session"
    window: int = Field(default=10, ge=1)
    messages_column: str = "messages"
    truncate: bool = False


class MlflowSessions(BaseModel):
    """A run's data read from an MLflow tracking store: one conversation per session (`mlflow.trace.session`)
    of `experiment` (every experiment when None)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tracking_uri: str
    experiment: str | None = None

    def conversations(self) -> list[Conversation]:
        """The sessions, read with `from_mlflow_store`; an unknown experiment is one InputError line."""
        from mlflow import MlflowClient

        from .traces import from_mlflow_store

        ids = None
        if self.experiment is not None:
            exp = MlflowClient(tracking_uri=self.tracking_uri).get_experiment_by_name(self.experiment)
            if exp is None:
                raise InputError(f"--experiment {self.experiment!r}: no such experiment in {self.tracking_uri}; check the name")
            ids = [exp.experiment_id]
        convs = from_mlflow_store(self.tracking_uri, ids)
        if not convs:
            raise InputError(f"{self.tracking_uri}: no traces with a session (mlflow.trace.session) to judge")
        return convs


class OtelTraces(BaseModel):
    """A run's data read from OpenTelemetry trace files: a trace file, a JSONL file of traces, or a directory
    of `*.json` traces; traces sharing `gen_ai.conversation.id` / `session.id` are one conversation
    (`otel_files.py` says the rule and the bounds)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path

    def conversations(self) -> list[Conversation]:
        """The conversations, read with `read_otel_traces`; a bad file is one InputError line naming it."""
        from .otel_files import read_otel_traces

        return read_otel_traces(self.path)


class ConversationDataset(Dataset):
    """The rows a run's judges see for conversations (see the module docstring); re-iterable like any dataset."""

    def __init__(self, source: Dataset | list[Conversation], options: ConversationOptions, label: str | None = None):
        super().__init__()
        self.source, self.options = source, options
        # with options.truncate: whether a row's values fit the model's context (set by the run, which knows the
        # model and the judges' prompts)
        self.fits: Callable[[dict[str, Any]], bool] | None = None
        # the columns the run's judges read (set by the run from its plans): a derived value (`DERIVED`) no judge
        # reads is not built; None (the Python API iterating the rows, export, the view): every one is
        self.needs: frozenset[str] | None = None
        # each source row with its conversation, read once: the columns, the count, the stored conversations and
        # the rows all come from this one read of the data file
        self._read: list[tuple[Row, Conversation | None]] | None = None
        if isinstance(source, Dataset):
            self.label, self.path = source.label, source.path
            if source._columns is not None:  # known already: said now; else once the one read has found them
                self._check_messages_column()
        else:
            self.label = label or "conversations"

    def _check_messages_column(self) -> None:
        """InputError naming the column when the source has no messages column."""
        assert isinstance(self.source, Dataset)
        col = self.options.messages_column
        if col not in self.source.columns:
            raise InputError(
                f"{self.source.label}: no {col!r} column to read conversations from; it has "
                f"{', '.join(self.source.columns) or 'no columns'}"
            )

    def _conversations(self) -> Iterator[tuple[Row, Conversation | None]]:
        """(the source row, its conversation or None when the row has an error), from the one read of the source."""
        if self._read is None:
            read = list(self._read_source())
            if isinstance(self.source, Dataset):
                self._check_messages_column()  # a source read to its end knows its columns without reading again
            self._read = read
        return iter(self._read)

    def _read_source(self) -> Iterator[tuple[Row, Conversation | None]]:
        if not isinstance(self.source, Dataset):
            for i, conv in enumerate(self.source):
                yield Row(i, f"{self.label}:session {conv.id or i}", {"id": conv.id or str(i)}), conv
            return
        col = self.options.messages_column
        seen: dict[str, str] = {}  # conversation id -> the source of the row that holds it
        for row in self.source:
            if row.error is not None:
                yield row, None
                continue
            try:
                value = row.values.get(col)
                if value is None:
                    raise InputError("missing; give each row an OpenAI-style messages list")
                conv = from_messages(value, id=row.row_id)
                if not conv.turns:  # nothing for a judge to read: a verdict on it would be made up
                    raise InputError("an empty list; a conversation needs at least one message to judge")
            except InputError as e:
                yield Row(row.index, row.source, row.values, f"{row.source}: column {col!r}: {e}"), None
                continue
            first = seen.setdefault(row.row_id, row.source)
            if first != row.source:  # its stored transcript and its rows' ids would be the earlier conversation's
                err = f"{row.source}: id {row.row_id!r} is also {first}'s; give each conversation its own id"
                yield Row(row.index, row.source, row.values, err), None
                continue
            yield row, conv

    def conversations(self) -> Iterator[tuple[str, Conversation]]:
        """Each readable conversation with the id its rows' results are stored under (the view's transcript)."""
        for row, conv in self._conversations():
            if conv is not None:
                yield conv.id or row.row_id, conv

    def _rows(self) -> Iterator[Row]:
        index = 0
        for row, conv in self._conversations():
            if conv is None:
                yield Row(index, row.source, row.values, row.error, position=Position(row.row_id))
                index += 1
                continue
            cid = conv.id or row.row_id
            if self.options.granularity == "session":
                values, cut = self._fitted(row, conv, cid)
                yield Row(index, row.source, values, position=Position(cid, truncated_turns=cut))
                index += 1
                continue
            if self.options.granularity == "tool_call":
                calls = conv.tool_calls()
                # the whole conversation's values are the same for each of its calls: built once, copied per call
                base = self._values(row, conv, cid, skip=_PER_CALL) if calls else {}
                for k, call in enumerate(calls):
                    values = {**base, "id": f"{cid}:call{k}"}
                    values.update(tool_call=_json(call.model_dump(include={"name", "arguments"})), tool_call_index=str(k))
                    if self._reads(DEEPEVAL_INPUT):
                        values[DEEPEVAL_INPUT] = input_text(conv, k)
                    if self._reads(DEEPEVAL_TOOLS):
                        values[DEEPEVAL_TOOLS] = tools_called_text([call])
                    if self._reads(DEEPEVAL_TOOLS_JSON):
                        values[DEEPEVAL_TOOLS_JSON] = print_tools_called_text([call], call_outputs(conv))
                    expected: Any = conv.expected_tool_calls
                    if expected is not None:
                        values[EXPECTED] = _json([c.model_dump(include={"name", "arguments"}) for c in expected])
                    elif row.values.get(EXPECTED) is None:
                        values.pop(EXPECTED, None)
                    elif not isinstance(row.values[EXPECTED], str):  # a list from records / a DataFrame: as JSON text
                        values[EXPECTED] = _json(row.values[EXPECTED])
                    yield Row(index, f"{row.source} tool call {k}", values, position=Position(cid, tool_call_index=k))
                    index += 1
                continue
            for w in turn_windows(conv, self.options.window):
                part = conv.model_copy(update={"turns": conv.turns[w.start : w.end]})
                values, cut = self._fitted(row, part, f"{cid}:{w.unit}")
                yield Row(index, f"{row.source} turn {w.unit}", values, position=Position(cid, w.unit, truncated_turns=cut))
                index += 1

    def _reads(self, name: str) -> bool:
        """Whether the run reads column `name` (every column when it did not say: `needs` is None)."""
        return self.needs is None or name in self.needs

    def _fitted(self, row: Row, conv: Conversation, row_id: str) -> tuple[dict[str, Any], int | None]:
        """A row's values, and with `truncate` the fewest leading turns to leave out so that it fits (None when
        none were; the last turn is always kept: a row that does not fit even so is left whole, to be unscored)."""
        values = self._values(row, conv, row_id)
        fits = self.fits
        if not self.options.truncate or fits is None or fits(values) or len(conv.turns) < 2:
            return values, None
        tried: dict[int, dict[str, Any]] = {}  # cut -> its values: the bisection's last fitting cut is not built again

        def cut(n: int) -> dict[str, Any]:
            if n not in tried:
                tried[n] = self._values(row, conv.model_copy(update={"turns": conv.turns[n:]}), row_id)
            return tried[n]

        lo, hi = 1, len(conv.turns) - 1  # the smallest cut that fits, by bisection (fitting grows with the cut)
        if not fits(cut(hi)):
            return values, None
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(cut(mid)):
                hi = mid
            else:
                lo = mid + 1
        return cut(lo), lo

    def _values(self, row: Row, conv: Conversation, row_id: str, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
        """A row's values: the data row's columns (its messages left out), `id`, and each of `DERIVED` the row
        does not already hold (`conversation` and `conversation_with_tool_calls` always replace the row's) and the
        run reads (`needs`; every one when None), but not those in `skip` (a tool_call row sets them itself)."""
        values = {k: v for k, v in row.values.items() if k != self.options.messages_column}
        values["id"] = row_id
        needs = self.needs
        for name, (make, replaces, _) in DERIVED.items():
            if name in skip:  # held in its place (the row's order), for the caller to fill in; dropped when unread
                if needs is None or name in needs:
                    values[name] = None
                else:
                    values.pop(name, None)
                continue
            if needs is not None and name not in needs:
                if replaces:  # not built, so the data row's own column of that name is not shown as if it were
                    values.pop(name, None)
                continue
            if not replaces and name in values:
                continue
            value = make(conv, row)
            if value is not _ABSENT:
                values[name] = value
        if conv.expected_tool_calls is None and isinstance(values.get(EXPECTED), list | dict):
            values[EXPECTED] = _json(values[EXPECTED])  # from records / a DataFrame: as JSON text, as written
        return values

    def _scan(self) -> None:
        read = list(self._conversations())  # first: the one read also gives the source's columns
        cols: dict[str, None] = dict.fromkeys(COLUMNS)
        if isinstance(self.source, Dataset):
            cols.update(dict.fromkeys(c for c in self.source.columns if c != self.options.messages_column))
        else:  # conversations given whole (framework cases, traces): their stated outcome and scenario, when any has one
            cols.update(dict.fromkeys(k for k in CASE_FIELDS if any(_case_field(c, k) for c in self.source)))
        if self.options.granularity == "tool_call":
            cols.update(dict.fromkeys(["tool_call", "tool_call_index", EXPECTED]))
        self._columns = list(cols)
        self._count = sum(self._row_count(conv) for _, conv in read)

    def _row_count(self, conv: Conversation | None) -> int:
        """How many rows `_rows` makes of one conversation (one for an unreadable one), without building them."""
        if conv is None or self.options.granularity == "session":
            return 1
        if self.options.granularity == "tool_call":
            return len(conv.tool_calls())
        return sum(1 for _ in turn_windows(conv, self.options.window))


def _row_calls(value: Any) -> list[ToolCall] | None:
    """A data row's `expected_tool_calls` (a list of `{name, arguments}`, OpenAI `tool_calls` items, or its JSON
    text) as calls; None when absent or unreadable (the tool_call rows' judges report a bad value themselves)."""
    if isinstance(value, str):
        try:
            value = jsonio.loads(value)
        except ValueError:
            return None
    if not isinstance(value, list):
        return None
    out = []
    for v in value:
        if isinstance(v, dict) and isinstance(v.get("function"), dict):
            v = v["function"]
        if not isinstance(v, dict):
            return None
        args = v.get("arguments") or {}
        if isinstance(args, str):
            try:
                args = jsonio.loads(args)
            except ValueError:
                return None
        try:
            out.append(ToolCall(name=v.get("name"), arguments=args))
        except ValueError:
            return None
    return out


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_ABSENT = object()  # what a DERIVED maker returns to leave its column out of the row


def _case_field(conv: Conversation, name: str) -> bool:
    """Whether a conversation states `expected_outcome` or `scenario` (a DeepEval case's, a RAGAS reference)."""
    return conv.expected_outcome is not None if name == "expected_outcome" else conv.metadata.get(name) is not None


def _calls_json(calls: list[ToolCall]) -> str:
    return _json([c.model_dump(include={"name", "arguments"}) for c in calls])


def _expected_json(conv: Conversation, row: Row) -> Any:
    """The conversation's own expected calls (a framework case's: DeepEval / RAGAS), else absent (the data row's
    column of that name, when it has one, is kept)."""
    return _ABSENT if conv.expected_tool_calls is None else _calls_json(conv.expected_tool_calls)


def _expected_text(conv: Conversation, row: Row) -> Any:
    """The expected calls as MLflow prints them: the conversation's, else the data row's; absent when neither has a
    non-empty readable list."""
    expected = conv.expected_tool_calls if conv.expected_tool_calls is not None else _row_calls(row.values.get(EXPECTED))
    return expected_calls_text(expected) if expected else _ABSENT


Maker = Callable[[Conversation, Row], Any]


class Derived(NamedTuple):
    """How a conversation row makes one value: from the conversation and the data row (`_ABSENT`: left out);
    `replaces`: it replaces the data row's column of that name rather than yielding to it; `only_conversation`: only
    a conversation row has it, so a judge that takes it makes the run read conversations (`run/turns.py`)."""

    make: Maker
    replaces: bool = False
    only_conversation: bool = False


# The values a conversation row derives from its conversation, in the order a row holds them. `_values` builds one
# only when the run reads it (`needs`) and the row does not hold it already. A new derived value is one entry here
# (and its place among the columns, `COLUMNS`; a test fails while it has none).
DERIVED: dict[str, Derived] = {
    CONVERSATION: Derived(lambda c, r: conversation_text(c), replaces=True, only_conversation=True),
    WITH_TOOLS: Derived(lambda c, r: conversation_text(c, include_tool_calls=True), replaces=True),
    "tools_called": Derived(lambda c, r: tool_calls_text(c)),
    "available_tools": Derived(lambda c, r: available_tools_text(c.available_tools)),
    DEEPEVAL_TURNS: Derived(lambda c, r: deepeval_turns_text(c), only_conversation=True),
    DEEPEVAL_RAG_TURNS: Derived(lambda c, r: deepeval_rag_turns_text(c), only_conversation=True),
    RAGAS_CONVERSATION: Derived(lambda c, r: ragas_text(c), only_conversation=True),
    DEEPEVAL_INPUT: Derived(lambda c, r: input_text(c)),
    DEEPEVAL_TOOLS: Derived(lambda c, r: tools_called_text(c.tool_calls())),
    DEEPEVAL_OUTPUT: Derived(lambda c, r: actual_output_text(c)),
    DEEPEVAL_TOOLS_JSON: Derived(lambda c, r: print_tools_called_text(c.tool_calls(), call_outputs(c)), only_conversation=True),
    DEEPEVAL_TOOL_TURNS: Derived(lambda c, r: deepeval_tool_turns_text(c), only_conversation=True),
    CALLS: Derived(lambda c, r: _calls_json(c.tool_calls())),
    EXPECTED: Derived(_expected_json),
    DEEPEVAL_TRACE: Derived(lambda c, r: deepeval_trace_json(c), only_conversation=True),
    EXPECTED_TEXT: Derived(_expected_text),
    # a framework case's conversation-level fields (DeepEval's expected_outcome / scenario, RAGAS's reference), for
    # the judges that read them (deepeval_turn_contextual_*, deepeval_geval); a data row's own column wins
    "expected_outcome": Derived(lambda c, r: _ABSENT if c.expected_outcome is None else c.expected_outcome),
    "scenario": Derived(lambda c, r: c.metadata.get("scenario", _ABSENT)),
}
# the columns every conversation dataset lists, in their order (what `columns` says, before the data's own); the
# case fields come after the data's, only when a conversation states them
CASE_FIELDS = ("expected_outcome", "scenario")
COLUMNS = (
    *("id", CONVERSATION, WITH_TOOLS, "tools_called", "available_tools", DEEPEVAL_TURNS, RAGAS_CONVERSATION),
    *(EXPECTED_TEXT, CALLS, EXPECTED, DEEPEVAL_INPUT, DEEPEVAL_TOOLS, DEEPEVAL_OUTPUT, DEEPEVAL_TOOLS_JSON),
    *(DEEPEVAL_RAG_TURNS, DEEPEVAL_TRACE, DEEPEVAL_TOOL_TURNS),
)
# the variables only a conversation row has: a judge taking one makes a run read its data as conversations
CONVERSATION_ONLY = frozenset(name for name, d in DERIVED.items() if d.only_conversation)


def derived_values(conv: Conversation, values: dict[str, Any], sources: dict[str, str]) -> dict[str, Any]:
    """`values` (a conversation row's, by variable) with each variable a conversation row derives (`DERIVED`: by its
    own name, or the derived value `sources` names for it: `conversation_sources`) made again from `conv`, a changed
    conversation, as `_values` made it; the row's other values kept. The negative controls' last-turn rows: typed
    from the conversation, never printed and parsed back."""
    row = Row(0, "", values)
    out = dict(values)
    for name in values:
        derived = DERIVED.get(sources.get(name, name))
        if derived is not None:
            value = derived.make(conv, row)
            if value is not _ABSENT:
                out[name] = value
    return out


def route_columns(variables: Sequence[Variable], columns: dict[str, ColumnSpec]) -> dict[str, ColumnSpec]:
    """A judge's column mapping with each variable that declares `from_conversation` (its judge file) reading that
    derived value of a conversation row (MLflow's tool-call judge: the conversation with its tool calls, as MLflow
    renders it for it); a mapping the user gave (another column) is kept."""
    out = dict(columns)
    for var in variables:
        spec = columns.get(var.name)
        if var.from_conversation and spec is not None and spec.column == var.name:
            out[var.name] = ColumnSpec(var.from_conversation, spec.kind)
    return out


def conversation_sources(variables: Sequence[Variable]) -> dict[str, str]:
    """Variable -> the derived value of a conversation row it reads, for the variables that declare one
    (`from_conversation`): what the adapters that build a conversation's values themselves apply."""
    return {v.name: v.from_conversation for v in variables if v.from_conversation}


def conversation_rows(data: Any, options: ConversationOptions | None, wants_conversation: bool) -> ConversationDataset | None:
    """The conversation rows of a run's data, or None when the run is not about conversations: data read from
    MLflow sessions or OpenTelemetry trace files, a list of DeepEval / RAGAS conversational cases, or `options` given, or a dataset with a `messages` column and no `conversation` column
    judged by a judge that takes `conversation` (then session-level)."""
    from ..datasets import open_dataset

    if isinstance(data, MlflowSessions):
        return ConversationDataset(data.conversations(), options or ConversationOptions(), label="mlflow")
    if isinstance(data, OtelTraces):
        return ConversationDataset(data.conversations(), options or ConversationOptions(), label=data.path.name or "otel")
    framework = case_list_framework(data)
    if framework is not None:  # DeepEval / RAGAS conversational cases (framework_cases.py)
        convs = case_conversations(data, framework)
        return ConversationDataset(convs, options or ConversationOptions(), label=f"{framework} cases")
    if options is None and not wants_conversation:
        return None
    ds = open_dataset(data)
    opts = options or ConversationOptions()
    if options is None and (opts.messages_column not in ds.columns or CONVERSATION in ds.columns):
        return None
    return ConversationDataset(ds, opts)
