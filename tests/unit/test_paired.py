"""The paired statistics behind the gate, checked against independent computations (brute force, numerical
likelihood maximisation) rather than against the formulas they use."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from core.evaluation.paired import (
    discordant,
    mcnemar_p,
    noninferiority,
    power_of,
    rows_for_gain,
    tango_z,
    visible_gain,
)


def restricted_z(n: int, b: int, c: int, theta0: float) -> float:
    """The score statistic with p01 found by maximising the likelihood numerically under p10 = p01 + theta0."""
    def neg_log_likelihood(p01: float) -> float:
        p10, rest = p01 + theta0, 1.0 - 2 * p01 - theta0
        return -(c * math.log(p01) + b * math.log(p10) + (n - b - c) * math.log(rest))

    low, high = max(0.0, -theta0) + 1e-12, (1.0 - theta0) / 2 - 1e-12
    p01 = minimize_scalar(neg_log_likelihood, bounds=(low, high), method="bounded",
                          options={"xatol": 1e-12}).x
    return (b - c - n * theta0) / math.sqrt(n * (2 * p01 + theta0 - theta0**2))


@pytest.mark.parametrize(("n", "b", "c", "theta0"), [(1636, 2, 12, -0.01), (400, 5, 9, -0.03), (57, 3, 1, -0.2),
                                                     (2000, 40, 61, -0.01), (120, 0, 4, -0.05)])
def test_tango_statistic_matches_the_numerical_restricted_likelihood(n: int, b: int, c: int, theta0: float) -> None:
    assert tango_z(n, b, c, theta0) == pytest.approx(restricted_z(n, b, c, theta0), rel=1e-5)


def test_tango_statistic_at_zero_is_the_mcnemar_score_statistic() -> None:
    assert tango_z(500, 30, 18, 0.0) == pytest.approx((30 - 18) / math.sqrt(48))


@pytest.mark.parametrize(("b", "c", "alternative", "expected"), [
    (10, 0, "two-sided", 2 * 0.5**10), (10, 0, "greater", 0.5**10), (0, 10, "greater", 1.0),
    (0, 10, "less", 0.5**10), (3, 1, "greater", 5 / 16), (0, 0, "greater", 1.0), (5, 5, "two-sided", 1.0),
])
def test_mcnemar_p_known_values(b: int, c: int, alternative: str, expected: float) -> None:
    assert mcnemar_p(b, c, alternative) == pytest.approx(expected)


def test_discordant_counts_and_its_errors() -> None:
    champion = np.array([True, True, False, False, True])
    challenger = np.array([True, False, True, True, True])
    assert discordant(champion, challenger) == (5, 2, 1)
    with pytest.raises(ValueError, match="differ in length"):
        discordant(np.ones(3, dtype=bool), np.ones(4, dtype=bool))
    with pytest.raises(ValueError, match="alternative"):
        mcnemar_p(1, 1, "bigger")


def test_noninferiority_bound_and_p_agree_at_the_margin() -> None:
    # Whatever the counts, "bound above -margin" and "p below alpha" are the same verdict.
    for n, b, c in [(1636, 2, 12), (1636, 6, 10), (400, 0, 0), (410, 1, 9), (100, 0, 3), (2000, 10, 40)]:
        test = noninferiority(n, b, c, margin=0.01, alpha=0.05)
        assert (test.lower_bound > -0.01) == (test.p_value < 0.05) == test.passed, (n, b, c)
        assert tango_z(n, b, c, test.lower_bound) == pytest.approx(norm.isf(0.05), abs=1e-6)
        assert test.lower_bound <= test.difference


def test_noninferiority_of_an_empty_set_passes_and_claims_nothing() -> None:
    test = noninferiority(0, 0, 0, margin=0.03, alpha=0.05)
    assert test.passed and test.p_value == 1.0
    with pytest.raises(ValueError):
        noninferiority(10, 8, 5, margin=0.03, alpha=0.05)  # more discordant rows than rows
    with pytest.raises(ValueError):
        noninferiority(10, 1, 1, margin=0.0, alpha=0.05)


def pass_rate(n: int, discordance: float, gain: float, margin: float, alpha: float, draws: int = 2000) -> float:
    """How often the own mode's rules (a gain seen, a loss of `margin` ruled out) pass a model truly `gain` better,
    over simulated paired comparisons of n rows."""
    p10, p01 = (discordance + gain) / 2, (discordance - gain) / 2
    counts = np.random.default_rng(0).multinomial(n, [p10, p01, 1 - p10 - p01], size=draws)
    return float(np.mean([b > c and noninferiority(n, b, c, margin, alpha).passed for b, c, _ in counts]))


def test_a_gain_said_visible_passes_the_own_rules_about_as_often_as_the_power_says() -> None:
    n, discordance, margin = 345, 0.06, 0.02
    gain = visible_gain(n, discordance, 0.05, 0.8, margin)
    assert gain is not None and 0.005 < gain < 0.03
    assert 0.7 < pass_rate(n, discordance, gain, margin, 0.05) < 0.9
    assert pass_rate(n, discordance, gain / 3, margin, 0.05) < 0.7  # a third of it is seen far less often
    assert visible_gain(0, discordance, 0.05, 0.8, margin) is None


def test_rows_for_gain_is_where_the_gain_becomes_visible() -> None:
    n = rows_for_gain(0.01, 0.06, 0.05, 0.8, 0.02)
    assert n is not None
    assert visible_gain(n, 0.06, 0.05, 0.8, 0.02) <= 0.01 + 1e-12 < visible_gain(n - 1, 0.06, 0.05, 0.8, 0.02)  # type: ignore[operator]
    assert rows_for_gain(0.02, 0.06, 0.05, 0.8, 0.02) < n  # type: ignore[operator]  # a larger gain needs fewer
    power = power_of(100, 0.06, True, 0.05, 0.8, 0.02, 0.01)
    assert power.more_for_target == n - 100 and power.visible == visible_gain(100, 0.06, 0.05, 0.8, 0.02)
