"""Render a run directory as one self-contained HTML file.

    build_report("runs/today", "report.html", compare="runs/yesterday", agreements=[...])

Everything is inline (CSS, JS, SVG charts); a Content-Security-Policy forbids any network access,
so the file opens from disk anywhere. Jinja2 autoescapes every value taken from the run. The file
is written to a temporary name and renamed, so a failed build never leaves half a report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import StorageError
from ..formats.base import think_text
from ..judges.pairwise import is_pairwise_format, pairwise_stats
from ..labels.agreement import AgreementReport
from ..store.atomic import write_atomic
from ..store.results import ResultRow
from ..trust.section import TrustSection
from . import charts
from .compare import Comparison, compare_runs, verdict_of
from .controls import BLIND, WHAT, stored_controls, verdict_sentence
from .rundir import Run, load_run, summarise
from .transcripts import aggregate, transcripts

HERE = Path(__file__).parent
RECORD_KEYS = (
    "model_id",
    "model_sha256",
    "judge_version",
    "format",
    "prompt_hash",
    "decode_options",
    "seed",
    "localjudge_version",
)


def _clip(text: Any, limit: int) -> str:
    s = "" if text is None else text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return s if len(s) <= limit else s[:limit] + f"… ({len(s) - limit} more characters)"


def _ordered_distribution(dist: dict[str, Any]) -> list[tuple[str, int]]:
    items = [(str(k), int(v)) for k, v in dist.items()]
    try:
        return sorted(items, key=lambda kv: float(kv[0]))
    except ValueError:
        pref = {"yes": 0, "no": 1, "1": 0, "2": 1, "tie": 2}
        return sorted(items, key=lambda kv: (pref.get(kv[0], 9), -kv[1], kv[0]))


def _status(row: ResultRow) -> str:
    r = row.result
    if not r.scored:
        return "unscored"
    return {True: "pass", False: "fail"}.get(r.passed, "n/a")  # type: ignore[arg-type]


def _canon(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)


def _record_of(rows: Sequence[ResultRow]) -> list[tuple[str, str]]:
    """Each record field: its value when the same on every row, else how many values it takes."""
    out = []
    records = [r.record_fields() for r in rows]
    keys = list(dict.fromkeys([*RECORD_KEYS, *(k for rec in records for k in rec)]))
    for k in keys:
        vals = list(dict.fromkeys(_canon(rec.get(k)) for rec in records if k in rec))
        if not vals:
            continue
        out.append(
            (
                k,
                vals[0]
                if len(vals) == 1
                else f"{len(vals)} distinct values"
                + ("" if k == "prompt_hash" else f": {', '.join(vals[:3])}{'…' if len(vals) > 3 else ''}"),
            )
        )
    return out


def _judge_section(run: Run, judge: str) -> dict[str, Any]:
    rows = run.rows_of(judge)
    s = run.summary["judges"].get(judge) or summarise(rows)["judges"].get(judge, {})
    ci = s.get("pass_rate_ci")
    ci = (float(ci[0]), float(ci[1])) if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci else None
    unscored = int(s.get("n_unscored") or 0)
    fmt = rows[0].record_fields().get("format") if rows else None
    fmt = fmt if fmt else (rows[0].result.format_spec if rows else None)
    pw = pairwise_stats(judge, [r.result for r in rows]) if rows and is_pairwise_format(fmt) else None
    return {
        "name": judge,
        "n": int(s.get("n") or len(rows)),
        "n_scored": int(s.get("n_scored") or 0),
        "n_unscored": unscored,
        "mean_score": s.get("mean_score"),
        "pass_rate": s.get("pass_rate"),
        "ci": ci,
        "reasons": sorted((s.get("unscored_reasons") or {}).items(), key=lambda kv: -int(kv[1])),
        "chart": charts.distribution_chart(judge, _ordered_distribution(s.get("distribution") or {}), unscored),
        "record": _record_of(rows),
        "format": _canon(fmt),
        "pairwise": pw,
        "pairwise_chart": charts.outcome_bar(
            [("answer 1", pw.wins_1, "win1"), ("tie", pw.ties, "tie"), ("answer 2", pw.wins_2, "win2")]
        )
        if pw
        else None,
    }


def _controls_rows(run: Run) -> list[dict[str, Any]]:
    """One row per judge whose summary.json entry has negative controls (`localjudge run --controls`, `localjudge
    controls`): the figures as stored, the verdict as a sentence, and whether it says the judge is blind."""
    stored = stored_controls(run.summary)
    out = []
    keys = ("variable", "n_real", "real_mean", "control_mean", "auc", "p_value", "sample", "seed")
    for judge in run.judges():
        c = stored.get(judge)
        if c is None:
            continue
        # the answers' row (`kind` None), then one per other kind shown (StoredControls.shown)
        for kind, k in c.shown():
            figures = k.model_dump()
            row = {**{f: figures[f] for f in keys}, "judge": judge, "auc_ci": k.ci}
            row.update(sentence=verdict_sentence(k.verdict), blind=k.verdict == BLIND)
            if kind == "answer":
                row.update(kind=None, what=None)
            else:
                row.update(kind=kind, what=WHAT.get(kind, kind))
            out.append(row)
    return out


def disagreeing(agreements: Sequence[AgreementReport]) -> set[int]:
    """The row indexes of the disagreements the report shows."""
    return {d.row_index for a in agreements for d in a.disagreements}


def _table_rows(run: Run, max_rows: int, max_chars: int) -> list[dict[str, Any]]:
    out = []
    shown = sorted(run.rows, key=lambda r: (r.row_index, r.judge))[:max_rows]
    convs = transcripts(run, max_chars, {r.row_index for r in shown})
    for row in shown:
        r = row.result
        out.append(
            {
                "row_id": row.row_id,
                "row_index": row.row_index,
                "judge": row.judge,
                "source": row.source,
                "verdict": verdict_of(row),
                "status": _status(row),
                "score": r.score,
                "rationale": _clip(r.rationale, max_chars),
                "raw_text": _clip(r.raw_text, max_chars),
                "think": None if (think := think_text(r.raw_text)) is None else _clip(think, max_chars),
                "error": r.error or row.error,
                "reason": r.unscored_reason,
                "inputs": [(k, _clip(v, max_chars)) for k, v in row.inputs.items()],
                "expected_score": r.expected_score,
                "tokens": r.usage.output_tokens,
                "ms": r.timings.total_ms,
                "transcript": None if (conv := convs.get(row.row_index)) is None else conv[0],
                "preview": None if conv is None else conv[1],
            }
        )
    return out


def _fmt_pct(x: Any) -> str:
    return "n/a" if x is None else f"{100 * float(x):.1f}%"


def _fmt_num(x: Any, digits: int = 3) -> str:
    return "n/a" if x is None else f"{float(x):.{digits}f}"


def _fmt_ci(ci: Any) -> str:
    return "" if not ci else f"[{_fmt_pct(ci[0])}, {_fmt_pct(ci[1])}]"


def _fmt_delta(x: Any, pct: bool = True) -> str:
    if x is None:
        return "n/a"
    return f"{100 * x:+.1f} pp" if pct else f"{x:+.3f}"


def _fmt_value(x: Any) -> str:
    return _canon(x) if isinstance(x, (dict, list)) else "" if x is None else str(x)


def render_report(
    run: Run | str | Path,
    compare: Run | str | Path | None = None,
    agreements: Sequence[AgreementReport] = (),
    max_rows: int = 20000,
    max_chars: int = 4000,
    title: str | None = None,
    trust: Sequence[TrustSection] = (),
) -> str:
    """The report as an HTML string; `trust` adds the "How far to trust the numbers" section, which also shows each
    judge's negative controls when the run's summary has them."""
    import jinja2

    cur = run if isinstance(run, Run) else load_run(run)
    base = None if compare is None else compare if isinstance(compare, Run) else load_run(compare)
    comparison: Comparison | None = compare_runs(cur, base) if base is not None else None
    judges = [_judge_section(cur, j) for j in cur.judges()]
    rows = _table_rows(cur, max_rows, max_chars)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pct=_fmt_pct, num=_fmt_num, ci=_fmt_ci, delta=_fmt_delta, value=_fmt_value)
    from markupsafe import Markup

    meta = cur.meta
    return env.get_template("report.html.j2").render(
        title=title or f"localjudge report — {cur.run_id}",
        run=cur,
        meta=meta,
        conversations=aggregate(cur),
        meta_items=[(k, _canon(v)) for k, v in meta.items()],
        judges=judges,
        pass_chart=charts.pass_rate_chart([(j["name"], j["pass_rate"], j["ci"], j["n"]) for j in judges]),
        rows=rows,
        n_rows_total=len(cur.rows),
        verdicts=sorted({r["verdict"] for r in rows}),
        statuses=[s for s in ("pass", "fail", "n/a", "unscored") if any(r["status"] == s for r in rows)],
        comparison=comparison,
        agreements=list(agreements),
        # a conversation row's disagreement shows the turns its judge saw (roles, first words), not the escaped text
        previews={i: conv[1] for i, conv in transcripts(cur, max_chars, disagreeing(agreements)).items()},
        trust=list(trust),
        controls=_controls_rows(cur),
        pairwise=[j for j in judges if j["pairwise"]],
        css=Markup((HERE / "templates" / "report.css").read_text(encoding="utf-8")),
        js=Markup((HERE / "templates" / "report.js").read_text(encoding="utf-8")),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def build_report(
    run: Run | str | Path,
    out: str | Path,
    compare: Run | str | Path | None = None,
    agreements: Sequence[AgreementReport] = (),
    max_rows: int = 20000,
    max_chars: int = 4000,
    title: str | None = None,
    trust: Sequence[TrustSection] = (),
) -> Path:
    """Render the report and write it atomically to `out`; returns the path written.

    A path that cannot be written raises `StorageError` (exit 5) naming it; text that is not valid
    Unicode (a lone surrogate read from a foreign results file) is written backslash-escaped."""
    html = render_report(run, compare, agreements, max_rows=max_rows, max_chars=max_chars, title=title, trust=trust)
    return write_output(out, html.encode("utf-8", errors="backslashreplace"), "report")


def write_output(out: str | Path, data: bytes, what: str) -> Path:
    """`write_atomic`, with an `OSError` turned into a one-line `StorageError` naming the path (exit 5)."""
    try:
        return write_atomic(out, data, mkdir=True)
    except OSError as e:
        raise StorageError(
            f"cannot write the {what} to {str(out)!r} ({e.strerror or e}); choose a writable path with -o"
        ) from None
