"""Model backends: a model spec in, an engine out, with typed options and an identity.

    llama:NAME_OR_PATH     a GGUF model in this process (llama.cpp); the scheme may be left out:
                           a registry name, a path, or nothing (the default model) means llama
    scripted:FILE          canned answers, for your own tests (`--option response=TEXT` for one answer)
    server:URL#MODEL       any OpenAI-compatible server (registered by localjudge.engine.server)

Each backend declares an `Options` model (pydantic, unknown keys refused), `identity(target,
options)`: the model and the settings that change outputs, computed without loading (the run record
and every cache key use it), and `load(target, options)`: the engine. `ModelRef` holds one spec with
validated options; `load_engine` loads each (spec, options) once per process.

Backends are registered by scheme with the dotted path of their class, imported on first use, so a
backend's heavy dependencies load only when a spec names it. `register_backend` adds your own; an
installed package adds one through the `localjudge.backends` entry point group (plugins.py), looked up
when a spec names a scheme not registered here. `Backend.capabilities` says what its engines can do
(engine/capabilities.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from importlib import import_module
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import jsonio
from ..errors import InputError, ModelNotFoundError
from .base import Engine, ModelIdentity, ScriptedEngine
from .capabilities import Capability

DEFAULT_SCHEME = "llama"
_SCHEME_RE = re.compile(r"([a-z][a-z0-9+.-]*):(.*)", re.S)


class BackendOptions(BaseModel):
    """Base of every backend's options: unknown keys are refused; strings from the CLI are coerced."""

    model_config = ConfigDict(extra="forbid")


class WorkerResources(BaseModel):
    """One worker's share of a machine for an engine: CPUs, rows decoded side by side, the options it loads with."""

    cpus: int = 1
    parallel: int = 1
    options: dict[str, Any] = Field(default_factory=dict)


class Backend(ABC):
    """One way of running a model; subclasses set `scheme`, `Options` and implement the two methods."""

    scheme: ClassVar[str]
    Options: ClassVar[type[BackendOptions]] = BackendOptions
    summary: ClassVar[str] = ""
    capabilities: ClassVar[Capability] = Capability.NONE  # what its engines can do at most, known without loading

    @abstractmethod
    def identity(self, target: str | None, options: BackendOptions) -> ModelIdentity:
        """The model and its output-changing settings, without loading it (it may read or hash the file)."""

    @abstractmethod
    def load(self, target: str | None, options: BackendOptions) -> Engine:
        """Load the model and return its engine."""

    def options(self, given: Mapping[str, Any] | BackendOptions | None = None) -> BackendOptions:
        """Validate options (from `--option key=value` or Python); one-line `InputError` naming the valid keys."""
        if isinstance(given, self.Options):
            return given
        data = dict(given.model_dump(exclude_unset=True) if isinstance(given, BaseModel) else given or {})
        try:
            return self.Options(**data)
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(x) for x in err.get("loc", ())) or "?"
            valid = ", ".join(self.Options.model_fields)
            if err.get("type") == "extra_forbidden":
                raise InputError(f"--option {key}: not an option of {self.scheme}: models; valid keys: {valid}") from None
            raise InputError(f"--option {key}={data.get(key)!r}: {err.get('msg')}; valid keys: {valid}") from None

    def worker_resources(self, options: BackendOptions) -> WorkerResources:
        """What one engine of `options` needs as a worker of its own (a Ray actor): the CPUs it keeps busy (its
        `n_threads`, pinned to 1 when unset, where the backend has that option; else 1), the rows it decodes side by
        side (`n_parallel`, else 1) and the options the worker loads it with. Override where the defaults do not fit."""
        given = options.model_dump(exclude_unset=True)
        fields = type(options).model_fields
        threads = int(options.model_dump().get("n_threads") or 1) if "n_threads" in fields else 1
        parallel = int(options.model_dump().get("n_parallel") or 1) if "n_parallel" in fields else 1
        return WorkerResources(
            cpus=threads, parallel=parallel, options={**given, "n_threads": threads} if "n_threads" in fields else given
        )

    def describe_options(self) -> list[tuple[str, str, str]]:
        """(key, type, description with default) for each option: what `localjudge models options` prints."""
        out = []
        for name, f in self.Options.model_fields.items():
            ann = getattr(f.annotation, "__name__", None) or str(f.annotation).replace("typing.", "")
            default = "" if f.default is None else f" (default {f.default!r})"
            out.append((name, ann, (f.description or "") + default))
        return out


