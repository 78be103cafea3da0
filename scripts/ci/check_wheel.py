"""Check a built wheel and sdist against the source tree: what the checkout has, the artefacts ship.

    python scripts/ci/check_wheel.py dist/localjudge-X-py3-none-any.whl [dist/localjudge-X.tar.gz]

The wheel must hold every file of the package in the source tree (every module and every data file:
judge TOMLs, the model registry, report templates, py.typed, whatever is added later under
localjudge/), every data file the code opens through `importlib.resources` or `Path(__file__)`, nothing
from outside the package (tests, scripts, caches), the `localjudge` console script, and each extra of
pyproject.toml in its metadata. The sdist must hold the same package files plus what building needs.
Exits 1 with one line per finding; prints one summary line when everything is there.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "localjudge"
# What the code opens at run time, by how it names it (checked to exist in the tree AND in the wheel):
# resources.files("localjudge.judges").joinpath("builtin"), ("templates/mlflow.toml"), resources.files(
# "localjudge.models").joinpath("models.toml"), report/build.py's HERE / "templates".
OPENED = [
    "localjudge/judges/builtin/*.toml",
    "localjudge/judges/builtin/_versions.toml",
    "localjudge/judges/templates/mlflow.toml",
    "localjudge/models/models.toml",
    "localjudge/report/templates/report.html.j2",
    "localjudge/report/templates/report.css",
    "localjudge/report/templates/report.js",
    "localjudge/py.typed",
]
SDIST_EXTRA = ["pyproject.toml", "README.md", "NOTICE"]
SKIP = re.compile(r"(^|/)(__pycache__|\.mypy_cache|\.ruff_cache)(/|$)|\.py[co]$")


def source_files() -> set[str]:
    """The package's files as the repository tracks them (git), else as they lie on disk (no git)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", PACKAGE], cwd=ROOT, capture_output=True, check=True, text=True).stdout
        files = {f for f in out.split("\0") if f}
    except (OSError, subprocess.CalledProcessError):
        files = set()
    if not files:
        files = {p.relative_to(ROOT).as_posix() for p in (ROOT / PACKAGE).rglob("*") if p.is_file()}
    return {f for f in files if not SKIP.search(f) and (ROOT / f).exists()}


def opened_files() -> tuple[set[str], list[str]]:
    """The OPENED patterns expanded in the tree, and the patterns that match nothing (a stale list)."""
    found: set[str] = set()
    missing = []
    for pattern in OPENED:
        hits = {p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern)}
        if not hits:
            missing.append(pattern)
        found |= hits
    return found, missing


def extras_in_pyproject() -> set[str]:
    """The names of [project.optional-dependencies]."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(data["project"].get("optional-dependencies", {}))


def check_wheel(wheel: Path, expected: set[str]) -> list[str]:
    """Findings for the wheel: files missing or foreign, console script, extras in its METADATA."""
    problems = []
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        dist_info = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
        if len(dist_info) != 1:
            return [f"{wheel.name}: expected one .dist-info folder, found {sorted(dist_info)}"]
        info = dist_info.pop()
        meta = z.read(f"{info}/METADATA").decode("utf-8")
        entry_points = z.read(f"{info}/entry_points.txt").decode("utf-8") if f"{info}/entry_points.txt" in names else ""
    for f in sorted(expected - names):
        problems.append(f"{wheel.name}: missing {f} (in the source tree, not in the wheel: add it to package data)")
    for f in sorted(n for n in names if not n.startswith((f"{PACKAGE}/", f"{info}/"))):
        problems.append(f"{wheel.name}: ships {f}, which is outside the {PACKAGE} package")
    for f in sorted(n for n in names if SKIP.search(n)):
        problems.append(f"{wheel.name}: ships a cache file {f}")
    if not re.search(r"^localjudge\s*=\s*localjudge\.cli:main\s*$", entry_points, re.M):
        problems.append(f"{wheel.name}: no `localjudge = localjudge.cli:main` console script in entry_points.txt")
    declared = set(re.findall(r"^Provides-Extra: (\S+)$", meta, re.M))
    for extra in sorted(extras_in_pyproject() - declared):
        problems.append(f"{wheel.name}: METADATA lacks the extra [{extra}] that pyproject.toml declares")
    return problems


def check_sdist(sdist: Path, expected: set[str]) -> list[str]:
    """Findings for the sdist: every package file plus pyproject.toml, README.md and NOTICE."""
    with tarfile.open(sdist) as t:
        names = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name and m.isfile()}
    return [f"{sdist.name}: missing {f}" for f in sorted((expected | set(SDIST_EXTRA)) - names)]


def main(argv: list[str]) -> int:
    """Check the artefacts named on the command line; 0 when complete, 1 with one line per finding."""
    if not argv or not argv[0].endswith(".whl"):
        print("usage: check_wheel.py WHEEL.whl [SDIST.tar.gz]", file=sys.stderr)
        return 2
    tree = source_files()
    opened, stale = opened_files()
    problems = [f"check_wheel.py: OPENED pattern {p!r} matches no file in the tree: update the list" for p in stale]
    problems += [f"the code opens {f}, which git does not track: add it" for f in sorted(opened - tree)]
    expected = tree | opened
    modules = [f for f in tree if f.endswith(".py")]
    if len(modules) < 10:
        problems.append(f"only {len(modules)} modules found under {PACKAGE}/: is this the repository root?")
    problems += check_wheel(Path(argv[0]), expected)
    if len(argv) > 1:
        problems += check_sdist(Path(argv[1]), expected)
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"check_wheel: {len(modules)} modules and {len(expected) - len(modules)} data files, all in {Path(argv[0]).name}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
