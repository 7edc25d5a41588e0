"""Temperature scaling and the measures of calibration (core.evaluation.calibration), on synthetic probabilities whose
true calibration is known."""

from __future__ import annotations

import numpy as np
import pytest

from core.evaluation.calibration import (
    Temperatures,
    brier_score,
    calibration_report,
    expected_calibration_error,
    fit_temperature,
    fit_temperatures,
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


def test_each_form_gets_its_own_temperature_where_it_has_enough_rows() -> None:
    # Headlines' logits are twice too sharp (true T = 2), articles' are calibrated (T = 1), and a rare form has
    # too few rows to fit: it takes the pooled temperature.
    headline_logits, headline_labels = calibrated_sample(4_000, seed=1)
    article_logits, article_labels = calibrated_sample(4_000, seed=2)
    rare_logits, rare_labels = calibrated_sample(50, seed=3)
    logits = np.concatenate([headline_logits * 2.0, article_logits, rare_logits])
    labels = np.concatenate([headline_labels, article_labels, rare_labels])
    forms = ["title"] * 4_000 + ["full"] * 4_000 + ["body"] * 50

    found = fit_temperatures(logits, labels, forms, min_rows=200)

    assert set(found.by_form) == {"title", "full"}
    assert found.of("title") == pytest.approx(2.0, rel=0.1)
    assert found.of("full") == pytest.approx(1.0, rel=0.1)
    assert found.of("body") == found.pooled and 1.0 < found.pooled < 2.0
    rows = found.per_row(forms)
    calibrated = with_temperature(logits, rows)
    assert np.allclose(calibrated[:4_000], with_temperature(logits[:4_000], found.of("title")))
    # One temperature per form calibrates every form; the pooled one leaves headlines over-confident.
    pooled = with_temperature(logits, found.pooled)
    assert expected_calibration_error(calibrated[:4_000], labels[:4_000]) < 0.02
    assert expected_calibration_error(pooled[:4_000], labels[:4_000]) > expected_calibration_error(
        calibrated[:4_000], labels[:4_000]) + 0.01
    assert Temperatures.from_meta(found.to_meta()) == found
    assert Temperatures.from_meta({"temperature": 0.9}) == Temperatures(0.9)  # a version from before
