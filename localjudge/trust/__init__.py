"""How far to trust the numbers: statistical estimates from a run's rows and its human labels. PPI++ beside
labels-only (ppi.py, with its evidence test evidence.py and active sampling active.py), the label budget (budget.py),
position, length and self-preference bias (bias.py), corrected pass rates from stored labels (rates.py), one judge's
figures as sentences (judge_trust.py, `TrustSection` in section.py) and the public facade (estimates.py).
Runs of several models (panels, cascades) are `localjudge.ensembles`; pure statistics are `localjudge.statistics`.
The old paths `localjudge.trust.panel`, `.cascade`, `.members`, ... still import, with a DeprecationWarning.
"""
