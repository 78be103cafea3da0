"""The default CPU thread count: the physical cores this process may use, minus one, at least one.

Chosen by measurement (`scripts/bench.py threads`, docs/models.md): llama.cpp's threads wait for each
other at every step, so one busy core slows every thread. On the 2-core development machine, 1 thread
gave 52 rows/min alone and 53 beside one CPU-bound process; 2 threads gave 77 alone but 23.8 beside it.
A laptop always has other work running, so one physical core is left to it. The count depends only on
the machine, never on its load at the moment: llama.cpp's rounding depends on the thread count, and a
run must give the same outputs whenever it is repeated on the same machine. Hyper-thread siblings
count once (they share a core's arithmetic units, and llama.cpp's own default counts physical cores).
"""

from __future__ import annotations

import os
from pathlib import Path

MAX_DEFAULT_THREADS = 16


def usable_cpus() -> list[int]:
    """The logical CPUs this process may run on (its affinity; every CPU where that is unknown)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return list(range(os.cpu_count() or 1))


def physical_cores(cpus: list[int] | None = None, sysfs: Path = Path("/sys/devices/system/cpu")) -> int:
    """Physical cores among `cpus`: logical CPUs that are hyper-thread siblings count once (Linux sysfs;
    elsewhere, or where sysfs says nothing, every logical CPU counts)."""
    cpus = usable_cpus() if cpus is None else cpus
    cores: set[tuple[int, ...]] = set()
    for cpu in cpus:
        f = sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list"
        try:
            text = f.read_text().strip()
        except OSError:
            return max(1, len(cpus))
        ids: list[int] = []
        for part in text.split(","):
            a, _, b = part.partition("-")
            ids += list(range(int(a), int(b or a) + 1))
        cores.add(tuple(sorted(ids)))
    return max(1, len(cores))


def default_threads() -> int:
    """The physical cores this process may use minus one (left to the rest of the machine), in 1..16."""
    return max(1, min(physical_cores() - 1, MAX_DEFAULT_THREADS))
