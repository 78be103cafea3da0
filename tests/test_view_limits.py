"""`localjudge view` against slow and greedy clients and bad stores, on loopback, bounded in count and time:
header-less connections cut at the header deadline while the API answers, a 503 past the connection limit, a
process out of file descriptors logging a few lines instead of a traceback per accept, a garbage or newer store
listed as unreadable beside the readable runs, and label bodies bounded in size, nesting and field length."""

from __future__ import annotations

import json
import os
import re
import select
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from view_support import ViewServer, make_run

from localjudge.errors import InputError
from localjudge.labels.store import MAX_COMMENT_CHARS, MAX_LABELLER_CHARS, Domain, validate_label_fields

GET_RUNS = b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def _addr(server: ViewServer) -> tuple[str, int]:
    u = urllib.parse.urlparse(server.url)
    assert u.hostname and u.port
    return u.hostname, u.port


def _exchange(addr: tuple[str, int], data: bytes, timeout: float = 30) -> bytes:
    """Send one raw request and read the answer until the server closes the connection."""
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def _closed_by_server(s: socket.socket) -> bool:
    """Whether the server closed `s` (EOF or a reset) before the socket's own timeout."""
    try:
        return s.recv(100) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


@pytest.fixture()
def one_run(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    make_run(root / "a", 12)
    return root


# --------------------------------------------------------------------------------------- slow clients


@pytest.mark.system
def test_header_less_connections_are_cut_at_the_header_deadline_while_the_api_answers(one_run):
    """200 connections that send nothing: /api/runs is answered meanwhile; each is closed by the server at the
    2 s header deadline (long before the clients' own 30 s timeout), and the cut is logged once, not 200 times."""
    server = ViewServer("--runs-root", str(one_run), "--header-timeout", "2", "--max-connections", "300")
    try:
        addr = _addr(server)
        idle = [socket.create_connection(addr, timeout=30) for _ in range(200)]
        try:
            answer = _exchange(addr, GET_RUNS)
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
            assert b'"rid": "a"' in answer or b'"rid":"a"' in answer
            assert all(_closed_by_server(s) for s in idle)
        finally:
            for s in idle:
                s.close()
        assert server.request("/api/runs")[0] == 200
        assert server.proc.poll() is None
        server.proc.terminate()
        log = server.proc.communicate(timeout=20)[0]
    finally:
        server.stop()
    assert log.count("no complete request headers") <= 1, log[-2000:]


@pytest.mark.system
def test_connections_past_the_limit_are_answered_503_and_the_view_keeps_serving(one_run):
    """8 connections stalled mid-headers fill a limit of 8: the 9th is answered 503 (JSON, retry-after) at once;
    once the stalled ones are gone the view answers again."""
    server = ViewServer("--runs-root", str(one_run), "--header-timeout", "30", "--max-connections", "8")
    try:
        addr = _addr(server)
        stalled = []
        for _ in range(8):
            s = socket.create_connection(addr, timeout=30)
            s.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            stalled.append(s)
        time.sleep(0.3)
        answer = _exchange(addr, GET_RUNS)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head.lower(), answer[:300]
        assert "too many open connections" in json.loads(body)["error"]
        for s in stalled:
            s.close()
        deadline = time.monotonic() + 20
        while (status := server.request("/api/runs")[0]) == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status == 200
        assert server.proc.poll() is None
    finally:
        server.stop()


LAUNCHER = """
import resource, runpy, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[1])))
sys.argv = ["localjudge", "view", *sys.argv[2:]]
runpy.run_module("localjudge", run_name="__main__")
"""


@pytest.mark.system
def test_a_view_out_of_file_descriptors_logs_a_few_lines_and_recovers(one_run, tmp_path):
    """The view under RLIMIT_NOFILE=64 and 150 idle connections: accept() fails with EMFILE for seconds. Each
    failure used to log a traceback per pending accept (megabytes a second); the log now stays a few KB, and
    once the clients leave /api/runs is answered. Only the options main already had are used."""
    log_path = tmp_path / "view.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, "64", "--runs-root", str(one_run), "--port", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    clients: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 60
        while not (m := re.search(r"on (http://[^/]+)/", log_path.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()[-2000:]
            time.sleep(0.1)
        u = urllib.parse.urlparse(m.group(1))
        addr = (u.hostname or "", u.port or 0)
        for _ in range(150):  # more than the process has descriptors: the rest wait in the listen backlog
            clients.append(socket.create_connection(addr, timeout=10))
        time.sleep(3.5)  # asyncio retries accept() once a second: three or four rounds of EMFILE
        assert proc.poll() is None
        assert log_path.stat().st_size < 20_000, f"{log_path.stat().st_size} bytes of log in 3.5 s"
        for s in clients:
            s.close()
        clients.clear()
        deadline = time.monotonic() + 30
        answer = b""
        while time.monotonic() < deadline:
            try:
                answer = _exchange(addr, GET_RUNS, timeout=10)
            except OSError:
                answer = b""
            if answer.startswith(b"HTTP/1.1 200"):
                break
            time.sleep(0.5)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    finally:
        for s in clients:
            s.close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    text = log_path.read_text()
    assert len(text) < 20_000, f"{len(text)} bytes of log"
    assert text.count("out of system resource") <= 2, text[-3000:]


# ---------------------------------------------------------------------------------------- bad stores


def _newer_store(run: Path) -> None:
    """Mark a store as written by a newer localjudge: a migration this version does not know."""
    with sqlite3.connect(run / "results.sqlite") as c:
        c.execute("INSERT INTO _migrations (name, applied) VALUES ('999_from_the_future', '2030-01-01T00:00:00+0000')")


@pytest.mark.system
def test_a_garbage_and_a_newer_store_are_listed_unreadable_beside_the_readable_runs(tmp_path):
    """One readable run, a garbage store and a newer one under --runs-root: the view starts, lists all three (the
    bad ones with their one-line reason and no link), and reads the garbage one once it becomes a real store."""
    root = tmp_path / "runs"
    make_run(root / "a", 10)
    make_run(root / "c", 5)
    (root / "b").mkdir()
    (root / "b" / "results.sqlite").write_bytes(b"this is not a database, just some bytes" * 200)
    _newer_store(root / "c")
    server = ViewServer("--runs-root", str(root))
    try:
        status, runs, _ = server.request("/api/runs")
        assert status == 200, runs
        by_rid = {r["rid"]: r for r in runs}
        assert set(by_rid) == {"a", "b", "c"}
        assert by_rid["a"]["status"] == "finished" and by_rid["a"]["cells_done"] == 10
        assert by_rid["b"]["status"] == "unreadable" and "not a database" in by_rid["b"]["error"]
        assert by_rid["c"]["status"] == "unreadable" and "newer localjudge" in by_rid["c"]["error"]
        assert all("\n" not in r.get("error", "") for r in runs)
        status, page, _ = server.request("/")
        assert status == 200
        assert 'href="/runs/a"' in page and 'href="/runs/b"' not in page
        assert page.count("st-unreadable") == 2 and "newer localjudge" in page and "not a database" in page
        status, answer, _ = server.request("/api/runs/b/status")
        assert status == 400 and "not a database" in answer["error"]
        assert server.request("/api/runs/a/rows")[0] == 200
        (root / "b" / "results.sqlite").unlink()  # the garbage replaced by a real store: read on the next listing
        make_run(root / "b", 3)
        by_rid = {r["rid"]: r for r in server.request("/api/runs")[1]}
        assert by_rid["b"]["status"] == "finished" and by_rid["b"]["cells_done"] == 3
        assert by_rid["c"]["status"] == "unreadable"
    finally:
        server.stop()


# ------------------------------------------------------------------------------------- label API bounds


@pytest.fixture()
def labelled(one_run):
    server = ViewServer("--runs-root", str(one_run))
    yield server, one_run / "a"
    server.stop()


def _label_head(token: str, extra: str) -> bytes:
    return (
        "POST /api/runs/a/labels HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"X-CSRF-Token: {token}\r\n{extra}\r\n"
    ).encode()


def _stream(addr: tuple[str, int], head: bytes, chunks, limit_s: float = 60) -> bytes:
    """Send `head`, then the body chunks until the server answers (or closes); returns what it answered."""
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(head)
        got = b""
        deadline = time.monotonic() + limit_s
        for chunk in chunks:
            if select.select([s], [], [], 0)[0] or time.monotonic() > deadline:
                break
            try:
                s.sendall(chunk)
            except OSError:
                break
        try:
            while part := s.recv(65536):
                got += part
                if b"\r\n\r\n" in got and len(got) > got.index(b"\r\n\r\n") + 4:
                    break
        except OSError:
            pass
        return got


def _comment_body_chunks(total: int, chunked: bool):
    """A valid label JSON whose comment makes it `total` bytes, in 64 KB pieces (chunked transfer coding or raw)."""
    prefix = b'{"row_index": 0, "judge": "polite", "value": "yes", "labeller": "ann", "comment": "'
    piece = b"x" * 65536
    pieces = [prefix] + [piece] * ((total - len(prefix) - 2) // len(piece)) + [b'"}']
    for p in pieces:
        yield (b"%x\r\n" % len(p) + p + b"\r\n") if chunked else p
    if chunked:
        yield b"0\r\n\r\n"


@pytest.mark.system
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_60_mb_label_body_is_a_413_and_nothing_is_stored(labelled, chunked):
    server, run = labelled
    addr, token = _addr(server), server.csrf()
    size_before = sum(p.stat().st_size for p in run.iterdir() if p.name.startswith("results.sqlite"))
    total = 60 << 20
    extra = "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {total}\r\n"
    answer = _stream(addr, _label_head(token, extra), _comment_body_chunks(total, chunked))
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert "limit" in json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
    status, runs, _ = server.request("/api/runs")
    assert status == 200 and runs[0]["labels"] == 0
    size_after = sum(p.stat().st_size for p in run.iterdir() if p.name.startswith("results.sqlite"))
    assert size_after - size_before < 1 << 20


@pytest.mark.system
def test_a_label_body_nested_100k_deep_is_a_400_and_the_view_keeps_answering(labelled):
    server, _ = labelled
    token = server.csrf()
    for body in (b"[" * 100_000 + b"]" * 100_000, b'{"value": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"):
        status, answer, _ = server.request("/api/runs/a/labels", "POST", body, {"X-CSRF-Token": token})
        assert status == 400 and "levels deep" in answer["error"], answer
    assert server.request("/api/runs")[0] == 200


@pytest.mark.system
def test_a_comment_or_labeller_past_its_limit_is_a_400_naming_the_field_and_the_limit(labelled):
    server, _ = labelled
    h = {"X-CSRF-Token": server.csrf()}
    base = {"row_index": 0, "judge": "polite", "value": "yes", "labeller": "ann"}
    status, answer, _ = server.request("/api/runs/a/labels", "POST", {**base, "comment": "c" * (MAX_COMMENT_CHARS + 1)}, h)
    assert status == 400 and "comment" in answer["error"] and str(MAX_COMMENT_CHARS) in answer["error"], answer
    status, answer, _ = server.request("/api/runs/a/labels", "POST", {**base, "labeller": "l" * (MAX_LABELLER_CHARS + 1)}, h)
    assert status == 400 and "labeller" in answer["error"] and str(MAX_LABELLER_CHARS) in answer["error"], answer
    status, answer, _ = server.request("/api/runs/a/labels", "POST", {**base, "value": float("nan")}, h)
    assert status == 400 and "JSON" in answer["error"], answer
    status, lab, _ = server.request("/api/runs/a/labels", "POST", {**base, "comment": "c" * MAX_COMMENT_CHARS}, h)
    assert status == 200 and len(lab["comment"]) == MAX_COMMENT_CHARS


@pytest.mark.parametrize(
    ("fields", "names"),
    [
        ({"labeller": " "}, "labeller"),
        ({"labeller": 7}, "labeller must be text"),
        ({"comment": ["a"]}, "comment must be text"),
        ({"comment": "\ud800"}, "surrogate"),
        ({"value": "maybe"}, "maybe"),
        ({"value": "x" * 10**6}, "field value"),
        ({"created": "yesterday"}, "labelled_at"),
    ],
)
def test_label_fields_are_checked_by_one_function_naming_the_field(fields, names):
    """`validate_label_fields`: what the view's label API checks (and `labels import` can call)."""
    domain = Domain(kind="categorical", values=["yes", "no"], keys=["y", "n"])
    args = {"row_index": 0, "value": "yes", "comment": None, "labeller": "ann", "created": "", **fields}
    args["labelled_at"] = args.pop("created")
    with pytest.raises(InputError, match=re.escape(names)) as e:
        validate_label_fields(args, domain, "polite")
    assert "\n" not in str(e.value) and len(str(e.value)) < 300
    ok = {"row_index": 0, "value": "yes", "comment": "fine", "labeller": "ann", "labelled_at": "2026-11-26T15:04:05+0000"}
    assert validate_label_fields(ok, domain, "polite").value == "yes"
