"""The review list's ticks across relists, through the panel's handlers on a real SQLite store: a relist that still
holds every answer a tab was shown leaves its ticks to the page, one that drops some keeps the ticked answers still
listed, and an accept unticks what it acted on. (The page itself: tests/e2e/test_browser_flows.py.)"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from core.settings.policies import TrustPolicy
from feedback.store import FeedbackStore
from web.admin.review_view import ANY, ReviewPanel

SURE_OF_WORLD = {"World": 0.97, "Sports": 0.01, "Business": 0.01, "Sci/Tech": 0.01}
SUSPICIOUS = ("suspicious", ANY, ANY, ANY, "")


class _Admin:
    """What the panel reads from `AdminActions`, with a caller who is an admin."""

    def __init__(self, store: FeedbackStore) -> None:
        self.store = store
        self.trust = TrustPolicy()
        self.identities = SimpleNamespace(identify=lambda request, profile=None: SimpleNamespace(
            annotator="user:maya", verified=True))

    def is_admin(self, request: Any, profile: Any = None) -> bool:
        return True

    def is_admin_event(self, request: Any, profile: Any = None) -> bool:
        return True


def _suspicious(store: FeedbackStore, text: str) -> int:
    return store.record(text=text, user_label="Sports", annotator="user:someone", kind="correct",
                        probabilities=SURE_OF_WORLD, verified=True).id


def _tab(name: str) -> Any:
    return SimpleNamespace(session_hash=name)


def test_a_relist_holding_every_shown_answer_leaves_the_ticks_to_the_page(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    panel = ReviewPanel(_Admin(store))  # type: ignore[arg-type]
    first = _suspicious(store, "Summit talks resume")
    _, listed = panel.search([], *SUSPICIOUS, request=_tab("a"))
    assert listed["value"] == [] and [v for _, v in listed["choices"]] == [first]
    second = _suspicious(store, "Markets rally on summit news")
    # Its ticks were read when it was sent ([]), but the page's may be newer: the update names none.
    _, relisted = panel.search([], *SUSPICIOUS, request=_tab("a"))
    assert "value" not in relisted and {v for _, v in relisted["choices"]} == {first, second}
    # Another tab has its own memory: its first list sets its ticks.
    assert panel.search([], *SUSPICIOUS, request=_tab("b"))[1]["value"] == []


def test_a_relist_that_drops_answers_keeps_the_ticked_ones_still_listed(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    panel = ReviewPanel(_Admin(store))  # type: ignore[arg-type]
    kept, gone, other = (_suspicious(store, f"Story {i} on the summit") for i in range(3))
    panel.search([], *SUSPICIOUS, request=_tab("a"))
    store.set_statuses([gone], "rejected")  # another admin rejects one: it leaves the suspicious list
    _, relisted = panel.search([kept, gone], *SUSPICIOUS, request=_tab("a"))
    assert relisted["value"] == [kept] and {v for _, v in relisted["choices"]} == {kept, other}


def test_accept_unticks_what_it_acted_on(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    panel = ReviewPanel(_Admin(store))  # type: ignore[arg-type]
    ids = [_suspicious(store, f"Story {i} on the summit") for i in range(2)]
    panel.search([], *SUSPICIOUS, request=_tab("a"))
    message, _, relisted = panel.act("accepted")(ids[:1], ANY, ANY, ANY, ANY, "", request=_tab("a"))
    assert message == f"Accepted 1 answer(s): #{ids[0]}."
    assert relisted["value"] == [] and {v for _, v in relisted["choices"]} == set(ids)  # "any status" lists both
