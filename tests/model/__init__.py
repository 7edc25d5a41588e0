"""Behavioural tests of the real champion (marked `quality`): quality, invariance, poisoning."""
