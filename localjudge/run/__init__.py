"""The run: one typed `RunSpec` in (spec.py), verdicts out, one model, no panel, no cascade (localjudge/trust builds
those out of plain runs; `localjudge.api.execute` picks which).

spec.py: the run spec, built once at the edge; types.py: what a run hands back; plan.py: judges onto columns, rows
into chunks, cache keys; loop.py: the one cell loop (prepare, judge, commit) with its two drivers, this process's
engine and an executor; plain.py: `run_plain`, a run's store, run.json and exports; record.py: `RunRecord`, run.json
typed (written and read by field); aggregate.py: summaries; exports.py: the run directory's files; samedata.py: one
run directory holds one dataset.
Import the public names from `localjudge` (`evaluate`) or `localjudge.api` (`execute`, `to_frame`).
"""
