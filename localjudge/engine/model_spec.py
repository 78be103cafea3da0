"""`ModelSpec`: which model judges, as data (a spec and its backend's options), and the one `ModelRef` built from it.

A run's model travels as this value: from the command line or the Python API into the run's spec
(run/spec.py), to panels and cascades, and pickled to Ray workers. Its `ref()` is built once per process, at
first use, and kept; a worker unpickles the data alone and builds its own. An engine already loaded (`engine=`)
stays in the process that loaded it: it is not data, so it is left out of pickles and JSON.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .backends import BackendOptions, ModelRef
from .base import Engine


class ModelSpec(BaseModel):
    """A model spec (`llama:`/`scripted:`/`server:`, a registry name, a .gguf path; None: the default model) with
    the backend options set for it (unset ones are the backend's defaults), or an engine already loaded."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    spec: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    engine: Engine | None = Field(default=None, exclude=True)
    _ref: ModelRef | None = PrivateAttr(default=None)

    @classmethod
    def given(
        cls,
        model: str | os.PathLike[str] | None = None,
        options: Mapping[str, Any] | BackendOptions | None = None,
        engine: Engine | None = None,
    ) -> ModelSpec:
        """The spec of `model` with `options` as given; validated when `ref()` is first called (a panel's run
        never builds its top-level model's reference: its members are the models)."""
        opts = options.model_dump(exclude_unset=True) if isinstance(options, BackendOptions) else dict(options or {})
        return cls(spec=None if model is None else os.fspath(model), options=opts, engine=engine)

    def member(self, model: str | Engine) -> ModelSpec:
        """Another model (a panel member, an escalation model) with these options."""
        return ModelSpec(spec=None, engine=model) if isinstance(model, Engine) else ModelSpec(spec=model, options=self.options)

    @classmethod
    def of(
        cls,
        model: str | os.PathLike[str] | None = None,
        options: Mapping[str, Any] | BackendOptions | None = None,
        engine: Engine | None = None,
    ) -> ModelSpec:
        """The spec of `model` with `options`, validated by its backend now (a bad key is an `InputError`); the
        `ModelRef` built for that is the one `ref()` returns."""
        ref = ModelRef(model, options, engine=engine)
        out = cls(spec=ref.spec, options=ref.options.model_dump(exclude_unset=True), engine=engine)
        out._ref = ref
        return out

    def ref(self) -> ModelRef:
        """The model reference (backend found, options validated, nothing loaded), built on first call and kept."""
        if self._ref is None:
            self._ref = ModelRef(self.spec, self.options, engine=self.engine)
        return self._ref

    def __getstate__(self) -> dict[Any, Any]:
        """Pickled as data: no engine, no reference (the receiving process builds its own)."""
        state = dict(super().__getstate__())
        state["__dict__"] = {**state["__dict__"], "engine": None}
        state["__pydantic_private__"] = {"_ref": None}
        return state


__all__ = ["ModelSpec"]
