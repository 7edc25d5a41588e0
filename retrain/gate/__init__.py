"""The promotion gate: its pure rules, the evidence it judges (both models scored on the same sets), and a
maintainer's promotion by hand over a refusal."""
