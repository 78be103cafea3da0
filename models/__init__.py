"""Package data: models.toml, the manifest of known models (installed as localjudge._models)."""
