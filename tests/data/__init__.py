"""Checks of data: label set, no empty text, no split overlap, on the offline AG News copy."""
