#!/usr/bin/env bash
# Install localjudge with its test extras into .venv, check the code, and run the whole test suite.
# Fresh machine: builds llama-cpp-python from source (about 6 minutes on 2 cores; pip caches the wheel).
# Checks, in order (any finding fails): ruff check, ruff format --check, mypy on localjudge/, public
# docstring coverage >= 90 %, the docs site (mkdocs build --strict into site/, never with --quiet, which
# stops strict mode counting warnings: a broken link or anchor, a missing page or a generated page that fails,
# fails it); the built wheel in a clean venv per extra (scripts/ci/test_wheel.sh; SKIP_WHEEL_TEST=1 skips it), built
# beside those checks and its installs running beside pytest (they wait on pip and disk where pytest leaves a core
# idle; the wheel's log is printed after pytest's, and either failing fails the command; Chromium's packages, where
# they are missing, install beside the venv's); pytest in two processes, each test file whole in
# one of them (pytest-xdist `-n 2 --dist loadfile`: a file's module-scoped engines and servers are built once;
# long files first, from tests/file_times.json, which a whole run with no arguments writes again;
# LOCALJUDGE_TEST_WORKERS=N changes the count, 0 runs in this process), with the arguments passed to pytest:
# `bash scripts/test.sh -m "not slow"`.
# The HTML report test needs a headless Chromium: installed from Debian's packages when run as root,
# otherwise install it yourself (apt-get install chromium chromium-driver) or those tests are skipped with a reason.
# The `localjudge view` tests drive it with selenium through chromedriver (Debian's chromium-driver).
# `bash scripts/test.sh --fast`: the unit tier only (tests/tier_guard.py: no model weights, no process, no loopback
# socket; a unit test that reaches for one fails), in two processes, after ruff; .venv is made only where missing.
# The inner loop of a change: about 2 minutes on 2 cores. The whole command above is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ "${1:-}" = --fast ]; then
  shift
  if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv && .venv/bin/python -m pip install -q -e '.[test]'; fi
  echo "== ruff check"; .venv/bin/ruff check localjudge tests scripts examples
  echo "== pytest: the unit tier"
  exec .venv/bin/python -m pytest -n "${LOCALJUDGE_TEST_WORKERS:-2}" -m "not model and not system" -q "$@"
fi
# Chromium installs (network and disk) beside the venv's installs and the checks; pytest waits for it.
chromium_pid=""
if { ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; } && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
    || echo "warning: could not install chromium; the report browser test will be skipped" >&2 &
  chromium_pid=$!
fi
# a check that fails ends the command: the jobs beside it end with it
trap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
.venv/bin/python -m pip install -q ./examples/localjudge-plugin-example  # a real installed plugin (tests/test_plugins.py)
wheel_pid=""
if [ "${SKIP_WHEEL_TEST:-}" != 1 ]; then
  echo "== wheel: build and check the artefacts; beside the checks, then their clean venvs beside pytest (the log follows pytest's)"
  wheel_dir=$(mktemp -d "${TMPDIR:-/tmp}/localjudge-test.XXXXXX")
  WHEEL_BUILT_SIGNAL="$wheel_dir/built" bash scripts/ci/test_wheel.sh >"$wheel_dir/log" 2>&1 &
  wheel_pid=$!
fi
echo "== ruff check"; .venv/bin/ruff check localjudge tests scripts examples
echo "== ruff format --check"; .venv/bin/ruff format --check localjudge tests scripts examples
echo "== mypy"; .venv/bin/mypy
echo "== layering (import-linter)"; .venv/bin/lint-imports
echo "== docstrings"; .venv/bin/python scripts/ci/check_docstrings.py --min 90
echo "== docs (mkdocs build --strict)"; NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir site
if [ -n "$wheel_pid" ]; then
  # `python -m build` writes into the source tree: pytest starts once the artefacts are built and checked (or failed)
  while [ ! -e "$wheel_dir/built" ] && kill -0 "$wheel_pid" 2>/dev/null; do sleep 1; done
fi
[ -z "$chromium_pid" ] || wait "$chromium_pid" || true
echo "== pytest"
# a whole run (no arguments) measures every file again into tests/file_times.json, the order the next run uses
if [ $# = 0 ]; then export LOCALJUDGE_TEST_FILE_TIMES="${LOCALJUDGE_TEST_FILE_TIMES:-tests/file_times.json}"; fi
set +e
.venv/bin/python -m pytest -n "${LOCALJUDGE_TEST_WORKERS:-2}" --dist loadfile "$@"
pytest_rc=$?
wheel_rc=0
if [ -n "$wheel_pid" ]; then
  wait "$wheel_pid"
  wheel_rc=$?
  echo "== wheel (ran beside pytest)"
  cat "$wheel_dir/log"
  rm -rf "$wheel_dir"
  [ "$wheel_rc" = 0 ] || echo "wheel: FAILED (its log above)" >&2
fi
[ "$pytest_rc" = 0 ] || exit "$pytest_rc"
exit "$wheel_rc"
