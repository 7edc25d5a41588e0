"""The model registry: versions on disk, the champion (also by MLflow alias), the starter, run stages."""
