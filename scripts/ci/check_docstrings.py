"""Docstring coverage of localjudge's public API (a dev tool; CI runs it through scripts/test.sh).

    python scripts/ci/check_docstrings.py [--min 90] [--list]

Counts every public module-level function and class, and every public method (properties
included) of a public class, in localjudge/ (names starting with "_" are private; so are functions
nested in functions). Exits 1 when fewer than --min percent have a docstring; --list prints those
without one.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "localjudge"


def public_defs(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """(qualified name, line, has a docstring) of the public definitions of one module."""
    out: list[tuple[str, int, bool]] = []

    def visit(nodes: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name.startswith("_"):
                    continue
                out.append((prefix + node.name, node.lineno, ast.get_docstring(node) is not None))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, prefix + node.name + ".", True)

    visit(tree.body, "", False)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min", type=float, default=90.0, help="minimum coverage in percent")
    ap.add_argument("--list", action="store_true", help="print the public definitions without a docstring")
    a = ap.parse_args()
    total = documented = 0
    missing: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent)
        for name, line, has in public_defs(ast.parse(path.read_text(encoding="utf-8"))):
            total += 1
            documented += has
            if not has:
                missing.append(f"{rel}:{line}: {name}")
    pct = 100.0 * documented / total if total else 100.0
    if a.list:
        print("\n".join(missing))
    print(f"docstrings: {documented} of {total} public functions and classes ({pct:.1f} %, minimum {a.min:g} %)")
    return 0 if pct >= a.min else 1


if __name__ == "__main__":
    sys.exit(main())
