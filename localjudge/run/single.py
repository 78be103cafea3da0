"""One conversation judged outside a batch run (`localjudge judge NAME --conversation FILE`, `localjudge.judge_conversation`).

The rows are the ones a run makes (`ConversationDataset`: one per conversation, per unit interaction with its window,
or per tool call), the judge is planned onto them as a run plans it (`plan_judges`, `route_columns`), and with
`truncate` a row that does not fit keeps its last turns that fit (`context_fit`), so a conversation judged here gets
the same prompt, and the same result, as it gets in `run`. A row whose prompt does not fit is the judge's unscored
`prompt_too_long` result naming the tokens needed and the context. A model-free judge (`tool_call_match`: its kind's
`needs_model` is False) is judged without loading the model, as in a run. Nothing is stored or cached.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..conversations.dataset import ConversationDataset, ConversationOptions, Granularity
from ..conversations.model import Conversation
from ..conversations.readers import DEFAULT_BOUNDS, read_json
from ..datasets import Dataset, extract, open_dataset
from ..engine.backends import ModelRef
from ..engine.base import DecodeOptions, Engine
from ..errors import InputError, UnscoredReason
from ..judges.protocol import JudgeProtocol
from ..store.results import JudgeResult, ResultRow
from .plan import JudgePlan, plan_judges
from .turns import bind_plans


def judge_conversation(
    name: str | JudgeProtocol,
    conversation: Conversation | str | bytes | list[Any] | dict[str, Any],
    *,
    granularity: Granularity = "session",
    window: int = 10,
    truncate: bool = False,
    model: str | ModelRef | None = None,
    engine: Engine | None = None,
    options: DecodeOptions | None = None,
    judges_dir: str | None = None,
    model_options: Mapping[str, Any] | None = None,
    source: str = "conversation",
) -> list[ResultRow]:
    """Judge one conversation with one judge: a `ResultRow` per row a run would make of it (one for `session`, one per
    unit interaction for `turn`, one per assistant tool call for `tool_call`), in order, each with its position
    (`conversation_id`, `turn_index` / `tool_call_index`) and the judge's inputs.

    `conversation` is a `Conversation`, an OpenAI `messages` list, or a row as a run reads one: an object with
    `messages` and other columns (`id`, `expected_tool_calls`, any judge variable), or either as JSON text. Bad input
    raises one `InputError` line starting with `source` (the file) and naming the message index and the field, before
    the model loads. `model` is a model spec or a `ModelRef` (`model_options` go with a spec)."""
    ds = ConversationDataset(
        _dataset(conversation, source), ConversationOptions(granularity=granularity, window=window, truncate=truncate)
    )
    ds.label = source
    (plan,) = plan_judges([name], judges_dir, ds, {})
    bind_plans(ds, [plan])  # the rows build only what the judge reads; what fits waits for the model (below)
    rows = list(ds)
    if rows and rows[0].error is not None:
        raise InputError(f"{source}: {rows[0].error.removeprefix(rows[0].source + ': ')}")
    if not rows:
        raise InputError(f"{source}: nothing to judge one {_PER[granularity]} at a time; the conversation has none")
    if engine is not None:
        ref = ModelRef(engine=engine)
    else:
        ref = model if isinstance(model, ModelRef) else ModelRef(model, model_options)
    opts = options or DecodeOptions()
    if plan.needs_model:
        eng = ref.engine()  # loaded once the input is known to be good
        if truncate:  # measuring what fits needs the model's tokenizer, as in a run
            bind_plans(ds, [plan], lambda: eng, opts)
            rows = list(ds)
    out: list[ResultRow] = []
    for row in rows:
        values, problem = extract(row, plan.columns, plan.required, plan.allow_empty)
        if problem is not None:  # a variable the conversation does not give (a reference, expected calls)
            raise InputError(f"{source}: judge {plan.name!r}: {problem[1]}")
        res: JudgeResult = _judged(plan, ref, opts, values)
        pos = row.position
        assert pos is not None  # every conversation row has its position
        out.append(
            ResultRow(
                row_index=row.index,
                row_id=row.row_id,
                source=row.source,
                judge=plan.name,
                inputs=values,
                result=res,
                error=res.error if res.unscored_reason == UnscoredReason.PROMPT_TOO_LONG else None,
                conversation_id=pos.conversation_id,
                turn_index=pos.turn_index,
                tool_call_index=pos.tool_call_index,
                truncated_turns=pos.truncated_turns,
            )
        )
    return out


def _judged(plan: JudgePlan, ref: ModelRef, opts: DecodeOptions, values: dict[str, Any]) -> JudgeResult:
    """One row's result: a model-free judge's (`tool_call_match`) without loading the model, recording the model's id
    as a run does (`run/loop.py`); any other judge's on the engine."""
    from ..judges.judge import Judge

    if plan.needs_model:
        return plan.judge.evaluate(ref.engine(), options=opts, **values)
    assert isinstance(plan.judge, Judge)  # only a catalog Judge is model-free (JudgePlan.needs_model)
    return plan.judge.judge_without_model(ref.identity().model_id, **values)


_PER = {"session": "conversation", "turn": "turn", "tool_call": "tool call"}


def _dataset(data: Conversation | str | bytes | list[Any] | dict[str, Any], source: str) -> Dataset | list[Conversation]:
    """What `ConversationDataset` reads: the conversation itself, or a one-row dataset of records."""
    if isinstance(data, Conversation):
        return [data]
    if isinstance(data, str | bytes):
        data = read_json(data, DEFAULT_BOUNDS, source)
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict):
        raise InputError(f"{source}: a JSON {type(data).__name__}; give a messages list or an object with 'messages'")
    if "messages" not in data:
        raise InputError(f"{source}: an object needs a 'messages' list (it has {', '.join(map(str, data)) or 'no keys'})")
    return open_dataset([data])
