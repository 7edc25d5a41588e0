"""Tests of the trust rules that decide which feedback answers the retrain step may use."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from core.labels import LABELS
from core.settings.policies import TrustPolicy
from feedback.labelling.answers import AnswerInput, contradiction_reason
from feedback.training.snapshot import read_trusted
from feedback.trust.rules import aggregate, annotator_agreement, select_trusted
from testkit.pg_cluster import StoreFactory

_ids = itertools.count(1)


def vote(text: str, label: str, annotator: str, status: str = "ok", *, verified: bool = True,
         address: str | None = None) -> dict:
    return {
        "id": next(_ids),
        "text": text,
        "text_hash": f"hash-{text}",
        "user_label": label,
        "annotator": annotator,
        "status": status,
        "verified": verified,
        "address": address,
    }


def trusted(rows: list[dict], **rules: object) -> dict[str, str]:
    return {example.text: example.label for example in select_trusted(rows, None, TrustPolicy(**rules))}


def test_majority_label_wins_with_its_votes_agreement_and_annotators() -> None:
    rows = [vote("t", "World", "a"), vote("t", "World", "b"), vote("t", "Sports", "c")]
    [example] = select_trusted(rows, None, TrustPolicy(labels_required=2))
    assert (example.label, example.votes, example.annotators) == ("World", 2, ("a", "b"))
    assert example.agreement == pytest.approx(2 / 3)
    assert example.text_hash == "hash-t"


def test_tied_texts_are_not_trusted() -> None:
    rows = [vote("t", "World", "a"), vote("t", "Sports", "b")]
    assert trusted(rows) == {}
    assert aggregate(rows)["hash-t"].majority is None


def test_labels_required_counts_agreeing_votes() -> None:
    rows = [vote("one", "World", "a"), vote("two", "Sports", "a"), vote("two", "Sports", "b")]
    assert trusted(rows, labels_required=1) == {"one": "World", "two": "Sports"}
    assert trusted(rows, labels_required=2) == {"two": "Sports"}


def test_undone_and_rejected_answers_are_ignored() -> None:
    rows = [vote("t", "World", "a", "undone"), vote("t", "Sports", "b"), vote("u", "World", "c", "rejected")]
    assert trusted(rows) == {"t": "Sports"}


def test_latest_answer_of_an_annotator_replaces_their_earlier_one() -> None:
    rows = [vote("t", "World", "a"), vote("t", "Sports", "a")]
    assert trusted(rows) == {"t": "Sports"}
    assert aggregate(rows)["hash-t"].total == 1


def test_suspicious_majority_vote_blocks_the_text_until_accepted() -> None:
    pending = [vote("t", "World", "a", "suspicious"), vote("t", "World", "b")]
    assert trusted(pending) == {}
    accepted = [vote("t", "World", "a", "accepted"), vote("t", "World", "b")]
    assert trusted(accepted) == {"t": "World"}
    suspicious_minority = [vote("t", "World", "a"), vote("t", "World", "b"), vote("t", "Sports", "c", "suspicious")]
    assert trusted(suspicious_minority) == {"t": "World"}


def _spammer_rows() -> list[dict]:
    # a, b and c agree on six texts; "spam" answers every one of them differently.
    rows = []
    for i in range(6):
        rows += [vote(f"t{i}", "World", name) for name in "abc"] + [vote(f"t{i}", "Sports", "spam")]
    return rows + [vote("spam only", "Business", "spam"), vote("a only", "Sci/Tech", "a")]


def test_low_agreement_annotator_is_flagged_and_not_counted() -> None:
    agreement = annotator_agreement(_spammer_rows())
    assert (agreement["spam"].compared, agreement["spam"].agreed) == (6, 0)
    assert (agreement["a"].compared, agreement["a"].agreed) == (6, 6)  # b and c outvote the spammer
    result = trusted(_spammer_rows())
    assert "spam only" not in result and result["a only"] == "Sci/Tech"
    assert result["t0"] == "World"


def test_annotator_is_not_flagged_before_enough_shared_answers() -> None:
    result = trusted(_spammer_rows(), min_answers_for_agreement=7)
    assert result["spam only"] == "Business"


def test_contradiction_reason_needs_a_confident_disagreeing_model() -> None:
    probs = {"World": 0.05, "Sports": 0.92, "Business": 0.02, "Sci/Tech": 0.01}
    assert contradiction_reason("Sports", probs, "World", 0.9) == "model was 92% sure of Sports"
    assert contradiction_reason("Sports", probs, "Sports", 0.9) is None
    assert contradiction_reason("Sports", probs, "World", 0.95) is None
    assert contradiction_reason(None, None, "World", 0.9) is None


def test_an_answer_naming_a_topic_the_model_lacks_is_not_suspicious(make_store: StoreFactory, tmp_path: Path) -> None:
    # The model's certainty among its own four topics says nothing against a topic added since: those answers teach.
    store = make_store(tmp_path / "f.db")
    store.topics.commit(store.topics.current(LABELS).add("Health"), planned_on=1)
    sure = {"World": 0.01, "Sports": 0.97, "Business": 0.01, "Sci/Tech": 0.01}
    new_topic = store.answers.record(AnswerInput(text="Clinic flu cases rise", user_label="Health", annotator="a", kind="correct",
                             probabilities=sure))
    known = store.answers.record(AnswerInput(text="Odd one", user_label="World", annotator="a", kind="correct", probabilities=sure))
    assert (str(new_topic.status), str(known.status)) == ("ok", "suspicious")
    assert contradiction_reason("Sports", sure, "Health", 0.9) is None


def test_read_trusted_reads_the_store(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db")
    sure = {"World": 0.01, "Sports": 0.97, "Business": 0.01, "Sci/Tech": 0.01}
    store.answers.record(AnswerInput(text="Match report", user_label="Sports", annotator="a", kind="confirm", probabilities=sure))
    flagged = store.answers.record(AnswerInput(text="Odd one", user_label="World", annotator="a", kind="correct", probabilities=sure))
    store.answers.record(AnswerInput(text="Quarterly results", user_label="Business", annotator="b", kind="correct"))
    assert {e.text: e.label for e in read_trusted(store, TrustPolicy())} == {
        "Match report": "Sports",
        "Quarterly results": "Business",
    }
    store.answers.set_status(flagged.id, "accepted")
    assert [e.text for e in read_trusted(store, TrustPolicy())] == ["Match report", "Odd one", "Quarterly results"]
    assert read_trusted(store, TrustPolicy(labels_required=2)) == []


def test_identities_sharing_an_address_are_one_vote() -> None:
    sybils = [vote("t", "Sports", f"anon:{i}", verified=False, address="addr:x") for i in range(5)]
    assert trusted(sybils, labels_required=2) == {}
    assert aggregate(sybils)["hash-t"].total == 1
    spread = [vote("t", "Sports", f"anon:{i}", verified=False, address=f"addr:{i}") for i in range(2)]
    assert trusted(spread, labels_required=2) == {"t": "Sports"}


def test_unverified_identities_cannot_outvote_an_honest_annotator_into_exclusion() -> None:
    rows = []
    for i in range(6):
        rows.append(vote(f"t{i}", "World", "user:honest", address="addr:h"))
        rows += [vote(f"t{i}", "Sports", f"anon:{k}", verified=False, address=f"addr:{k}") for k in range(3)]
    agreement = annotator_agreement(rows)
    assert agreement["user:honest"].compared == 0  # no verified consensus to disagree with
    kept = {e.text: e.label for e in select_trusted(rows, None, TrustPolicy(train_on="signed_in"))}
    assert kept == {f"t{i}": "World" for i in range(6)}


def test_train_on_decides_whose_answers_train() -> None:
    rows = [vote("a", "World", "user:signed"), vote("b", "Sports", "anon:1", verified=False, address="addr:1")]
    assert trusted(rows, train_on="anyone") == {"a": "World", "b": "Sports"}
    assert trusted(rows, train_on="signed_in") == {"a": "World"}
    # "checked": only annotators who answered min_checks known-answer checks and passed them, one at least
    # where the model (its label is stored with the answer) was wrong.
    gold = {"hash-c1": "World", "hash-c2": "World"}
    checks = [vote("c1", "World", "anon:1", verified=False) | {"predicted_label": "Sports"},
              vote("c2", "World", "anon:1", verified=False) | {"predicted_label": "World"}]
    policy = TrustPolicy(train_on="checked", min_checks=2)
    assert {e.text for e in select_trusted(rows + checks, gold, policy)} == {"b"}
    parrot = [row | {"predicted_label": "World"} for row in checks]  # right only where the model was
    assert select_trusted(rows + parrot, gold, policy) == []
    failed = [vote("c1", "World", "anon:1", verified=False), vote("c2", "Sports", "anon:1", verified=False)]
    assert select_trusted(rows + failed, gold, policy) == []
