"""Generators of the golden files under tests/golden, from the source packages' own code."""
