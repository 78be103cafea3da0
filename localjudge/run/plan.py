"""Planning a batch run before any inference: judges onto columns, rows into chunks, and each cell's cache key.

A cell's cache key is `canonical_hash` of its reproducibility record (model sha256, judge version, format,
the hash of every prompt the judge will send, decode options, seed, localjudge version) with the judge's
name and the engine settings that change outputs. Stores written by earlier versions resume on these keys:
change nothing here without a store migration (tests/test_legacy_store.py).

A panel member or cascade stage stores its results under `JUDGE@MEMBER` but keys them with the judge's own name
(`JudgePlan.key_name`): its key is the key of a solo run of that judge on that model, so either reuses the other.
Stores written before that keyed members with `JUDGE@MEMBER`; `CellKeys.legacy_key` gives that key so they
resume without judging again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..datasets import ColumnSpec, Dataset, Row, resolve_mapping
from ..engine.base import DecodeOptions, canonical_hash
from ..errors import InputError
from ..judges.pairwise import BothOrders, is_pairwise_format
from ..judges.protocol import JudgeProtocol
from ..store.results import Record


@dataclass
class JudgePlan:
    """One judge of a run: its variables mapped onto the data's columns, and its output format."""

    judge: JudgeProtocol
    name: str
    required: list[str]
    allow_empty: list[str]
    columns: dict[str, ColumnSpec]
    format_spec: Any
    format_name: str
    key_name: str | None = None  # the name the cache key is made with, when not `name` (a panel member's judge)

    @property
    def needs_model(self) -> bool:
        """Whether judging a row calls the model (False for a model-free catalog judge: judges/toolmatch.py)."""
        from ..judges.judge import Judge

        return not isinstance(self.judge, Judge) or self.judge.traits.needs_model


@dataclass
class CellKeys:
    """What every cell's record and cache key share: the model, the decode options, the version, the engine settings."""

    model_id: str
    model_sha: str
    version: str
    key_extra: dict[str, Any]
    opts: DecodeOptions

    def record_and_key(self, plan: JudgePlan, prompt_hash: str) -> tuple[Record, str]:
        """The reproducibility record of one cell and its cache key."""
        record = Record(
            model_id=self.model_id,
            model_sha256=self.model_sha,
            judge_version=plan.judge.version,
            format=plan.format_spec,
            prompt_hash=prompt_hash,
            decode_options=self.opts.model_dump(),
            seed=self.opts.seed,
            localjudge_version=self.version,
        )
        return record, self._key(plan.key_name or plan.name, record)

    def legacy_key(self, plan: JudgePlan, record: Record) -> str | None:
        """The key a member's cell had before members shared solo runs' keys (made with `JUDGE@MEMBER`), or None
        for a cell whose key never changed."""
        if plan.key_name is None or plan.key_name == plan.name:
            return None
        return self._key(plan.name, record)

    def _key(self, name: str, record: Record) -> str:
        return canonical_hash({"judge": name, **record.model_dump(exclude={"model_id"}), "engine": self.key_extra})


def plan_judges(
    judges: Sequence[str | JudgeProtocol],
    judges_dir: str | None,
    ds: Dataset,
    explicit: dict[str, ColumnSpec],
    both_orders: bool = False,
) -> list[JudgePlan]:
    """Every judge (a catalog name or a judge object) mapped onto `ds`'s columns; bad names or mappings raise `InputError`."""
    if not judges:
        raise InputError("no judge given; name at least one with --judge (see `localjudge judges list`)")
    plans: list[JudgePlan] = []
    for given in judges:
        j: JudgeProtocol
        if isinstance(given, str):
            from ..judges import get_judge

            j = get_judge(given, judges_dir=judges_dir)
        else:
            j = given
        fmts = j.output_formats
        if both_orders and not isinstance(j, BothOrders) and len(fmts) == 1 and is_pairwise_format(fmts[0].spec()):
            j = BothOrders(j)
        if any(p.name == j.name for p in plans):
            raise InputError(f"judge {j.name!r} given twice; name each judge once")
        req, opt = list(j.required_variables), list(j.optional_variables)
        aliases = {v.name: list(v.aliases) for v in j.variables}
        allow_empty = [v.name for v in j.variables if v.allow_empty]
        spec = [f.spec() for f in fmts] if len(fmts) > 1 else fmts[0].spec() if fmts else None
        name = " + ".join(f.describe() for f in fmts)
        # a variable composed from others when absent (guidelines' context from input and output) needs no column of
        # its own when a column feeds one of its parts: the judge composes it per row (judges/values.py)
        composable = {v.name: v.compose for v in j.variables if v.compose and v.name in req}
        columns = resolve_mapping(
            j.name, [r for r in req if r not in composable], opt + list(composable), ds.columns, explicit, aliases
        )
        for var, parts in composable.items():
            if var not in columns and not any(src in columns for src in parts.values()):
                resolve_mapping(j.name, req, opt, ds.columns, explicit, aliases)  # raises the error naming `var`
        req = [r for r in req if r not in composable or r in columns]
        # a panel member's judge (trust.members.RenamedJudge) is keyed as the judge it renames
        key_name = getattr(j, "key_name", None)
        plans.append(JudgePlan(j, j.name, req, allow_empty, columns, spec, name, key_name if isinstance(key_name, str) else None))
    unused = [v for v in explicit if not any(v in p.columns for p in plans)]
    if unused:
        takes = sorted({v for p in plans for v in [*p.judge.required_variables, *p.judge.optional_variables]})
        raise InputError(f"--map {unused[0]}=...: no judge takes a variable {unused[0]!r}; they take {', '.join(takes)}")
    return plans


def chunks(ds: Dataset, n_rows: int, size: int, only: Collection[int] | None = None) -> Iterator[list[Row]]:
    """The first `n_rows` rows of `ds` (only the indexes in `only`, when given) in lists of `size`."""
    chunk: list[Row] = []
    only = None if only is None else set(only)
    for row in ds:
        if row.index >= n_rows:
            break
        if only is not None and row.index not in only:
            continue
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
