"""Served traffic: the traffic set drawn from the pool, the served tallies, and the champion watched day by day."""
