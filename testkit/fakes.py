"""Stand-ins a test owns: a clock that ticks one second a read, and a classifier that is unsure of every text
(Hugging Face sign-in is faked in testkit.oauth)."""

from __future__ import annotations

from dataclasses import dataclass


class TickingClock:
    """A clock a test owns: each read is one second after the one before (so every stored answer has its own time),
    and the test may move it on by setting `now`."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@dataclass(frozen=True)
class UnsurePrediction:
    label: str = "World"
    probabilities: dict[str, float] | None = None
    model_version: str = "v1"


class UnsureClassifier:
    """Predicts World at 0.4 for every text, so a queue over it has no order of its own to follow."""

    version = "v1"

    def predict(self, texts: list[str]) -> list[UnsurePrediction]:
        return [UnsurePrediction(probabilities={"World": 0.4, "Sports": 0.2, "Business": 0.2, "Sci/Tech": 0.2})
                for _ in texts]
