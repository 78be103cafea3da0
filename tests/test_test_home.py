"""The suite's own habit: every test runs in a temporary home of its own, so no test writes the user's real
cache and no test sees what another left in the shared run store."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from localjudge.paths import cache_home, models_home, shared_store

REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()  # the account's home, whatever HOME says


def _outside_real_home(p: Path) -> bool:
    return not p.resolve().is_relative_to(REAL_HOME) or REAL_HOME == Path("/")


@pytest.mark.parametrize("turn", ["first", "second"])
def test_each_test_starts_with_an_empty_shared_store_of_its_own(turn):
    store = shared_store()
    assert not store.exists(), f"{turn}: a store left by an earlier test: {store}"
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(turn)


def test_the_homes_a_test_sees_are_outside_the_real_home():
    for p in (cache_home(), models_home(), shared_store()):
        assert _outside_real_home(p), p


@pytest.mark.system
def test_a_subprocess_started_without_localjudge_variables_still_stays_out_of_the_real_home(tmp_path):
    code = (
        "import json; from localjudge.paths import cache_home, models_home, shared_store;"
        "print(json.dumps([str(cache_home()), str(models_home()), str(shared_store())]))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALJUDGE_")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    for p in json.loads(r.stdout):
        assert _outside_real_home(Path(p)), p
