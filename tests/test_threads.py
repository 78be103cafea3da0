"""The default thread count: physical cores minus one, from the machine alone."""

from __future__ import annotations

from pathlib import Path

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


def test_the_default_leaves_one_core_and_never_goes_below_one(monkeypatch) -> None:
    for cores, want in [(1, 1), (2, 1), (4, 3), (8, 7), (64, 16)]:
        monkeypatch.setattr(threads, "physical_cores", lambda cores=cores: cores)
        assert threads.default_threads() == want


def test_an_engine_loaded_without_a_thread_count_uses_the_default(engine) -> None:
    assert engine.n_threads == threads.default_threads()
