"""Hostile input at the run, CLI and model boundaries (issue 22, "Runs and the CLI", "Models and credentials"):
bad bytes in rows and arguments, damaged stores, foreign result rows, unwritable report paths, formula
injection in CSV, escape sequences in GGUF metadata, chat-template bombs, hub path traversal, API-key
leaks and a backtracking regex chosen by the model. Each case ends in one line and a documented exit
code, or a row error, with every other row judged and stored; every case is bounded in time.

Real parts wherever they can run: the default model (SmolLM2-135M, one thread), real GGUF files written
with the `gguf` package, real SQLite stores, a loopback hub and a loopback OpenAI-style server. The
`scripted:` backend only where a verdict must hold a given text (a rationale that is a formula)."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import cli as conftest_cli

from localjudge.errors import ChatTemplateError, InputError, ModelNotFoundError
from localjudge.store.db import Store

SCRIPTED = ["-m", "scripted:", "--option", 'response={"rationale": "=1+1", "result": "yes"}']


cli = partial(conftest_cli, text=False, timeout=120)  # bytes in and out: arguments and output that are not UTF-8


def one_line(r: subprocess.CompletedProcess) -> str:
    err = r.stderr.decode("utf-8", "replace").strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # json escapes a lone surrogate
    return path


def results(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def scripted_run(tmp_path: Path, n: int = 3, name: str = "run") -> Path:
    data = write_jsonl(tmp_path / f"{name}.jsonl", [{"id": f"r{i}", "input": f"q{i}", "output": f"a{i}"} for i in range(n)])
    out = tmp_path / name
    r = cli("run", str(data), "-j", "relevance_to_query", "-o", str(out), "-q", *SCRIPTED)
    assert r.returncode == 0, r.stderr
    return out


# ------------------------------------------------------------------------------------------ bad bytes


@pytest.mark.system
def test_a_lone_surrogate_in_one_row_is_a_row_error_and_every_other_row_is_judged_and_stored(tmp_path, engine):
    data = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"input": "Is the sky blue?", "output": "Yes."},
            {"input": "q2", "output": "bad \ud800 text"},
            {"input": "q3", "output": "a3"},
        ],
    )
    out = tmp_path / "out"
    r = cli("run", str(data), "-j", "relevance_to_query", "--fast", "--threads", "1", "-o", str(out), "-q")
    assert r.returncode == 1 and b"Traceback" not in r.stderr, r.stderr  # 1: a row failed, the run finished
    rows = results(out)
    assert [x["row_index"] for x in rows] == [0, 1, 2]
    assert rows[0]["result"]["unscored_reason"] is None and rows[2]["result"]["unscored_reason"] is None
    assert rows[1]["result"]["unscored_reason"] == "bad_row"
    assert rows[1]["error"].startswith("s.jsonl:line 2: text holds a lone surrogate U+D800")
    with Store(out / "results.sqlite") as st:
        assert st.count(st.latest_run() or "") == 3
    # the same through the Python API, where the value arrives as a str (records, a DataFrame)
    from localjudge import evaluate

    run = evaluate(
        [{"input": "q", "output": "a \udcff"}, {"input": "q", "output": "fine"}],
        ["relevance_to_query"],
        engine=engine,
        options={"fast": True},
        out=tmp_path / "api",
    )
    got = {row.row_index: row for row in run.results}
    assert got[0].result.unscored_reason == "bad_text" and "U+DCFF" in (got[0].error or "")
    assert got[1].result.scored


@pytest.mark.system
def test_a_byte_that_is_not_utf8_in_a_judge_field_or_prompt_is_one_line_exit_2(tmp_path):
    r = cli("judge", "relevance_to_query", "-f", "input=hi", "-f", b"output=\xff", *SCRIPTED)
    assert r.returncode == 2 and "--field 'output': text holds a lone surrogate U+DCFF" in one_line(r)
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"caf\xe9")
    r = cli("judge", "relevance_to_query", "-f", "input=hi", "-f", f"output=@{bad}", *SCRIPTED)
    assert r.returncode == 2 and "is not valid UTF-8 at byte 3" in one_line(r)
    r = cli("judge", "yes_no_json", "--prompt", b"ok? \xfe", *SCRIPTED)
    assert r.returncode == 2 and one_line(r).startswith("Error: --prompt: text holds a lone surrogate")


@pytest.mark.system
def test_a_data_file_whose_name_is_not_utf8_is_judged_and_exported(tmp_path):
    data = os.fsdecode(b"bad\xff.jsonl")  # the name as Python sees it: U+DCFF for the byte 0xFF
    write_jsonl(tmp_path / data, [{"input": "q", "output": "a"}])
    r = cli("run", os.fsencode(tmp_path / data), "-j", "relevance_to_query", "-o", str(tmp_path / "out"), "-q", *SCRIPTED)
    assert r.returncode == 0, r.stderr
    assert results(tmp_path / "out")[0]["source"] == "bad\\xff.jsonl:line 1"
    assert json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))["data"].endswith("bad\udcff.jsonl")


# ------------------------------------------------------------------------------------------ stores


@pytest.mark.system
def test_a_store_with_overwritten_pages_is_one_line_naming_it_exit_2(tmp_path):
    out = scripted_run(tmp_path)
    db = out / "results.sqlite"
    with open(db, "r+b") as f:  # the pages after the schema: the results table, its index and the cache
        for page in (3, 4, 5, 6):
            f.seek(page * 4096)
            f.write(b"\xa5" * 4096)
    r = cli("run", str(tmp_path / "run.jsonl"), "-j", "relevance_to_query", "-o", str(out), "-q", *SCRIPTED)
    err = one_line(r)
    assert r.returncode == 2 and str(db) in err and "is damaged" in err and "move it away" in err
    db.write_bytes(b"not a database " * 400)  # a file that is no database at all
    r = cli("run", str(tmp_path / "run.jsonl"), "-j", "relevance_to_query", "-o", str(out), "-q", *SCRIPTED)
    assert r.returncode == 2 and str(db) in one_line(r)


@pytest.mark.system
def test_a_result_row_of_a_foreign_shape_is_an_error_row_and_a_rerun_judges_it_again(tmp_path):
    out = scripted_run(tmp_path)
    db = out / "results.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("""UPDATE results SET result = '{"foo": [1]}' WHERE row_index = 0""")
    conn.execute("UPDATE results SET inputs = '[1]', record = '7' WHERE row_index = 2")
    conn.execute("DELETE FROM cache")
    conn.commit()
    conn.close()
    with Store(db) as st:
        rows = list(st.iter_results(st.latest_run() or ""))
    assert [r.result.unscored_reason for r in rows] == ["foreign_row", None, "foreign_row"]
    assert str(db) in (rows[0].error or "") and "foreign shape" in (rows[0].error or "")
    r = cli("run", str(tmp_path / "run.jsonl"), "-j", "relevance_to_query", "-o", str(out), *SCRIPTED)
    assert r.returncode == 0 and b"2 judged now" in r.stdout, r.stdout + r.stderr
    assert [x["result"]["value"] for x in results(out)] == ["yes", "yes", "yes"]


@pytest.mark.system
def test_report_to_a_path_that_cannot_be_written_is_one_line_exit_5(tmp_path):
    out = scripted_run(tmp_path)
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    for target in (blocker / "report.html", tmp_path):  # under a file; a directory
        r = cli("report", str(out), "-o", str(target))
        err = one_line(r)
        assert r.returncode == 5 and f"cannot write the report to {str(target)!r}" in err and "-o" in err
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.system
def test_csv_export_neutralises_formulas_and_csv_raw_keeps_them(tmp_path):
    from localjudge.run.exports import neutralise

    ids = ["=1+1", "+1", "-1", "@SUM(A1)", "\t=x", "\r=x", "plain"]
    data = write_jsonl(tmp_path / "inj.jsonl", [{"id": i, "input": "q", "output": "a"} for i in ids])
    for flag, out in (([], tmp_path / "safe"), (["--csv-raw"], tmp_path / "raw")):
        r = cli("run", str(data), "-j", "relevance_to_query", "-o", str(out), "-q", *SCRIPTED, *flag)
        assert r.returncode == 0, r.stderr
    with open(tmp_path / "safe" / "results.csv", newline="", encoding="utf-8") as f:
        safe = list(csv.DictReader(f))
    assert [r["row_id"] for r in safe] == ["'" + i for i in ids[:-1]] + ["plain"]
    assert {r["rationale"] for r in safe} == {"'=1+1"} and all(r["score"] == "1.0" for r in safe)
    with open(tmp_path / "raw" / "results.csv", newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    assert [r["row_id"] for r in raw] == ids and {r["rationale"] for r in raw} == {"=1+1"}
    assert [x["row_id"] for x in results(tmp_path / "safe")] == ids  # results.jsonl is always exact
    assert neutralise("a=b") == "a=b" and neutralise("-x") == "'-x"


@pytest.mark.system
def test_a_panel_run_neutralises_formulas_and_csv_raw_keeps_them_too(tmp_path):
    """A panel's combined export follows --csv-raw like a plain run's (the panel's and each member's rows)."""
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(['{"rationale": "=1+1", "result": "yes"}']))
    data = write_jsonl(tmp_path / "inj.jsonl", [{"id": "=2+2", "input": "q", "output": "a"}])
    panel = f"scripted:{tmp_path / 'a.json'},scripted:{tmp_path / 'b.json'}"
    for flag, out in (([], tmp_path / "safe"), (["--csv-raw"], tmp_path / "raw")):
        r = cli("run", str(data), "-j", "relevance_to_query", "-o", str(out), "-q", "--panel", panel, *flag)
        assert r.returncode == 0, r.stderr
    with open(tmp_path / "safe" / "results.csv", newline="", encoding="utf-8") as f:
        safe = list(csv.DictReader(f))
    with open(tmp_path / "raw" / "results.csv", newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    assert len(safe) == len(raw) == 3  # the panel and its two members
    member = "@"  # the members' rows: JUDGE@MEMBER, their rationale the scripted one
    assert {r["row_id"] for r in safe} == {"'=2+2"} and {r["rationale"] for r in safe if member in r["judge"]} == {"'=1+1"}
    assert {r["row_id"] for r in raw} == {"=2+2"} and {r["rationale"] for r in raw if member in r["judge"]} == {"=1+1"}


# ------------------------------------------------------------------------------------------ model files


def _gguf(path: Path, name: str, template: str | None = None) -> Path:
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_license("mit\x1b[2J")
    w.add_context_length(128)
    if template is not None:
        w.add_chat_template(template)
    w.add_tensor("t", np.zeros((256,), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.system
def test_models_info_add_and_list_strip_control_characters_from_gguf_metadata(tmp_path):
    src = _gguf(tmp_path / "evil.gguf", "evil\x1b]0;pwned\x07name\x9b31m\u202e", "{{ 'x' * 300000000 }}")
    env = {"LOCALJUDGE_MODELS_HOME": str(tmp_path / "models")}
    outs = [
        cli("models", "add", str(src), "--name", "evil", env=env),
        cli("models", "info", "evil", env=env),
        cli("models", "info", "evil", "--json", env=env),
        cli("models", "list", env=env),
        cli("models", "list", "--json", env=env),
    ]
    for r in outs:
        assert r.returncode == 0, r.stderr
        text = r.stdout.decode("utf-8")
        assert not any(c in text for c in "\x1b\x07\x9b\u202e"), text
    assert "evil]0;pwnedname31m" in outs[1].stdout.decode() and "mit[2J" in outs[1].stdout.decode()
    assert json.loads(outs[2].stdout)["gguf_name"] == "evil]0;pwnedname31m"


# ------------------------------------------------------------------------------------------ chat templates

MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi <b>"}]


@pytest.mark.system
def test_chat_templates_render_as_jinja_does_and_bombs_fail_in_one_line_within_their_limits():
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from localjudge.engine.template import ChatTemplate

    src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}\n{% endfor %}{% if add_generation_prompt %}A:{% endif %}"
    want = (
        ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        .from_string(src)
        .render(messages=MSGS, add_generation_prompt=True)
    )
    ok = ChatTemplate(src, "m")
    assert ok.render(messages=MSGS, add_generation_prompt=True) == want
    cases = {
        "{{ messages.__class__.__mro__ }}": "failed to render (SecurityError: access to attribute '__class__'",
        "{{ 'x' * 300000000 }}": "failed to render (SecurityError: a repetition of 1 x 300000000",
        "{{ 9 ** 99999999 }}": "failed to render (SecurityError: 9 ** 99999999 is too large",
        "{{ '{:>900000000}'.format(1) }}": "failed to render (MemoryError",  # over the address-space limit
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}": "ran longer than 1 s",
        "{{ raise_exception('no system role') }}": "the model's chat template refused the messages: no system role",
        "{% for %}": "does not compile",
    }
    for src, message in cases.items():
        t0 = time.monotonic()
        with pytest.raises(ChatTemplateError) as e:
            ChatTemplate(src, "evil", time_limit_s=1, memory_mb=128).render(messages=MSGS, add_generation_prompt=True)
        assert message in str(e.value) and "\n" not in str(e.value), (src, str(e.value))
        assert time.monotonic() - t0 < 30, src
    assert ok.render(messages=MSGS, add_generation_prompt=True) == want  # one template's bomb leaves others alone
    # a worker killed by a bomb is replaced: the next bomb gets the same time limit, a good render works
    maybe = "{% if messages[0].content == 'bomb' %}" + next(k for k in cases if "range" in k) + "{% endif %}ok"
    t = ChatTemplate(maybe, "m", time_limit_s=1)
    for content in ("bomb", "bomb", "fine"):
        t0 = time.monotonic()
        try:
            assert t.render(messages=[{"role": "user", "content": content}]) == "ok" and content == "fine"
        except ChatTemplateError as e:
            assert content == "bomb" and "ran longer than 1 s" in str(e)
        assert time.monotonic() - t0 < 15


@pytest.mark.system
def test_a_chat_template_bomb_is_one_line_exit_3_with_the_real_model():
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    r = cli(
        "judge", "relevance_to_query", "-f", "input=hi", "-f", "output=yo", "--fast", "--threads", "1",
        "--chat-template", loop, "--option", "template_timeout=1",
    )  # fmt: skip
    assert r.returncode == 3 and "ran longer than 1 s (a loop bomb?)" in one_line(r)
    r = cli(
        "judge",
        "relevance_to_query",
        "-f",
        "input=hi",
        "-f",
        "output=yo",
        "--threads",
        "1",
        "--chat-template",
        "{{ messages.__class__.__mro__ }}",
    )
    assert r.returncode == 3 and "SecurityError" in one_line(r)


@pytest.mark.system
def test_a_gguf_whose_chat_template_is_a_memory_bomb_is_one_line_exit_3(tmp_path):
    from localjudge.models.registry import resolve_model

    hostile = tmp_path / "hostile.gguf"  # the default model with its chat template replaced (gguf's own tool)
    subprocess.run(
        [sys.executable, "-m", "gguf.scripts.gguf_new_metadata", resolve_model(None).path, str(hostile)]
        + ["--chat-template", "{{ 'x' * 300000000 }}", "--force"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    r = cli("judge", "relevance_to_query", "-f", "input=hi", "-f", "output=yo", "-m", str(hostile), "--threads", "1")
    err = one_line(r)
    assert r.returncode == 3 and "the chat template of 'hostile.gguf' failed to render" in err and "300000000" in err


@pytest.mark.system
def test_serve_answers_a_chat_template_bomb_with_a_400_in_bounded_time_and_keeps_serving():
    from serve_support import get, post, start_server

    loop = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    server = start_server("--chat-template", loop, "--option", "template_timeout=2", "--threads", "1", "--no-precompile")
    try:
        body = {"model": server.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
        for _ in range(2):  # the engine thread is free again after each bomb
            t0 = time.monotonic()
            status, answer, _ = post(server.url, body, timeout=60)
            assert status == 400 and "ran longer than 2 s" in answer["error"]["message"], answer
            assert time.monotonic() - t0 < 30
        assert get(server.url, "/health")[0] == 200
    finally:
        assert server.stop() == 0


# ------------------------------------------------------------------------------------------ paths


@pytest.mark.system
def test_hub_specs_with_traversal_are_refused_before_any_request(tmp_path):
    from hub_server import FakeHub

    with FakeHub() as hub:
        env = {"LOCALJUDGE_HOME": str(tmp_path / "home"), "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
        env["LOCALJUDGE_MODELS_HOME"] = str(tmp_path / "home" / "models")
        for spec in (
            "hf:a/b/../../etc/passwd.gguf",
            "hf:/etc/b/c.gguf",
            "hf:a/b//c.gguf",
            "hf:a/b/c.gguf@../../x",
            "hf:a/b/.\\c.gguf",
        ):
            r = cli("models", "pull", spec, env=env)
            assert r.returncode == 2 and "bad hub spec" in one_line(r), spec
        assert hub.log == []
    assert not (tmp_path / "home" / "models" / "local").exists()


@pytest.mark.system
def test_manifest_entries_resolve_only_inside_the_models_home(tmp_path, monkeypatch):
    from localjudge.models.registry import resolve_model

    home = tmp_path / "models"
    home.mkdir()
    outside = _gguf(tmp_path / "outside.gguf", "o")
    entries = {
        "dotdot": {"path": "../outside.gguf", "sha256": "0" * 64, "source": "hub"},
        "absolute": {"path": str(outside), "sha256": "0" * 64, "source": "hub"},
        "linked": {"path": str(outside), "sha256": "0" * 64, "source": "add", "linked": True},
    }
    (home / "manifest.json").write_text(json.dumps({"version": 1, "models": entries}))
    monkeypatch.setenv("LOCALJUDGE_MODELS_HOME", str(home))
    for name in ("dotdot", "absolute"):
        with pytest.raises(ModelNotFoundError, match="outside the models home"):
            resolve_model(name)
    assert resolve_model("linked").path == str(outside)  # `models add --link` keeps the file where it lies
    r = cli("models", "list", env={"LOCALJUDGE_MODELS_HOME": str(home)})
    assert r.returncode == 0 and b"dotdot" in r.stdout


# ------------------------------------------------------------------------------------------ keys


class _OpenAIStandIn:
    """A loopback OpenAI-style server that records every Authorization header; `redirect_to` answers 307."""

    def __init__(self, redirect_to: str | None = None) -> None:
        self.auth: list[str | None] = []
        seen, target = self.auth, redirect_to

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                seen.append(self.headers.get("Authorization"))
                if target:
                    self.send_response(307)
                    self.send_header("Location", target + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self._send({"data": [{"id": "m", "owned_by": "test"}]})

            def do_POST(self) -> None:
                seen.append(self.headers.get("Authorization"))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answer = '{"rationale": "fine", "result": "yes"}'
                self._send(
                    {
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 5},
                    }
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _judge_via(url: str, options: dict[str, Any]) -> Any:
    from localjudge.engine.backends import get_backend
    from localjudge.judges import get_judge

    backend = get_backend("server")  # a fresh engine each time (ModelRef keeps one per spec in the process)
    engine = backend.load(f"{url}/v1#m", backend.options(options))
    return get_judge("relevance_to_query").evaluate(engine, input="hi", output="yo")


@pytest.mark.system
def test_the_server_backend_sends_a_key_only_when_given_for_it_and_never_in_clear_to_a_remote_host(monkeypatch):
    server = _OpenAIStandIn()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-you")
        monkeypatch.delenv("LOCALJUDGE_SERVER_API_KEY", raising=False)
        assert _judge_via(server.url, {}).value == "yes"
        assert len(server.auth) >= 2 and set(server.auth) == {None}  # OPENAI_API_KEY never leaves
        server.auth.clear()
        monkeypatch.setenv("LOCALJUDGE_SERVER_API_KEY", "lj-key")
        assert _judge_via(server.url, {}).value == "yes"
        assert len(server.auth) >= 2 and set(server.auth) == {"Bearer lj-key"}  # loopback: plain http is fine
        server.auth.clear()
        assert _judge_via(server.url, {"api_key": "opt-key"}).value == "yes"
        assert set(server.auth) == {"Bearer opt-key"}
    finally:
        server.close()
    t0 = time.monotonic()
    with pytest.raises(InputError, match="refusing to send the API key over plain http to '192.0.2.1'"):
        _judge_via("http://192.0.2.1:9", {})  # TEST-NET-1: refused before any connection is tried
    assert time.monotonic() - t0 < 5
    # a redirect is not followed with the key: the second server never sees it
    sink = _OpenAIStandIn()
    hop = _OpenAIStandIn(redirect_to=sink.url)
    try:
        with pytest.raises(Exception, match="307"):
            _judge_via(hop.url, {})
        assert hop.auth == ["Bearer lj-key"] and sink.auth == []
    finally:
        hop.close()
        sink.close()


# ------------------------------------------------------------------------------------------ trace search


def _backtracking_trace():
    span = {
        "traceId": "t",
        "spanId": "s0",
        "parentSpanId": "",
        "name": "step",
        "startTimeUnixNano": "0",
        "endTimeUnixNano": "1",
        "attributes": [{"key": "input.value", "value": {"stringValue": "a" * 28 + "!"}}],
    }
    return {"spans": [span]}


def test_search_trace_stops_a_backtracking_pattern_and_still_finds_plain_ones():
    from localjudge.agent import TraceTools, load_trace
    from localjudge.agent.tools import SearchTimeLimit

    tools = TraceTools(load_trace(_backtracking_trace()))
    for pattern in ("(a|a)+$", "(a+)+$"):  # with re: 2**28 steps and more, for hours (regex stops the second early)
        t0 = time.monotonic()
        try:
            assert tools.call("search_trace", {"pattern": pattern}).startswith("no match")
        except SearchTimeLimit as e:
            assert "ran past its time limit of 1 s" in str(e)
        assert time.monotonic() - t0 < 15, pattern
    with pytest.raises(SearchTimeLimit, match=r"ran past its time limit of 1 s"):
        tools.call("search_trace", {"pattern": "(a|a)+$"})
    assert tools.call("search_trace", {"pattern": "a{5}!"}).startswith("1 match(es)")


@pytest.mark.system
def test_a_plain_search_on_a_core_shared_with_busy_processes_is_answered_not_refused():
    """The search's limit is its CPU time, not the wall clock's: on one core shared with three busy processes (the
    search gets about a quarter of it) a plain search that needs about half its CPU budget is answered as on an idle
    core. Under the wall-clock limit it was refused (about 2-3 s of wall time for 0.5 s of CPU), so a busy machine
    refused judgements an idle one gave."""
    import os
    import subprocess
    import sys

    from test_agent_tools import big_trace

    from localjudge.agent import TraceTools, load_trace

    tools = TraceTools(load_trace(big_trace(n=150, size=20000)))  # 428,550 matches over 300 fields
    idle = tools.call("search_trace", {"pattern": "needle"})
    assert idle.startswith("428550 match(es)")
    before = os.sched_getaffinity(0)
    core = min(before)
    hogs = [
        subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass"])
        for _ in range(3)
    ]
    try:
        os.sched_setaffinity(0, {core})
        time.sleep(0.5)  # the hogs are spinning on the core
        t0, c0 = time.monotonic(), time.thread_time()
        busy = tools.call("search_trace", {"pattern": "needle"})
        wall, cpu = time.monotonic() - t0, time.thread_time() - c0
    finally:
        os.sched_setaffinity(0, before)
        for h in hogs:
            h.kill()
            h.wait()
    assert busy == idle, (wall, cpu)
    assert wall > 1.0, f"the core was not shared: {wall:.2f} s of wall time for {cpu:.2f} s of CPU (the test proves nothing)"


def test_a_search_past_its_time_limit_refuses_the_judgement_and_never_shows_the_model_a_speed_dependent_answer():
    # Shown to the model, a timed-out search would make the verdict depend on the machine's speed: a fast machine
    # would show matches where a slow one showed an error. The time limit refuses the judgement instead.
    import json as _json

    from localjudge.agent import TraceJudge
    from localjudge.engine import ScriptedEngine

    answers = ['{"tool": "search_trace", "pattern": "(a|a)+$"}', '{"result": "yes", "rationale": "r"}']
    prompts: list[str] = []

    def fn(messages, fmt):
        prompts.append(messages[-1].content)
        return answers.pop(0)

    r = TraceJudge("Is {{ trace }} fine?").judge(_json.dumps(_backtracking_trace()), ScriptedEngine(fn))
    assert not r.scored and r.unscored_reason == "tool_time_limit" and r.value is None, r
    assert "time limit" in (r.error or "") and len(prompts) == 1  # the model never saw the search's result
