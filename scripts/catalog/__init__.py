"""Generators of shipped judge catalog files (localjudge/judges/builtin, templates, serve's ragas prompts)."""
