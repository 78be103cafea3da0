"""scripts/tools/break_guarantees.py stays usable: each bug it puts in still applies to the package as it is, and
each test it expects to notice still exists (running the breaks themselves takes minutes: a dev tool)."""

from __future__ import annotations

import pytest

from scripts.tools.break_guarantees import BREAKS, ROOT


@pytest.mark.parametrize("b", BREAKS, ids=lambda b: b.name)
def test_each_break_applies_to_one_line_of_the_package_and_names_existing_tests(b):
    text = (ROOT / b.path).read_text()
    assert text.count(b.old) == 1, f"{b.name}: update BREAKS, the line moved ({b.path})"
    assert b.old != b.new
    for t in b.tests:
        file, _, name = t.partition("::")
        assert (ROOT / file).is_file(), t
        assert not name or f"def {name}(" in (ROOT / file).read_text(), t
