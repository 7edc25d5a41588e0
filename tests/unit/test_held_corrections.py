"""Pool items held for a maintainer's review: served to nobody until an answer on their text is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings.policies import QueuePolicy, StoreLimits
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from testkit.pg_cluster import StoreFactory

OPEN = QueuePolicy(labels_required=10, check_share=0.0)  # nothing settles: only holding hides an item


def served(store: FeedbackStore, annotator: str) -> set[str]:
    texts = set()
    while (item := store.pool.next_item(annotator, OPEN)) is not None:
        texts.add(item["text"])
        store.pool.skip(annotator, item["id"])
    return texts


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    store = make_store(tmp_path / "feedback.db", StoreLimits(writes_per_minute=10_000))  # SQLite and PostgreSQL
    store.pool.add([f"ordinary article {i}" for i in range(5)], source="pool")
    return store


def correction(store: FeedbackStore, text: str, who: str = "anon:stranger") -> int:
    answer = store.answers.record(AnswerInput(text=text, user_label="Sports", annotator=who, kind="correct", address=f"addr:{who}"))
    store.pool.add([text], source="correction", held=(who, f"answer {answer.id}: a stranger's correction"))
    return answer.id


def test_a_held_item_is_served_to_nobody_until_an_answer_on_it_is_accepted(store: FeedbackStore) -> None:
    answer_id = correction(store, "Crafted story for everyone's queue")
    assert "Crafted story for everyone's queue" not in served(store, "anon:fresh")
    assert store.pool.queue_left("anon:other", OPEN) == 5  # the count does not include it either
    [held] = store.pool.held()
    assert (held["answer_id"], held["held_by"], held["user_label"]) == (answer_id, "anon:stranger", "Sports")
    assert held["held_reason"].startswith(f"answer {answer_id}")

    store.answers.set_status(answer_id, "rejected")
    assert store.pool.held() == [] and "Crafted story for everyone's queue" not in served(store, "anon:b")
    second = store.answers.record(AnswerInput(text="Crafted story for everyone's queue", user_label="World",
                          annotator="anon:helper", kind="correct"))
    store.answers.set_status(second.id, "accepted")  # any accepted answer on the text releases it
    assert "Crafted story for everyone's queue" in served(store, "anon:c")


def test_bulk_review_and_a_signed_in_authors_correction_release_held_items(store: FeedbackStore) -> None:
    first, second = correction(store, "First pasted story"), correction(store, "Second pasted story")
    store.reviews.set_statuses([first], "accepted")
    assert served(store, "anon:x") >= {"First pasted story"} and "Second pasted story" not in served(store, "anon:y")
    store.pool.add(["Second pasted story"], source="correction")  # a signed-in author corrected it too
    assert "Second pasted story" in served(store, "anon:z") and store.pool.held() == []
    assert second  # its own answer stays as it was: releasing an item reviews nobody's answer
    assert store.answers.get(second)["status"] == "ok"


def test_checks_and_texts_already_in_the_pool_are_never_held(store: FeedbackStore) -> None:
    store.pool.add(["ordinary article 0"], source="correction", held=("anon:s", "a stranger's correction"))
    store.pool.add(["A check"], source="checks", labels=["World"], held=("anon:s", "a stranger's correction"))
    assert store.pool.held() == [] and "ordinary article 0" in served(store, "anon:q")
