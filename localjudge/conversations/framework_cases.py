"""A list of DeepEval `ConversationalTestCase`s or of RAGAS `MultiTurnSample`s as a run's data
(`localjudge.evaluate([case, ...], judges)`): each item becomes one conversation (`from_deepeval` / `from_ragas`), so
its rows are the ones any conversation gives at the run's granularity (session by default).

A list is recognised by its first item's class (its module and name, so neither package is imported for other
data); every item must then be of that class. Row ids are stable across runs of the same list: the DeepEval cases'
`name`s when every case has one and no two are equal, else each item's index in the list ("0", "1", ...). At most
`MAX_CASES` items; a bad item is one `InputError` line naming its index and the field, raised before any model loads.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import InputError
from .model import Conversation
from .readers import DEFAULT_BOUNDS, from_deepeval, from_ragas

Framework = Literal["deepeval", "ragas"]
MAX_CASES = 10_000  # items of one list judged as one run's data
_CLASSES: dict[tuple[str, str], Framework] = {
    ("deepeval", "ConversationalTestCase"): "deepeval",
    ("ragas", "MultiTurnSample"): "ragas",
}
_NAMES = {"deepeval": "DeepEval ConversationalTestCase", "ragas": "RAGAS MultiTurnSample"}


def case_list_framework(data: Any) -> Framework | None:
    """Which framework's conversational cases `data` is a list of (by its first item's class), or None."""
    if not isinstance(data, list | tuple) or not data:
        return None
    cls = type(data[0])
    return _CLASSES.get((cls.__module__.split(".")[0], cls.__name__))


def case_conversations(data: list[Any] | tuple[Any, ...], framework: Framework) -> list[Conversation]:
    """The conversations of a list of `framework`'s cases, each with its row id (see the module docstring)."""
    if len(data) > MAX_CASES:
        raise InputError(
            f"data: {len(data)} {_NAMES[framework]} items, more than {MAX_CASES} in one run; split the list into runs"
        )
    read = from_deepeval if framework == "deepeval" else from_ragas
    convs: list[Conversation] = []
    for i, item in enumerate(data):
        try:
            convs.append(read(item, bounds=DEFAULT_BOUNDS))
        except InputError as e:
            msg = str(e).removeprefix("from_deepeval: ").removeprefix("from_ragas: ")
            raise InputError(f"data[{i}] ({_NAMES[framework]} list): {msg}") from None
    names = [c.id for c in convs]
    named = framework == "deepeval" and all(names) and len(set(names)) == len(names)
    return [c if named else c.model_copy(update={"id": str(i)}) for i, c in enumerate(convs)]
