"""Batch runs on Ray (`--engine ray`): the same results, store, cache and resume as a local run.

Tests that need a cluster share one real local Ray cluster (`ray_cluster` in conftest.py: `ray.init(
num_cpus=2)`, started by the first of them) and run the real default model; they are `slow` (the
cluster alone takes about 5 s to start). The others check what needs no cluster: judges and errors
survive the trip to a worker, a missing Ray or an unreachable address fails before anything is
written, and a local run imports nothing from Ray.

Byte-identical outputs need the same arithmetic: workers run llama.cpp with 1 thread each (the
default on Ray), so the local reference runs with n_threads=1 too, and both evaluate every prompt
cold (reuse_prefix=false). llama.cpp's rounding depends on the thread count and on how a prompt was
split between a reused KV prefix and new tokens, and a worker's KV cache holds whatever rows it
judged before, so with the defaults a rationale can differ at a near-tie (`scripts/bench.py ray`
reports how often).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from localjudge import evaluate
from localjudge.agent import ToolLimits, TraceJudge
from localjudge.cli import main
from localjudge.distributed import RayExecutor
from localjudge.distributed.worker import pack_exception, unpack_exception
from localjudge.engine.backends import ModelRef
from localjudge.engine.base import DecodeOptions, ScriptedEngine
from localjudge.errors import InputError, ModelError, ModelNotFoundError, ParseError, PromptTooLongError
from localjudge.judges import get_judge, judge_from_dict, make_instructions_judge
from localjudge.judges.pairwise import BothOrders
from localjudge.models.registry import resolve_model

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "examples" / "traces" / "rag_agent.mlflow.json"
MINI = {  # a user's own judge, given as data
    "name": "mini",
    "variables": [{"name": "output"}],
    "output": {"kind": "yes_no_json"},
    "messages": [{"role": "user", "template": "Is this answer polite? {{output}}"}],
}
SHORT = {"field_tokens": 24}  # short rationales keep the real model's judgements to about a second
QA = [
    ("What is the capital of France?", "Paris, the right answer", "Paris", "Lyon.", ["Paris is the capital of France."]),
    ("How many legs does a spider have?", "six, which is wrong", "eight", "Eight legs.", ["Spiders have eight legs."]),
    ("Who wrote Hamlet?", "Shakespeare", "William Shakespeare", "Dickens.", ["Hamlet is a tragedy by Shakespeare."]),
    ("What colour is the sky on a clear day?", "blue", "blue", "Green.", ["On a clear day the sky is blue."]),
]


def write_rows(path: Path, n: int, full_rows: int = 0) -> Path:
    """n rows of questions, answers, references and contexts; the first `full_rows` also have a trace and a
    second answer to compare (pairwise), the others leave them empty (bad rows for those judges)."""
    rows = []
    for i in range(n):
        q, a, gt, other, ctx = QA[i % len(QA)]
        rows.append(
            {
                "id": f"r{i}",
                "question": q if i < len(QA) else f"{q} (case {i})",
                "answer": a,
                "ground_truth": gt,
                "retrieval_context": ctx,
                "answer_1": a,
                "answer_2": other if i < full_rows else "",
                "trace": str(TRACE) if i < full_rows else "",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def cells(run) -> dict[tuple[int, str], tuple]:
    """(row, judge) -> what must not depend on where the judgement ran."""
    return {(r.row_index, r.judge): (r.result.value, r.result.score, r.result.raw_text, r.error) for r in run.results}


def stored(out: Path) -> list[tuple[int, str]]:
    """The cells committed so far; none while the store is being created (the file exists before its tables)."""
    with sqlite3.connect(out / "results.sqlite") as c:
        if not c.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='results'").fetchone():
            return []
        return c.execute("SELECT row_index, judge FROM results").fetchall()


def trace_judge() -> TraceJudge:
    limits = ToolLimits(page_size=3, value_chars=80, field_chars=200, result_chars=600)
    instructions = "Is the final answer in {{ trace }} supported by the retriever's documents?"
    return TraceJudge(instructions, max_iterations=2, field_tokens=16, limits=limits)


# ------------------------------------------------------------------------------- without a cluster


def test_judges_of_every_kind_survive_the_trip_to_a_worker():
    """Ray ships judges with cloudpickle: catalog, data, factory, both-orders and trace judges come back
    with the same version, fingerprint and prompt, also after they have judged (caches filled)."""
    from ray import cloudpickle

    cases = [
        (get_judge("correctness"), {"input": "q", "output": "a", "ground_truth": "g"}),
        (judge_from_dict(MINI), {"output": "a"}),
        (make_instructions_judge("polite", "Is {{ outputs }} polite?"), {"outputs": "a"}),
        (BothOrders(get_judge("pairwise")), {"question": "q", "context": "c", "answer_1": "a", "answer_2": "b"}),
        (trace_judge(), {"trace": str(TRACE)}),
    ]
    fast = ScriptedEngine(lambda messages, fmt: '{"rationale": "ok", "result": "yes"}', model_id="scripted")
    cases[1][0].evaluate(fast, output="a")  # a judge that has run once
    for j, values in cases:
        back = cloudpickle.loads(cloudpickle.dumps(j))
        assert type(back) is type(j) and back.name == j.name and back.version == j.version
        assert back.fingerprint(**values) == j.fingerprint(**values)
        assert back.render(**values) == j.render(**values)


def test_row_errors_come_back_from_a_worker_as_the_same_exceptions():
    """Exceptions whose __init__ takes more than a message (ParseError) cannot be unpickled as they are."""
    for e in (
        ParseError("yes/no JSON", "no result key", '{"a": 1}'),
        PromptTooLongError("too long", n_prompt=5000, n_ctx=4096, budget=64),
        InputError("row 3: empty output"),
        ValueError("boom"),
    ):
        from ray import cloudpickle

        back = unpack_exception(cloudpickle.loads(cloudpickle.dumps(pack_exception(e))))
        assert type(back) is type(e) and str(back) == str(e) and back.__dict__ == e.__dict__


def test_without_ray_engine_ray_says_how_to_install_it_before_writing_anything(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as when it is not installed
    data = write_rows(tmp_path / "d.jsonl", 2)
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(data), "-j", "relevance_to_query", "--engine", "ray", "--out", str(out), "-q"])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        "Error: --engine ray needs Ray, which is not installed: pip install 'localjudge[ray]'"
    ]
    assert not out.exists()


@pytest.mark.system
def test_an_unreachable_ray_address_fails_at_once_with_exit_2_before_anything_is_written(tmp_path):
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = write_rows(tmp_path / "d.jsonl", 2)
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        out = tmp_path / "run"
        t0 = time.monotonic()
        r = CliRunner().invoke(
            main, ["run", str(data), "-j", "relevance_to_query", "--engine", "ray", "--ray-address", address, "--out", str(out)]
        )
        assert r.exit_code == 2, r.output
        (line,) = r.output.strip().splitlines()
        assert line.startswith(f"Error: --ray-address {address}: cannot reach a Ray cluster at 127.0.0.1:{port}")
        assert "ray start --head" in line
        assert time.monotonic() - t0 < 30  # Ray on its own retries such an address for minutes
        assert not out.exists()


def test_ray_options_without_engine_ray_and_bad_addresses_are_input_errors(tmp_path):
    data = write_rows(tmp_path / "d.jsonl", 1)
    r = CliRunner().invoke(main, ["run", str(data), "-j", "relevance_to_query", "--workers", "2", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "--ray-address and --workers need --engine ray" in r.output
    with pytest.raises(InputError, match="give auto, HOST:PORT"):
        RayExecutor(address="nowhere")
    with pytest.raises(InputError, match="not a loaded engine"):
        evaluate(data, [judge_from_dict(MINI)], engine=ScriptedEngine(["x"]), executor="ray")


@pytest.mark.system
def test_a_local_run_imports_nothing_from_ray(tmp_path):
    data = write_rows(tmp_path / "d.jsonl", 2)
    code = (
        "import sys, localjudge.cli, localjudge.distributed\n"
        "from localjudge import evaluate\n"
        "from localjudge.judges import judge_from_dict\n"
        f"evaluate({str(data)!r}, [judge_from_dict({MINI!r})], model='scripted:', "
        'model_options={\'response\': \'{"rationale": "ok", "result": "yes"}\'}, '
        f"out={str(tmp_path / 'o')!r})\n"
        "print('ray' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "False", r.stdout + r.stderr


# ------------------------------------------------------------------------------------ on a cluster


@pytest.mark.model
@pytest.mark.slow
def test_a_ray_run_gives_every_cell_the_local_engines_result_and_sends_only_what_is_missing(ray_cluster, tmp_path):
    data = write_rows(tmp_path / "d.jsonl", 2, full_rows=1)  # row 1: no trace, no second answer; bad, never sent

    def judges() -> list:
        return ["correctness", judge_from_dict(MINI), "pairwise", trace_judge()]

    kw = dict(both_orders=True, options=SHORT, model_options={"reuse_prefix": False})
    local = evaluate(data, judges(), out=tmp_path / "local", **kw | {"model_options": {"reuse_prefix": False, "n_threads": 1}})
    first = evaluate(data, judges(), out=tmp_path / "ray", executor=RayExecutor(), limit=1, **kw)
    ex = RayExecutor()
    run = evaluate(data, judges(), out=tmp_path / "ray", executor=ex, **kw)

    assert cells(run) == cells(local)  # value, score, raw text (and error) of every (row, judge)
    assert len(cells(run)) == 2 * 4 and run.counts.failed == local.counts.failed == 2  # row 1's trace and pairwise
    assert {j: s.model_dump() for j, s in run.summary.judges.items()} == {
        j: s.model_dump() for j, s in local.summary.judges.items()
    }
    # only what the first run had not judged went to the cluster: row 1 of the two judges it is good for
    assert run.counts.reused == first.counts.evaluated == 4 and run.counts.evaluated == ex.stats["cells"] == 2
    assert ex.stats["workers"] == 2 and len({n["pid"] for n in ex.nodes}) == 2
    assert sorted(json.loads(x)["row_index"] for x in (tmp_path / "ray" / "results.jsonl").read_text().splitlines()) == sorted(
        [0, 1] * 4
    )

    again_ex = RayExecutor()
    again = evaluate(data, judges(), out=tmp_path / "ray", executor=again_ex, **kw)
    assert again.counts.evaluated == 0 and again.counts.reused == 6  # 8 cells, the 2 bad ones written again
    assert again_ex.nodes == [] and again_ex.stats["cells"] == 0  # nothing sent: no worker was even started


@pytest.mark.system
@pytest.mark.slow
def test_a_worker_killed_mid_batch_has_its_rows_judged_by_another_and_each_stored_once(ray_cluster, tmp_path):
    data = write_rows(tmp_path / "d.jsonl", 8)
    ex = RayExecutor(workers=2, batch_size=2)  # 4 batches, 2 queued on each worker from the start
    killed: list[int] = []

    def kill_second_worker(p) -> None:
        if p.evaluated >= 1 and not killed:  # the first batch is back; worker 1 is judging one of its two
            killed.append(ex.nodes[1]["pid"])
            os.kill(killed[0], signal.SIGKILL)

    run = evaluate(data, ["relevance_to_query"], out=tmp_path / "run", options=SHORT, executor=ex, progress=kill_second_worker)
    assert killed and ex.stats["worker_failures"] >= 1 and ex.stats["retried_batches"] >= 1
    assert sorted(stored(tmp_path / "run")) == [(i, "relevance_to_query") for i in range(8)]  # each exactly once
    assert run.counts.evaluated == 8 and run.counts.failed == 0 and run.counts.unscored == 0
    assert run.summary.judges["relevance_to_query"].n == 8
    assert run.summary.run["counts"]["evaluated"] == 8


@pytest.mark.system
@pytest.mark.slow
def test_a_stopped_or_killed_ray_driver_resumes_when_the_same_command_runs_again(ray_cluster, tmp_path):
    """SIGTERM: the run stops within seconds (exit 143) with its results exported; SIGKILL: nothing is
    exported, but every committed result stays; the same command then completes each cell exactly once."""
    import ray

    n = 20  # room for the kill: a stopped driver may commit most of a 10-row run's in-flight batches first
    data = write_rows(tmp_path / "d.jsonl", n)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "localjudge", "run", str(data), "-j", "relevance_to_query", "--field-tokens", "24"]
    cmd += ["--engine", "ray", "--ray-address", ray_cluster, "--workers", "2", "--out", str(out), "-q"]
    deadline = time.monotonic() + 600

    def started_until(n: int) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while time.monotonic() < deadline and proc.poll() is None:
            if (out / "results.sqlite").exists() and len(stored(out)) >= n:
                return proc
            time.sleep(0.05)
        raise AssertionError(f"exit {proc.poll()} before {n} results: {proc.stderr.read() if proc.stderr else ''}")

    def workers_gone() -> None:  # a dead driver's workers belong to its Ray job: Ray stops them
        while time.monotonic() < deadline and ray.available_resources().get("CPU", 0) < 2:
            time.sleep(0.2)

    proc = started_until(1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 143
    stopped = stored(out)
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
    assert len((out / "results.jsonl").read_text().splitlines()) == len(stopped) < n - 2
    workers_gone()

    proc = started_until(len(stopped) + 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    done = stored(out)
    assert len(stopped) + 2 <= len(done) < n and len(set(done)) == len(done)
    workers_gone()

    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(stored(out)) == [(i, "relevance_to_query") for i in range(n)]
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["reused"] == len(done) and counts["evaluated"] == n - len(done)
    assert json.loads((out / "summary.json").read_text())["judges"]["relevance_to_query"]["n"] == n


@pytest.mark.system
@pytest.mark.slow
def test_a_worker_names_its_node_when_the_model_differs_or_is_missing_there(ray_cluster, tmp_path):
    cell = SimpleNamespace(judge=judge_from_dict(MINI), values={"output": "a"})
    ref = ModelRef(None)
    wrong = ref.identity().model_copy(update={"digest": "0" * 64})
    ex = RayExecutor(workers=1)
    ex.open(ref, wrong)
    try:
        with pytest.raises(
            ModelError, match=r"^Ray worker on node .+: model 'smollm2-135m' there has digest .+ the driver recorded 0000"
        ):
            list(ex.judge(iter([cell]), DecodeOptions(), wrong.model_id))
    finally:
        ex.close()

    link = tmp_path / "model.gguf"  # a path that exists where the driver looked, and is gone where the worker looks
    link.symlink_to(resolve_model(None).path)
    by_path = ModelRef(str(link))
    ident = by_path.identity()
    link.unlink()
    ex = RayExecutor(workers=1)
    ex.open(by_path, ident)
    try:
        with pytest.raises(ModelNotFoundError, match=r"^Ray worker on node .+: model file .+model.gguf' does not exist"):
            list(ex.judge(iter([cell]), DecodeOptions(), ident.model_id))
    finally:
        ex.close()

    with pytest.raises(InputError, match=r"--workers 2 x 2 thread\(s\) each needs 4 CPUs; the Ray cluster has 2"):
        RayExecutor(workers=2).open(ModelRef(None, {"n_threads": 2}), ref.identity())
