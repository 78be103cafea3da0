"""The trace judge's click command: errors at the edge with their exit codes, output shapes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from localjudge.agent_cli import format_trace_result, judge_trace_cmd, run_trace_cli
from localjudge.engine import ScriptedEngine

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "traces"
RAG = str(EXAMPLES / "rag_agent.mlflow.json")


def test_missing_trace_file_exits_2_before_loading_a_model(tmp_path):
    res = CliRunner().invoke(judge_trace_cmd, ["--trace", str(tmp_path / "nope.json"), "--instructions", "x",
                                               "--model", str(tmp_path / "no-model.gguf")])
    assert res.exit_code == 2 and "trace file" in res.output and "not found" in res.output


def test_trace_in_neither_format_exits_2_naming_the_fields(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"hello": 1}')
    res = CliRunner().invoke(judge_trace_cmd, ["--trace", str(p), "--instructions", "x"])
    assert res.exit_code == 2 and "'data.spans'" in res.output and "'resourceSpans'" in res.output


def test_bad_result_type_exits_2():
    res = CliRunner().invoke(judge_trace_cmd, ["--trace", RAG, "--instructions", "x", "--result", "maybe"])
    assert res.exit_code == 2 and "unknown result type 'maybe'" in res.output


def test_run_trace_cli_prints_a_summary_or_json(capsys):
    eng = ScriptedEngine(['{"tool": "list_spans", "page": 1}', '{"result": "no", "rationale": "not grounded"}'])
    r = run_trace_cli(RAG, "Is it grounded?", engine=eng)
    out = capsys.readouterr().out
    assert out.splitlines()[:3] == ['result: "no" (score 0.0)', "rationale: not grounded", "tool calls: list_spans(page=1)"]
    assert "actions: 2" in out and r.value == "no"
    eng = ScriptedEngine(['{"tool": "get_trace_info"}', '{"tool": "get_trace_info"}'])
    run_trace_cli(RAG, "Is it grounded?", max_iterations=2, as_json=True, engine=eng)
    data = json.loads(capsys.readouterr().out)
    assert data["unscored_reason"] == "max_iterations" and data["details"]["tool_calls"][0]["name"] == "get_trace_info"
    assert format_trace_result(r).startswith('result: "no"')
