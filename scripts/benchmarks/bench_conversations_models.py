"""The installable models on a small labelled multi-turn set: how often they agree with labels true by construction.

    python scripts/bench.py conversations-models [--rows 24] [--model smollm2-135m --model gemma3-270m] [--out DIR]
    python scripts/benchmarks/bench_conversations_models.py [--conversations 24] [--model NAME ...] [--threads 1] [--out DIR]

Data: scripts/data/conversations_labelled.jsonl (original, CC0: scripts/data/LICENSE.conversations_labelled), 24
short conversations (3 to 5 user turns, some with tool calls and their results), OpenAI-style `messages`, with

* `label` ("yes"/"no"): did the assistant address every user request by the end? 12 yes; 12 with exactly one
  request plainly ignored (half of a two-part question unanswered, an off-topic reply never corrected) or refused
  without a reason (MLflow's criteria count such a refusal as incomplete). Judged by `conversation_completeness`
  (MLflow's prompt), session-level.
* `turn_labels` (one "yes"/"no" per user turn, i.e. per unit interaction): is the assistant's reply to that turn on
  topic? "no" only for a plainly unrelated reply (the Eiffel Tower's height to a question about eggs); a bare
  refusal or a half answer is on topic. Judged by `deepeval_turn_relevancy` (DeepEval's prompt), `--granularity turn`.

Each model judges into a normal run directory per granularity (`--out`, default runs/conversations-models/<model>),
so re-running the same command resumes: finished judgements are reused, not recomputed. Agreement per model x judge:
accuracy, Cohen's kappa with a 95 % percentile bootstrap interval (1000 resamples, seed 0: `agree`'s), TPR (label yes
judged yes) and TNR (label no judged no), over the scored results; unscored ones are counted, never guessed.
Output depends on the runs only (no times).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

if TYPE_CHECKING:
    from localjudge.engine.base import Engine

DATA = Path(__file__).resolve().parents[1] / "data" / "conversations_labelled.jsonl"
MODELS = ("smollm2-135m", "gemma3-270m")
SESSION_JUDGE = "conversation_completeness"
TURN_JUDGE = "deepeval_turn_relevancy"
Label = Literal["yes", "no"]


class LabelledConversation(BaseModel):
    """One line of the data file: a conversation, its completeness label and one relevancy label per user turn."""

    model_config = {"extra": "forbid"}

    id: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(min_length=2)
    label: Label
    turn_labels: list[Label] = Field(min_length=1)


def load(path: Path = DATA, limit: int | None = None) -> list[LabelledConversation]:
    """The labelled conversations (the first `limit`), checked: schema, unique ids, one turn label per user turn.
    A bad line raises ValueError naming the line and the field."""
    out: list[LabelledConversation] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            conv = LabelledConversation.model_validate_json(line)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(x) for x in err["loc"])
            raise ValueError(f"{path.name} line {n}: field {field!r}: {err['msg']}") from None
        users = sum(m.get("role") == "user" for m in conv.messages)
        if users != len(conv.turn_labels):
            raise ValueError(
                f"{path.name} line {n}: {users} user turns but {len(conv.turn_labels)} turn_labels; give one per user turn"
            )
        if any(c.id == conv.id for c in out):
            raise ValueError(f"{path.name} line {n}: id {conv.id!r} repeats an earlier line; ids must be unique")
        out.append(conv)
    return out[:limit]


class Agreement(BaseModel):
    """One model x judge against the labels (over the scored results)."""

    model: str
    judge: str
    granularity: str
    results: int
    unscored: int
    missing: int = 0  # labels with no stored result yet (a report of a run not finished)
    labels_yes: int
    judged_yes: int
    accuracy: float | None
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    tpr: float | None
    tnr: float | None


def agreement(model: str, judge: str, granularity: str, pairs: Sequence[tuple[Label, bool | None]]) -> Agreement:
    """(label, the judge's pass or None when unscored) pairs -> the figures."""
    from localjudge.statistics import cohen_kappa
    from localjudge.statistics.intervals import bootstrap_ci

    scored = [(lab == "yes", p) for lab, p in pairs if p is not None]
    y, v = [a for a, _ in scored], [b for _, b in scored]
    pos = [b for a, b in scored if a]
    neg = [b for a, b in scored if not a]
    n = len(scored)
    return Agreement(
        model=model,
        judge=judge,
        granularity=granularity,
        results=len(pairs),
        unscored=len(pairs) - n,
        labels_yes=sum(y),
        judged_yes=sum(v),
        accuracy=sum(a == b for a, b in scored) / n if n else None,
        kappa=cohen_kappa(y, v) if n else None,
        kappa_ci=bootstrap_ci(lambda idx: cohen_kappa([y[i] for i in idx], [v[i] for i in idx]), n),
        tpr=sum(pos) / len(pos) if pos else None,
        tnr=sum(not b for b in neg) / len(neg) if neg else None,
    )


def _stored(judge: str, out: Path) -> list[Any]:
    """What the run directory `out` holds of `judge` so far, without judging (a run still going, or stopped)."""
    from localjudge.store.db import Store

    if not (out / "results.sqlite").is_file():
        return []
    store = Store(out / "results.sqlite")
    run_id = store.latest_run()
    return [] if run_id is None else list(store.iter_results(run_id, [judge]))


def _run(
    convs: list[LabelledConversation],
    judge: str,
    granularity: str,
    out: Path,
    model: str | None,
    engine: Engine | None,
    threads: int,
    report_only: bool = False,
) -> list[Any]:
    """Judge the conversations into the run directory `out` (resumed when it exists); the stored rows. With
    `report_only`, judge nothing: the rows stored so far."""
    import localjudge

    if report_only:
        return _stored(judge, out)

    rows = [{"id": c.id, "messages": c.messages} for c in convs]
    res = localjudge.evaluate(
        rows,
        [judge],
        model=model,
        engine=engine,
        model_options=None if engine is not None else {"n_threads": threads},
        out=out,
        conversation=granularity,
    )
    print(f"{judge} ({granularity}) into {out}: {res.counts.cells} results, {res.counts.evaluated} computed now", file=sys.stderr)
    return [r for r in res.results if r.judge == judge]


def measure(
    convs: list[LabelledConversation],
    model: str,
    out: Path,
    *,
    engine: Engine | None = None,
    threads: int = 1,
    report_only: bool = False,
) -> list[Agreement]:
    """One model on both judges: the session judge against `label`, the per-turn judge against `turn_labels`. A
    label without a stored result (`report_only` on a run not finished) is left out, and counted in `missing`."""
    name = None if engine is not None else model
    session = _run(convs, SESSION_JUDGE, "session", out / "session", name, engine, threads, report_only)
    by_conv = {r.conversation_id or r.row_id: r.result.passed if r.result.scored else None for r in session}
    s_pairs = [(c.label, by_conv[c.id]) for c in convs if c.id in by_conv]
    turns = _run(convs, TURN_JUDGE, "turn", out / "turn", name, engine, threads, report_only)
    by_turn = {(r.conversation_id, r.turn_index): r.result.passed if r.result.scored else None for r in turns}
    t_pairs = [(lab, by_turn[(c.id, i)]) for c in convs for i, lab in enumerate(c.turn_labels) if (c.id, i) in by_turn]
    s_all, t_all = len(convs), sum(len(c.turn_labels) for c in convs)
    return [
        agreement(model, SESSION_JUDGE, "session", s_pairs).model_copy(update={"missing": s_all - len(s_pairs)}),
        agreement(model, TURN_JUDGE, "turn", t_pairs).model_copy(update={"missing": t_all - len(t_pairs)}),
    ]


def _f(x: float | None, pct: bool = False) -> str:
    return "–" if x is None else (f"{x:.0%}" if pct else f"{x:.2f}")


def table(rows: Sequence[Agreement]) -> str:
    """The markdown table docs/conversations.md publishes."""
    head = "| model | judge | granularity | results (unscored) | labels yes | judged yes | accuracy | Cohen's κ [95 % CI] | TPR | TNR |"
    lines = [head, "|---|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for a in rows:
        ci = f" [{a.kappa_ci[0]:.2f}, {a.kappa_ci[1]:.2f}]" if a.kappa_ci else " [–]"
        lines.append(
            f"| {a.model} | `{a.judge}` | {a.granularity} | {a.results}{f' of {a.results + a.missing}' if a.missing else ''} ({a.unscored}) | {a.labels_yes} | {a.judged_yes} "
            f"| {_f(a.accuracy, True)} | {_f(a.kappa)}{ci} | {_f(a.tpr, True)} | {_f(a.tnr, True)} |"
        )
    return "\n".join(lines)


def section_conversations_models(
    models: Sequence[str] = MODELS,
    limit: int | None = None,
    threads: int = 1,
    out: Path | None = None,
    engine_for: Callable[[str], Engine] | None = None,
    report_only: bool = False,
) -> list[Agreement]:
    """Print the section (bench.py `conversations-models`) and return its rows; `engine_for(model)` replaces the
    real model (tests)."""
    convs = load(limit=limit)
    base = out or Path("runs") / "conversations-models"
    rows: list[Agreement] = []
    for model in models:
        engine = engine_for(model) if engine_for else None
        rows += measure(convs, model, base / f"{model}-{len(convs)}", engine=engine, threads=threads, report_only=report_only)
    turns = sum(len(c.turn_labels) for c in convs)
    print(f"\n## The installable models on {len(convs)} labelled conversations ({turns} turns), {threads} thread(s)\n")
    print(table(rows))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Judge (or resume), then print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="model name or .gguf path (default: smollm2-135m and gemma3-270m)")
    ap.add_argument("--conversations", type=int, default=None, help="judge only the first N conversations (default: all 24)")
    ap.add_argument("--threads", type=int, default=1, help="the model's CPU threads (default 1)")
    ap.add_argument("--out", type=Path, default=None, help="run directories go under it (default runs/conversations-models)")
    ap.add_argument("--report-only", action="store_true", help="judge nothing: the table of what the run directories hold so far")
    a = ap.parse_args(argv)
    if a.threads < 1 or (a.conversations is not None and a.conversations < 2):
        raise SystemExit("--threads must be at least 1, --conversations at least 2")
    from localjudge.errors import LocalJudgeError

    try:
        section_conversations_models(a.model or MODELS, a.conversations, a.threads, a.out, report_only=a.report_only)
    except (LocalJudgeError, ValueError) as e:  # a model not installed, a bad data line: one line, exit 2
        print(f"error: {e} (finished judgements stay in their run directories)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
