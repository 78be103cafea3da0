"""The aligned judge's spec: the original judge with the chosen threshold, few-shot examples and `[alignment]`
provenance (labels file, split, rules, held-out figures); `align` writes it as an ordinary judge file.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..judges import Judge
from ..models.digest import sha256_file
from .measure import Change, Metrics


def build_aligned_spec(
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
    """The aligned judge's spec as a dict (what `dump_judge_toml` writes): `j`'s own spec renamed, versioned
    `+aligned`, deciding on the expected score >= `t`, with `shots` as `[[examples]]` and `[alignment]` provenance."""
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
