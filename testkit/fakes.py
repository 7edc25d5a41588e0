"""Stand-ins a test owns: a clock that ticks one second a read, a classifier that is unsure of every text, and the
admin actions a panel reads (Hugging Face sign-in is faked in testkit.oauth)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.labels import LABELS


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


@dataclass(frozen=True)
class StandInModel:
    """The model a stand-in classifier serves (web.server.serving.ServedModel): the AG News four, no export record."""

    labels: tuple[str, ...] = LABELS
    meta: dict[str, Any] = field(default_factory=dict)


class UnsureClassifier:
    """Predicts World at 0.4 for every text, so a queue over it has no order of its own to follow."""

    version = "v1"
    model = StandInModel()

    def predict(self, texts: list[str]) -> list[UnsurePrediction]:
        return [UnsurePrediction(probabilities={"World": 0.4, "Sports": 0.2, "Business": 0.2, "Sci/Tech": 0.2})
                for _ in texts]


class FakeAdmin:
    """What an admin panel reads from `web.admin.actions.AdminActions`: a real store, the default trust policy, the
    page's topics over an `UnsureClassifier`, and a caller who is (or, `admin=False`, is not) the admin `who`."""

    def __init__(self, store: Any, admin: bool = True, who: str = "maya") -> None:
        from core.settings.policies import TrustPolicy
        from web.server.topics import PageTopics  # here: the clock and the classifier above need no page

        self.store, self.admin, self.who = store, admin, who
        self.trust = TrustPolicy()
        self.topics = PageTopics(UnsureClassifier(), store)

    def is_admin(self, request: Any, profile: Any = None) -> bool:
        return self.admin

    def is_admin_event(self, request: Any, profile: Any = None) -> bool:
        return self.admin

    def signed_in_as(self, request: Any, profile: Any = None) -> str:
        return self.who
