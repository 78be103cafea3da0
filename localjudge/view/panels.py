"""Panels and cascades in `localjudge view`: which stored judges are members, their verdicts beside the combined
one, the run's panel or cascade figures, and each member scored against the human labels.

A panel (`--panel A,B`) or a cascade (`--escalate-to`) stores each member's result under `JUDGE@MEMBER` and the
combined result under `JUDGE` (localjudge/trust/members.py). The view treats `JUDGE` as the judge: it is the one
listed, queued and labelled. A label of `JUDGE` also scores every member: the agreement panel shows each
member's accuracy and Cohen's kappa against the same labels (computed by localjudge.labels.agreement, as for any judge).

The panel's own figures (per-member agreement with the panel, Fleiss' kappa among members, ties) and the
cascade's (fraction escalated, agreement of the first model with the strong one) are the ones the run wrote
into its summary (`run.panel` / `run.cascade` of summary.json, computed by localjudge/trust/): the view reads
them from the run's record, it does not compute its own.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..ensembles.members import MEMBER_SEP
from ..run.record import RunRecord
from ..store import queries


def split_judges(names: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """(the judges to show, judge -> its members' judge names): `J@M` is a member when `J` is a judge of the run."""
    named = set(names)
    top: list[str] = []
    members: dict[str, list[str]] = {}
    for n in names:
        base, sep, _ = n.partition(MEMBER_SEP)
        if sep and base in named:
            members.setdefault(base, []).append(n)
        else:
            top.append(n)
    return top, members


def member_label(judge: str, member: str) -> str:
    """`MEMBER` of `JUDGE@MEMBER`."""
    return member[len(judge) + len(MEMBER_SEP) :]


def _value(raw: Any) -> Any:
    if isinstance(raw, str) and raw[:1] in "[{":
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def members_of_page(
    conn: sqlite3.Connection, run_id: str, members: dict[str, list[str]], cells: list[tuple[int, str]]
) -> dict[tuple[int, str], dict[str, Any]]:
    """For the (row, judge) cells of one page that have members: `members` (label, value, passed, scored, expected
    score per member) and `members_disagree` (their scored verdicts differ)."""
    want = {(ri, j) for ri, j in cells if j in members}
    if not want:
        return {}
    names = sorted({m for _, j in want for m in members[j]})
    rows = sorted({ri for ri, _ in want})
    cur = queries.member_verdicts(conn, run_id, rows, names)
    got = {(r[0], r[1]): r for r in cur}
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for ri, j in want:
        items = []
        for m in members[j]:
            r = got.get((ri, m))
            items.append(
                {
                    "member": member_label(j, m),
                    "value": None if r is None else _value(r[2]),
                    "passed": None if r is None or r[3] is None else bool(r[3]),
                    "scored": r is not None and bool(r[4]),
                    "expected_score": None if r is None else r[5],
                }
            )
        verdicts = {json.dumps(x["passed"] if x["passed"] is not None else x["value"]) for x in items if x["scored"]}
        out[(ri, j)] = {"members": items, "members_disagree": len(verdicts) > 1}
    return out


def run_figures(record: RunRecord) -> dict[str, Any] | None:
    """The panel's or cascade's figures as the run recorded them (summary.json's `run.panel` / `run.cascade`),
    with the lines the CLI prints for them (trust.panel.panel_lines / trust.cascade.cascade_lines); None for a
    plain run or one whose panel has not finished (the figures are written when it ends)."""
    if record.panel is not None:
        from ..ensembles.panel import panel_lines

        return {"kind": "panel", "figures": record.panel, "lines": panel_lines(record.panel)}
    if record.cascade is not None:
        from ..ensembles.cascade import cascade_lines

        return {"kind": "cascade", "figures": record.cascade, "lines": cascade_lines(record.cascade)}
    return None
