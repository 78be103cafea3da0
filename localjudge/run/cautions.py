"""Cautions about what a finished run's numbers can mean, from its summary alone (no labels): one line each.

- The model that judged is one the registry marks as being for trying the tool (`for_trying` in models.toml:
  the two small installable models, which judge at chance on labelled sets, docs/models.md), or a conversion of
  one (`models optimize`): its pass rates say little about the outputs, and the line says where a capable
  judge comes from.
- A judge gave the same verdict (or value) on every scored row of a run of at least `SAME_VERDICT_MIN_ROWS`: a
  judge that never changes its answer may not be reading the rows (all of them may also simply be good: the
  line says how to check).

Printed by `localjudge run` after its table and offered as `RunResult.cautions`; never stored, so no store,
export or cache key changes with them.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import LocalJudgeError
from .aggregate import JudgeSummary
from .record import RunRecord

SAME_VERDICT_MIN_ROWS = 5


def trial_model_note(run: RunRecord) -> str | None:
    """The registry's `for_trying` text of the model that judged (by name with its pinned sha256 or converted for the
    CPU on first use, by its pinned sha256, or through the model a converted local model was made from), or None."""
    from ..models.manifest import read_manifest
    from ..models.registry import registry

    try:
        models = registry().get("models", {})
    except LocalJudgeError:  # a broken LOCALJUDGE_MODELS_TOML must not fail a run that finished (a scripted one)
        return None
    name, digest = run.model_id, run.model_sha256
    # a model converted for the CPU on first use (layout = "auto") judges under its name with a digest of this machine's
    converted = name in models and models[name].get("layout") == "auto"
    if name not in models or (models[name].get("sha256") not in (None, digest) and not converted):
        source = (read_manifest().get(str(name)) or {}).get("optimized_from") or {}
        name = source.get("model") if source.get("model") in models else None
        if name is None:
            name = next((n for n, e in models.items() if digest and e.get("sha256") == digest), None)
    return models[name].get("for_trying") if name is not None else None


def cautions(run: RunRecord, judges: Mapping[str, JudgeSummary], controls: bool = False) -> list[str]:
    """The caution lines of a run record (run.json) and its per-judge summaries, in a stable order. With `controls`
    (the run judged its negative controls: `run --controls`) they point at those, printed after them, instead of
    at the `localjudge controls` command."""
    out = []
    check = "its negative controls below" if controls else "localjudge controls RUN_DIR"
    note = trial_model_note(run)
    if note:
        out.append(
            f"note: {run.model_id} {note}: these pass rates say little about your outputs. For a judge that reads "
            f"them, use a capable model (localjudge models list; localjudge models pull NAME) and check it: {check} "
            "(no labels needed), localjudge agree (labels)."
        )
    for name, s in judges.items():
        if s.n_scored >= SAME_VERDICT_MIN_ROWS and len(s.distribution) == 1:
            (value,) = s.distribution
            out.append(
                f"warning: {name} gave the same verdict ({value}) on all {s.n_scored} scored rows; a judge that never "
                f"changes its verdict may not be reading them: check it with {check} (no labels needed) or on "
                "labelled rows (localjudge agree)."
            )
    return out


__all__ = ["SAME_VERDICT_MIN_ROWS", "cautions", "trial_model_note"]
