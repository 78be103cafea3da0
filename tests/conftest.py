"""Shared fixtures and the one CLI helper: a temporary localjudge home for every test (never the user's real
cache), the real models loaded once per session, and `cli()`, the command line in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

# Caches keyed by content (a vocabulary's hash, a file's path, size and mtime, a serve vocabulary's hash): what one
# test compiles another may reuse without seeing its state, so every test's home links them to the session's.
SHARED_CACHES = ("fsm", "sha256", "gguf", "serve")

pytest_plugins = ("tier_guard",)  # the unit / model / system tiers, enforced (tests/tier_guard.py)


def cli(
    *args: str | bytes,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    stdin: str | bytes | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = 300,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """`python -m localjudge.cli *args` in a subprocess, stdout and stderr captured (str, or bytes with text=False).

    `env` is laid over this process's environment (which holds the test's temporary home); with
    inherit_env=False it is the whole environment, for a test that strips variables on purpose."""
    full = {**os.environ, **(env or {})} if inherit_env else dict(env or {})
    return subprocess.run(
        [sys.executable, "-m", "localjudge.cli", *args],
        input=stdin,
        capture_output=True,
        text=text,
        env=full,
        cwd=cwd,
        timeout=timeout,
    )


# The suite runs several model processes at once (a server beside its client, Ray workers): the loaded case, where
# libgomp's long spin-wait, chosen by an engine that loaded on free cores, collapses llama.cpp's speed
# (docs/benchmarks.md). The wait changes no output; tests of the choice itself pass their own environment.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")


@pytest.fixture(scope="session", autouse=True)
def _localjudge_home(tmp_path_factory):
    """The session's home: where session- and module-scoped fixtures (engines, servers) run, and the one models
    home of the whole session (the Gemma file is assembled from its packages once, not once per test)."""
    home = tmp_path_factory.mktemp("localjudge_home")
    names = ("LOCALJUDGE_HOME", "LOCALJUDGE_MODELS_HOME", "XDG_CACHE_HOME")
    old = {k: os.environ.get(k) for k in names}
    os.environ["LOCALJUDGE_HOME"] = str(home)
    os.environ["LOCALJUDGE_MODELS_HOME"] = str(home / "models")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg_cache"))
    # the default model in this CPU's layout (engine/layout.py), converted once for the session (~3 s) before any test
    # runs: no test pays for it, and none sees its one-time line on stderr
    from localjudge.engine.layout import fast_layout
    from localjudge.models.registry import resolve_model

    fast_layout(resolve_model())
    yield home
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(autouse=True)
def _test_home(_localjudge_home, tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own LOCALJUDGE_HOME (its shared run store, its manifest-free cache) and its own
    XDG_CACHE_HOME, the fallback localjudge reads before ~ (a subprocess started without LOCALJUDGE_HOME still
    stays out of the real home). HOME itself is left alone: Ray reads its token from ~/.ray and the real
    home is read, never written, by the tools that look there. The content-keyed caches (SHARED_CACHES) are
    links to the session's, so a test recompiles nothing another test compiled."""
    home = tmp_path_factory.mktemp("home")
    for name in SHARED_CACHES:
        (_localjudge_home / name).mkdir(exist_ok=True)
        (home / name).symlink_to(_localjudge_home / name, target_is_directory=True)
    monkeypatch.setenv("LOCALJUDGE_HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg_cache")))
    return home


@pytest.fixture(autouse=True)
def _no_mlflow_experiment_leak():
    """MLflow's `set_experiment` leaves a process-wide active experiment (a module global and MLFLOW_EXPERIMENT_ID)
    behind; a later test on another tracking store then fails with "No Experiment with id=1 exists". After
    each test that imported MLflow, forget it (the tracking URI each test sets is its own business)."""
    yield
    fluent = sys.modules.get("mlflow.tracking.fluent")
    if fluent is not None:
        fluent._active_experiment_id = None  # type: ignore[attr-defined]
        os.environ.pop("MLFLOW_EXPERIMENT_ID", None)


@pytest.fixture(scope="session")
def engine(_localjudge_home):
    """The embedded default model (SmolLM2-135M-Instruct Q4_1), loaded once."""
    from localjudge.engine import load_engine

    return load_engine()


