"""Unit tests of code: pure functions and single modules over real files, no launched server."""
