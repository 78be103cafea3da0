"""A resumed run keeps the model file it began with: the default model's shipped file for a run an earlier release
judged with it.

The default model loads converted to this CPU's fast weight type (engine/layout.py) since this release; a run
directory whose stored run was judged by the shipped file (its recorded digest is the registry's pin) would otherwise
find none of its finished cells in the cache (the digest is part of every cell's key) and judge them again with another
file. `resumed_model` gives such a run the `layout=shipped` option, unless the user chose a layout (the option or
$LOCALJUDGE_LAYOUT) or handed an engine, and says so in one line on stderr.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..engine.layout import LAYOUT_ENV
from ..engine.model_spec import ModelSpec
from ..errors import LocalJudgeError
from ..models.registry import resolve_model
from ..store.db import Store
from .record import RunRecord, stored_record


def resumed_model(model: ModelSpec, out: Path | None) -> ModelSpec:
    """`model`, or the same model with `layout=shipped` when `out` holds a run that this registry model's shipped
    file judged (see the module docstring)."""
    store_path = None if out is None else Path(out) / "results.sqlite"
    if store_path is None or not store_path.is_file() or model.engine is not None:
        return model
    if "layout" in model.options or os.environ.get(LAYOUT_ENV):
        return model
    ref = model.ref()
    if ref.scheme != "llama":
        return model
    try:
        info = resolve_model(ref.target)
    except LocalJudgeError:
        return model  # the run reports it when it loads the model
    if info.entry.get("layout") != "auto" or not info.sha256:
        return model
    with Store(store_path) as store:
        run_id = store.latest_run()
        record = stored_record(store, run_id) if run_id is not None else RunRecord()
    if record.model_id != info.name or record.model_sha256 != info.sha256:
        return model
    sys.stderr.write(
        f"localjudge: {out} was judged by {info.name}'s shipped file (sha256 {info.sha256[:12]}…); resuming with it "
        "(layout=shipped), so its finished cells are not judged again\n"
    )
    return ModelSpec(spec=model.spec, options={**model.options, "layout": "shipped"})


__all__ = ["resumed_model"]
