"""The default thread count: every physical core, from the machine alone; llama.cpp's threads spin only briefly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localjudge.engine import threads


def _sysfs(tmp_path: Path, siblings: dict[int, str]) -> Path:
    for cpu, text in siblings.items():
        d = tmp_path / f"cpu{cpu}" / "topology"
        d.mkdir(parents=True)
        (d / "thread_siblings_list").write_text(text + "\n")
    return tmp_path


def test_hyper_thread_siblings_count_as_one_physical_core(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path, {0: "0,4", 1: "1,5", 2: "2-3", 3: "2-3", 4: "0,4", 5: "1,5"})
    assert threads.physical_cores([0, 1, 2, 3, 4, 5], sysfs) == 3
    assert threads.physical_cores([0, 4], sysfs) == 1


def test_every_logical_cpu_counts_where_sysfs_says_nothing(tmp_path: Path) -> None:
    assert threads.physical_cores([0, 1, 2], tmp_path) == 3


def test_the_default_is_every_physical_core_up_to_sixteen(monkeypatch) -> None:
    for cores, want in [(1, 1), (2, 2), (4, 4), (8, 8), (64, 16)]:
        monkeypatch.setattr(threads, "physical_cores", lambda cores=cores: cores)
        assert threads.default_threads() == want


@pytest.mark.system
def test_an_engine_loaded_without_a_thread_count_uses_the_default(engine) -> None:
    assert engine.n_threads == threads.default_threads()


def test_the_spin_wait_is_libgomps_on_free_cores_short_beside_other_work_and_the_users_own_when_set() -> None:
    cpus = len(threads.usable_cpus())
    for others, unknown, spin in (
        (0, False, threads.IDLE_SPIN_COUNT),
        (cpus, False, threads.SPIN_COUNT),
        (0, True, threads.SPIN_COUNT),
    ):
        env: dict[str, str] = {}
        threads.limit_spin_wait(env, runnable=lambda o=others, u=unknown: None if u else o)
        assert env == {"GOMP_SPINCOUNT": str(spin)}, (others, unknown)
    for own in ({"GOMP_SPINCOUNT": "5"}, {"OMP_WAIT_POLICY": "active"}):
        mine = dict(own)
        threads.limit_spin_wait(mine, runnable=lambda: 0)
        assert mine == own


def test_other_runnable_reads_the_kernels_count_less_the_reader_and_keeps_the_fewest(tmp_path: Path) -> None:
    f = tmp_path / "loadavg"
    f.write_text("1.00 0.50 0.25 3/250 12345\n")
    assert threads.other_runnable(f, samples=2, gap_s=0) == 2
    f.write_text("garbage\n")
    assert threads.other_runnable(f, samples=1) is None
    assert threads.other_runnable(tmp_path / "missing") is None


_JUDGE_IN_A_PROCESS = """
import json, os
from localjudge.engine import Message, load_engine
from localjudge.formats import YesNoJSON
eng = load_engine(n_threads=2)
msgs = [Message(role="user", content="Is water wet? Answer: yes, it is. " * 8)]
g = eng.generate(msgs, YesNoJSON(field_tokens=24))
print(json.dumps({"spin": os.environ.get("GOMP_SPINCOUNT"), "trace": [(t.text, t.logprob) for t in g.tokens]}))
"""


@pytest.mark.system
def test_an_engine_limits_the_spin_wait_before_llama_cpp_loads_and_outputs_do_not_depend_on_it(tmp_path: Path) -> None:
    """Two threads, so that threads really wait at barriers: the short spin and libgomp's own give the same
    log-probabilities (a wait changes no arithmetic)."""

    def run(extra: dict[str, str]) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
        out = subprocess.run(
            [sys.executable, "-c", _JUDGE_IN_A_PROCESS], env=env | extra, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    short, libgomp, chosen = run({"GOMP_SPINCOUNT": str(threads.SPIN_COUNT)}), run({"GOMP_SPINCOUNT": "300000"}), run({})
    assert chosen["spin"] in (str(threads.IDLE_SPIN_COUNT), str(threads.SPIN_COUNT))  # the engine chose one itself
    assert chosen["trace"] == short["trace"]
    assert short["trace"] == libgomp["trace"] and short["trace"]
