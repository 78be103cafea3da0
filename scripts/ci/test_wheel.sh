#!/usr/bin/env bash
# Test the artefact a user installs, not the checkout: build the sdist and the wheel (python -m build, the
# wheel built from the sdist), check their contents against the source tree (scripts/ci/check_wheel.py and
# check-wheel-contents), then install the WHEEL into clean virtualenvs, one with no extra and one per extra
# alone, and run scripts/ci/wheel_smoke.py EXTRA in each (sequentially: 2 cores). scripts/test.sh starts this
# before pytest and runs pytest beside its installs (WHEEL_BUILT_SIGNAL).
#
#   bash scripts/ci/test_wheel.sh                  # every extra
#   WHEEL_EXTRAS="none hub" bash scripts/ci/test_wheel.sh
#   WHEEL_TEST_PYTHON=/path/to/venv/bin/python  # the venv that has `build` and check-wheel-contents
#                                               # (default: .venv/bin/python, the test venv)
#
# Fast on purpose: pip's wheel cache is shared (no --no-cache-dir), and llama-cpp-python is constrained to
# the version the test venv has, so the clean venvs take the wheel pip built for it and never rebuild it.
# The other dependencies resolve freely, as they do for a user (that is how [hub] alone got huggingface-hub
# 2.x with httpx2 instead of httpx). --no-compile: no bytecode for 100+ packages per venv that each smoke
# imports once. The clean venvs are made without pip of their own and installed into by the test venv's pip
# (`pip --python`, the current pip, as upgrading each venv's bundled one gave: 8 s and 5 CPU-seconds less per extra).
# Model runs use one thread. Exits 1 naming every extra that failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PY=${WHEEL_TEST_PYTHON:-.venv/bin/python}
EXTRAS=${WHEEL_EXTRAS:-"none data serve hub mlflow deepeval ragas ray"}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/localjudge-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
start=$SECONDS

echo "== wheel: build the sdist and the wheel"
if ! "$PY" -m build --outdir "$WORK/dist" . >"$WORK/build.log" 2>&1; then
  tail -40 "$WORK/build.log"; echo "wheel: FAILED: python -m build" >&2; exit 1
fi
WHEEL=$(ls "$WORK"/dist/*.whl)
SDIST=$(ls "$WORK"/dist/*.tar.gz)
echo "== wheel: built in $((SECONDS - start)) s; check the contents of $(basename "$WHEEL") and $(basename "$SDIST")"
"$PY" scripts/ci/check_wheel.py "$WHEEL" "$SDIST" || { echo "wheel: FAILED: contents (scripts/ci/check_wheel.py)" >&2; exit 1; }
"$PY" -m check_wheel_contents "$WHEEL" || { echo "wheel: FAILED: check-wheel-contents" >&2; exit 1; }

# llama-cpp-python builds from source (about 6 minutes): take the exact version the test venv has, whose
# wheel pip built once and keeps in its cache.
LLAMA=$("$PY" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')
echo "llama-cpp-python==$LLAMA" >"$WORK/constraints.txt"

echo "== wheel: contents checked at $((SECONDS - start)) s"
# scripts/test.sh starts pytest once this exists: the build wrote into the source tree (egg-info), the installs
# below touch only $WORK and pip's cache, so they can run beside the tests.
[ -z "${WHEEL_BUILT_SIGNAL:-}" ] || : >"$WHEEL_BUILT_SIGNAL"
failed=()
for extra in $EXTRAS; do
  t=$SECONDS
  venv="$WORK/venv-$extra"
  spec="$WHEEL"
  [ "$extra" = none ] || spec="$WHEEL[$extra]"
  echo "== wheel [$extra]: clean venv, pip install $(basename "$spec")"
  if "$PY" -m venv --without-pip "$venv" \
    && "$PY" -m pip --python "$venv/bin/python" install -q --no-compile -c "$WORK/constraints.txt" "$spec" >"$WORK/pip-$extra.log" 2>&1; then
    echo "   installed in $((SECONDS - t)) s: $("$PY" -m pip --python "$venv/bin/python" list 2>/dev/null | wc -l) packages"
    if (cd "$WORK" && "$venv/bin/python" "$ROOT/scripts/ci/wheel_smoke.py" "$extra"); then
      echo "== wheel [$extra]: passed in $((SECONDS - t)) s"
    else
      failed+=("$extra")
    fi
  else
    grep -v "is ignored: it is neither a file nor a directory" "$WORK/pip-$extra.log" | tail -30 >&2
    echo "wheel smoke [$extra] FAILED: pip could not install $(basename "$spec") into a clean venv" >&2
    failed+=("$extra")
  fi
  rm -rf "$venv" &  # removing 100+ packages takes up to a minute of I/O: overlap it with the next install
done
wait

echo "== wheel: $((SECONDS - start)) s in all"
if [ ${#failed[@]} -gt 0 ]; then
  echo "wheel: FAILED extras: ${failed[*]}" >&2
  exit 1
fi
echo "wheel: the built wheel passed the smoke of every extra ($EXTRAS)"
