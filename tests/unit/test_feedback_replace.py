"""One live answer per person, text and channel: a change of mind replaces the earlier answer (kept as 'replaced'),
undo withdraws the live one and revives nothing, and nothing counts a replaced answer. On SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings.policies import QueuePolicy, StoreLimits, TrustPolicy
from feedback.errors import FeedbackError, RateLimited
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.training.snapshot import read_trusted
from testkit.pg_cluster import StoreFactory
from testkit.races import at_once

TEXT = "The chipmaker's shares fell after it delayed its new factory"
SURE_OF_SPORTS = {"World": 0.02, "Sports": 0.95, "Business": 0.02, "Sci/Tech": 0.01}


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db")  # each test runs on SQLite and on PostgreSQL


def one_click(store: FeedbackStore, label: str, annotator: str = "anna", **fields: object):
    predicted = fields.pop("predicted_label", "Business")
    kind = "confirm" if label == predicted else "correct"
    return store.answers.record(AnswerInput(text=TEXT, user_label=label, annotator=annotator, kind=kind, predicted_label=predicted,
                        **fields))


def statuses(store: FeedbackStore) -> list[tuple[str, str, str]]:
    return [(r["kind"], r["user_label"], r["status"]) for r in sorted(store.answers.rows(), key=lambda r: r["id"])]


def test_a_change_of_mind_replaces_the_earlier_answer(store: FeedbackStore) -> None:
    first = one_click(store, "Sci/Tech")
    second = one_click(store, "Business")  # "Right" after a correction: the same channel, so it replaces it
    assert second.replaced == (first.id,) and not second.duplicate
    assert statuses(store) == [("correct", "Sci/Tech", "replaced"), ("confirm", "Business", "ok")]
    assert one_click(store, "Business").duplicate  # the live answer again: stored once
    third = one_click(store, "Sci/Tech")  # back to the first label: a new answer, the old one stays replaced
    assert third.replaced == (second.id,) and third.id != first.id
    assert [s for _, _, s in statuses(store)] == ["replaced", "replaced", "ok"]
    stats = store.stats()
    assert stats["answers"] == 3 and stats["by_status"]["replaced"] == 2
    assert stats["by_label"]["Sci/Tech"] == 1 and stats["by_label"]["Business"] == 0
    assert stats["by_kind"] == {"confirm": 0, "correct": 1, "queue": 0} and stats["annotators"] == 1
    assert store.answers.count_since(0) == 1


def test_undo_withdraws_the_live_answer_and_revives_nothing(store: FeedbackStore) -> None:
    one_click(store, "Sci/Tech")
    one_click(store, "World")
    undone = store.undo_last("anna", ("confirm", "correct"))
    assert undone is not None and undone["user_label"] == "World"
    assert statuses(store) == [("correct", "Sci/Tech", "replaced"), ("correct", "World", "undone")]
    assert store.undo_last("anna", ("confirm", "correct")) is None  # the replaced answer is not undoable either
    assert store.answers.count_since(0) == 0 and store.stats()["annotators"] == 0
    assert read_trusted(store, TrustPolicy(labels_required=1)) == []  # no label of this text may train


def test_only_the_last_answer_trains_and_a_replaced_one_is_not_reviewed(store: FeedbackStore) -> None:
    first = one_click(store, "World", probabilities=SURE_OF_SPORTS, predicted_label="Sports")
    assert first.status == "suspicious"
    one_click(store, "Sports", probabilities=SURE_OF_SPORTS, predicted_label="Sports")
    assert [(e.label, e.votes) for e in read_trusted(store, TrustPolicy(labels_required=1))] == [("Sports", 1)]
    with pytest.raises(FeedbackError, match="replaced by a later answer"):
        store.answers.set_status(first.id, "accepted")
    assert store.answers.rows(status="suspicious") == []  # nothing waits for a review that no longer matters


def test_each_path_keeps_its_own_live_answer(store: FeedbackStore) -> None:
    store.pool.add([TEXT], source="test")
    item = store.pool.next_item("anna", QueuePolicy(labels_required=1))
    assert item is not None and item["text"] == TEXT
    one_click(store, "World")
    queue = [store.answers.record(AnswerInput(text=TEXT, user_label=label, annotator="anna", kind="queue", item_id=item["id"]))
             for label in ("Sports", "Business")]
    assert queue[1].replaced == (queue[0].id,)
    assert statuses(store) == [("correct", "World", "ok"), ("queue", "Sports", "replaced"), ("queue", "Business", "ok")]
    assert store.pool.progress("anna") == 1  # one article labelled in the queue, not two
    undone = store.undo_last("anna", ("queue",))
    assert undone is not None and undone["user_label"] == "Business"
    assert statuses(store)[0] == ("correct", "World", "ok")  # the other path is untouched
    assert one_click(store, "World", annotator="ben").replaced == ()  # another person never replaces anna


def test_a_rejected_answer_stays_rejected(store: FeedbackStore) -> None:
    rejected = one_click(store, "World", probabilities=SURE_OF_SPORTS, predicted_label="Sports")
    store.answers.set_status(rejected.id, "rejected")
    assert one_click(store, "World", probabilities=SURE_OF_SPORTS, predicted_label="Sports").duplicate
    later = one_click(store, "Sci/Tech", probabilities=SURE_OF_SPORTS, predicted_label="Sports")
    assert later.replaced == () and store.answers.get(rejected.id)["status"] == "rejected"


def test_racing_changes_of_mind_leave_one_live_answer(store: FeedbackStore) -> None:
    labels = ["World", "Sports", "Business", "Sci/Tech"] * 2
    at_once(len(labels), lambda i: one_click(store, labels[i]))
    live = [r for r in store.answers.rows() if r["status"] not in ("replaced", "undone")]
    assert len(live) == 1 and len(store.answers.rows()) >= 4


def test_signed_in_accounts_get_a_higher_answer_limit(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db", StoreLimits(writes_per_minute=3, verified_writes_per_minute=6))

    def burst(annotator: str, verified: bool) -> int:
        for i in range(10):
            try:
                store.answers.record(AnswerInput(text=f"{annotator} story {i}", user_label="World", annotator=annotator, kind="correct",
                             verified=verified))
            except RateLimited:
                return i
        return 10

    assert burst("anon:x", verified=False) == 3
    assert burst("user:ada", verified=True) == 6
