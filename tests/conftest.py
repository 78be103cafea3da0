"""Shared fixtures: a temporary localjudge home for the whole session (never the user's real cache),
and the real models, loaded once per session."""

from __future__ import annotations

import os

import pytest

# The suite runs several model processes at once (a server beside its client, Ray workers): the loaded case, where
# libgomp's long spin-wait, chosen by an engine that loaded on free cores, collapses llama.cpp's speed
# (docs/benchmarks.md). The wait changes no output; tests of the choice itself pass their own environment.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")


@pytest.fixture(scope="session", autouse=True)
def _localjudge_home(tmp_path_factory):
    """Every test runs with LOCALJUDGE_HOME in a temp dir (compiled indexes, checksums, models)."""
    home = tmp_path_factory.mktemp("localjudge_home")
    old = os.environ.get("LOCALJUDGE_HOME")
    os.environ["LOCALJUDGE_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("LOCALJUDGE_HOME", None)
    else:
        os.environ["LOCALJUDGE_HOME"] = old


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
