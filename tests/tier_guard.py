"""The suite's three tiers, enforced: a test is *unit* unless marked `model` (a real model decodes in this process)
or `system` (other processes, loopback sockets: servers, the browser, Ray, the wheel in clean venvs).

While a unit test's fixtures are set up and while it runs (not its teardown, where the session's servers and
engines are closed after whichever test ran last), loading a model's weights, decoding with llama.cpp, starting a
process and binding an internet-family socket or connecting one to this machine are violations: each is recorded
and the test fails with a line saying which tier to mark it, even when the code under test caught the error the
guard raised. So `scripts/test.sh --fast` (the unit tier) loads no model, and the whole run keeps it so. Allowed:
a vocabulary-only load (the real tokenizer, no weights), the programs a library starts once on first use
(INCIDENTAL), and whatever threads alive before the test began do (an earlier test's engine or server).

LOCALJUDGE_TEST_TIER_AUDIT=PATH guards every test whatever its marks and writes the violations found as JSON lines
(node id, tier the violation needs, what happened): how the marks were first chosen and how to re-check them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

TIERS = ("model", "system")
# pytest-timeout's limit per test by tier (setup, call and teardown), unless a test sets its own `timeout` mark:
# far above the slowest test of each tier on 2 cores (unit 5.7 s, scripts/test.sh --fast at 12:38 on 2026-11-29;
# model and system 100-290 s in the whole run), so a hung test is named and stopped and a slow machine is not failed
TIMEOUTS = {"unit": 120, "model": 1200, "system": 1800}
_violations: list[tuple[str, str]] = []  # (tier, what) for the test being run


class TierViolation(RuntimeError):
    """Raised where a unit-tier test reaches for a model, a process or a socket."""


def _violate(tier: str, what: str) -> None:
    _violations.append((tier, what))
    raise TierViolation(f"{what}: a unit-tier test may not; mark the test @pytest.mark.{tier} (tests/tier_guard.py)")


def take_violations() -> list[tuple[str, str]]:
    """The (tier, what) recorded so far in this test, cleared: for tests of the guard itself."""
    found, _violations[:] = list(_violations), []
    return found


def tier_of(item: pytest.Item) -> str:
    """The item's tier: `system` over `model` over `unit`."""
    names = {m.name for m in item.iter_markers()}
    return "system" if "system" in names else "model" if "model" in names else "unit"


def threads_now() -> frozenset[int | None]:
    """The threads alive now, but the main one: what `guarded` lets through."""
    return frozenset(t.ident for t in threading.enumerate() if t is not threading.main_thread())


