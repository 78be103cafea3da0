"""Benchmark sections: `python scripts/bench.py SECTION` dispatches to these modules (see scripts/bench.py)."""
