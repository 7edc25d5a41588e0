"""Confident learning (core.evaluation.confident_learning) against the paper's definition (Northcutt et al. 2021, eq. 1)."""

from __future__ import annotations

import numpy as np
import pytest

from core.evaluation.confident_learning import (
    NO_CLASS,
    RankBy,
    confident_classes,
    find_label_issues,
    thresholds,
)
from testkit.label_noise import confident_joint, recall_precision

# Worked by hand: t = (0.6, 0.7, 0.64). Row 2 (labelled 0) reaches only class 1's threshold; row 6 (labelled 2)
# only class 0's; row 4 reaches none; the rest their own class.
PROBS = np.array([
    [0.90, 0.05, 0.05],  # 0: label 0
    [0.70, 0.20, 0.10],  # 1: label 0
    [0.20, 0.75, 0.05],  # 2: label 0, looks like 1
    [0.10, 0.80, 0.10],  # 3: label 1
    [0.10, 0.60, 0.30],  # 4: label 1, below every threshold
    [0.05, 0.05, 0.90],  # 5: label 2
    [0.62, 0.00, 0.38],  # 6: label 2, looks like 0
])
LABELS = np.array([0, 0, 0, 1, 1, 2, 2])


def test_thresholds_are_the_mean_self_confidence_per_given_label() -> None:
    assert thresholds(PROBS, LABELS) == pytest.approx([0.6, 0.7, 0.64])


def test_confident_joint_matches_the_hand_count() -> None:
    assert confident_classes(PROBS, LABELS).tolist() == [0, 0, 1, 1, NO_CLASS, 2, 0]
    assert confident_joint(PROBS, LABELS).tolist() == [[2, 1, 0], [0, 1, 0], [1, 0, 1]]


def test_off_diagonal_rows_are_the_candidates_least_confident_first() -> None:
    issues = find_label_issues(PROBS, LABELS)
    assert issues.candidates == 2
    assert issues.candidate_rows.tolist() == [2, 6]
    assert issues.suggested[[2, 6]].tolist() == [1, 0]
    # the rest follow by self-confidence, ties by row
    assert issues.order.tolist() == [2, 6, 4, 1, 3, 0, 5]


def test_normalized_margin_ranks_by_the_gap_to_the_likeliest_other_class() -> None:
    probs = np.array([[0.3, 0.7], [0.45, 0.55], [0.9, 0.1], [0.1, 0.9], [0.8, 0.2], [0.35, 0.65]])
    labels = np.array([0, 0, 0, 1, 1, 1])
    by_margin = find_label_issues(probs, labels, RankBy.NORMALIZED_MARGIN)
    assert by_margin.score == pytest.approx([-0.4, -0.1, 0.8, 0.8, -0.6, 0.3])
    assert by_margin.order[0] == 4


def _reference_joint(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The paper's equation 1 written out with loops, as a second reading of the definition."""
    m = probs.shape[1]
    t = [np.mean([probs[n][j] for n in range(len(labels)) if labels[n] == j]) for j in range(m)]
    joint = np.zeros((m, m), dtype=int)
    for n, i in enumerate(labels):
        above = [k for k in range(m) if probs[n][k] >= t[k]]
        if above:
            joint[i][max(above, key=lambda k: probs[n][k])] += 1
    return joint


@pytest.mark.parametrize("seed", range(5))
def test_joint_equals_the_loop_reading_of_the_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(4), 50)
    probs = rng.dirichlet(np.ones(4) * 0.7, size=len(labels))
    assert confident_joint(probs, labels).tolist() == _reference_joint(probs, labels).tolist()


def test_flipped_rows_rank_first_when_the_model_knows_the_truth() -> None:
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, size=400)
    probs = np.full((400, 4), 0.05) + np.eye(4)[truth] * 0.8 + rng.uniform(0, 0.01, size=(400, 4))  # below the flips' pull on t
    probs /= probs.sum(axis=1, keepdims=True)
    flipped = rng.choice(400, size=12, replace=False)
    given = truth.copy()
    given[flipped] = (truth[flipped] + 1) % 4
    issues = find_label_issues(probs, given)
    assert set(issues.candidate_rows.tolist()) == set(flipped.tolist())
    assert recall_precision(issues.order, flipped) == (1.0, 1.0)
    assert (issues.suggested[flipped] == truth[flipped]).all()


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="expected probs"):
        find_label_issues(np.ones((3, 2)), np.array([0, 1]))
    with pytest.raises(ValueError, match="class indices"):
        find_label_issues(np.ones((2, 2)) / 2, np.array([0, 2]))
