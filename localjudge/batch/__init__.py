"""One plain batch run (one model, no panel, no cascade): the machinery under `localjudge.runner.evaluate`.

types.py: what a run hands back; plan.py: judges onto columns, rows into chunks, cache keys; loop.py: the
one cell loop (prepare, judge, commit) with its two drivers, this process's engine and an executor;
run.py: a run's store, run.json and exports. localjudge/trust builds panels and cascades out of `run.run`.
Import the public names from `localjudge.runner`.
"""
