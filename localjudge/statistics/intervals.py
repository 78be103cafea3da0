"""Confidence intervals: Wilson's for a proportion, a percentile bootstrap for any statistic of resampled items."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

Z95 = 1.959963984540054


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for k successes in n trials (None when n == 0)."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_ci(
    stat: Callable[[Sequence[int]], float | None], n: int, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `stat(indices)` over `n` items resampled with replacement (seeded, so the
    same inputs give the same interval). Resamples where the statistic is undefined (None) are skipped; None when
    fewer than half of them are defined or n == 0."""
    if n <= 0:
        return None
    rng = random.Random(seed)
    vals = []
    for _ in range(n_boot):
        idx = [rng.randrange(n) for _ in range(n)]
        v = stat(idx)
        if v is not None and not math.isnan(v):
            vals.append(v)
    if len(vals) < n_boot / 2:
        return None
    vals.sort()
    lo = vals[int(math.floor((1 - level) / 2 * (len(vals) - 1)))]
    hi = vals[int(math.ceil((1 + level) / 2 * (len(vals) - 1)))]
    return lo, hi
