"""CI checks run by scripts/test.sh: docstring coverage, the wheel's contents and a smoke test of each extra."""
