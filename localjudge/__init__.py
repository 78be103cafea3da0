"""localjudge: LLM-as-a-judge that runs on your own machine.

    import localjudge
    r = localjudge.judge("correctness", input="What is 2+2?", output="4", ground_truth="4")
    print(r.value, r.score, r.rationale)

Public names are imported lazily so `import localjudge` (and `localjudge --help`) stays instant.
"""

from __future__ import annotations

import sys
import warnings
from importlib import import_module
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "judge": "api",
    "run_format": "api",
    "judge_conversation": "run.single",  # issue 31: one conversation, as `run` judges it
    "load_engine": "engine",
    "ScriptedEngine": "engine",
    "DecodeOptions": "engine",
    "Message": "engine",
    "Generation": "engine",
    "JudgeResult": "store.results",
    "OutputFormat": "formats",
    "make_format": "formats",
    "YesNoJSON": "formats",
    "ScoreJSON": "formats",
    "PairwiseJSON": "formats",
    "ScoreLines": "formats",
    "FourLine": "formats",
    "Choice": "formats",
    "Statements": "formats",
    "VerdictList": "formats",
    "resolve_model": "models.registry",
    "get_judge": "judges",
    "list_judges": "judges",
    "load_judge_file": "judges",
    "Judge": "judges",
    "evaluate": "api",
    "LocalJudgeError": "errors",
    "ParseError": "errors",
    "InputError": "errors",
    "ModelError": "errors",
    "PromptTooLongError": "errors",
    "StorageError": "errors",
    # trust with fewer labels (issue 33): PPI++ beside labels-only and Rogan–Gladen, the label budget, the bias report
    "estimates": "trust.estimates",
    "ppi_difference": "trust.estimates",
    "label_budget": "trust.estimates",
    "judge_trust": "trust.estimates",
    "Estimate": "trust.estimates",
    "Estimates": "trust.estimates",
    "JudgeTrust": "trust.estimates",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if f"localjudge.{name}" in _MOVED:  # `localjudge.stats` read as an attribute: the moved module, with the warning
        return import_module(f"localjudge.{name}")
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'localjudge' has no attribute {name!r}")
    return getattr(import_module(f"localjudge.{mod}"), name)


# Modules that moved into packages; the old paths import the new module, with a DeprecationWarning, for one release.
_MOVED = {
    "localjudge.model_files": "localjudge.models.files",
    "localjudge.hub": "localjudge.models.hub",
    "localjudge.manifest": "localjudge.models.manifest",
    "localjudge.digest": "localjudge.models.digest",
    "localjudge.align_labels": "localjudge.align.examples",
    "localjudge.align_measure": "localjudge.align.measure",
    "localjudge.align_spec": "localjudge.align.spec",
    "localjudge.align_text": "localjudge.align.text",
    "localjudge.results": "localjudge.store.results",
    "localjudge.atomic": "localjudge.store.atomic",
    "localjudge.exports": "localjudge.run.exports",
    "localjudge.aggregate": "localjudge.run.aggregate",
    "localjudge.pairwise": "localjudge.judges.pairwise",
    "localjudge.agreement": "localjudge.labels.agreement",
    "localjudge.calibration": "localjudge.labels.calibration",
    "localjudge.labels_import": "localjudge.labels.importing",
    "localjudge.engine.constraint": "localjudge.constraints.automaton",
    "localjudge.engine.llg": "localjudge.constraints.llg",
    "localjudge.engine.llg_search": "localjudge.constraints.llg_search",
    "localjudge.formats.llg_bounds": "localjudge.constraints.llg_bounds",
    "localjudge.serve.sandbox": "localjudge.constraints.sandbox",
    "localjudge.batch": "localjudge.run",
    "localjudge.batch.run": "localjudge.run.plain",
    "localjudge.batch.spec": "localjudge.run.spec",
    "localjudge.batch.plan": "localjudge.run.plan",
    "localjudge.batch.loop": "localjudge.run.loop",
    "localjudge.batch.aggregate": "localjudge.run.aggregate",
    "localjudge.batch.exports": "localjudge.run.exports",
    "localjudge.batch.samedata": "localjudge.run.samedata",
    "localjudge.batch.types": "localjudge.run.types",
    # issue 30: the top level holds packages and the public API, errors, paths, testing
    "localjudge.stats": "localjudge.statistics",
    "localjudge.frames": "localjudge.api",
    # issue 44: trust/ split: runs of several models are ensembles/, trust/ keeps the estimates
    **{
        f"localjudge.trust.{m}": f"localjudge.ensembles.{m}"
        for m in ("members", "panel", "cascade", "panel_cascade", "escalation", "parallel", "single")
    },
    # issue 44: runner/ folded into the one evaluate of api.py
    "localjudge.runner.frames": "localjudge.api",
    "localjudge.http_limits": "localjudge.http",
    "localjudge.plugins": "localjudge.registry.plugins",
    # issue 44: the store owns its tables (the labels tables, the view's indexes)
    "localjudge.labels.table": "localjudge.store.labels",
    "localjudge.labels.sessions": "localjudge.store.session_labels",
    "localjudge.view.indexes": "localjudge.store.indexes",
    # issue 44: a judge module named by the metrics it holds (conversations/deepeval_trace.py prints the trace)
    "localjudge.judges.deepeval_goal": "localjudge.judges.deepeval_topic_adherence",
    "localjudge.judges.deepeval_trace": "localjudge.judges.deepeval_trace_metrics",
    # issue 44: serve/ by endpoint (chat/, responses/, ollama/) over one core/; `serve.responses` and `serve.ollama`
    # are now those packages, so their old modules are reached at responses.translate / ollama.translate only
    **{
        f"localjudge.serve.{old}": f"localjudge.serve.{new}"
        for old, new in {
            "errors": "core.errors",
            "wire": "core.wire",
            "state": "core.state",
            "generate": "core.generate",
            "checked": "core.checked",
            "validate": "core.validate",
            "compile_guard": "core.compile_guard",
            "json_mode": "core.json_mode",
            "aliases": "core.aliases",
            "catalog": "core.catalog",
            "reasoning": "core.reasoning",
            "handling": "core.handling",
            "protocol": "core.plan",
            "formats": "core.schemas",
            "answer": "chat.answer",
            "stream": "chat.stream",
            "wire_responses": "responses.wire",
            "responses_route": "responses.route",
            "wire_ollama": "ollama.wire",
            "ollama_models": "ollama.models",
            "run": "server",
        }.items()
    },
}


class _MovedModuleFinder(MetaPathFinder, Loader):
    """Finds a module under its old flat path (`localjudge.hub`) and returns the module at its new one."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        """A spec whose loader returns the moved module, for the old names only."""
        return ModuleSpec(fullname, self) if fullname in _MOVED else None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        """The module at its new path, after a DeprecationWarning that names it."""
        new = _MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old path goes in the next release", DeprecationWarning, stacklevel=2)
        module = import_module(new)
        spec.loader_state = module.__spec__  # the import system sets the old spec on the module next; exec_module undoes it
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the moved module is already imported); puts back the module's own `__spec__`, so its lazy
        relative imports and `importlib.reload` still see its new path."""
        spec = module.__spec__
        if spec is not None and spec.loader is self:
            module.__spec__ = spec.loader_state


sys.meta_path.insert(0, _MovedModuleFinder())  # before any path finder: a stale file of the old name never wins
