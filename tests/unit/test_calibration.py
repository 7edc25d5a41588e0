"""Temperature scaling and the measures of calibration (core.evaluation.calibration), on synthetic probabilities whose
true calibration is known."""

from __future__ import annotations

import numpy as np
import pytest

from core.evaluation.calibration import (
    Temperatures,
    brier_score,
    calibration_report,
    cross_validated,
    expected_calibration_error,
    fit_temperature,
    fit_temperatures,
    reliability,
    remap_top,
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
    report = calibration_report(probs, labels, probs)
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


def _bent_sample(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits whose softmax is wrong in a way no temperature fixes: a prediction of top probability c is right
    with probability 0.25 + 0.75 * ((c - 0.25) / 0.75) ** 2 (from chance to certainty, but bent: over-confident in
    the middle, right at both ends)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.0, size=(n, 4))
    probs = with_temperature(logits, 1.0)
    right = rng.random(n) < 0.25 + 0.75 * ((probs.max(axis=1) - 0.25) / 0.75) ** 2
    top = probs.argmax(axis=1)
    other = (top + rng.integers(1, 4, n)) % 4
    return logits, np.where(right, top, other)


def test_a_confidence_map_calibrates_what_a_temperature_cannot_and_changes_no_prediction() -> None:
    logits, labels = _bent_sample(6_000, seed=1)
    unseen_logits, unseen_labels = _bent_sample(6_000, seed=2)
    forms = ["title"] * len(labels)
    with_map = fit_temperatures(logits, labels, forms, min_rows=200)
    temperature_only = fit_temperatures(logits, labels, forms, min_rows=200, maps=False)
    assert set(with_map.maps) == {"title"} and temperature_only.maps == {}
    mapped = with_map.apply(unseen_logits, forms)
    tempered = temperature_only.apply(unseen_logits, forms)
    # On rows the fit never saw: the temperature leaves ~0.08, the map ~0.02 (the ECE's own noise on 6,000 rows).
    assert expected_calibration_error(mapped, unseen_labels) < 0.035
    assert expected_calibration_error(tempered, unseen_labels) > expected_calibration_error(mapped, unseen_labels) + 0.03
    np.testing.assert_array_equal(mapped.argmax(axis=1), unseen_logits.argmax(axis=1))
    np.testing.assert_allclose(mapped.sum(axis=1), 1.0)
    # The top moves along the fitted map, lifted only where another label would overtake it.
    x, y = (np.asarray(v) for v in with_map.maps["title"])
    on_map = np.interp(tempered.max(axis=1), x, y)
    assert np.all(mapped.max(axis=1) >= on_map - 1e-9) and np.mean(np.isclose(mapped.max(axis=1), on_map)) > 0.75
    assert Temperatures.from_meta(with_map.to_meta()) == with_map
    assert with_map.apply(unseen_logits[:5], ["body"] * 5).tolist() == with_temperature(unseen_logits[:5],
                                                                                       with_map.pooled).tolist()


def test_a_map_that_pulls_every_top_down_still_keeps_each_prediction() -> None:
    probs = np.array([[0.50, 0.45, 0.05, 0.0], [0.9, 0.05, 0.03, 0.02], [0.3, 0.29, 0.21, 0.2]])
    flat = remap_top(probs, np.array([0.0, 1.0]), np.array([0.25, 0.25]))
    np.testing.assert_array_equal(flat.argmax(axis=1), probs.argmax(axis=1))
    np.testing.assert_allclose(flat.sum(axis=1), 1.0)
    assert np.all(flat.max(axis=1) >= np.sort(flat, axis=1)[:, -2])


def test_cross_validated_calibration_never_fits_on_the_rows_it_scores() -> None:
    logits, labels = _bent_sample(3_000, seed=3)
    forms = ["title"] * len(labels)
    groups = np.arange(len(labels)) // 3  # a text in three forms: one group
    unseen = cross_validated(logits, labels, forms, groups)
    in_sample = fit_temperatures(logits, labels, forms).apply(logits, forms)
    # Scored by calibrations that never saw them, the rows read worse calibrated than in-sample, but still well.
    assert expected_calibration_error(in_sample, labels) < expected_calibration_error(unseen, labels) < 0.04
    np.testing.assert_array_equal(unseen.argmax(axis=1), logits.argmax(axis=1))