@pytest.fixture(scope="session")
def gemma(_localjudge_home):
    """Gemma 3 270M base: the second tokenizer family (262k vocabulary, no chat template)."""
    from localjudge.engine import load_engine

    return load_engine("gemma3-270m")


@pytest.fixture(scope="session")
def ray_cluster(_localjudge_home):
    """A real local Ray cluster (`ray.init(num_cpus=2)`), started by the first test that asks for it and
    shut down at the end of the session; its workers inherit the temporary LOCALJUDGE_HOME. Yields
    the cluster's address, which other processes (a CLI driver) can join with --ray-address."""
    ray = pytest.importorskip("ray")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="session")
def judge_server(_localjudge_home):
    """One real `localjudge serve` with the default model on a free loopback port for the whole session
    (4 requests decoded side by side; client schemas compiled under a 20 s limit)."""
    from serve_support import start_server

    server = start_server("--option", "n_parallel=4", "--compile-timeout", "20")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def keyed_server(_localjudge_home):
    """A second server: Bearer key required, at most 4 requests queued or decoding."""
    from serve_support import start_server

    server = start_server("--api-key", "s3cret-key", "--max-pending", "4", "--no-precompile")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def judge_app(_localjudge_home):
    """`judge_server`'s app in this process (tests/serve_support.py `serve_inprocess`): the same flags, the default
    model loaded here; for protocol and error tests that need no process. Tests on it are `model` tier at least."""
    from serve_support import serve_inprocess

    with serve_inprocess("--option", "n_parallel=4", "--compile-timeout", "20") as app:
        yield app


@pytest.fixture(scope="session")
def keyed_app(_localjudge_home):
    """`keyed_server`'s app in this process: Bearer key required, at most 4 requests queued or decoding."""
    from serve_support import serve_inprocess

    with serve_inprocess("--api-key", "s3cret-key", "--max-pending", "4", "--no-precompile") as app:
        yield app


# Long test files first. `scripts/test.sh` runs pytest in two processes, each test file whole in one (xdist
# `--dist loadfile`), handing out files in collection order: one long file collected late leaves the other process
# idle at the end. tests/file_times.json holds each file's measured seconds (a whole run with
# LOCALJUDGE_TEST_FILE_TIMES=PATH writes them; `bash scripts/test.sh` with no arguments sets it to that file); files
# run longest first, the unmeasured after them in their usual order. Only the order of files changes: each file's
# tests keep theirs.
FILE_TIMES = Path(__file__).with_name("file_times.json")


def pytest_collection_modifyitems(session, config, items):
    import json

    seconds = json.loads(FILE_TIMES.read_text())
    items.sort(key=lambda item: -seconds.get(Path(str(item.fspath)).name, 0))  # stable: ties keep collection order


_file_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    name = Path(report.nodeid.split("::", 1)[0]).name  # the test's file (a function made elsewhere is located there)
    _file_seconds[name] = _file_seconds.get(name, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    """With LOCALJUDGE_TEST_FILE_TIMES=PATH, write each test file's seconds (setup, call and teardown) as JSON: the
    controller of an xdist run sees every worker's reports, so one whole run measures every file."""
    import json

    out = os.environ.get("LOCALJUDGE_TEST_FILE_TIMES")
    if out and not hasattr(session.config, "workerinput"):
        ordered = dict(sorted(((k, round(v)) for k, v in _file_seconds.items()), key=lambda kv: -kv[1]))
        try:
            Path(out).write_text(json.dumps(ordered, indent=1) + "\n")
        except OSError as e:  # a read-only checkout: the order stays as it was; the run's verdict is not changed
            print(f"\nwarning: could not write the file times to {out}: {e}", file=sys.stderr)


@pytest.fixture(scope="session")
def batch_engine(_localjudge_home):
    """The default model decoding 4 sequences side by side (n_parallel 4, KV reuse): the engine the real-model judge
    cases are judged on by the batched runner (tests/judges_real_cases.py), loaded once per worker."""
    from judges_real_cases import N_PARALLEL

    from localjudge.engine import load_engine

    return load_engine(n_parallel=N_PARALLEL)
