"""The SQLite store: named append-only migrations, upserts without duplicates, concurrent writers."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from localjudge.errors import InputError
from localjudge.store.db import MIGRATIONS, SCHEMA_VERSION, Record, ResultRow, Store, connect, migrate
from localjudge.store.results import JudgeResult


def row(i: int, judge: str = "j", key: str | None = None, value: str = "yes") -> ResultRow:
    rec = Record(
        model_id="m",
        model_sha256="s",
        judge_version="v",
        format={"kind": "yes_no_json"},
        prompt_hash=f"p{i}",
        decode_options={"seed": 0},
        seed=0,
        localjudge_version="0",
    )
    res = JudgeResult(
        judge=judge, judge_version="v", format="yes_no_json", value=value, score=float(value == "yes"), passed=value == "yes"
    )
    return ResultRow(
        run_id="r",
        row_index=i,
        row_id=str(i),
        source=f"d.jsonl:line {i + 1}",
        judge=judge,
        inputs={"input": f"q{i}", "context": ["a", "b"]},
        cache_key=key or f"k{i}",
        record=rec,
        result=res,
    )


def test_blank_store_gets_every_migration_and_wal(tmp_path):
    with Store(tmp_path / "s.sqlite") as st:
        assert st.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
        names = [r[0] for r in st.conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert names == [n for n, _ in MIGRATIONS]
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in st.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"runs", "results", "cache"} <= tables


def test_appended_migration_upgrades_an_existing_store_and_keeps_its_data(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        st.put(row(0), cache=True)
    added = [*MIGRATIONS, ("002_results_note", "ALTER TABLE results ADD COLUMN note TEXT")]
    conn = connect(path)
    assert migrate(conn, added) == len(MIGRATIONS) + 1
    assert migrate(conn, added) == len(MIGRATIONS) + 1  # idempotent
    assert conn.execute("SELECT row_id, note FROM results").fetchall() == [("0", None)]
    conn.close()
    with pytest.raises(InputError, match="newer localjudge"):
        Store(path)  # this code does not know 002_results_note


def test_put_is_an_upsert_per_row_and_judge_and_fills_the_cache(tmp_path):
    with Store(tmp_path / "s.sqlite") as st:
        st.put(row(0), cache=True)
        st.put(row(0, value="no", key="k0b"), cache=True)
        st.put(row(0, judge="other"))
        assert st.count("r") == 2
        assert st.cell("r", 0, "j") == ("k0b", True, False)
        assert st.cell("r", 5, "j") is None
        assert st.cached("k0").value == "yes" and st.cached("k0b").value == "no"
        assert st.cached("missing") is None
        got = list(st.iter_results("r", judges=["other", "j"]))
        assert [r.judge for r in got] == ["other", "j"] and got[1].inputs == {"input": "q0", "context": ["a", "b"]}
        assert got[1].record.prompt_hash == "p0"


def test_run_for_dir_reuses_the_one_run_of_a_store(tmp_path):
    with Store(tmp_path / "s.sqlite") as st:
        first = st.run_for_dir()
        assert st.run_for_dir() == first
        assert st.new_run() != first


def test_unreadable_store_is_an_input_error(tmp_path):
    bad = tmp_path / "s.sqlite"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(InputError, match="cannot open store"):
        Store(bad)


@pytest.mark.system
def test_two_processes_writing_at_once_lose_and_duplicate_nothing(tmp_path):
    path = tmp_path / "s.sqlite"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_store import row
        from localjudge.store.db import Store
        st = Store({str(path)!r})
        off = int(sys.argv[1])
        for i in range(300):
            st.put(row(off + i, key=f"k{{off + i}}"), cache=True)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(off)], stderr=subprocess.PIPE, text=True) for off in (0, 150)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with Store(path) as st:
        assert st.integrity_ok() and st.count("r") == 450
        assert st.conn.execute("SELECT COUNT(*) FROM cache").fetchone()[0] == 450
    with sqlite3.connect(path) as c:
        assert c.execute("SELECT MAX(n) FROM (SELECT COUNT(*) n FROM results GROUP BY row_index, judge)").fetchone()[0] == 1
