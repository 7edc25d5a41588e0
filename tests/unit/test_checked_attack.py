"""Trust an attacker with a handful of addresses cannot buy, under TRAIN_ON=checked, against a real store.

The checked-trust attacker: four identities on four addresses answer every queue item (known-answer checks
included) with the model's own label, which passes checks wherever the model is right, then one-click the
least likely label on texts the model is unsure of, each text from two addresses.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from core.labels import LABELS
from core.settings.policies import QueuePolicy, StoreLimits, TrustPolicy
from core.text import text_hash
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.training.snapshot import read_trusted
from feedback.trust.checks import CheckScore, passed_checks
from feedback.trust.rules import check_scores, independently_agreed, select_trusted

CHECKS = [f"Known-answer check {i}: a story a maintainer labelled" for i in range(12)]
POOL = [f"Pool article {i} about markets, ministers, matches and microchips" for i in range(40)]
PASTED = [f"Pasted story {i} the model is unsure of" for i in range(6)]
EVERY_ITEM_A_CHECK = QueuePolicy(check_share=1.0)  # each annotator meets every check first: no luck involved


def model(text: str) -> dict[str, float]:
    """A stand-in for the served model: unsure (never 80% sure, so no answer is 'suspicious')."""
    top = int(text_hash(text)[:8], 16) % 4
    return {label: (0.55 if i == top else 0.15) for i, label in enumerate(LABELS)}


def model_label(text: str) -> str:
    probs = model(text)
    return max(probs, key=probs.__getitem__)


def other_label(label: str, step: int = 1) -> str:
    return LABELS[(LABELS.index(label) + step) % 4]


# The truth: checks carry it (the model is right on 9 of 12, so copying it scores 75%); pool texts are half
# ones the model gets right; a pasted text's true label is the model's, and the attacker gives the least likely.
GOLD = {text: model_label(text) if i < 9 else other_label(model_label(text)) for i, text in enumerate(CHECKS)}
TRUTH = GOLD | {text: model_label(text) if i % 2 else other_label(model_label(text)) for i, text in enumerate(POOL)}
TRUTH |= {text: model_label(text) for text in PASTED}


@pytest.fixture
def store(tmp_path: Path) -> FeedbackStore:
    clock = itertools.count(start=1_700_000_000, step=3)  # three seconds between answers: no rate limit
    store = FeedbackStore(tmp_path / "feedback.db", StoreLimits(), clock=lambda: float(next(clock)))
    store.pool.add(list(GOLD), source="checks", labels=list(GOLD.values()))
    store.pool.add(POOL, source="pool")
    return store


def label_queue(store: FeedbackStore, who: str, address: str, answers: int, choose) -> None:  # type: ignore[no-untyped-def]
    for _ in range(answers):
        item = store.pool.next_item(who, EVERY_ITEM_A_CHECK)
        assert item is not None
        store.answers.record(AnswerInput(text=item["text"], user_label=choose(item["text"]), annotator=who, kind="queue",
                     item_id=item["id"], probabilities=model(item["text"]), address=address))


def one_click(store: FeedbackStore, who: str, address: str, text: str, label: str) -> None:
    store.answers.record(AnswerInput(text=text, user_label=label, annotator=who, kind="confirm" if label == model_label(text) else "correct",
                 probabilities=model(text), address=address))


def attack(store: FeedbackStore) -> list[str]:
    sybils = [f"anon:sybil-{i}" for i in range(4)]
    for i, who in enumerate(sybils):
        label_queue(store, who, f"addr:sybil-{i}", 16, model_label)  # 12 checks, then 4 pool items
    for t, text in enumerate(PASTED):
        least_likely = min(model(text), key=model(text).__getitem__)
        for k in (t % 4, (t + 1) % 4):  # two addresses per text
            one_click(store, sybils[k], f"addr:sybil-{k}", text, least_likely)
    return sybils


def wrong(examples) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.text for e in examples if e.label != TRUTH[e.text]]


@pytest.mark.parametrize("labels_required", [1, 2])
def test_copying_the_model_on_checks_then_one_clicking_wrong_labels_trains_nothing(
    store: FeedbackStore, labels_required: int
) -> None:
    sybils = attack(store)
    scores = check_scores(store.answers.rows(), store.pool.gold_labels())
    # By accuracy alone they would pass (the rule before telling checks): 9 of 12 checks right.
    assert all(scores[who].answered == 12 and scores[who].accuracy == 0.75 for who in sybils)
    assert all(scores[who].telling == 3 and scores[who].telling_right == 0 for who in sybils)

    honest = ("anon:honest", "addr:honest")
    label_queue(store, *honest, 24, TRUTH.__getitem__)
    policy = TrustPolicy(train_on="checked", labels_required=labels_required)
    trusted = read_trusted(store, policy)
    assert wrong(trusted) == []
    assert not {a for e in trusted for a in e.annotators} & set(sybils)
    if labels_required == 1:  # an honest checked annotator answering queue items still trains: 12 pool items
        assert len([e for e in trusted if e.annotators == ("anon:honest",)]) == 12
    # The same answers under "anyone" train the attacker's wrong labels: the mode trusts everyone.
    assert wrong(read_trusted(store, TrustPolicy(train_on="anyone", labels_required=labels_required)))


def test_a_one_click_answer_needs_an_independent_checked_voice(store: FeedbackStore) -> None:
    people = {"anon:ann": "addr:ann", "anon:bob": "addr:bob", "anon:cat": "addr:ann"}  # cat shares ann's address
    for who, address in people.items():
        label_queue(store, who, address, 12, TRUTH.__getitem__)  # all three pass every check
    text = PASTED[0]
    policy = TrustPolicy(train_on="checked")
    one_click(store, "anon:ann", "addr:ann", text, TRUTH[text])
    assert text not in {e.text for e in read_trusted(store, policy)}  # brought in and labelled by one person
    one_click(store, "anon:bob", "addr:bob", text, TRUTH[text])
    assert text not in {e.text for e in read_trusted(store, policy)}  # two people pasting it agree with each other only

    store.pool.add([text], source="correction")  # the queue serves it, say, to cat
    with sqlite3.connect(store.path) as db:
        [(item_id,)] = db.execute("SELECT id FROM pool WHERE text_hash = ?", [text_hash(text)]).fetchall()
    store.answers.record(AnswerInput(text=text, user_label=TRUTH[text], annotator="anon:cat", kind="queue", item_id=item_id,
                 probabilities=model(text), address="addr:ann"))
    [example] = [e for e in read_trusted(store, policy) if e.text == text]
    assert set(example.annotators) == {"anon:bob", "anon:cat"}  # cat is independent of bob, not of ann

    accepted = store.answers.record(AnswerInput(text=PASTED[1], user_label=TRUTH[PASTED[1]], annotator="anon:ann", kind="correct",
                            probabilities=model(PASTED[1]), address="addr:ann"))
    store.answers.set_status(accepted.id, "accepted")  # a maintainer vouches for it
    assert PASTED[1] in {e.text for e in read_trusted(store, policy)}


def test_independence_means_another_person_on_another_address_on_a_path_they_did_not_choose() -> None:
    def row(i: int, who: str, address: str, kind: str, status: str = "ok") -> dict:
        return {"id": i, "text": "t", "text_hash": "h", "user_label": "World", "annotator": who,
                "address": address, "kind": kind, "status": status, "verified": False}

    pasted = row(1, "a", "x", "correct")
    assert independently_agreed([pasted]) == []
    assert independently_agreed([pasted, row(2, "b", "y", "correct")]) == []
    assert independently_agreed([pasted, row(2, "b", "x", "queue")]) == [row(2, "b", "x", "queue")]
    assert len(independently_agreed([pasted, row(2, "b", "y", "queue")])) == 2
    assert len(independently_agreed([row(1, "a", "x", "correct", "accepted")])) == 1
    other_label = row(2, "b", "y", "queue") | {"user_label": "Sports"}
    assert independently_agreed([pasted, other_label]) == [other_label]
    rows = [pasted, row(2, "b", "y", "queue")]
    assert select_trusted(rows, None, TrustPolicy(train_on="anyone"))[0].votes == 2


def test_checks_pass_only_with_a_telling_one_answered_right() -> None:
    def passed(score: CheckScore) -> bool:
        return score.annotator in passed_checks({score.annotator: score}, min_checks=3, min_accuracy=0.6)

    assert not passed(CheckScore("parrot", answered=12, right=9, telling=3, telling_right=0))
    assert passed(CheckScore("reader", answered=12, right=12, telling=3, telling_right=3))
    assert not passed(CheckScore("lucky", answered=12, right=8, telling=3, telling_right=1))  # 1 in 3 telling
    assert not passed(CheckScore("untested", answered=2, right=2, telling=2, telling_right=2))
    assert not passed(CheckScore("no telling yet", answered=5, right=5))
