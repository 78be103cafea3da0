"""Break guarantees of docs/guarantees.md on purpose, one at a time, and show which test fails (issue 45).

    .venv/bin/python scripts/tools/break_guarantees.py [--only NAME ...]

A guarantee is only as good as the test that notices it broken. Each entry of `BREAKS` edits one line of the
package the way a plausible bug would (a budget off by three, a "maybe" read as "no", an escape left out, a bad
line that raises, a wrong exit code, a parse error counted as a verdict), runs the tests docs/reliability.md names
for that guarantee, and restores the file (also on Ctrl-C). The edit must make at least one of them fail; the
script prints the tests that failed and exits 1 when a broken guarantee went unnoticed or an edit no longer
applies (the code moved: update the entry). A dev tool, not part of the README's test command: about 5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Break:
    """One guarantee, the one-line bug that breaks it, and the tests that must notice."""

    name: str
    guarantee: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


BREAKS = (
    Break(
        "budget",
        "an output never passes its token budget (max_tokens)",
        "localjudge/engine/job.py",
        "remaining = self.budget - (len(self.out) - self.base)",
        "remaining = self.budget + 3 - (len(self.out) - self.base)",
        ("tests/test_formats_random_logits.py",),
    ),
    Break(
        "parse",
        "any text parses to its verdict or raises ParseError, never to a different verdict",
        "localjudge/formats/json_formats.py",
        "verdict = yes_no_of(res)\n",
        'verdict = yes_no_of(res) or "no"\n',
        ("tests/test_fuzz_parse.py", "tests/test_parse.py"),
    ),
    Break(
        "unscored",
        "an output that does not parse is unscored with its reason, never counted as a no",
        "localjudge/judges/outcome.py",
        'return self._unscored(gens, "", UnscoredReason.PARSE_ERROR, str(e))',
        'verdict = fmt.parse(\'{"result": "no", "rationale": ""}\')',
        ("tests/test_judges.py::test_unparseable_output_is_unscored_not_a_no",),
    ),
    Break(
        "delimiters",
        "judged text cannot close the prompt's own delimiters (</document> is escaped)",
        "localjudge/judges/render.py",
        'out = pat.sub(lambda m: "<\\\\/" + m.group(1), out)',
        "out = out",
        (
            "tests/test_judges.py::test_closing_tags_in_judged_text_cannot_close_the_prompt_delimiters",
            "tests/test_reliability_adversarial.py::test_prompt_delimiters_in_judged_text_are_escaped_and_nothing_else_changes",
        ),
    ),
    Break(
        "bad-row",
        "a malformed row is an error result naming file and line, and the rest of the run continues",
        "localjudge/datasets/readers.py",
        'return None, f"{where}: malformed JSON ({e.parser.msg} at column {e.parser.colno}); fix or remove the line"',
        'raise RuntimeError(f"{where}: malformed JSON")',
        ("tests/test_runner.py::test_bad_jsonl_rows_get_error_results_and_the_rest_run",),
    ),
    Break(
        "exit-5",
        "a store that cannot be written stops the run with one line and exit 5",
        "localjudge/errors.py",
        "    exit_code = 5\n",
        "    exit_code = 1\n",
        ("tests/test_reliability_storage.py::test_run_command_on_a_read_only_directory_exits_5_with_one_line",),
    ),
)


def run(b: Break) -> tuple[bool, list[str], float]:
    """Apply `b`, run its tests, restore the file: (noticed, the tests that failed, seconds)."""
    path = ROOT / b.path
    before = path.read_text()
    if before.count(b.old) != 1:
        raise SystemExit(f"{b.name}: the line to break occurs {before.count(b.old)} times in {b.path}, not once; update BREAKS")
    t0 = time.perf_counter()
    try:
        path.write_text(before.replace(b.old, b.new))
        p = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *b.tests],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    finally:
        path.write_text(before)
    failed = sorted(set(re.findall(r"^(?:FAILED|ERROR) (\S+)", p.stdout, re.M)))
    return p.returncode == 1 and bool(failed), failed, time.perf_counter() - t0


def main() -> int:
    """Break each guarantee (or those named by --only) in turn; 1 if any went unnoticed."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", choices=[b.name for b in BREAKS])
    a = ap.parse_args()
    missed = 0
    for b in BREAKS:
        if a.only and b.name not in a.only:
            continue
        noticed, failed, s = run(b)
        missed += not noticed
        print(f"{'noticed' if noticed else 'NOT NOTICED'}  {b.name}: {b.guarantee}  ({b.path}; {s:.0f} s)")
        for t in failed[:6]:
            print(f"    failed: {t}")
        if len(failed) > 6:
            print(f"    ... and {len(failed) - 6} more")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
