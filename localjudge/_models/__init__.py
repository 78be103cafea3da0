"""Package data: models.toml, the manifest of known models (a checkout imports it as it stands)."""
