"""The traffic set: pool items drawn at random, offered in a share of queue turns, judged on but never trained on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from core.labels import LABELS
from core.settings.policies import QueuePolicy, StoreLimits, TrustPolicy
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.traffic import traffic_set as traffic
from feedback.training.snapshot import trusted_split
from testkit.pg_cluster import StoreFactory

POLICY = QueuePolicy(spread=4)  # the default traffic share: one item in five


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db")  # each test using it runs on SQLite and on PostgreSQL


def traffic_flags(store: FeedbackStore) -> dict[str, int | None]:
    with store.database.read() as db:
        return {row["text"]: row["traffic"] for row in db.execute(sa.text("SELECT text, traffic FROM pool ORDER BY id")).mappings()}


def filled(store: FeedbackStore, n: int) -> list[str]:
    texts = [f"pool article {i} about something" for i in range(n)]
    store.pool.add(texts, source="test")
    # The most uncertain items are the first ones, so uncertainty order and random draws are told apart.
    store.pool.rescore(lambda batch: np.array([[0.5 + int(t.split()[2]) / (2 * n), 0.5 - int(t.split()[2]) / (2 * n), 0, 0]
                                          for t in batch]), "v1")
    return texts


def test_membership_is_drawn_once_by_hash_and_answered_items_never_join(store: FeedbackStore) -> None:
    texts = filled(store, 300)
    store.answers.record(AnswerInput(text=texts[0], user_label="World", annotator="early", kind="correct"))  # answered before the draw
    assert set(traffic_flags(store).values()) == {None}  # nothing drawn until the queue first looks
    store.pool.next_item("anna", POLICY)
    flags = traffic_flags(store)
    expected = {t: int(traffic.draw(store_hash(t)) < 0.2) for t in texts} | {texts[0]: 0}
    assert flags == expected
    assert 40 <= sum(flags.values()) <= 80  # about one in five of 300
    store.pool.next_item("ben", QueuePolicy(traffic_share=0.9))  # a new share never moves an item already drawn
    assert traffic_flags(store) == expected


def store_hash(text: str) -> str:
    from core.text import text_hash

    return text_hash(text)


def test_uncertainty_turns_never_offer_traffic_items_and_traffic_turns_offer_only_them(store: FeedbackStore) -> None:
    filled(store, 200)
    offered = [store.pool.next_item(f"labeller-{i}", POLICY) for i in range(200)]
    flags = traffic_flags(store)
    from_traffic = [item for item in offered if flags[item["text"]] == 1]
    from_order = [item for item in offered if flags[item["text"]] == 0]
    assert len(from_traffic) + len(from_order) == 200
    assert 20 <= len(from_traffic) <= 60  # about one turn in five
    # Ordinary turns draw from the most uncertain few; traffic turns from the whole (recent) traffic set.
    most_uncertain = sorted((t for t, f in flags.items() if f == 0), key=lambda t: int(t.split()[2]))[:4]
    assert {item["text"] for item in from_order} <= set(most_uncertain)
    assert len({item["text"] for item in from_traffic}) > 10
    assert all("traffic" not in item or item["traffic"] == 1 for item in from_traffic)


def test_a_turn_falls_back_to_the_other_kind_when_its_own_is_empty(store: FeedbackStore) -> None:
    texts = filled(store, 30)
    store.pool.next_item("anna", POLICY)
    flags = traffic_flags(store)
    everyone = [f"labeller-{i}" for i in range(40)]
    # Settle every ordinary item: only traffic items are left, whatever the turn.
    for text in (t for t in texts if flags[t] == 0):
        store.answers.record(AnswerInput(text=text, user_label="World", annotator="settler", kind="correct"))
    left = {store.pool.next_item(who, POLICY)["text"] for who in everyone}
    assert left and all(flags[t] == 1 for t in left)
    assert store.pool.next_item("nobody", QueuePolicy(traffic_share=0.0)) is not None  # share 0: traffic still served last


def test_traffic_labels_are_judged_on_and_never_trained_on(make_store: StoreFactory, tmp_path: Path) -> None:
    location = make_store.location(tmp_path / "feedback.db")
    store = FeedbackStore(location, StoreLimits(writes_per_minute=10_000))
    texts = filled(store, 120)
    store.pool.next_item("anna", POLICY)
    flags = traffic_flags(store)
    for i, text in enumerate(texts):
        store.answers.record(AnswerInput(text=text, user_label=LABELS[i % 4], annotator="anna", kind="correct"))
    copy = tmp_path / "snapshot.db"
    store.database.backup(copy)
    store.close()
    split = trusted_split(copy, TrustPolicy(), 0.25)
    judged = {e.text for e in split.traffic}
    trained = {e.text for e in split.train} | {e.text for e in split.holdout}
    assert judged == {t for t, f in flags.items() if f == 1} and judged
    assert not judged & trained and len(judged) + len(trained) == 120


def test_a_retrain_reads_the_traffic_items_no_trusted_answer_labels(make_store: StoreFactory, tmp_path: Path) -> None:
    # What a taught topic's prior is matched on (retrain.topics.prior): unlabelled traffic texts, never those that judge.
    location = make_store.location(tmp_path / "feedback.db")
    store = FeedbackStore(location, StoreLimits(writes_per_minute=10_000))
    filled(store, 120)
    store.pool.next_item("anna", POLICY)
    members = sorted(t for t, f in traffic_flags(store).items() if f == 1)
    answered = members[:5]
    for text in answered:
        store.answers.record(AnswerInput(text=text, user_label="Sports", annotator="anna", kind="correct"))
    copy = tmp_path / "snapshot.db"
    store.database.backup(copy)
    store.close()
    split = trusted_split(copy, TrustPolicy(), 0.25, unlabelled_traffic=1000)
    assert {e.text for e in split.traffic} == set(answered)
    assert sorted(split.unlabelled_traffic) == members[5:] and len(members) > 10
    assert len(trusted_split(copy, TrustPolicy(), 0.25, unlabelled_traffic=3).unlabelled_traffic) == 3
    assert trusted_split(copy, TrustPolicy(), 0.25).unlabelled_traffic == []
