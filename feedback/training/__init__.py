"""What a retrain reads from the store: the snapshot of trusted answers, and what the next retrain would have."""
