"""Temperature scaling and the measures of calibration (core.evaluation.calibration), on synthetic probabilities whose
true calibration is known."""

from __future__ import annotations

import numpy as np
import pytest

from core.evaluation.calibration import (
    brier_score,
    calibration_report,
    expected_calibration_error,
    fit_temperature,
    reliability,
    with_temperature,
)


def calibrated_sample(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Logits of a perfectly calibrated 4-class model: each label is drawn from softmax(logits) itself."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.0, size=(n, 4))
    probs = with_temperature(logits, 1.0)
    labels = np.array([rng.choice(4, p=row) for row in probs])
    return logits, labels


def test_an_over_confident_model_is_fitted_back_to_its_true_temperature() -> None:
    logits, labels = calibrated_sample(20_000)
    over = logits * 2.5  # what fine-tuning does: the same ranking, said more surely
    temperature = fit_temperature(over, labels)
    assert temperature == pytest.approx(2.5, rel=0.05)
    before, after = with_temperature(over, 1.0), with_temperature(over, temperature)
    assert (before.argmax(1) == after.argmax(1)).all()  # no prediction changes
    assert expected_calibration_error(before, labels) > 0.08
    assert expected_calibration_error(after, labels) < 0.015
    assert brier_score(after, labels) < brier_score(before, labels)


def test_a_calibrated_model_keeps_temperature_one_and_a_small_error() -> None:
    logits, labels = calibrated_sample(20_000, seed=1)
    assert fit_temperature(logits, labels) == pytest.approx(1.0, abs=0.05)
    assert expected_calibration_error(with_temperature(logits, 1.0), labels) < 0.015


def test_the_measures_on_hand_made_rows() -> None:
    probs = np.array([[0.9, 0.1, 0.0, 0.0], [0.9, 0.1, 0.0, 0.0], [0.6, 0.4, 0.0, 0.0], [0.6, 0.4, 0.0, 0.0]])
    labels = np.array([0, 1, 0, 0])
    # Bin of 0.9: accuracy 1/2, confidence 0.9; bin of 0.6: accuracy 1, confidence 0.6. Each half of the rows.
    assert expected_calibration_error(probs, labels) == pytest.approx(0.5 * 0.4 + 0.5 * 0.4)
    assert brier_score(probs, labels) == pytest.approx((0.02 + 1.62 + 0.32 + 0.32) / 4)
    points = reliability(probs, labels)
    assert [(p["n"], p["accuracy"]) for p in points] == [(2, 1.0), (2, 0.5)]
    report = calibration_report(probs, labels, 1.0)
    assert report["ece_before"] == pytest.approx(report["ece_after"]) and report["n"] == 4
    assert fit_temperature(np.zeros((0, 4)), np.zeros(0, dtype=int)) == 1.0
