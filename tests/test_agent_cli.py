"""The trace judge's commands (`trace`, `judge instructions --trace`): errors at the edge with their exit
codes, output shapes, every engine option honoured; canned answers through the `scripted:` backend."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from localjudge.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "traces"
RAG = str(EXAMPLES / "rag_agent.mlflow.json")


def test_missing_trace_file_exits_2_before_loading_a_model(tmp_path):
    res = CliRunner().invoke(
        main, ["trace", "--trace", str(tmp_path / "nope.json"), "--instructions", "x", "--model", str(tmp_path / "no-model.gguf")]
    )
    assert res.exit_code == 2 and "trace file" in res.output and "not found" in res.output


def test_trace_in_neither_format_exits_2_naming_the_fields(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"hello": 1}')
    res = CliRunner().invoke(main, ["trace", "--trace", str(p), "--instructions", "x"])
    assert res.exit_code == 2 and "'data.spans'" in res.output and "'resourceSpans'" in res.output


def test_bad_result_type_exits_2():
    res = CliRunner().invoke(main, ["trace", "--trace", RAG, "--instructions", "x", "--result", "maybe"])
    assert res.exit_code == 2 and "unknown result type 'maybe'" in res.output


def _answers(tmp_path, *lines: str, name: str = "answers.jsonl") -> str:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return f"scripted:{p}"


def test_trace_prints_a_summary_or_json_from_canned_answers(tmp_path):
    model = _answers(tmp_path, '{"tool": "list_spans", "page": 1}', '{"result": "no", "rationale": "not grounded"}')
    res = CliRunner().invoke(main, ["trace", "--trace", RAG, "--instructions", "Is it grounded?", "--model", model])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[:3] == [
        'result: "no" (score 0.0)',
        "rationale: not grounded",
        "tool calls: list_spans(page=1)",
    ]
    assert "actions: 2" in res.output
    model = _answers(tmp_path, '{"tool": "get_trace_info"}', name="tools_only.jsonl")
    res = CliRunner().invoke(
        main,
        ["judge", "instructions", "--trace", RAG, "--instructions", "Is it grounded?", "--max-iterations", "2", "--model", model],
    )
    assert res.exit_code == 1, res.output  # unscored: no rating within 2 actions
    data = json.loads(res.output)
    assert data["unscored_reason"] == "max_iterations" and data["details"]["tool_calls"][0]["name"] == "get_trace_info"


def test_judge_trace_refuses_options_that_do_not_apply(tmp_path):
    res = CliRunner().invoke(main, ["judge", "instructions", "--trace", RAG, "--instructions", "x", "--probs"])
    assert res.exit_code == 2 and "do not apply to --trace" in res.output
    res = CliRunner().invoke(main, ["judge", "correctness", "--trace", RAG, "--instructions", "x"])
    assert res.exit_code == 2 and "--trace goes with: judge instructions" in res.output


def test_trace_validates_engine_options_before_loading_anything(tmp_path):
    res = CliRunner().invoke(main, ["trace", "--trace", RAG, "--instructions", "x", "--option", "no_such_key=1"])
    assert res.exit_code == 2 and "valid keys: n_ctx" in res.output
    model = _answers(tmp_path, '{"result": "yes", "rationale": "ok"}')
    res = CliRunner().invoke(main, ["trace", "--trace", RAG, "--instructions", "x", "--model", model, "--threads", "2"])
    assert res.exit_code == 2 and "--threads (n_threads): not an option of scripted: models" in res.output
