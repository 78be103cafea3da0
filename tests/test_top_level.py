"""The top level of localjudge/ (issue 30): packages, and only the public API, errors, paths, testing and __main__
as modules; the modules that moved into packages still import from their old paths for one release, with a
DeprecationWarning; the import graph has no circles."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "localjudge"

# old path -> (new module, one name the old path gave)
MOVED = {
    "localjudge.stats": ("localjudge.statistics", "wilson_interval"),
    "localjudge.frames": ("localjudge.api", "to_frame"),
    "localjudge.runner.frames": ("localjudge.api", "to_frame"),  # issue 44: runner/ folded into api.py
    "localjudge.trust.panel": ("localjudge.ensembles.panel", "combine"),  # issue 44: trust/ split
    "localjudge.trust.escalation": ("localjudge.ensembles.escalation", "choose_escalation"),
    "localjudge.http_limits": ("localjudge.http", "read_body"),
    "localjudge.plugins": ("localjudge.registry.plugins", "PluginError"),
}


def test_the_top_level_holds_only_the_public_api_errors_paths_testing_and_main_as_modules():
    modules = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__", "__main__", "api", "errors", "jsonio", "paths", "testing"]  # jsonio: issue 43's bounded reader


def _fresh(code: str) -> str:
    """Runs `code` in a new interpreter (a moved module warns on its first import only) with warnings as errors
    except the DeprecationWarning under test, which is printed."""
    run = subprocess.run(
        [sys.executable, "-W", "error", "-W", "always::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout + run.stderr


@pytest.mark.system
@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_top_level_path_imports_the_new_module_with_a_deprecation_warning(old):
    new, name = MOVED[old]
    out = _fresh(
        f"import importlib, {new} as new\n"
        f"old = importlib.import_module({old!r})\n"
        f"from {old} import {name}\n"
        f"assert old is new and {name} is new.{name}\n"
        f"assert new.__spec__.name == {new!r}, new.__spec__.name  # the old path does not rename the new module\n"
    )
    assert f"DeprecationWarning: {old} moved to {new}; the old path goes in the next release" in out


@pytest.mark.system
@pytest.mark.parametrize("old", sorted(m for m in MOVED if m.count(".") == 1))  # an attribute of localjudge itself
def test_an_old_top_level_path_read_as_an_attribute_gives_the_new_module_with_the_warning(old):
    new, _ = MOVED[old]
    attribute = old.rpartition(".")[2]
    out = _fresh(f"import localjudge, {new} as new\nassert localjudge.{attribute} is new\n")
    assert f"{old} moved to {new}" in out


def test_the_public_evaluate_is_the_one_evaluate_of_the_api():
    import localjudge
    from localjudge.api import evaluate

    assert localjudge.evaluate is evaluate


def test_the_old_runner_path_is_an_alias_only_and_its_evaluate_warns():
    import warnings

    import localjudge.api as api
    import localjudge.runner as runner

    assert runner.execute is api.execute
    assert sorted(p.name for p in Path(runner.__file__).parent.glob("*.py")) == ["__init__.py"]
    from localjudge.errors import UnknownJudgeError

    with warnings.catch_warnings(record=True) as seen, pytest.raises(UnknownJudgeError):
        warnings.simplefilter("always")
        runner.evaluate([{"input": "q", "output": "a"}], ["no_such_judge_anywhere"], model="scripted:")
    assert any("localjudge.runner.evaluate is deprecated" in str(w.message) for w in seen)


def test_every_entry_point_and_script_in_pyproject_resolves():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    targets = list(project.get("scripts", {}).values())
    targets += [t for group in project.get("entry-points", {}).values() for t in group.values()]
    assert targets
    for target in targets:
        module, _, attr = target.partition(":")
        obj = importlib.import_module(module)
        for part in filter(None, attr.split(".")):
            obj = getattr(obj, part)
        assert callable(obj) or obj is not None, target


def _import_graph() -> dict[str, set[str]]:
    """Module -> the localjudge modules it imports, counting every import: module level, inside functions and
    under TYPE_CHECKING (`from . import x` of a submodule is an edge to the submodule, not to the package)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, (path, is_package) in modules.items():
        package = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for name in names:
                target = known(name) if name.startswith("localjudge") else None
                if target and target != module:
                    graph[module].add(target)
    return graph


def test_no_module_of_localjudge_imports_itself_back_through_others():
    graph = _import_graph()
    circles = []
    for start in graph:  # a module that reaches itself again is on a circle
        seen, stack = set(), list(graph[start])
        while stack:
            m = stack.pop()
            if m == start:
                circles.append(start)
                break
            if m not in seen:
                seen.add(m)
                stack.extend(graph[m])
    assert not circles, f"modules on an import circle: {sorted(circles)}"
