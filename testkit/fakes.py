"""Stand-ins a test owns: a clock that ticks one second a read (Hugging Face sign-in is faked in testkit.oauth)."""

from __future__ import annotations


class TickingClock:
    """A clock a test owns: each read is one second after the one before (so every stored answer has its own time),
    and the test may move it on by setting `now`."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 1.0
        return self.now
