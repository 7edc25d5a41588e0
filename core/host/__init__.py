"""The machine: how a retrain shares the CPU, and loopback ports."""
