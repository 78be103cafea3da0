"""schemathesis against `localjudge serve`'s app in this process (tests/serve_support.py `serve_inprocess`: the app
the CLI builds with these flags, the default model loaded here; `system` tier only for the child processes that
compile fuzzed client schemas), every operation of its own GET /openapi.json, with
cases that fit the document and cases that do not: no 5xx, every status, content type and body as the document says,
and the app counts no error afterwards.

A short budget in the suite: the document's examples, then LOCALJUDGE_SCHEMATHESIS_EXAMPLES fuzzed cases per
operation (default 40; a repeated case is sent once), each answer at most --text-tokens 16 (--field-tokens 24 per
schema field) in a 512-token context, so a fuzzed request costs the model little (~15 s for all of them on 2 busy
cores). The documented longer run (CONTRIBUTING.md, "Nothing checked less") raises the count:

    LOCALJUDGE_SCHEMATHESIS_EXAMPLES=1000 PYTHONPATH=. python -m pytest -n 0 tests/test_serve_schemathesis.py

These were two schemathesis CLI runs against real servers (test_hostile_serve's OpenAI routes, 40 examples;
test_serve_ollama's /api/ routes, 20): the answers are the app's whatever carries them, and what only a process
shows (slow clients, SIGTERM, connection limits) stays in test_hostile_serve."""

from __future__ import annotations

import os

import hypothesis
import hypothesis.strategies as st
import pytest
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance
from serve_support import HOSTILE_LIMITS, get, serve_inprocess

pytestmark = pytest.mark.system  # no server, no socket; but fuzzed client schemas are compiled in child processes

EXAMPLES = int(os.environ.get("LOCALJUDGE_SCHEMATHESIS_EXAMPLES", "40"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
SETTINGS = hypothesis.settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(hypothesis.HealthCheck), derandomize=True
)
# the flags: test_hostile_serve's small limits, client schemas on the automaton path (the compile queue and its
# limits are that path's), and a short generation budget. Not its 10 KB automaton cache cap: this app writes to the
# session's shared cache (tests/conftest.py SHARED_CACHES), which the cap would empty; test_hostile_serve tests the cap
FLAGS = (*HOSTILE_LIMITS, "--n-ctx", "512", "--text-tokens", "16", "--field-tokens", "24")


@pytest.fixture(scope="module")
def fuzzed():
    """The in-process app the fuzzing runs against (its own module-long engine and counters)."""
    with serve_inprocess(*FLAGS) as app:
        yield app


@pytest.fixture(scope="module")
def served_document(fuzzed):
    """The app's own GET /openapi.json, as schemathesis reads it."""
    s, doc = get(fuzzed, "/openapi.json")
    assert s == 200 and "/v1/chat/completions" in doc["paths"]
    assert {"/api/chat", "/api/generate", "/api/tags", "/api/ps", "/api/show", "/api/version"} <= set(doc["paths"])
    return schemathesis.openapi.from_dict(doc)


def _operations() -> list[tuple[str, str]]:
    """(METHOD, path) of every operation the served document lists (built here from the same endpoint table, so the
    tests are named at collection; the fixture checks the served document lists them)."""
    from localjudge.serve.openapi import document
    from localjudge.serve.routes import ENDPOINTS

    return [(m.upper(), p) for p, ops in document(ENDPOINTS, "m", "0")["paths"].items() for m in ops]


@pytest.mark.parametrize(("method", "path"), _operations())
def test_every_operation_answers_as_its_document_says_and_never_a_server_error(served_document, fuzzed, method, path):
    """The operation's cases (schemathesis's, from the served document; `SETTINGS` bound them) sent to the app in this
    process with Host 127.0.0.1, as a loopback client sends them; each answer checked by `CHECKS`."""
    operation = served_document[path][method]
    examples = operation.get_strategies_from_examples()  # the document's own examples first, each sent once
    fuzzed_cases = st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE))

    def send(case):
        kwargs = case.as_transport_kwargs(base_url="http://127.0.0.1")
        kwargs.pop("timeout", None)
        cookies = kwargs.pop("cookies", None) or {}  # none in the document; sent as the header a client would send
        if cookies:
            kwargs["headers"] = {**kwargs.get("headers", {}), "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}
        if isinstance(kwargs.get("data"), (bytes, str)):  # requests' raw body is httpx's `content`
            kwargs["content"] = kwargs.pop("data")
        response = fuzzed.client.request(**kwargs)
        case.validate_response(response, checks=CHECKS)

    if examples:
        hypothesis.settings(SETTINGS, max_examples=len(examples))(hypothesis.given(st.one_of(examples))(send))()
    SETTINGS(hypothesis.given(fuzzed_cases)(send))()


def test_the_fuzzed_app_counted_no_error(fuzzed):
    """After the fuzzing above (this module's tests run in order): no request was a server error."""
    s, health = get(fuzzed, "/health")
    assert s == 200 and health["errors"] == 0
