"""The promotion science, pure: metrics, paired tests, calibration and the decision records."""
