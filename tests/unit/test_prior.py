"""A taught topic's prior (retrain.topics.prior): its bias is moved until the model reads as much unlabelled traffic as that
topic as the traffic answers name it, and only the topics only answers teach move."""

from __future__ import annotations

import numpy as np
import pytest

from retrain.topics.prior import MIN_TRAFFIC_ANSWERS, match_prior, matching_shifts, read_shares, topic_shares


def _logits(rows: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four topics, a quarter each; the fourth scored 2 logits low, as a topic taught with few answers is."""
    rng = np.random.default_rng(seed)
    truth = np.arange(rows) % 4
    logits = rng.normal(0.0, 1.0, (rows, 4))
    logits[np.arange(rows), truth] += 3.0
    logits[:, 3] -= 2.0
    return logits, truth


def test_the_shift_brings_the_read_share_to_the_answers_share_and_recall_up() -> None:
    logits, truth = _logits()
    before = read_shares(logits, np.zeros(4))[3]
    assert before < 0.15  # under-read, as measured after a teaching retrain
    shift = matching_shifts(logits, [3], np.array([0.25, 0.25, 0.25, 0.25]))
    assert shift[:3].tolist() == [0.0, 0.0, 0.0] and 1.0 < shift[3] < 3.0
    assert read_shares(logits, shift)[3] == pytest.approx(0.25, abs=0.005)
    recall = lambda s: np.mean((logits + s).argmax(axis=1)[truth == 3] == 3)  # noqa: E731
    assert recall(shift) > recall(np.zeros(4)) + 0.3


def test_several_taught_topics_each_reach_their_share() -> None:
    logits, _ = _logits(seed=1)
    logits[:, 2] -= 1.0
    target = np.array([0.3, 0.3, 0.2, 0.2])
    shift = matching_shifts(logits, [2, 3], target)
    assert read_shares(logits, shift)[2:] == pytest.approx([0.2, 0.2], abs=0.01)


def test_shares_count_one_pseudo_answer_per_topic() -> None:
    assert topic_shares([0, 0, 1], 3).tolist() == pytest.approx([3 / 6, 2 / 6, 1 / 6])


def test_too_few_traffic_answers_leave_the_bias_as_trained_and_the_record_names_the_topic() -> None:
    logits, truth = _logits()
    keys = ("World", "Sports", "Business", "Health")
    assert match_prior(logits, keys, [3], truth[: MIN_TRAFFIC_ANSWERS - 1].tolist()) is None
    assert match_prior(logits[:0], keys, [3], truth[:100].tolist()) is None
    matched = match_prior(logits, keys, [3], truth[:100].tolist())
    assert matched is not None and set(matched.shift) == {"Health"}
    assert matched.read_before["Health"] < 0.15 and matched.read_after["Health"] == pytest.approx(
        matched.target["Health"], abs=0.005)
    assert matched.params()["prior_traffic_answers"] == 100 and matched.params()["prior_shift_Health"] > 1.0


def test_a_topic_the_champion_already_reads_is_held_at_the_champions_share_of_the_same_texts() -> None:
    from retrain.topics.prior import MIN_HOLD_TEXTS, hold_prior

    keys = ("Politics", "Sports", "Business", "Entertainment")
    champion, truth = _logits(seed=2)
    champion[:, 3] += 2.0  # the champion reads its added topic at its share (its prior was matched when taught)
    trained = champion.copy()
    trained[:, 3] -= 1.5  # a retrain replaying base rows that never hold it drifted it down
    held = hold_prior(champion, trained, keys, [3])
    assert held is not None and held.answers == 0 and set(held.shift) == {"Entertainment"}
    assert held.read_before["Entertainment"] < held.target["Entertainment"] - 0.05
    assert held.read_after["Entertainment"] == pytest.approx(held.target["Entertainment"], abs=0.005)
    assert held.shift["Entertainment"] == pytest.approx(1.5, abs=0.2)
    recall = lambda logits: np.mean(logits.argmax(axis=1)[truth == 3] == 3)  # noqa: E731
    shifted = trained.copy()
    shifted[:, 3] += held.shift["Entertainment"]
    assert recall(shifted) == pytest.approx(recall(champion), abs=0.02) and recall(shifted) > recall(trained) + 0.1
    assert held.params() == {"prior_held_texts": len(champion), "prior_held_Entertainment": pytest.approx(
        held.target["Entertainment"], abs=1e-4), "prior_held_shift_Entertainment": pytest.approx(
        held.shift["Entertainment"], abs=1e-3)}
    # Too few texts to read a share on: the bias stays as trained.
    assert hold_prior(champion[: MIN_HOLD_TEXTS - 1], trained[: MIN_HOLD_TEXTS - 1], keys, [3]) is None
