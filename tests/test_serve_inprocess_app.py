"""The in-process serve app the protocol tests drive (tests/serve_support.py `serve_inprocess`) leaves the process as
it found it: the model it loaded is the process's shared load, which later tests in the same worker use."""

from __future__ import annotations

import pytest
from serve_support import serve_inprocess

from localjudge.engine import DecodeOptions, Message, load_engine
from localjudge.formats import YesNoJSON

pytestmark = pytest.mark.model


def test_the_default_model_an_in_process_app_served_still_decodes_after_the_app_is_gone(_localjudge_home):
    # keyed_app loaded the default model through --model and closed it on exit: the next test in that worker that
    # ran the default model (test_otel_run, through the CLI) crashed the worker with a segfault
    with serve_inprocess("--no-precompile") as app:
        assert app.state.engine is load_engine()  # the shared load, not a copy
    g = load_engine().generate([Message(role="user", content="Is Paris in France?")], YesNoJSON(field_tokens=4), DecodeOptions())
    assert g.stop_reason in ("final", "eos") and YesNoJSON(field_tokens=4).parse(g.text) is not None
