"""The promptfoo and Inspect AI grading prompts serve's catalog holds are what the installed clients send: recorded
again from the real clients by the catalog generator's loopback recorder (no model; apart from
tests/test_serve_framework_contracts_real.py, whose real server this does not need)."""

from __future__ import annotations

import pytest
from serve_support import promptfoo_cli

from localjudge.serve.core.catalog import framework_rows

pytestmark = [pytest.mark.system, pytest.mark.slow]


def test_the_promptfoo_and_inspect_prompts_are_what_the_installed_clients_send():
    """Recorded again from the real clients (promptfoo's npm CLI: `llm-rubric`, `model-graded-closedqa`, `factuality`;
    Inspect AI's OpenAI-compatible provider) by the generator's loopback recorder: an upgrade that changes their
    grading prompts fails here, naming them."""
    from scripts.catalog import make_framework_prompt_catalog as mod

    on_disk = {r["judge"]: r for r in framework_rows()[1:] if r["judge"].split(".")[0] in ("promptfoo", "inspect")}
    cli, why = promptfoo_cli()
    if cli is None:
        pytest.skip(why)
    assert cli == mod.PROMPTFOO
    parts = [mod.promptfoo_entries(), mod.inspect_entries()]
    built = {r["judge"]: r for r in mod.merge(parts)[0]}
    changed = sorted(k for k in on_disk.keys() | built.keys() if on_disk.get(k) != built.get(k))
    assert not changed, f"rerun scripts/catalog/make_framework_prompt_catalog.py: these prompts changed: {changed}"
    promptfoo = {"promptfoo.llm-rubric", "promptfoo.model-graded-closedqa", "promptfoo.factuality"}
    assert promptfoo <= built.keys(), "promptfoo's three default model-graded assertions, each recorded"
