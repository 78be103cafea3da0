"""The store owns its tables: every SQL statement and every path into the stored result JSON is in localjudge/store/
(issue 44 part 6). view/, labels/ and conversations/ call its named functions; a statement written elsewhere fails
here, before a renamed column can empty a page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import localjudge

SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX))\b|json_extract\(", re.S
)
EXECUTE = {"execute", "executemany", "executescript", "_transaction"}  # the store's own transaction is its business


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (prose may name SQL)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _outside_store() -> list[tuple[str, int, str]]:
    root = Path(localjudge.__file__).parent
    found: list[tuple[str, int, str]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("store/"):
            continue
        tree = ast.parse(path.read_text("utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if SQL.search(node.value):
                    found.append((rel, node.lineno, node.value[:60]))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in EXECUTE:
                found.append((rel, node.lineno, ast.unparse(node)[:60]))
    return found


def test_no_sql_statement_or_execute_call_outside_the_store():
    assert _outside_store() == []


def test_the_scan_finds_a_statement_where_one_is_written(tmp_path, monkeypatch):
    pkg = tmp_path / "localjudge"
    (pkg / "view").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "view" / "leak.py").write_text(
        '"""Reads `SELECT x FROM results` in prose only."""\n'
        "def f(c):\n    return c.execute(\"SELECT json_extract(result, '$.score') FROM results\")\n"
        "def g(store):\n    with store._transaction():\n        pass\n"
    )
    monkeypatch.setattr(localjudge, "__file__", str(pkg / "__init__.py"))
    found = _outside_store()
    assert [(f, line) for f, line, _ in found] == [("view/leak.py", 3), ("view/leak.py", 3), ("view/leak.py", 5)]
