"""Resource limits: a full disk, a read-only run directory, a row longer than the context window.

A run that cannot write stops with one `StorageError` line (CLI exit 5) naming the file and the
fix; the store keeps every result committed before (integrity check passes, each cell once, no
half row, no temporary export files left); once there is space or write access, the same run
resumes and its export equals an uninterrupted run's.

The full disk is a small tmpfs (needs root and mount; skipped with the reason otherwise) and,
everywhere, a file-size limit (RLIMIT_FSIZE) on a subprocess. The read-only directory is a
read-only bind mount as root (root ignores permission bits), `chmod 555` otherwise.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from runner_support import comparable_rows, failing_engine, scripted_engine, tiny_judges

from localjudge import evaluate
from localjudge.cli import main
from localjudge.engine import DecodeOptions
from localjudge.errors import StorageError
from localjudge.store import Store
from localjudge.store.results import JudgeResult

pytestmark = pytest.mark.system

TESTS = Path(__file__).parent
N_ROWS = 40
N_CELLS = 2 * N_ROWS


def make_data(path: Path, n: int = N_ROWS, size: int = 3000) -> Path:
    """Rows with long outputs, so that a few hundred KB of store hold only some of them."""
    with open(path, "w") as f:
        for i in range(n):
            out = ("wrong " if i % 4 == 0 else "fine ") + f"{i} " + "x" * size
            f.write(json.dumps({"id": f"r{i}", "input": f"question {i}", "output": out}) + "\n")
    return path


def _sh(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True)


@contextmanager
def tmpfs(path: Path, size: str):
    """A tmpfs of `size` mounted at `path` (root only)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("a size-limited tmpfs needs root (the RLIMIT_FSIZE test covers a full disk without it)")
    r = _sh("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}); the RLIMIT_FSIZE test covers a full disk")
    try:
        yield path
    finally:
        _sh("umount", "-l", str(path))


@contextmanager
def read_only(path: Path):
    """`path` read-only for this process: chmod 555 as a user; a read-only bind mount as root."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555)
        try:
            yield path
        finally:
            path.chmod(mode)
        return
    r = _sh("mount", "--bind", str(path), str(path))
    if r.returncode != 0:
        pytest.skip(f"root ignores chmod and a read-only bind mount failed ({r.stderr.strip()})")
    try:
        r = _sh("mount", "-o", "remount,bind,ro", str(path))
        if r.returncode != 0:
            pytest.skip(f"cannot remount read-only ({r.stderr.strip()})")
        yield path
    finally:
        _sh("umount", "-l", str(path))


def store_state(out: Path) -> dict[tuple[int, str], str]:
    """The store's cells, after checking it: integrity ok, one run, each cell once, whole rows."""
    with sqlite3.connect(out / "results.sqlite") as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = c.execute("SELECT row_index, judge, result FROM results").fetchall()
        assert c.execute("SELECT COUNT(DISTINCT run_id) FROM results").fetchone()[0] <= 1
    cells = {(r, j): res for r, j, res in rows}
    assert len(cells) == len(rows)
    for res in cells.values():
        JudgeResult.model_validate_json(res)
    return cells


def no_temp_files(out: Path) -> bool:
    return not [p for p in os.listdir(out) if ".tmp" in p]


comparable = comparable_rows


def resume_and_compare(data: Path, out: Path, stored: int, tmp_path: Path) -> None:
    """Resuming judges only what is missing, and the export equals a run that was never interrupted."""
    eng = scripted_engine()
    run = evaluate(data, tiny_judges(), engine=eng, out=out)
    assert eng.calls == N_CELLS - stored and run.counts.reused == stored and run.exit_code == 0
    assert len(store_state(out)) == N_CELLS and no_temp_files(out)
    ref = tmp_path / "reference"
    evaluate(data, tiny_judges(), engine=scripted_engine(), out=ref)
    assert comparable(out) == comparable(ref)


def assert_one_line_storage_error(e: StorageError, names: str) -> None:
    msg = str(e)
    assert e.exit_code == 5 and "\n" not in msg and names in msg
    assert "run the same command again" in msg or "choose a writable" in msg


# ------------------------------------------------------------------------------------ full disk


def test_full_disk_mid_run_is_one_storage_error_and_the_run_resumes_once_space_is_freed(tmp_path):
    data = make_data(tmp_path / "d.jsonl")
    with tmpfs(tmp_path / "disk", "256k") as disk:
        out = disk / "run"
        with pytest.raises(StorageError) as e:
            evaluate(data, tiny_judges(), engine=scripted_engine(), out=out)
        assert_one_line_storage_error(e.value, str(out / "results.sqlite"))
        assert "disk is full" in str(e.value)
        stored = len(store_state(out))
        assert 0 < stored < N_CELLS and no_temp_files(out)
        assert _sh("mount", "-o", "remount,size=16m", str(disk)).returncode == 0  # space freed
        resume_and_compare(data, out, stored, tmp_path)