# ---------------------------------------------------------------------------------------- registry

_REGISTRY: dict[str, str | Backend] = {
    "llama": "localjudge.engine.llama:LlamaBackend",
    "scripted": "localjudge.engine.backends:ScriptedBackend",
    "server": "localjudge.engine.server:ServerBackend",
}


def register_backend(scheme: str, backend: Backend | str) -> None:
    """Add (or replace) the backend of `scheme`: an instance, or "module:Class" imported on first use."""
    if not _SCHEME_RE.fullmatch(scheme + ":"):
        raise InputError(f"backend scheme {scheme!r} must be lowercase letters, digits, '+', '.' or '-'")
    _REGISTRY[scheme] = backend


def backend_schemes() -> list[str]:
    """The registered schemes, then those installed plugins declare (their metadata is read, nothing imported)."""
    from ..registry import plugins

    return list(_REGISTRY) + [s for s in plugins.names(plugins.BACKENDS) if s not in _REGISTRY]


def _known(scheme: str) -> bool:
    from ..registry import plugins

    return scheme in _REGISTRY or plugins.find(plugins.BACKENDS, scheme) is not None


def _from_plugin(scheme: str) -> Backend | None:
    """The backend an installed plugin declares for `scheme`, loaded and registered; None when none does."""
    from ..registry import plugins

    ep = plugins.find(plugins.BACKENDS, scheme)
    if ep is None:
        return None
    obj = plugins.load(ep)
    try:
        backend = obj() if isinstance(obj, type) and issubclass(obj, Backend) else obj
    except Exception as e:
        raise plugins.PluginError(f"{plugins.describe(ep)}: {type(e).__name__} while creating the backend: {e}") from None
    if not isinstance(backend, Backend):
        raise plugins.PluginError(
            f"{plugins.describe(ep)} gives {type(obj).__name__}, not a localjudge.engine.Backend subclass; point it at one"
        )
    _REGISTRY[scheme] = backend
    return backend


def get_backend(scheme: str) -> Backend:
    """The backend registered for `scheme` (imported on first use), else an installed plugin's."""
    entry = _REGISTRY.get(scheme)
    if entry is None:
        entry = _from_plugin(scheme)
    if entry is None:
        known = ", ".join(backend_schemes())
        raise InputError(f"unknown model backend {scheme!r}; known: {known} (e.g. llama:PATH.gguf)")
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        try:
            cls = getattr(import_module(module), attr)
        except ModuleNotFoundError as e:
            raise InputError(f"model backend {scheme!r} cannot be loaded ({e}); install the extra it needs") from None
        entry = cls()
        _REGISTRY[scheme] = entry
    assert isinstance(entry, Backend)
    return entry


def parse_spec(spec: str | os.PathLike[str] | None) -> tuple[str, str | None]:
    """A model spec → (scheme, target). No scheme: llama (a registry name, a path, or None = default).

    A Windows drive letter or an existing file whose name holds a colon is a path, not a scheme."""
    if spec is None:
        return DEFAULT_SCHEME, None
    text = os.fspath(spec)
    m = _SCHEME_RE.fullmatch(text)
    if m is None or (len(m.group(1)) == 1) or (m.group(1) not in _REGISTRY and Path(text).exists()):
        return DEFAULT_SCHEME, text or None
    if not _known(m.group(1)):
        get_backend(m.group(1))  # raises: unknown scheme, naming the known ones
    return m.group(1), m.group(2) or None


# ------------------------------------------------------------------------------------- references

_ENGINES: dict[tuple[str, str | None, str], Engine] = {}
_ENGINES_LOCK = threading.RLock()  # re-entrant: a backend's load may load another model through a ModelRef


