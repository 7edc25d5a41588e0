"""End-to-end tests: a launched app driven over HTTP or in a browser, retrains run as processes."""
