"""The learning-loop simulation behind bench/loop.py and bench/tune.py: data slices, labellers, rounds, reports."""
