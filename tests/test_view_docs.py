"""Every command in docs/view.md runs, verbatim, against a synthetic run at runs/quickstart (or is listed here
with the reason it is not run here): `agree` / `labels` lines through the CLI, `view` lines as a real server
on a free port (their --port replaced by 0).

Run elsewhere or not at all:
  * `localjudge run ... --out runs/quickstart ...`: the acceptance test of tests/test_view_browser.py runs it;
  * `localjudge align ... --labels runs/quickstart`: needs the real model and 10+ labels (documented as such);
    its reading of a run directory's labels is tested in tests/test_view_http.py with a scripted model.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from view_support import ViewServer, make_run

from localjudge.cli import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "view.md"
ELSEWHERE = ("localjudge run ", "localjudge align ")


def commands() -> list[str]:
    """The `localjudge ...` lines of the page's bash blocks, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip().startswith("localjudge ")]


def test_the_page_documents_view_labels_agree_and_align():
    found = commands()
    for needle in (
        "localjudge view ",
        "localjudge labels export",
        "localjudge labels import",
        "localjudge agree",
        "localjudge align",
    ):
        assert any(c.startswith(needle) for c in found), needle
    assert [c for c in found if c.startswith(ELSEWHERE)] == [
        "localjudge run examples/rag_sample.jsonl --judge groundedness --judge correctness --out runs/quickstart --probs --threads 1",
        "localjudge align groundedness --labels runs/quickstart --threads 1",
    ]


@pytest.mark.system
def test_every_command_of_the_page_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_run(tmp_path / "runs" / "quickstart", 12, judges=("groundedness", "correctness"))
    seed = [
        {"row_index": i, "judge": j, "label": "yes" if (i + len(j)) % 3 else "no"}
        for i in range(12)
        for j in ("groundedness", "correctness")
    ]
    (tmp_path / "seed.jsonl").write_text("".join(json.dumps(x) + "\n" for x in seed))
    cli = CliRunner()
    assert cli.invoke(main, ["labels", "import", "runs/quickstart", "seed.jsonl", "--labeller", "seed"]).exit_code == 0
    ran = 0
    for line in commands():
        if line.startswith(ELSEWHERE):
            continue
        args = shlex.split(line.replace('"$KEY"', "doc-key"))[1:]
        if args[0] == "view":
            if "--port" in args:
                i = args.index("--port")
                del args[i : i + 2]
            server = ViewServer(*args[1:])
            try:
                auth = {"Authorization": "Bearer doc-key"} if "--api-key" in args else {}
                status, runs, _ = server.request("/api/runs", headers=auth)
                assert status == 200 and [r["rid"] for r in runs] == ["quickstart"], line
                if auth:
                    assert server.request("/api/runs")[0] == 401
            finally:
                server.stop()
        else:
            res = cli.invoke(main, args)
            assert res.exit_code == 0, (line, res.output)
            if args[0] == "agree":
                assert re.search(r"Cohen's kappa\s+-?\d\.\d{3} \[", res.output), res.output
        ran += 1
    assert ran == len(commands()) - 2
    assert len((tmp_path / "labels.jsonl").read_text().splitlines()) == 24


@pytest.mark.parametrize("name", ["view-runs.png", "view-row.png", "view-label.png", "view-agreement.png", "view-panel.png"])
def test_the_screenshots_the_page_shows_exist_and_are_small(name):
    assert f"img/{name}" in DOC.read_text(encoding="utf-8")
    data = (DOC.parent / "img" / name).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 150_000
