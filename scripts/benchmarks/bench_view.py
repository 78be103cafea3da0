"""`bench.py view [--n 5]`: `localjudge view` page times over HTTP on synthetic 1k / 10k / 100k-row runs."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from scripts.benchmarks.bench_common import ROOT


def section_view(n: int, sizes: tuple[int, ...] = (1_000, 10_000, 100_000)) -> None:
    """`localjudge view` page times on synthetic runs of each size, one server over all of them (medians of n)."""
    import statistics
    import tempfile

    sys.path.insert(0, str(ROOT / "tests"))
    from view_support import ViewServer, make_run

    def ms(server: ViewServer, paths: list[str]) -> float:
        t0 = time.perf_counter()
        for p in paths:
            status, _, _ = server.request(p)
            assert status == 200, p
        return (time.perf_counter() - t0) * 1000

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for size in sizes:
            t0 = time.perf_counter()
            make_run(root / f"rows{size}", size, fast=True)
            print(f"built a {size}-row run through the store in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        t0 = time.perf_counter()
        server = ViewServer("--runs-root", str(root))
        started = time.perf_counter() - t0
        try:
            rows_out: list[tuple[int, dict[str, float]]] = []
            for size in sizes:
                rid = f"rows{size}"
                api = f"/api/runs/{rid}/rows"
                first = [f"/runs/{rid}", f"/api/runs/{rid}/status", api + "?page=1"]
                pages = size // 50
                q = f"{api}?q=question%20{size // 3}"
                t = {
                    "first page": statistics.median(ms(server, first) for _ in range(n)),
                    "next page": statistics.median(ms(server, [f"{api}?page={p}"]) for p in range(2, 2 + 2 * n)),
                    "middle page": statistics.median(ms(server, [f"{api}?page={pages // 2}"]) for _ in range(n)),
                    "last page": statistics.median(ms(server, [f"{api}?page={pages}"]) for _ in range(n)),
                    "sorted by expected": statistics.median(ms(server, [f"{api}?sort=-expected"]) for _ in range(n)),
                    "sorted by score, middle": statistics.median(
                        ms(server, [f"{api}?sort=score&page={pages // 2}"]) for _ in range(n)
                    ),
                    # opening the run page (in "first page") starts the trigram index; the first search waits for it
                    "search, first": ms(server, [q]),
                }
                t["search"] = statistics.median(ms(server, [f"{api}?q=question%20{size // 3 + k}"]) for k in range(1, n + 1))
                t["queue (uncertain), first open"] = ms(server, [f"/api/runs/{rid}/queue?judge=polite&order=uncertain"])
                t["queue (uncertain), next item"] = statistics.median(
                    ms(server, [f"/api/runs/{rid}/queue?judge=polite&order=uncertain&pos={k}"]) for k in range(1, n + 1)
                )
                rows_out.append((size, t))
        finally:
            server.stop()
        # the search index persists in the run directory: a later session's first search reads it
        server = ViewServer("--runs-root", str(root))
        try:
            for size, t in rows_out:
                t["search, first after a restart"] = ms(server, [f"/api/runs/rows{size}/rows?q=question%20{size // 5}"])
        finally:
            server.stop()
    names = list(rows_out[0][1])
    print("## localjudge view: ms per request over HTTP (median), synthetic runs, 1 judge\n")
    print("| rows | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for size, t in rows_out:
        print(f"| {size:,} | " + " | ".join(f"{t[k]:.1f}" for k in names) + " |")
    base = rows_out[0][1]
    for size, t in rows_out[1:]:
        print(f"\nratio {size:,} / {rows_out[0][0]:,}: " + ", ".join(f"{k} {t[k] / base[k]:.2f}x" for k in names))
    last = rows_out[-1][1]
    print(f"\nat {rows_out[-1][0]:,} rows (goal: each < 300 ms): " + ", ".join(f"{k} {last[k]:.0f} ms" for k in names))
    print(f"server start, opening all {len(sizes)} runs (the view's indexes created on first open): {started:.1f} s")
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"load average at the end: {load}")
