"""Files a user names (`report -o`, `agree -o`, `labels export -o`): written atomically to regular files
only. A symbolic link is written through (the file it points to is replaced, the link stays); a target that
exists and is not a regular file (a FIFO, a directory, a link to one, a dangling link) is refused with one
line and exit 5 before anything is written, and is left as it was. Real CLI in subprocesses, scripted model."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import cli

pytestmark = pytest.mark.system

SCRIPTED = ["-m", "scripted:", "--option", 'response={"rationale": "ok", "result": "yes"}']


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A finished scripted run of three rows, and a labels file for them."""
    tmp = tmp_path_factory.mktemp("out")
    data = tmp / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{i}", "input": f"q{i}", "output": f"a{i}"}) + "\n" for i in range(3)))
    (tmp / "labels.jsonl").write_text("".join(json.dumps({"id": f"r{i}", "label": "yes"}) + "\n" for i in range(3)))
    r = cli("run", str(data), "-j", "relevance_to_query", "-o", str(tmp / "run"), "-q", *SCRIPTED)
    assert r.returncode == 0, r.stderr
    return tmp / "run"


def command(run_dir: Path, name: str, target: Path) -> list[str]:
    """The command line that writes `target` with `-o`."""
    return {
        "report": ["report", str(run_dir), "-o", str(target)],
        "agree": [
            "agree",
            str(run_dir),
            "--labels",
            str(run_dir.parent / "labels.jsonl"),
            "--label-column",
            "label",
            "-o",
            str(target),
        ],
        "labels export": ["labels", "export", str(run_dir), "-o", str(target)],
    }[name]


COMMANDS = ["report", "agree", "labels export"]


@pytest.mark.parametrize("name", COMMANDS)
def test_o_on_a_symlink_replaces_the_file_it_points_to_and_keeps_the_link(run_dir, tmp_path, name):
    real = tmp_path / "real" / "out.file"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link"
    link.symlink_to(Path("real") / "out.file")  # a relative link, as `ln -s` makes
    r = cli(*command(run_dir, name, link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "out.file")  # the link survives
    text = real.read_text()
    if name == "report":
        assert "<html" in text
    elif name == "agree":
        assert json.loads(text)["judge"] == "relevance_to_query"
    else:
        assert text == ""  # the run has no stored labels yet: an empty JSONL file
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the replaced file's mode is kept
    assert sorted(p.name for p in real.parent.iterdir()) == ["out.file"] and sorted(p.name for p in tmp_path.iterdir()) == [
        "link",
        "real",
    ]  # no temporary file left behind


@pytest.mark.parametrize("name", COMMANDS)
def test_o_on_a_fifo_a_directory_or_a_link_to_neither_is_refused_in_one_line_exit_5_and_left_untouched(run_dir, tmp_path, name):
    fifo, folder = tmp_path / "fifo", tmp_path / "folder"
    os.mkfifo(fifo)
    folder.mkdir()
    (folder / "kept.txt").write_text("kept")
    to_fifo, dangling = tmp_path / "to_fifo", tmp_path / "dangling"
    to_fifo.symlink_to(fifo)
    dangling.symlink_to(tmp_path / "nowhere" / "x.html")
    expected = {
        fifo: f"{fifo} is a FIFO, not a regular file",
        folder: f"{folder} is a directory, not a regular file",
        to_fifo: f"{fifo} (through the symbolic link {to_fifo}) is a FIFO, not a regular file",
        dangling: f"{dangling} is a symbolic link to {str(tmp_path / 'nowhere' / 'x.html')!r}, which leads to no file",
    }
    for target, why in expected.items():
        r = cli(*command(run_dir, name, target))
        err = r.stderr.strip()
        assert r.returncode == 5 and len(err.splitlines()) == 1 and "Traceback" not in err, (target, r.stderr)
        what = {"report": "report", "agree": "agreement", "labels export": "labels"}[name]
        assert err.startswith(f"Error: cannot write the {what} to {str(target)!r}")
        assert why in err and "-o" in err, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and [p.name for p in folder.iterdir()] == ["kept.txt"]
    assert to_fifo.is_symlink() and dangling.is_symlink() and not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "fifo", "folder", "to_fifo"]  # no temporary file


def test_a_run_whose_export_file_is_a_fifo_says_so_in_one_line_exit_5_and_keeps_its_results(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{i}", "input": f"q{i}", "output": f"a{i}"}) + "\n" for i in range(2)))
    out = tmp_path / "run"
    out.mkdir()
    os.mkfifo(out / "results.csv")
    r = cli("run", str(data), "-j", "relevance_to_query", "-o", str(out), "-q", *SCRIPTED)
    assert r.returncode == 5, r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "results" in line and "not a regular file" in line and "move it away" in line, line
    assert "free disk space" not in line
    assert stat.S_ISFIFO(os.stat(out / "results.csv").st_mode)
    (out / "results.csv").unlink()
    again = cli("run", str(data), "-j", "relevance_to_query", "-o", str(out), "-q", *SCRIPTED)
    assert again.returncode == 0, again.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
