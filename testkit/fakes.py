"""Stand-ins a test owns: clocks (standing, or ticking one second a read), a classifier that is unsure of every text,
a tab and the identity service that knows it, and the admin actions a panel reads (Hugging Face sign-in is faked in
testkit.oauth)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from core.labels import LABELS

if TYPE_CHECKING:
    from web.server.identity import Identity


class FixedClock:
    """A clock a test owns: it stands still until the test moves it on (`clock.now += 10`)."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class TickingClock(FixedClock):
    """A clock a test owns: each read is one second after the one before (so every stored answer has its own time),
    and the test may move it on by setting `now`."""

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


@dataclass(frozen=True)
class Tab:
    """A request from one tab of one browser (what `TabIdentities` reads)."""

    browser: str = "browser"
    tab: str = "t1"
    address: str = "10.0.0.1"


class TabIdentities:
    """The identity service (`web.server.identity.IdentityService`) for `Tab` requests: an anonymous visitor per
    browser, with per-tab memory; any other request is one default `Tab`."""

    def identify(self, request: Any, profile: Any = None) -> Identity:
        from web.server.identity import Identity  # here: the clocks and the classifier above need no page

        tab = request if isinstance(request, Tab) else Tab()
        return Identity(f"anon:{tab.browser}", False, tab.browser, tab.address, f"{tab.browser}:{tab.tab}")


class FakeAdmin:
    """What an admin panel reads from `web.admin.actions.AdminActions`: a real store (or none, for a panel that
    reads none), the default trust policy, the page's topics over an `UnsureClassifier`, a caller who is (or,
    `admin=False`, is not) the admin `who`, and the overview's reads (nothing tallied, no trusted parts, a model's
    labels from its meta). `parts` sets what else a panel reads, by name (`jobs=`, `registry=`)."""

    def __init__(self, store: Any = None, admin: bool = True, who: str = "maya", **parts: Any) -> None:
        from core.settings.policies import TrustPolicy
        from web.server.topics import PageTopics  # here: the clocks and the classifier above need no page

        self.store, self.admin, self.who = store, admin, who
        self.trust = TrustPolicy()
        self.topics = PageTopics(UnsureClassifier(), store) if store is not None else None
        self.identities = SimpleNamespace(identify=lambda request, profile=None: SimpleNamespace(
            annotator=f"user:{who}", verified=True))
        for name, value in parts.items():
            setattr(self, name, value)

    def is_admin(self, request: Any, profile: Any = None) -> bool:
        return self.admin

    def is_admin_event(self, request: Any, profile: Any = None) -> bool:
        return self.admin

    def signed_in_as(self, request: Any, profile: Any = None) -> str:
        return self.who

    def traffic(self) -> None:
        return None

    def trusted_parts(self) -> None:
        return None

    def model_names(self, meta: dict[str, Any]) -> list[str]:
        return list(meta.get("labels") or [])
