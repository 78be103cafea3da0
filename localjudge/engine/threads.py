"""The default CPU thread count (every physical core this process may use) and how llama.cpp's threads wait.

Chosen by measurement (`scripts/bench.py defaults` and `threads`, docs/benchmarks.md). llama.cpp's threads
meet at a barrier after every step of the graph, and its OpenMP build (libgomp, the default) makes a thread
that arrives first spin for up to 300,000 pause loops (milliseconds) before it sleeps. On an idle machine every
core is the fastest choice (2 threads: 1.48x one thread on the 2-core development machine). Beside other work
a spinning thread holds a core the late thread needs, so every step waits for the scheduler: 2 threads fell
to 0.45x one thread beside one busy process. A short spin (`SPIN_COUNT`) still catches a partner that is
running (barriers are microseconds apart) and lets a waiting thread sleep, and so give its core away, when
the other thread was preempted; on free cores it costs 1.19x against libgomp's own spin, so the engine takes
libgomp's spin when the cores are free as it loads (`limit_spin_wait`; 12 RAG rows: 46.9 s alone, 98.6 s
beside a busy process, docs/benchmarks.md): 6 RAG rows with 2
threads on the loaded 2-core machine (load 4-6) took 64-76 s with 1,000 loops, 77 s with none, 105-274 s
with 10,000 and 458 s with libgomp's 300,000. The wait changes no arithmetic, so outputs stay the same.

The count depends only on the machine, never on its load at the moment: llama.cpp's rounding depends on
the thread count, and a run must give the same outputs whenever it is repeated on the same machine.
Hyper-thread siblings count once (they share a core's arithmetic units, and llama.cpp's own default counts
physical cores).
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping
from pathlib import Path

MAX_DEFAULT_THREADS = 16
# pause loops a llama.cpp thread spins at a barrier before it sleeps (libgomp's GOMP_SPINCOUNT; its own default
# is 300,000); measured in docs/benchmarks.md
SPIN_COUNT = 1_000
IDLE_SPIN_COUNT = 300_000  # libgomp's own: the fastest on a machine whose cores are free when the engine loads


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
    """Every physical core this process may use, in 1..16."""
    return max(1, min(physical_cores(), MAX_DEFAULT_THREADS))


def other_runnable(loadavg: Path = Path("/proc/loadavg"), samples: int = 5, gap_s: float = 0.01) -> int | None:
    """The fewest tasks besides this one that were runnable over `samples` readings `gap_s` apart (the kernel's
    count in /proc/loadavg, less the reader); None where the file does not exist (not Linux)."""
    import time

    seen: list[int] = []
    for i in range(samples):
        try:
            running = loadavg.read_text().split()[3].split("/")[0]
            seen.append(max(0, int(running) - 1))
        except (OSError, IndexError, ValueError):
            return None
        if i + 1 < samples:
            time.sleep(gap_s)
    return min(seen)


def limit_spin_wait(environ: MutableMapping[str, str] = os.environ, runnable: Callable[[], int | None] = other_runnable) -> None:
    """Before llama.cpp is first loaded in this process, choose how long a waiting llama.cpp thread spins before
    it sleeps (libgomp reads its settings once, when it is loaded; a library that loaded it earlier, such as
    torch, keeps its own): libgomp's own `IDLE_SPIN_COUNT` when the default threads find their cores free
    (`runnable()` other tasks plus the threads fit the usable CPUs), else `SPIN_COUNT`. The wait changes no
    arithmetic, so this choice, unlike the thread count, may follow the load: it changes speed, never an
    output. A user's own `GOMP_SPINCOUNT` or `OMP_WAIT_POLICY` is left as it is."""
    if "GOMP_SPINCOUNT" in environ or "OMP_WAIT_POLICY" in environ:
        return
    others = runnable()
    free = others is not None and others + default_threads() <= len(usable_cpus())
    environ["GOMP_SPINCOUNT"] = str(IDLE_SPIN_COUNT if free else SPIN_COUNT)
