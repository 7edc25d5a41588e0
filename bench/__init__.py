"""Benchmarks for the Speed issue: `python bench/serving.py`, `python bench/training.py`."""
