"""The project's scripts, by role (never part of the wheel): benchmarks/, catalog/, golden/, ci/, tools/, data/.

A package so tests and scripts import each other as `scripts.benchmarks.bench_common` (repo root on sys.path);
scripts/bench.py, the benchmark dispatcher, puts the root there itself. See scripts/README.md."""
