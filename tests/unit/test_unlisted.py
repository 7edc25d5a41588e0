""""None of these" answers in the store: recorded apart from the answers (never training as a topic), sharing their
rate limits, leaving the queue, undone by the queue's undo, and placed in a topic a maintainer creates from them; on
SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings.policies import QueuePolicy, StoreLimits, TrustPolicy
from feedback.errors import FeedbackError, RateLimited
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.topics.unlisted import UnlistedInput
from feedback.training.snapshot import read_trusted
from testkit.pg_cluster import StoreFactory

QUEUE = QueuePolicy(traffic_share=0.0, spread=1)
ANYONE = TrustPolicy(train_on="anyone", labels_required=1)


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db")


def none_of_these(store: FeedbackStore, text: str, who: str = "anna", name: str | None = None, **more: object) -> int:
    return store.unlisted.record(UnlistedInput(text=text, annotator=who, kind="correct", name=name, **more)).id  # type: ignore[arg-type]


def test_a_none_answer_is_kept_apart_from_the_answers(store: FeedbackStore) -> None:
    result = store.unlisted.record(UnlistedInput(text="Flu season peaks early", annotator="anna", kind="correct",
                                                 name="  Public   health ", predicted_label="World", model_version="v0001"))
    assert not result.duplicate and result.name == "Public health"
    assert store.answers.count() == 0 and read_trusted(store, ANYONE) == []  # "no topic" never trains
    [row] = store.unlisted.rows()
    assert (row["status"], row["taxonomy_version"], row["predicted_label"]) == ("ok", 1, "World")


def test_a_repeat_is_a_duplicate_that_may_change_the_name(store: FeedbackStore) -> None:
    first = none_of_these(store, "Flu season peaks early")
    again = store.unlisted.record(UnlistedInput(text="Flu season peaks early", annotator="anna", kind="correct", name="Health"))
    assert again.duplicate and again.id == first and again.name == "Health"
    none_of_these(store, "Flu season peaks early", who="ben")  # another person: their own row
    assert len(store.unlisted.rows()) == 2


@pytest.mark.parametrize(("name", "problem"), [("x" * 41, "at most 40"), ("bad\x07name", "printable"), (3, "text")])
def test_a_bad_name_is_refused(store: FeedbackStore, name: object, problem: str) -> None:
    with pytest.raises(FeedbackError, match=problem):
        store.unlisted.record(UnlistedInput(text="Flu season", annotator="anna", kind="correct", name=name))
    with pytest.raises(FeedbackError, match="kind"):
        store.unlisted.record(UnlistedInput(text="Flu season", annotator="anna", kind="confirm"))
    assert store.unlisted.rows(status=None) == []


def test_none_answers_and_answers_share_one_rate_limit(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db", StoreLimits(writes_per_minute=3, address_writes_per_minute=5))
    store.answers.record(AnswerInput(text="Story one", user_label="World", annotator="anna", kind="correct"))
    none_of_these(store, "Story two")
    none_of_these(store, "Story three")
    with pytest.raises(RateLimited):
        none_of_these(store, "Story four")
    with pytest.raises(RateLimited):
        store.answers.record(AnswerInput(text="Story five", user_label="World", annotator="anna", kind="correct"))
    for i in range(5):  # the address limit counts both tables too
        none_of_these(store, f"Other {i}", who=f"anon:{i}", address="addr")
    with pytest.raises(RateLimited, match="from this address"):
        store.answers.record(AnswerInput(text="Other 9", user_label="World", annotator="anon:9", kind="correct", address="addr"))


def test_a_queue_none_leaves_the_queue_and_undo_brings_it_back(store: FeedbackStore) -> None:
    store.pool.add(["alpha story", "beta story"], source="test")
    item = store.pool.next_item("anna", QUEUE)
    assert item is not None
    store.unlisted.record(UnlistedInput(text=item["text"], annotator="anna", kind="queue", item_id=item["id"], name="Health"))
    nxt = store.pool.next_item("anna", QUEUE)
    assert nxt is not None and nxt["id"] != item["id"]
    assert store.pool.next_item("ben", QUEUE) is not None  # only the labeller's own queue loses it
    assert store.pool.progress("anna") == 1  # key 0 counts towards "You have labelled N" as a topic's key does
    store.answers.record(AnswerInput(text=nxt["text"], user_label="Sports", annotator="anna", kind="queue", item_id=nxt["id"]))
    assert store.pool.next_item("anna", QUEUE) is None and store.pool.progress("anna") == 2
    undone = store.undo_last("anna", ("queue",))  # the newest of the two tables: the Sports answer
    assert undone is not None and undone["user_label"] == "Sports"
    undone = store.undo_last("anna", ("queue",))  # then the "None of these"
    assert undone is not None and undone["unlisted"] and undone["item_id"] == item["id"]
    assert store.pool.progress("anna") == 0
    assert store.unlisted.rows() == [] and store.undo_last("anna", ("queue",)) is None
    assert store.pool.next_item("anna", QUEUE) is not None
    with pytest.raises(FeedbackError, match="item_id"):
        store.unlisted.record(UnlistedInput(text="alpha story", annotator="anna", kind="queue"))
    with pytest.raises(FeedbackError, match="does not match"):
        store.unlisted.record(UnlistedInput(text="gamma", annotator="anna", kind="queue", item_id=item["id"]))


def test_a_none_answer_newer_than_an_answer_is_undone_first(store: FeedbackStore) -> None:
    store.answers.record(AnswerInput(text="Rates rise", user_label="Business", annotator="anna", kind="correct"))
    none_of_these(store, "Flu season")
    undone = store.undo_last("anna", ("confirm", "correct"))
    assert undone is not None and undone.get("unlisted") and undone["text"] == "Flu season"
    assert store.undo_last("anna", ("confirm", "correct"))["user_label"] == "Business"  # type: ignore[index]


def test_a_topic_created_from_a_group_starts_with_its_answers(store: FeedbackStore) -> None:
    store.pool.add(["Measles outbreak in schools"], source="test")
    item = store.pool.next_item("cat", QUEUE)
    assert item is not None
    a = none_of_these(store, "Flu vaccine shortage hits clinics", who="anna", name="Health", predicted_label="World")
    b = none_of_these(store, "Hospital clinics report flu vaccine delays", who="ben")
    c = store.unlisted.record(UnlistedInput(text=item["text"], annotator="cat", kind="queue", item_id=item["id"], name="health")).id
    stray = none_of_these(store, "Vaccine rumours online", who="dan", name="Health")
    other = none_of_these(store, "Quarterly tax filing deadline", who="eve")
    [health, *_] = store.unlisted.listing().groups
    assert set(health.ids) == {a, b, c, stray} and health.name == "Health" and health.people == 4

    placed = store.unlisted.place([a, b, c], " Health ", by="admin")  # the maintainer unticked `stray`
    assert placed.created and placed.topic_name == "Health" and len(placed.answer_ids) == 3
    taxonomy = store.topics.current()
    assert taxonomy.names[-1] == "Health" and taxonomy.version == 2
    made = [store.answers.get(i) for i in placed.answer_ids]
    assert {(r["text"], r["annotator"], r["kind"], r["status"], r["user_label"], r["taxonomy_version"])  # type: ignore[index]
            for r in made} == {
        ("Flu vaccine shortage hits clinics", "anna", "correct", "accepted", placed.topic_key, 2),
        ("Hospital clinics report flu vaccine delays", "ben", "correct", "accepted", placed.topic_key, 2),
        ("Measles outbreak in schools", "cat", "queue", "accepted", placed.topic_key, 2),
    }
    assert next(r for r in made if r["annotator"] == "cat")["item_id"] == item["id"]  # type: ignore[index]
    trained = {t.text: t.label for t in read_trusted(store, ANYONE)}
    assert trained == dict.fromkeys(["Flu vaccine shortage hits clinics", "Hospital clinics report flu vaccine delays",
                                     "Measles outbreak in schools"], placed.topic_key)
    left = {r["id"]: r["status"] for r in store.unlisted.rows(status=None)}
    assert left == {a: "placed", b: "placed", c: "placed", stray: "ok", other: "ok"}

    again = store.unlisted.place([stray], "HEALTH", by="admin")  # the name exists now: placed there, not refused
    assert not again.created and again.topic_key == placed.topic_key and store.topics.current().version == 2
    assert "already existed" in again.words()
    assert store.unlisted.dismiss([other, a], by="admin") == 1  # `a` was placed: left as it is
    assert store.unlisted.rows() == [] and store.unlisted.listing().groups == []
    with pytest.raises(FeedbackError, match="waiting"):
        store.unlisted.place([other], "Taxes", by="admin")


def test_what_waits_is_capped_per_person_and_for_everyone_with_a_sentence(make_store: StoreFactory,
                                                                          tmp_path: Path) -> None:
    limits = StoreLimits(unlisted_per_person=3, unlisted_waiting=5, writes_per_minute=1000,
                         address_writes_per_minute=1000)
    store = make_store(tmp_path / "capped.db", limits)
    for i in range(3):  # anonymous ids are free: their address is the person
        store.unlisted.record(UnlistedInput(text=f"Spam {i}", annotator=f"anon:{i}", kind="correct", address="addr:1"))
    with pytest.raises(FeedbackError, match="3 \"None of these\" answers from this address are waiting"):
        store.unlisted.record(UnlistedInput(text="Spam 3", annotator="anon:new", kind="correct", address="addr:1"))
    store.unlisted.record(UnlistedInput(text="Signed in", annotator="user:maya", kind="correct", address="addr:1", verified=True))
    assert store.unlisted.record(UnlistedInput(text="Spam 0", annotator="anon:0", kind="correct", address="addr:1")).duplicate
    store.unlisted.record(UnlistedInput(text="Another person", annotator="anon:x", kind="correct", address="addr:2"))
    with pytest.raises(FeedbackError, match="5 \"None of these\" answers are waiting for a maintainer already"):
        store.unlisted.record(UnlistedInput(text="One more", annotator="anon:y", kind="correct", address="addr:3"))
    store.unlisted.dismiss([store.unlisted.rows()[0]["id"]], by="admin")  # decided: room again
    store.unlisted.record(UnlistedInput(text="One more", annotator="anon:y", kind="correct", address="addr:3"))


def test_a_listing_groups_a_fair_bounded_sample_of_what_waits(make_store: StoreFactory, tmp_path: Path) -> None:
    from feedback.topics.unlisted import fair_sample

    assert fair_sample([(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "c"), (6, "b")], 4) == [1, 2, 4, 5]
    store = make_store(tmp_path / "many.db", StoreLimits(writes_per_minute=1000, address_writes_per_minute=1000))
    for i in range(30):  # one flooder first, then four people with one answer each
        store.unlisted.record(UnlistedInput(text=f"Cheap pills offer {i}", annotator=f"anon:{i}", kind="correct", name="Spam",
                                            address="addr:flood"))
    honest = [store.unlisted.record(UnlistedInput(text=f"Flu cases rise in region {i}", annotator=f"user:{i}", kind="correct",
                                                  name="Health", verified=True)).id for i in range(4)]
    listing = store.unlisted.listing(sample=10)
    assert listing.waiting == 34 and listing.sampled and len(listing.rows) == 10
    health = next(g for g in listing.groups if g.name == "Health")
    assert set(health.ids) == set(honest) and health.people == 4  # the flood took its share, not the sample
    spam = next(g for g in listing.groups if g.name == "Spam")
    assert len(spam.ids) == 6 and spam.people == 6
    assert not store.unlisted.listing().sampled
