"""What tests and benchmarks share: throwaway PostgreSQL, app processes, a tiny model, attackers, fakes."""