class ModelRef:
    """A model spec with validated options: its identity without loading; the engine on first use.

    With `engine=` an already loaded engine is used as it is (its own identity)."""

    def __init__(
        self,
        spec: str | os.PathLike[str] | None = None,
        options: Mapping[str, Any] | BackendOptions | None = None,
        *,
        engine: Engine | None = None,
    ):
        self.spec = None if spec is None else os.fspath(spec)
        self._engine = engine
        self._identity: ModelIdentity | None = None
        if engine is not None:
            self.scheme, self.target = engine.identity().backend, self.spec
            self.backend: Backend | None = None
            self.options: BackendOptions = BackendOptions()
            return
        self.scheme, self.target = parse_spec(spec)
        self.backend = get_backend(self.scheme)
        self.options = self.backend.options(options)

    @property
    def loaded(self) -> bool:
        """Whether the engine is in hand (given, or loaded through this reference)."""
        return self._engine is not None

    def identity(self) -> ModelIdentity:
        """The engine's identity when loaded, else the backend's (computed once)."""
        if self._identity is None:
            if self._engine is not None:
                self._identity = self._engine.identity()
            else:
                assert self.backend is not None
                self._identity = self.backend.identity(self.target, self.options)
        return self._identity

    def engine(self) -> Engine:
        """Load the model (once per process for the same spec and options)."""
        if self._engine is None:
            assert self.backend is not None
            key = (self.scheme, self.target, self.options.model_dump_json(exclude_unset=True))
            with _ENGINES_LOCK:  # threads asking at once share one load (a framework's pool calls its scorers so)
                eng = _ENGINES.get(key)
                if eng is None:
                    eng = self.backend.load(self.target, self.options)
                    _ENGINES[key] = eng
            self._engine = eng
        return self._engine

    def __repr__(self) -> str:
        return f"ModelRef({self.scheme}:{self.target or ''}, {self.options!r})"


def load_engine(model: str | os.PathLike[str] | None = None, **options: Any) -> Engine:
    """Load a model once per process: a spec (`llama:`/`scripted:`/`server:`, or a registry name,
    a .gguf path, None for the default) and its backend's options (n_ctx=..., n_threads=...)."""
    return ModelRef(model, options).engine()


# ---------------------------------------------------------------------------------------- scripted


class ScriptedOptions(BackendOptions):
    """Options of `scripted:` models."""

    response: str | None = Field(None, description="one answer for every request, instead of a file of answers")
    cycle: bool = Field(True, description="start the file's answers again when they run out")
    n_ctx: int = Field(4096, ge=16, description="context window the fake engine reports")


class ScriptedBackend(Backend):
    """`scripted:FILE`: canned answers in order. FILE: .json (an array of strings), .jsonl (one answer
    per line; a line that is a JSON string is that string, any other line is the answer as written) or
    any other text file (one answer per line). `--option response=TEXT`: that answer every time."""

    scheme = "scripted"
    Options = ScriptedOptions
    capabilities = Capability.NONE  # canned texts: no vocabulary, no token probabilities
    summary = "canned answers from a file, for your own tests"

    def _answers(self, target: str | None, options: BackendOptions) -> list[str]:
        assert isinstance(options, ScriptedOptions)
        if options.response is not None:
            if target:
                raise InputError("scripted: give either a file of answers (scripted:FILE) or --option response=TEXT, not both")
            return [options.response]
        if not target:
            raise InputError("scripted: needs a file of answers (--model scripted:answers.jsonl) or --option response=TEXT")
        p = Path(target).expanduser()
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise ModelNotFoundError(
                f"scripted answers file {str(p)!r} cannot be read ({e.strerror or e}); check the path"
            ) from None
        if p.suffix.lower() == ".json":
            try:
                data = jsonio.loads(text)
            except json.JSONDecodeError as e:
                raise InputError(f"{p}: not valid JSON ({e.msg}, line {e.lineno}); give a JSON array of answer strings") from None
            if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
                raise InputError(f"{p}: must be a JSON array of answer strings")
            answers = data
        elif p.suffix.lower() == ".jsonl":
            answers = []
            for line in text.splitlines():
                if not line.strip():
                    continue
                try:
                    v = jsonio.loads(line)
                except json.JSONDecodeError:
                    v = None
                answers.append(v if isinstance(v, str) else line)
        else:
            answers = [line for line in text.splitlines() if line.strip()]
        if not answers:
            raise InputError(f"{p}: no answers in the file; give at least one")
        return answers

    def identity(self, target: str | None, options: BackendOptions) -> ModelIdentity:
        """model id `scripted:<file name>` (or `scripted:response`), digest = sha256 of the answers."""
        answers = self._answers(target, options)
        digest = hashlib.sha256(json.dumps(answers, ensure_ascii=False).encode()).hexdigest()
        name = f"scripted:{Path(target).name}" if target else "scripted:response"
        return ModelIdentity(backend="scripted", model_id=name, digest=digest)

    def load(self, target: str | None, options: BackendOptions) -> Engine:
        """A `ScriptedEngine` over the answers."""
        assert isinstance(options, ScriptedOptions)
        ident = self.identity(target, options)
        return ScriptedEngine(
            self._answers(target, options), model_id=ident.model_id, n_ctx=options.n_ctx, cycle=options.cycle, digest=ident.digest
        )
