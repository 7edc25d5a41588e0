"""Served traffic: the traffic set drawn from the pool, and the served tallies (the champion watched day by day over
them is `feedback.monitoring`, a reader over the store)."""
