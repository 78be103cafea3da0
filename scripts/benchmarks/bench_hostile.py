"""Measure `localjudge serve` under the issue-22 amplification attack, side by side for two checkouts.

The attack: a 2 KB JSON schema (4 levels of `$defs`, each an `anyOf` of 26 `$ref`s to the level below),
sent as a `response_format`. For each checkout this starts a real server (default model, 1 thread,
no precompile, its own temporary home), records its RSS, sends the schema while a second thread polls
`GET /health` every 50 ms, and reports: the attack request's status and seconds, the worst /health
latency during it, the server's peak RSS (VmHWM) and its RSS afterwards.

    python scripts/benchmarks/bench_hostile.py --checkout base=/tmp/base-serve --checkout new=.

Figures, never assertions: timings belong here, not in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

BANNER = re.compile(r"on (http://127\.0\.0\.1:\d+)/v1")


def amplification_schema(levels: int = 4, width: int = 26) -> dict:
    """4 levels of $defs, each an anyOf of 26 $refs to the level below (about 2 KB of JSON)."""
    defs: dict = {"L0": {}}  # any JSON value: the issue's 1.4-billion-character expansion
    for i in range(1, levels + 1):
        defs[f"L{i}"] = {"anyOf": [{"$ref": f"#/$defs/L{i - 1}"} for _ in range(width)]}
    return {"$defs": defs, "$ref": f"#/$defs/L{levels}"}


def _mem(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(rest.split()[0]) / 1024
    return out


def _request(url: str, body: dict | None = None, timeout: float = 600) -> tuple[int, float, str]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read().decode("utf-8", "replace")
            status = r.status
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode("utf-8", "replace")
    return status, time.perf_counter() - t0, text


def measure(checkout: str) -> dict:
    """Start a server from `checkout`, attack it once, return the figures."""
    home = tempfile.mkdtemp(prefix="bench-hostile-")
    env = {**os.environ, "PYTHONPATH": str(Path(checkout).resolve()), "LOCALJUDGE_HOME": home}
    cmd = [sys.executable, "-m", "localjudge", "serve", "--port", "0", "--no-precompile", "--option", "n_threads=1"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=home)
    assert proc.stderr is not None
    base = None
    for line in proc.stderr:
        m = BANNER.search(line)
        if m:
            base = m.group(1)
            break
    if base is None:
        proc.kill()
        raise RuntimeError(f"the server from {checkout} did not start")
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    try:
        _request(base + "/health")
        before = _mem(proc.pid)
        worst, polls, stop = 0.0, 0, threading.Event()

        def poll() -> None:
            nonlocal worst, polls
            while not stop.is_set():
                _, dt, _ = _request(base + "/health", timeout=120)
                worst, polls = max(worst, dt), polls + 1
                time.sleep(0.05)

        poller = threading.Thread(target=poll)
        poller.start()
        rf = {"type": "json_schema", "json_schema": {"name": "amp", "schema": amplification_schema()}}
        body = {"model": "smollm2-135m", "messages": [{"role": "user", "content": "hi"}], "response_format": rf}
        status, attack_s, answer = _request(base + "/v1/chat/completions", body)
        stop.set()
        poller.join()
        time.sleep(1.0)
        after = _mem(proc.pid)
        return {
            "checkout": checkout,
            "status": status,
            "attack_s": round(attack_s, 3),
            "health_worst_ms": round(worst * 1000, 1),
            "health_polls": polls,
            "rss_before_mb": round(before["VmRSS"]),
            "peak_rss_mb": round(after["VmHWM"]),
            "rss_after_mb": round(after["VmRSS"]),
            "answer": answer[:160],
        }
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", action="append", default=[], help="LABEL=PATH of a checkout (repeatable)")
    args = ap.parse_args()
    checkouts = args.checkout or ["new=."]
    rows = []
    for item in checkouts:
        label, _, path = item.partition("=")
        rows.append({"label": label, **measure(path or label)})
    keys = ["status", "attack_s", "health_worst_ms", "health_polls", "rss_before_mb", "peak_rss_mb", "rss_after_mb"]
    print("hostile: the amplification schema (4 levels x 26 $refs)")
    print(f"{'':18}" + "".join(f"{r['label']:>14}" for r in rows))
    for k in keys:
        print(f"{k:18}" + "".join(f"{r[k]!s:>14}" for r in rows))
    for r in rows:
        print(f"{r['label']}: {r['answer']}")
    if len(rows) == 2:
        a, b = rows
        print(
            f"peak RSS growth {a['label']}/{b['label']}: "
            f"{(a['peak_rss_mb'] - a['rss_before_mb']) / max(1, b['peak_rss_mb'] - b['rss_before_mb']):.0f}x; "
            f"worst /health latency {a['label']}/{b['label']}: {a['health_worst_ms'] / max(0.1, b['health_worst_ms']):.0f}x"
        )


if __name__ == "__main__":
    main()