def test_file_size_limit_mid_run_is_one_storage_error_and_the_run_resumes_without_it(tmp_path):
    data, out = make_data(tmp_path / "d.jsonl"), tmp_path / "run"
    # the limit sits 256 KB above an empty store's size (which grows with each migration: a fixed 192 KB stopped
    # this run before its first commit once migration 008 added a table), well inside the limits that stop the
    # run part way (measured: 208 KB to 1,000 KB with today's schema), so the first results fit and the rest do not
    with Store(tmp_path / "empty.sqlite"):
        pass
    limit = (tmp_path / "empty.sqlite").stat().st_size + 256 * 1024
    script = textwrap.dedent(f"""
        import json, resource, sys
        sys.path.insert(0, {str(TESTS)!r})
        from runner_support import scripted_engine, tiny_judges
        from localjudge.errors import LocalJudgeError
        from localjudge import evaluate
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))  # writes past it fail with EFBIG
        try:
            evaluate({str(data)!r}, tiny_judges(),
                     engine=scripted_engine(), out={str(out)!r})
        except LocalJudgeError as e:
            print(json.dumps({{"type": type(e).__name__, "exit_code": e.exit_code, "message": str(e)}}))
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    err = json.loads(p.stdout)
    assert err["type"] == "StorageError" and err["exit_code"] == 5 and "\n" not in err["message"]
    assert str(out / "results.sqlite") in err["message"] and "run the same command again" in err["message"]
    stored = len(store_state(out))
    assert 0 < stored < N_CELLS and no_temp_files(out)
    resume_and_compare(data, out, stored, tmp_path)


# ------------------------------------------------------------------------------------ read-only


def test_read_only_run_directory_fails_before_any_judgement_and_leaves_the_store_untouched(tmp_path):
    data, out = make_data(tmp_path / "d.jsonl"), tmp_path / "run"
    evaluate(data, tiny_judges(), engine=scripted_engine(), out=out, limit=10)  # a first, partial run
    before = hashlib.sha256((out / "results.sqlite").read_bytes()).hexdigest()
    files = sorted(os.listdir(out))
    eng = failing_engine()
    with read_only(out):
        with pytest.raises(StorageError) as e:
            evaluate(data, tiny_judges(), engine=eng, out=out)
        assert_one_line_storage_error(e.value, str(out / "results.sqlite"))
        with pytest.raises(StorageError) as e:
            evaluate(data, tiny_judges(), engine=eng, out=out / "sub")
        assert_one_line_storage_error(e.value, f"cannot create the run directory {str(out / 'sub')!r}")
    assert eng.calls == 0
    assert hashlib.sha256((out / "results.sqlite").read_bytes()).hexdigest() == before
    assert sorted(os.listdir(out)) == files
    resume_and_compare(data, out, 20, tmp_path)


def test_run_command_on_a_read_only_directory_exits_5_with_one_line(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input": "q", "output": "a", "retrieval_context": "c"}) + "\n")
    ro = tmp_path / "ro"
    ro.mkdir()
    with read_only(ro):
        r = CliRunner().invoke(main, ["run", str(data), "-j", "groundedness", "--out", str(ro / "run"), "-q"])
    assert r.exit_code == 5, r.output
    assert r.stderr.strip().count("\n") == 0
    assert r.stderr.startswith(f"Error: cannot create the run directory {str(ro / 'run')!r}")
    assert "choose a writable --out" in r.stderr


# ------------------------------------------------------------------------- context window (real model)


def test_row_longer_than_the_context_window_is_a_row_error_naming_row_and_limit(engine, tmp_path):
    data = tmp_path / "long.jsonl"
    rows = [
        {"input": "What is the capital of France?", "output": "Paris.", "retrieval_context": "Paris is in France."},
        {"input": "What is the capital of France?", "output": "Paris. " * 3000, "retrieval_context": "Paris."},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = evaluate(data, ["groundedness"], engine=engine, out=tmp_path / "run", options=DecodeOptions(field_tokens=16))
    by_row = {r.row_index: r for r in run.results}
    assert by_row[0].result.scored and by_row[0].error is None
    bad = by_row[1]
    assert bad.result.unscored_reason == "prompt_too_long" and bad.result.score is None and bad.result.passed is None
    assert bad.error.startswith("long.jsonl:line 2: prompt is ")
    assert f"output tokens > context window {engine.n_ctx}" in bad.error and "raise --n-ctx" in bad.error
    assert "longest column 'output' (21000 chars)" in bad.error and "\n" not in bad.error
    assert run.exit_code == 1 and run.counts.failed == 1 and run.summary.judges["groundedness"].n_unscored == 1
