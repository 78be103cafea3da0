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
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..engine.base import DecodeOptions, Engine
from ..errors import InputError, StorageError
from ..judges import Judge, get_judge
from ..judges.spec import spec_from_dict
from ..judges.writer import dump_judge_toml
from ..labels.agreement import read_labels
from ..run.plain import run_plain  # a plain run: align never needs a panel or a cascade
from ..run.spec import RunSpec
from ..statistics import cohen_kappa, roc_auc
from ..store.atomic import write_atomic, write_json_atomic
from .examples import NEGATIVE_GUESSES, POSITIVE_GUESSES, binary_labels, example_output, example_variables
from .measure import Change, Metrics, accuracy_or_none, choose_threshold, metrics, paired_change, stratified_split
from .spec import build_aligned_spec

__all__ = [  # the pieces live in align_measure, align_labels and align_spec; importable from here as before
    "NEGATIVE_GUESSES",
    "POSITIVE_GUESSES",
    "AlignReport",
    "Change",
    "Metrics",
    "align",
    "binary_labels",
    "choose_threshold",
    "example_output",
    "metrics",
    "paired_change",
    "stratified_split",
]


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


# --------------------------------------------------------------------------------------------- align


def _require_probabilities(engine: Engine | None, model: str | None, model_options: Any) -> None:
    """Refuse, before any row runs, an engine or backend that declares no token probabilities."""
    from ..engine.backends import ModelRef
    from ..engine.capabilities import Capability, require

    target: Any = engine if engine is not None else ModelRef(model, model_options).backend
    require(target, Capability.TOKEN_PROBS, for_what="align (the expected score at the verdict)")


def _run(judge: Judge, rows: list[dict[str, Any]], out: Path, run_kw: dict[str, Any]) -> tuple[dict[int, Any], str]:
    """Judge rows (each carrying its labels-file index as `id`) with probabilities: ({index: JudgeResult}, model sha256)."""
    opts = (run_kw.get("options") or DecodeOptions()).model_copy(update={"probs": True})
    res = run_plain(RunSpec.build(rows, [judge], out=out, options=opts, **{k: v for k, v in run_kw.items() if k != "options"}))
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
    if not isinstance(j, Judge) or not j.traits.single_call:
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
                "variables": example_variables(j, data[i], mapping),
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
        paired_change("accuracy", accuracy_or_none, yt, before_pred, after_pred, n_boot, seed),
        paired_change("cohen_kappa", lambda a, b: cohen_kappa(list(a), list(b)), yt, before_pred, after_pred, n_boot, seed),
        paired_change("auc", roc_auc, yt, [es[i] for i in test], [final_scores[i] for i in test], n_boot, seed),
    ]
    kappa_change = changes[1]
    summary = (
        f"held-out kappa {_f(before.kappa)} -> {_f(after.kappa)} ({kappa_change.verdict}); accuracy "
        f"{_f(before.accuracy)} -> {_f(after.accuracy)}; AUC {_f(before.auc)} -> {_f(after.auc)} (n = {len(test)})"
    )

    new_name = name or f"{j.name}_aligned"
    aligned_spec = build_aligned_spec(
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
        try:
            write_atomic(file, dump_judge_toml(aligned_spec, header), mkdir=True)
            report.aligned_file = str(file)
            write_json_atomic(out_dir / "align_report.json", report.model_dump(mode="json"), mkdir=True)
        except OSError as e:
            raise StorageError(
                f"cannot write the aligned judge to {str(out_dir)!r} ({e.strerror or e}); choose a writable folder with --out"
            ) from None
    return report


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"
