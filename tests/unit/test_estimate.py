"""Confidence-based performance estimation on synthetic probabilities whose true accuracy is known."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import precision_score, recall_score

from core.data import InputForm
from core.evaluation.estimate import Tally, estimate, expected_confusion
from core.input_forms import guess_form
from core.labels import LABELS


def _calibrated(n: int, seed: int, concentration: float = 0.6) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and labels drawn from those very probabilities: calibrated by construction."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet([concentration] * len(LABELS), size=n)
    labels = np.array([rng.choice(len(LABELS), p=p) for p in probs])
    return probs, labels


def test_estimated_accuracy_matches_the_true_accuracy_of_calibrated_predictions() -> None:
    probs, labels = _calibrated(20_000, seed=1)
    got = estimate(probs)
    true_accuracy = float(np.mean(probs.argmax(axis=1) == labels))
    low, high = got.interval()
    assert low <= true_accuracy <= high
    assert abs(got.accuracy - true_accuracy) < 0.01


def test_estimated_precision_and_recall_match_the_true_ones_per_label() -> None:
    probs, labels = _calibrated(20_000, seed=2)
    got = estimate(probs)
    predicted = probs.argmax(axis=1)
    true_precision = precision_score(labels, predicted, average=None, labels=range(len(LABELS)))
    true_recall = recall_score(labels, predicted, average=None, labels=range(len(LABELS)))
    for i, name in enumerate(LABELS):
        assert got.precision[name] == pytest.approx(true_precision[i], abs=0.02)
        assert got.recall[name] == pytest.approx(true_recall[i], abs=0.02)


def test_overconfident_probabilities_overestimate_so_the_check_has_teeth() -> None:
    probs, labels = _calibrated(5_000, seed=3)
    sharpened = probs**3 / (probs**3).sum(axis=1, keepdims=True)  # same predictions, more sure of them
    true_accuracy = float(np.mean(sharpened.argmax(axis=1) == labels))
    assert estimate(sharpened).accuracy - true_accuracy > 0.1


def test_tallies_add_up_across_requests_to_the_estimate_of_all_of_them() -> None:
    probs, _ = _calibrated(300, seed=4)
    parts = Tally().add(probs[:100]) + Tally().add(probs[100:250]) + Tally() + Tally().add(probs[250:])
    whole = estimate(probs)
    merged = parts.estimate(LABELS)
    assert merged.n == whole.n == 300
    assert merged.accuracy == pytest.approx(whole.accuracy)
    assert merged.accuracy_se == pytest.approx(whole.accuracy_se)
    assert merged.recall == pytest.approx(whole.recall)
    np.testing.assert_allclose(np.asarray(parts.confusion), expected_confusion(probs))


def test_no_traffic_estimates_nothing() -> None:
    empty = estimate(np.zeros((0, len(LABELS))))
    assert empty.n == 0 and np.isnan(empty.accuracy) and Tally().estimate().n == 0


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("Fed raises rates again", InputForm.TITLE),
        ("Wall St. Bears Claw Back Into the Black (Reuters)", InputForm.TITLE),
        ("LONDON (Reuters) - Virgin Radio and online music service Napster said on Monday they would chart the "
         "most downloaded songs.", InputForm.BODY),
        ("Reuters - Short-sellers, Wall Street's dwindling band of ultra-cynics, are seeing green again as stocks "
         "rise.", InputForm.BODY),
        ("Oil and Economy Cloud Stocks' Outlook (Reuters) Reuters - Soaring crude prices plus worries about the "
         "economy are expected to hang over the stock market next week.", InputForm.FULL),
        ("the company said on Tuesday that quarterly profit rose, helped by strong sales. Analysts had expected "
         "less.", InputForm.BODY),
    ],
)
def test_the_form_rule_on_typical_texts(text: str, form: InputForm) -> None:
    assert guess_form(text) is form