@contextmanager
def guarded(earlier: frozenset[int | None] | None = None) -> Iterator[None]:
    """Weights loads, decodes, process starts and loopback sockets raise TierViolation inside the block, except
    from `earlier` threads (default: those alive now)."""
    import _posixsubprocess

    import llama_cpp
    import llama_cpp.llama_cpp as low

    # threads alive before the test (an earlier model test's engine finishing a cancelled job, a module's server
    # thread) are not the test's doing: what they call passes; threads the test starts are guarded like it
    before = threads_now() if earlier is None else earlier

    def theirs() -> bool:
        return threading.get_ident() in before

    patches: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, wrap: Any) -> None:
        """Replace owner.name by wrap(what it was); put back when the block ends."""
        real = getattr(owner, name)
        patches.append((owner, name, real))
        setattr(owner, name, wrap(real))

    def load(real: Any) -> Any:
        def guard(path: bytes, params: Any) -> Any:
            if not getattr(params, "vocab_only", False) and not theirs():
                _violate("model", f"loaded the weights of {path.decode(errors='replace')}")
            return real(path, params)

        return guard

    def decode(real: Any) -> Any:
        def guard(*args: Any, **kwargs: Any) -> Any:
            if not theirs():
                _violate("model", "decoded with llama.cpp (llama_decode)")
            return real(*args, **kwargs)

        return guard

    def starter(argv_at: int) -> Any:
        def wrap(real: Any) -> Any:
            def guard(*args: Any, **kwargs: Any) -> Any:
                argv = [a.decode(errors="replace") if isinstance(a, bytes) else str(a) for a in args[argv_at] or ()]
                if not _incidental(argv) and not theirs():
                    _violate("system", f"started a process ({' '.join(argv)[:80]})")
                return real(*args, **kwargs)

            return guard

        return wrap

    def fork(real: Any) -> Any:
        def guard() -> int:
            if not theirs():
                _violate("system", "started a process (os.fork)")
            return real()

        return guard

    def inet(method: str) -> Any:
        def wrap(real: Any) -> Any:
            def guard(self: socket.socket, *args: Any, **kwargs: Any) -> Any:
                if self.family in (socket.AF_INET, socket.AF_INET6) and (method == "bind" or _loopback(args[0])) and not theirs():
                    _violate("system", f"opened a network socket ({method} {args[0]})")
                return real(self, *args, **kwargs)

            return guard

        return wrap

    for owner in (llama_cpp, low):
        patch(owner, "llama_model_load_from_file", load)
        patch(owner, "llama_decode", decode)
    patch(_posixsubprocess, "fork_exec", starter(0))  # multiprocessing's spawn
    patch(subprocess, "_fork_exec", starter(0))  # subprocess holds its own name for it
    patch(os, "posix_spawn", starter(1))
    patch(os, "posix_spawnp", starter(1))
    patch(os, "fork", fork)
    for method in ("connect", "connect_ex", "bind"):
        patch(socket.socket, method, inet(method))
    try:
        yield
    finally:
        for owner, name, old in reversed(patches):
            setattr(owner, name, old)


# Programs a library starts once per process on its first use, whichever test that happens in (MLflow's GitPython
# runs git; ctypes.util.find_library runs ldconfig or the compiler; multiprocessing starts its resource tracker):
# not what the test does, so no tier, and never a failure that depends on the order tests ran in.
INCIDENTAL = frozenset({"git", "ldconfig", "ldconfig.real", "gcc", "cc", "ld", "objdump", "uname"})


def _incidental(argv: list[str]) -> bool:
    return bool(argv) and (os.path.basename(argv[0]) in INCIDENTAL or any("multiprocessing.resource_tracker" in a for a in argv))


def _loopback(address: Any) -> bool:
    """A connection to this machine (a server a test started); a library's call home to the internet (litellm's
    price list on import) is neither the test's doing nor reachable here, so it is no tier."""
    host = str(address[0]) if isinstance(address, tuple) and address else ""
    return host in ("localhost", "::1", "0.0.0.0") or host.startswith("127.") or host.startswith("::ffff:127.")


def _audit_path() -> str | None:
    return os.environ.get("LOCALJUDGE_TEST_TIER_AUDIT") or None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    return (yield from _run_guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    return (yield from _run_guarded(item))


_EARLIER = pytest.StashKey[frozenset[int | None]]()


def _run_guarded(item: pytest.Item) -> Any:
    if tier_of(item) != "unit" and not _audit_path():
        return (yield)
    # the threads alive when the test's setup began: a thread its own fixtures start is the test's, in its call too
    with guarded(item.stash.setdefault(_EARLIER, threads_now())):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    report = yield
    if not _violations:
        return report
    found, _violations[:] = list(_violations), []
    audit = _audit_path()
    if audit:
        with open(audit, "a", encoding="utf-8") as f:
            for tier, what in found:
                f.write(json.dumps({"nodeid": item.nodeid, "tier": tier, "what": what, "when": call.when}) + "\n")
    tier = "system" if any(t == "system" for t, _ in found) else "model"
    report.outcome = "failed"
    report.longrepr = f"tier: {found[0][1]} in a unit-tier test; mark it @pytest.mark.{tier} (tests/tier_guard.py)"
    return report


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIMEOUTS[tier_of(item)]))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "model: a real model decodes in the test's process (tests/tier_guard.py)")
    config.addinivalue_line("markers", "system: the test starts processes or opens network sockets (tests/tier_guard.py)")


__all__ = ["TIERS", "TIMEOUTS", "TierViolation", "guarded", "take_violations", "threads_now", "tier_of"]
