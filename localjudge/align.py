"""Align a judge to human labels: `localjudge align JUDGE --labels FILE`.

What it does, in order (every choice is said in the report):

1. **Split.** The labelled rows (binary labels: yes/no, pass/fail, true/false, 1/0, or the first/second answer
   of a pairwise judge; `positive` says which value counts as positive) are split into train and held-out,
   stratified by label and seeded (`seed`): each class is shuffled with `random.Random(seed)` and its first
   `round(test_fraction * n_class)` rows go to held-out.
2. **Run.** The judge runs on every row through the batch runner with `DecodeOptions(probs=True)`, so each
   result has its logprob-weighted `expected_score` (resumable and cached like any run; `out/baseline`).
3. **Threshold.** On train, the decision "positive when expected_score >= t" is tried at every midpoint
   between distinct train scores (and 0.5); the one with the highest Cohen's kappa wins (ties: the
   higher balanced accuracy, then the t closest to 0.5). Kappa rather than accuracy, so a judge that says
   "yes" to everything cannot win on an imbalanced set.
4. **Examples (optional, `examples=k`).** k train rows become few-shot examples shown before the prompt:
   ceil(k/2) positive and floor(k/2) negative rows, within each class the ones the baseline judged most
   wrongly (largest |label - expected score|, ties by the seeded order), each shown with the verdict its
   label implies (and the row's rationale column, if any). The judge with examples is run on the rest of
   train and kept only if, with its own best threshold, its train kappa beats the baseline's on the same rows.
5. **Held-out report.** Accuracy, Cohen's kappa and AUC of the expected score, before (the judge as it is:
   its own verdict, `passed`) and after (the aligned decision), each with a 95 % percentile bootstrap
   interval, and the difference after - before with a paired bootstrap interval (same resampled rows):
   "no significant change" when that interval includes 0.
6. **Write.** The aligned judge is the original spec with a new name (default `<judge>_aligned`), version
   `<version>+aligned`, `pass_threshold = t`, the chosen `[[examples]]`, and `[alignment]` (score on the
   expected score; provenance: the labels file's sha256, the split seed, threshold, examples, model). It
   is an ordinary judge file: `localjudge run DATA --judge PATH` or `--judges-dir`.

Only mechanics are claimed here: on a model at chance (the 135M default) the report shows near-chance
figures and "no significant change"; with a scripted engine whose bias is known, the threshold it recovers
and the held-out gain are tested (tests/test_align.py).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .agreement import read_labels
from .atomic import write_atomic, write_json_atomic
from .batch.run import run as evaluate  # a plain run: align never needs a panel or a cascade
from .digest import sha256_file
from .engine.base import DecodeOptions, Engine
from .errors import InputError
from .formats import OutputFormat
from .judges import Judge, get_judge
from .judges.spec import spec_from_dict
from .judges.writer import dump_judge_toml
from .stats import balanced_accuracy, bootstrap_ci, cohen_kappa, roc_auc

POSITIVE_GUESSES = ("yes", "true", "pass", "1", "positive", "good", "correct")
NEGATIVE_GUESSES = ("no", "false", "fail", "0", "2", "negative", "bad", "incorrect")


class Metrics(BaseModel):
    """Agreement on a set of rows, with 95 % bootstrap intervals."""

    n: int
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None = None
    kappa: float | None
    kappa_ci: tuple[float, float] | None = None
    auc: float | None
    auc_ci: tuple[float, float] | None = None


class Change(BaseModel):
    """After - before on the held-out rows, with a paired bootstrap interval, and what it means."""

    metric: str
    before: float | None
    after: float | None
    difference: float | None
    ci: tuple[float, float] | None
    verdict: str  # "no significant change", "better (CI above 0)", "worse (CI below 0)", "undefined"


class AlignReport(BaseModel):
    """Everything `align` did and measured (also written as align_report.json)."""

    judge: str
    judge_version: str
    aligned_judge: str
    aligned_version: str
    aligned_file: str | None
    labels_file: str
    labels_sha256: str
    label_column: str
    positive: str
    model_id: str
    n_rows: int
    n_used: int
    n_unscored: int
    seed: int
    test_fraction: float
    n_train: int
    n_test: int
    threshold: float
    threshold_rule: str
    train_kappa_baseline_default: float | None
    train_kappa_at_threshold: float | None
    examples_asked: int
    examples_kept: int
    example_rule: str
    example_rows: list[int]
    example_note: str
    before: Metrics
    after: Metrics
    changes: list[Change]
    summary: str
    seconds: float


# ------------------------------------------------------------------------------------------- pieces


def stratified_split(positive: Sequence[bool], test_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """(train, held-out) indices: each class shuffled with `random.Random(seed)`, its first round(f * n) held out."""
    if not 0 < test_fraction < 1:
        raise InputError(f"test fraction must be between 0 and 1, got {test_fraction}")
    rng = random.Random(seed)
    train: list[int] = []
    test: list[int] = []
    for cls in (True, False):
        idx = [i for i, p in enumerate(positive) if p == cls]
        rng.shuffle(idx)
        k = int(round(test_fraction * len(idx)))
        test += idx[:k]
        train += idx[k:]
    return sorted(train), sorted(test)


def choose_threshold(scores: Sequence[float], positive: Sequence[bool]) -> tuple[float, float | None]:
    """The t maximising Cohen's kappa of (score >= t) against the labels, over midpoints of distinct scores and 0.5;
    ties: higher balanced accuracy, then t closest to 0.5. Returns (t, kappa at t)."""
    distinct = sorted(set(scores))
    cands = {0.5} | {(a + b) / 2 for a, b in zip(distinct, distinct[1:], strict=False)}
    if distinct:
        cands |= {distinct[0] - 1e-9, distinct[-1] + 1e-9}
    best: tuple[float, float, float] | None = None
    best_t = 0.5
    for t in sorted(cands):
        pred = [s >= t for s in scores]
        k = cohen_kappa(list(positive), pred)
        key = (-2.0 if k is None else k, balanced_accuracy(list(positive), pred), -abs(t - 0.5))
        if best is None or key > best:
            best, best_t = key, t
    k_best = None if best is None or best[0] == -2.0 else best[0]
    return best_t, k_best


def _acc(y: Sequence[bool], p: Sequence[bool]) -> float:
    return sum(a == b for a, b in zip(y, p, strict=True)) / len(y)


def metrics(y: Sequence[bool], pred: Sequence[bool], score: Sequence[float], n_boot: int, seed: int) -> Metrics:
    """Accuracy, kappa and AUC of `score` on these rows, each with a bootstrap interval."""
    n = len(y)
    if n == 0:
        return Metrics(n=0, accuracy=None, kappa=None, auc=None)

    def sub(f: Callable[..., Any], *cols: Sequence[Any]) -> Callable[[Sequence[int]], float | None]:
        return lambda idx: f(*[[c[i] for i in idx] for c in cols])

    return Metrics(
        n=n,
        accuracy=_acc(y, pred),
        accuracy_ci=bootstrap_ci(sub(_acc, y, pred), n, n_boot, seed),
        kappa=cohen_kappa(list(y), list(pred)),
        kappa_ci=bootstrap_ci(sub(cohen_kappa, y, pred), n, n_boot, seed),
        auc=roc_auc(y, score),
        auc_ci=bootstrap_ci(sub(roc_auc, y, score), n, n_boot, seed),
    )


def paired_change(
    name: str,
    f: Callable[[Sequence[bool], Sequence[Any]], float | None],
    y: Sequence[bool],
    before: Sequence[Any],
    after: Sequence[Any],
    n_boot: int,
    seed: int,
) -> Change:
    """after - before of statistic `f(labels, values)` with a paired bootstrap interval over the same rows."""
    b, a = f(y, before), f(y, after)
    diff = None if a is None or b is None else a - b

    def stat(idx: Sequence[int]) -> float | None:
        yy = [y[i] for i in idx]
        fa, fb = f(yy, [after[i] for i in idx]), f(yy, [before[i] for i in idx])
        return None if fa is None or fb is None else fa - fb

    ci = bootstrap_ci(stat, len(y), n_boot, seed) if y else None
    if diff is None or ci is None:
        verdict = "undefined"
    elif ci[0] > 0:
        verdict = "better (CI above 0)"
    elif ci[1] < 0:
        verdict = "worse (CI below 0)"
    else:
        verdict = "no significant change"
    return Change(metric=name, before=b, after=a, difference=diff, ci=ci, verdict=verdict)


def _norm(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v).strip().lower()


def binary_labels(values: Sequence[Any], positive: str | None) -> tuple[list[bool | None], str]:
    """Each label as positive / negative (None: empty), and the positive value used; `InputError` unless binary."""
    norm = [None if v is None or (isinstance(v, str) and not v.strip()) else _norm(v) for v in values]
    present = sorted({v for v in norm if v is not None})
    if positive is None:
        guess = [g for g in POSITIVE_GUESSES if g in present]
        if len(present) == 2 and guess:
            positive = guess[0]
        elif present == ["1", "2"]:
            positive = "1"
        else:
            raise InputError(
                f"labels have values {present[:6]}; align needs two classes: say which one is positive with --positive VALUE"
            )
    positive = _norm(positive)
    if positive not in present:
        raise InputError(f"--positive {positive!r} is not a label value; the labels have {present[:6]}")
    if len(present) != 2:
        raise InputError(f"align needs binary labels; the label column has {len(present)} values: {present[:6]}")
    return [None if v is None else v == positive for v in norm], positive


def example_output(fmt: OutputFormat, positive: bool, rationale: str | None) -> str:
    """The answer a few-shot example shows: the verdict its label implies, in the judge's own format
    (yes/no, the top or bottom score, the first or second answer, a labelled choice), with `rationale` where the
    format has a free-text field ("" when the labels give none)."""
    import json

    from .formats import Choice, FeedbackFormat, PairwiseJSON, ScoreJSON, ScoreLines, YesNoJSON

    why = rationale or ""
    if isinstance(fmt, YesNoJSON):
        res = "yes" if positive else "no"
        return json.dumps({"rationale": why, "result": res}) if fmt.with_rationale else json.dumps({"result": res})
    if isinstance(fmt, ScoreJSON):
        x = int(fmt.range.hi if positive else fmt.range.lo)
        return json.dumps({"eval_score": x, "explanation": why}) if fmt.with_explanation else json.dumps({"eval_score": x})
    if isinstance(fmt, ScoreLines):
        x = int(fmt.range.hi if positive else fmt.range.lo)
        return f"score: {x}\njustification: {why or '-'}" if fmt.with_justification else f"score: {x}"
    if isinstance(fmt, PairwiseJSON):
        return json.dumps({"better_response": 1 if positive else 2, "explanation": why})
    if isinstance(fmt, Choice) and fmt.values:
        vals = fmt.values
        lab = max(vals, key=lambda k: vals[k]) if positive else min(vals, key=lambda k: vals[k])
        return json.dumps({"rationale": why, "result": lab}) if fmt.with_rationale else lab
    if isinstance(fmt, FeedbackFormat):
        value = ("A" if positive else "B") if fmt.mode == "relative" else str(int(fmt.range.hi if positive else fmt.range.lo))
        fb = why or "-"
        if fmt.kind == "prometheus":
            return f"{fb} [RESULT] {value}" if fmt.with_feedback else f"[RESULT] {value}"
        if fmt.kind == "flow_judge":
            return f"<feedback>\n{fb}\n</feedback>\n<score>\n{value}\n</score>"
        return f"**Reasoning:** {fb}\n\n**Result:** {value}"
    raise InputError(f"few-shot examples are not supported for format {fmt.kind!r}; use --examples 0")


# --------------------------------------------------------------------------------------------- align


def _require_probabilities(engine: Engine | None, model: str | None, model_options: Any) -> None:
    """Refuse, before any row runs, an engine or backend that declares no token probabilities."""
    from .engine.backends import ModelRef
    from .engine.capabilities import Capability, require

    target: Any = engine if engine is not None else ModelRef(model, model_options).backend
    require(target, Capability.TOKEN_PROBS, for_what="align (the expected score at the verdict)")


def _run(judge: Judge, rows: list[dict[str, Any]], out: Path, run_kw: dict[str, Any]) -> tuple[dict[int, Any], str]:
    """Judge rows (each carrying its labels-file index as `id`) with probabilities: ({index: JudgeResult}, model sha256)."""
    opts = (run_kw.get("options") or DecodeOptions()).model_copy(update={"probs": True})
    res = evaluate(rows, [judge], out=out, options=opts, **{k: v for k, v in run_kw.items() if k != "options"})
    got = list(res.results)
    sha = next((r.record.model_sha256 for r in got if r.record is not None), "")
    return {int(r.row_id): r.result for r in got}, sha


def align(
    judge: str | Judge,
    labels: str | Path,
    *,
    label_column: str = "label",
    positive: str | None = None,
    rationale_column: str | None = None,
    seed: int = 0,
    test_fraction: float = 0.3,
    examples: int = 0,
    n_boot: int = 1000,
    name: str | None = None,
    out: str | Path = "aligned",
    write: bool = True,
    model: str | None = None,
    engine: Engine | None = None,
    model_options: Any = None,
    mapping: Any = None,
    options: DecodeOptions | None = None,
    judges_dir: str | None = None,
) -> AlignReport:
    """Align `judge` to the binary labels in `labels` (see the module docstring); returns the report and, with
    `write`, writes `out/<name>.toml` (the aligned judge) and `out/align_report.json`. The runs it makes are
    kept in `out/runs/` (re-running resumes them)."""
    t0 = time.time()
    j = judge if isinstance(judge, Judge) else get_judge(judge, judges_dir)
    if not isinstance(j, Judge) or j.kind in ("per_item", "two_stage"):
        raise InputError(f"judge {j.name!r} makes several calls per row; align works on single-call judges")
    fmt = j.format
    if fmt is None or not fmt.value_scores():
        raise InputError(
            f"judge {j.name!r} (format {fmt.describe() if fmt else '?'}) has no single verdict to weigh by probability; "
            "align needs a yes/no, score, choice-with-values or pairwise judge"
        )
    if j.spec.alignment is not None:
        raise InputError(f"judge {j.name!r} is already aligned; align the judge it came from ({j.spec.alignment.based_on})")
    _require_probabilities(engine, model, model_options)
    path = Path(labels)
    rows = read_labels(path)
    if not any(label_column in r for r in rows):
        raise InputError(
            f"labels file {path} has no column {label_column!r}; columns: {', '.join(dict.fromkeys(k for r in rows for k in r))}"
        )
    pos_all, positive = binary_labels([r.get(label_column) for r in rows], positive)
    data = [{**r, "id": str(i)} for i, r in enumerate(rows)]
    out_dir = Path(out)
    run_kw: dict[str, Any] = {
        "model": model,
        "engine": engine,
        "model_options": model_options,
        "mapping": mapping,
        "options": options,
    }

    base, model_sha = _run(j, data, out_dir / "runs" / "baseline", run_kw)
    usable = [i for i, p in enumerate(pos_all) if p is not None and base.get(i) is not None and base[i].scored]
    missing = [i for i in usable if base[i].expected_score is None]
    if missing:
        raise InputError(
            f"the model gave no token probabilities for judge {j.name!r} (row {missing[0]}: no expected score); align "
            "needs them: use a llama.cpp model (scripted and server backends give none)"
        )
    n_unscored = sum(1 for i, p in enumerate(pos_all) if p is not None and i not in usable)
    if len(usable) < 10:
        raise InputError(
            f"only {len(usable)} labelled rows were scored; align needs at least 10 (and more for a useful held-out set)"
        )
    train_i, test_i = stratified_split([bool(pos_all[i]) for i in usable], test_fraction, seed)
    train, test = [usable[k] for k in train_i], [usable[k] for k in test_i]
    y = {i: bool(pos_all[i]) for i in usable}
    es = {i: float(base[i].expected_score) for i in usable}

    t, k_train = choose_threshold([es[i] for i in train], [y[i] for i in train])
    t = round(t, 6)  # the threshold written to the judge file is the one evaluated
    k_default = cohen_kappa([y[i] for i in train], [bool(base[i].passed) for i in train])
    threshold_rule = (
        "max Cohen's kappa on train of (expected_score >= t) over midpoints of the train scores and 0.5; "
        "ties: balanced accuracy, then |t - 0.5|"
    )

    # optional few-shot examples, kept only if they raise train kappa on the train rows they are not part of
    shots: list[dict[str, Any]] = []
    shot_rows: list[int] = []
    example_note = "none asked"
    final = j
    final_scores = es
    example_rule = (
        f"{examples} train rows: ceil(k/2) positive + floor(k/2) negative, the ones the baseline judged most wrongly "
        "(largest |label - expected score|; ties in seeded order), shown with the verdict their label implies"
    )
    if examples > 0:
        rng = random.Random(seed)
        order = {i: rng.random() for i in train}
        pick: list[int] = []
        for cls, k in ((True, math.ceil(examples / 2)), (False, examples // 2)):
            cands = sorted((i for i in train if y[i] == cls), key=lambda i: (-abs(float(cls) - es[i]), order[i]))
            pick += cands[:k]
        rest = [i for i in train if i not in pick]
        cand_shots = [
            {
                "variables": _variables(j, data[i], mapping),
                "output": example_output(fmt, y[i], str(rows[i].get(rationale_column) or "") if rationale_column else None),
                "label": str(rows[i].get(label_column)),
                "row": i,
            }
            for i in pick
        ]
        cand = Judge(spec_from_dict({**j.spec.model_dump(mode="json"), "examples": cand_shots}, j.origin), j.origin)
        got, _ = _run(cand, [data[i] for i in rest], out_dir / "runs" / "examples_train", run_kw)
        ok = [i for i in rest if got.get(i) is not None and got[i].scored and got[i].expected_score is not None]
        t_ex, k_ex = choose_threshold([float(got[i].expected_score) for i in ok], [y[i] for i in ok])
        _, k_base_rest = choose_threshold([es[i] for i in ok], [y[i] for i in ok])
        if k_ex is not None and (k_base_rest is None or k_ex > k_base_rest):
            shots, shot_rows, t, k_train = cand_shots, pick, round(t_ex, 6), k_ex
            example_note = f"kept: train kappa {k_ex:.3f} with them vs {k_base_rest if k_base_rest is None else round(k_base_rest, 3)} without (on {len(ok)} train rows)"
            final = cand
        else:
            example_note = (
                f"dropped: train kappa {k_ex if k_ex is None else round(k_ex, 3)} with them vs "
                f"{k_base_rest if k_base_rest is None else round(k_base_rest, 3)} without (on {len(ok)} train rows)"
            )

    if final is not j:
        got, _ = _run(final, [data[i] for i in test], out_dir / "runs" / "examples_heldout", run_kw)
        test = [i for i in test if got.get(i) is not None and got[i].scored and got[i].expected_score is not None]
        final_scores = {i: float(got[i].expected_score) for i in test}

    yt = [y[i] for i in test]
    before_pred = [bool(base[i].passed) for i in test]
    after_pred = [final_scores[i] >= t for i in test]
    before = metrics(yt, before_pred, [es[i] for i in test], n_boot, seed)
    after = metrics(yt, after_pred, [final_scores[i] for i in test], n_boot, seed)
    changes = [
        paired_change("accuracy", _acc_or_none, yt, before_pred, after_pred, n_boot, seed),
        paired_change("cohen_kappa", lambda a, b: cohen_kappa(list(a), list(b)), yt, before_pred, after_pred, n_boot, seed),
        paired_change("auc", roc_auc, yt, [es[i] for i in test], [final_scores[i] for i in test], n_boot, seed),
    ]
    kappa_change = changes[1]
    summary = (
        f"held-out kappa {_f(before.kappa)} -> {_f(after.kappa)} ({kappa_change.verdict}); accuracy "
        f"{_f(before.accuracy)} -> {_f(after.accuracy)}; AUC {_f(before.auc)} -> {_f(after.auc)} (n = {len(test)})"
    )

    new_name = name or f"{j.name}_aligned"
    aligned_spec = _aligned_spec(
        j,
        new_name,
        t,
        shots,
        path,
        label_column,
        positive,
        seed,
        test_fraction,
        len(train),
        len(test),
        threshold_rule,
        example_rule if examples else "",
        base,
        usable,
        before,
        after,
        changes,
        model_sha,
    )
    aligned = Judge(spec_from_dict(aligned_spec, f"{new_name} (aligned)"), f"{new_name} (aligned)")
    file: Path | None = None
    report = AlignReport(
        judge=j.name,
        judge_version=j.version,
        aligned_judge=new_name,
        aligned_version=aligned.version,
        aligned_file=None,
        labels_file=str(path),
        labels_sha256=aligned_spec["alignment"]["labels_sha256"],
        label_column=label_column,
        positive=positive,
        model_id=next((base[i].model_id for i in usable if base[i].model_id), ""),
        n_rows=len(rows),
        n_used=len(usable),
        n_unscored=n_unscored,
        seed=seed,
        test_fraction=test_fraction,
        n_train=len(train),
        n_test=len(test),
        threshold=t,
        threshold_rule=threshold_rule,
        train_kappa_baseline_default=k_default,
        train_kappa_at_threshold=k_train,
        examples_asked=examples,
        examples_kept=len(shots),
        example_rule=example_rule if examples else "",
        example_rows=shot_rows,
        example_note=example_note,
        before=before,
        after=after,
        changes=changes,
        summary=summary,
        seconds=round(time.time() - t0, 1),
    )
    if write:
        file = out_dir / f"{new_name}.toml"
        header = (
            f"localjudge judge file, written by `localjudge align` from judge {j.name!r} ({j.version[:15]}…).\n"
            f"Labels: {path} (sha256 {report.labels_sha256[:16]}…); {summary}.\n"
            "Prompt text as in the original judge (see [source] and NOTICE)."
        )
        write_atomic(file, dump_judge_toml(aligned_spec, header), mkdir=True)
        report.aligned_file = str(file)
        write_json_atomic(out_dir / "align_report.json", report.model_dump(mode="json"), mkdir=True)
    return report


def _acc_or_none(y: Sequence[bool], p: Sequence[bool]) -> float | None:
    return _acc(y, p) if y else None


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _variables(j: Judge, row: dict[str, Any], mapping: Any) -> dict[str, Any]:
    """A labelled row's values for the judge's variables (names, aliases, then `mapping` var=column)."""
    from .datasets import parse_mapping

    cols = {v: spec.column for v, spec in parse_mapping(mapping).items()}
    out: dict[str, Any] = {}
    for v in j.variables:
        for key in (cols.get(v.name), v.name, *v.aliases):
            if key and row.get(key) is not None:
                out[v.name] = row[key]
                break
    return out


def _aligned_spec(
    j: Judge,
    name: str,
    t: float,
    shots: list[dict[str, Any]],
    path: Path,
    label_column: str,
    positive: str,
    seed: int,
    test_fraction: float,
    n_train: int,
    n_test: int,
    threshold_rule: str,
    example_rule: str,
    base: dict[int, Any],
    usable: list[int],
    before: Metrics,
    after: Metrics,
    changes: list[Change],
    model_sha: str,
) -> dict[str, Any]:
    spec = j.spec.model_dump(mode="json", exclude_defaults=True)
    first = next((base[i] for i in usable if base[i].model_id), None)
    spec.update(
        name=name,
        version=f"{j.spec.version or '1'}+aligned",
        description=f"{j.description} Aligned on {path.name}: decides on the expected score >= {t:.4g}.".strip(),
        kind=j.spec.kind,
        pass_threshold=t,
        examples=shots,
        alignment={
            "score": "expected",
            "based_on": f"{j.name} {j.version}",
            "labels_file": str(path),
            "labels_sha256": sha256_file(path),
            "label_column": label_column,
            "positive": positive,
            "split_seed": seed,
            "test_fraction": test_fraction,
            "n_train": n_train,
            "n_test": n_test,
            "threshold": t,
            "threshold_rule": threshold_rule,
            "example_rule": example_rule,
            "model_id": first.model_id if first else "",
            "model_sha256": model_sha,
            "aligned_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "heldout": {
                "before": before.model_dump(mode="json"),
                "after": after.model_dump(mode="json"),
                "changes": {c.metric: {"difference": c.difference, "ci": c.ci, "verdict": c.verdict} for c in changes},
            },
        },
    )
    if not shots:
        spec.pop("examples")
    return spec
