"""The plugin's judge folder: every .toml file here is a judge (`localjudge.judges` entry point)."""
