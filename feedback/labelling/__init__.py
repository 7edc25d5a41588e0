"""What labellers work on and give: the pool and its queue (when a known-answer check is due, what is left), pool files,
guidelines, and the answers themselves (when one is suspicious)."""
