"""The tiers are enforced, not declared: these tests are unit tier, so tests/tier_guard.py guards them while they
run, and each reaches for what the unit tier may not have, then checks the guard refused it and recorded it (the
record is what fails a unit test that catches the guard's error), then takes the record away
(tier_guard.take_violations) so the test itself passes."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import tier_guard

from localjudge.models import resolve_model


def _load(vocab_only: bool):
    import llama_cpp

    params = llama_cpp.llama_model_default_params()
    params.vocab_only = vocab_only
    return llama_cpp.llama_model_load_from_file(str(resolve_model(None).path).encode(), params)


def test_a_unit_test_that_loads_the_default_models_weights_is_refused_naming_the_model_mark():
    with pytest.raises(tier_guard.TierViolation, match=r"mark the test @pytest.mark.model"):
        _load(vocab_only=False)
    assert [t for t, _ in tier_guard.take_violations()] == ["model"]


def test_a_unit_test_that_decodes_with_an_engine_loaded_before_it_is_refused():
    import llama_cpp

    with pytest.raises(tier_guard.TierViolation, match=r"mark the test @pytest.mark.model"):
        llama_cpp.llama_decode(None, None)  # a session engine loaded by a model test decodes through here
    assert [t for t, _ in tier_guard.take_violations()] == ["model"]


def test_a_unit_test_that_catches_the_refusal_is_still_failed():
    try:
        _load(vocab_only=False)
    except Exception:  # the code under test swallowing the error must not hide the load
        pass
    assert [t for t, _ in tier_guard.take_violations()] == ["model"]


def test_a_unit_test_may_load_the_real_tokenizer_without_weights():
    import llama_cpp

    model = _load(vocab_only=True)
    assert model
    try:
        assert llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model)) > 40_000
    finally:
        llama_cpp.llama_model_free(model)
    assert tier_guard.take_violations() == []


def test_a_unit_test_that_starts_a_process_is_refused_naming_the_system_mark():
    with pytest.raises(tier_guard.TierViolation, match=r"mark the test @pytest.mark.system"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert [t for t, _ in tier_guard.take_violations()] == ["system"]


def test_a_unit_test_that_opens_a_network_socket_is_refused_naming_the_system_mark():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        with pytest.raises(tier_guard.TierViolation, match=r"mark the test @pytest.mark.system"):
            s.bind(("127.0.0.1", 0))
    assert [t for t, _ in tier_guard.take_violations()] == ["system"]


def test_the_guard_puts_back_what_it_replaced():
    import llama_cpp

    real = llama_cpp.llama_decode
    with tier_guard.guarded():
        assert llama_cpp.llama_decode is not real
    assert llama_cpp.llama_decode is real


def test_the_fast_command_runs_exactly_the_unit_tier():
    script = (Path(__file__).parents[1] / "scripts" / "test.sh").read_text()
    selection = " and ".join(f"not {t}" for t in tier_guard.TIERS)
    assert f'-m "{selection}"' in script


def test_a_program_a_library_starts_once_on_first_use_is_no_violation():
    subprocess.run(["git", "--version"], check=True, capture_output=True)  # MLflow's GitPython, whichever test is first
    assert tier_guard.take_violations() == []


def test_a_unit_test_that_connects_to_a_loopback_server_is_refused_naming_the_system_mark():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        with pytest.raises(tier_guard.TierViolation, match=r"mark the test @pytest.mark.system"):
            s.connect(("127.0.0.1", 9))
    assert [t for t, _ in tier_guard.take_violations()] == ["system"]


class _EarlierThread(threading.Thread):
    """Started when this module is imported, before any test here: stands for an earlier test's engine or server
    thread still at work when a unit test begins."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.go, self.error = threading.Event(), None

    def run(self) -> None:
        self.go.wait()
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
        except BaseException as e:  # reported to the test
            self.error = e


_EARLIER = _EarlierThread()
_EARLIER.start()


def test_a_thread_alive_before_the_unit_test_began_is_not_the_tests_doing():
    _EARLIER.go.set()
    _EARLIER.join(10)
    assert _EARLIER.error is None and tier_guard.take_violations() == []


def test_a_thread_the_unit_test_starts_is_guarded_like_the_test():
    errors: list[BaseException] = []

    def bind() -> None:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
        except tier_guard.TierViolation as e:
            errors.append(e)

    t = threading.Thread(target=bind)
    t.start()
    t.join(10)
    assert len(errors) == 1 and [t for t, _ in tier_guard.take_violations()] == ["system"]


@pytest.fixture
def fixture_thread():
    """A thread the test's own fixture starts, waiting to bind a loopback socket when the test says so."""
    thread = _EarlierThread()
    thread.start()
    yield thread
    thread.go.set()
    thread.join(10)


def test_a_thread_the_unit_tests_own_fixture_starts_is_guarded_in_its_call_too(fixture_thread):
    fixture_thread.go.set()
    fixture_thread.join(10)
    assert isinstance(fixture_thread.error, tier_guard.TierViolation)
    assert [t for t, _ in tier_guard.take_violations()] == ["system"]
