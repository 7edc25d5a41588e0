"""The admin view's "Answers with no topic" panel over a real store: bounded whatever waits (a fair sample grouped,
groups a page at a time, a group's answers at most ANSWERS_SHOWN), nothing chosen, ticked or named until the
maintainer picks a group, and nothing for a stranger."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from core.settings.policies import StoreLimits
from feedback.store import FeedbackStore
from feedback.topics.unlisted import SAMPLE, UnlistedInput
from testkit.attackers import unlisted_flood
from testkit.fakes import FakeAdmin
from web.admin.unlisted_view import ANSWERS_SHOWN, GROUPS_PER_PAGE, UnlistedPanel


def panel(store: FeedbackStore, admin: bool = True) -> UnlistedPanel:
    fake: Any = FakeAdmin(store, admin=admin)
    fake.identities = SimpleNamespace(identify=lambda request, profile: SimpleNamespace(verified=False, annotator=""))
    return UnlistedPanel(fake)


def test_a_flood_waiting_opens_bounded_with_nothing_chosen(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db", StoreLimits(writes_per_minute=1000))
    unlisted_flood(store, 2_500, people=50)
    honest = [store.unlisted.record(UnlistedInput(text=f"Flu cases rise in hospitals of region {i}", annotator=f"user:{i}",
                                                  kind="correct", name="Health", verified=True)).id for i in range(3)]
    words, table, page, chooser, answers, name, groups = panel(store).show(None)
    assert "**2,503** answer(s)" in words and f"groups are of **{SAMPLE:,}** of them" in words
    assert sum(len(g.ids) for g in groups) == SAMPLE and page == 0
    assert table.count("<tr>") == GROUPS_PER_PAGE + 1 and "Page 1 of" in table  # one page (and the header)
    assert chooser["value"] is None and len(chooser["choices"]) == GROUPS_PER_PAGE  # nothing chosen...
    assert answers == {"__type__": "update", "choices": [], "value": []} and name == ""  # ...ticked or named
    assert groups[0].name == "Spam"  # the flood's group is the largest, and is not pre-selected

    health = next(g for g in groups if g.name == "Health")
    assert set(health.ids) == set(honest)  # the honest few are in the sample beside the flood
    note, ticked, named = panel(store).choose(health.ids[0], groups, None)
    assert ticked["value"] == honest and named == "Health" and note == ""
    note, ticked, named = panel(store).choose(groups[0].ids[0], groups, None)
    assert len(ticked["value"]) == ANSWERS_SHOWN and f"first {ANSWERS_SHOWN} of this group's" in note

    second = panel(store).later(groups, 0, None)
    assert second[2] == 1 and f"<td>{GROUPS_PER_PAGE + 1}</td>" in second[1]
    assert panel(store).earlier(groups, 0, None)[2] == 0  # kept in range
    message, *_ = panel(store).dismiss(ticked["value"], None)
    assert message == f"Dismissed {ANSWERS_SHOWN} answer(s)."


def test_a_stranger_sees_and_changes_nothing(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    row = store.unlisted.record(UnlistedInput(text="Flu season peaks", annotator="anna", kind="correct", name="Health")).id
    stranger = panel(store, admin=False)
    assert stranger.show(None)[0] == "Sign in first."
    assert stranger.choose(row, [], None)[0] == "Sign in first."
    assert stranger.dismiss([row], None)[0] == "Sign in first." and len(store.unlisted.rows()) == 1
