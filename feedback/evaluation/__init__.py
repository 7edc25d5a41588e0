"""What judges a model on the newsroom's behalf: its golden set."""
