"""Which answers and people to trust: the trust rules, known-answer checks, the crowd, agreement and a maintainer's review."""
