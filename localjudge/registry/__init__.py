"""What installed packages add to localjudge through entry points (plugins.py): backends, output formats,
constraint engines and judge folders. The registries of models, formats, constraint engines and judges ask it for
names they do not know themselves; it knows nothing of them, so it sits below all four."""
