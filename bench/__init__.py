"""Benchmarks: each script prints figures measured in one run, with the command that reproduces them."""
