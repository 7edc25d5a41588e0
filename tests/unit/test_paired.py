"""The paired statistics behind the gate, checked against independent computations (brute force, numerical
likelihood maximisation) rather than against the formulas they use."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import binomtest, multinomial, norm

from core.evaluation.paired import (
    discordant,
    mcnemar_p,
    mcnemar_power,
    noninferiority,
    rows_for_power,
    tango_z,
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


def brute_force_power(n: int, discordance: float, gain: float, alpha: float) -> float:
    """Sum over every (b, c) of the trinomial, rejecting where the exact one-sided p is below alpha."""
    p10, p01 = (discordance + gain) / 2, (discordance - gain) / 2
    total = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            if binomtest(b, b + c, 0.5, alternative="greater").pvalue < alpha if b + c else False:
                total += multinomial.pmf([b, c, n - b - c], n, [p10, p01, 1 - p10 - p01])
    return total


@pytest.mark.parametrize(("n", "discordance", "gain", "alpha"), [(40, 0.3, 0.1, 0.05), (60, 0.2, 0.08, 0.0125)])
def test_power_of_the_exact_test_matches_brute_force(n: int, discordance: float, gain: float, alpha: float) -> None:
    assert mcnemar_power(n, discordance, gain, alpha) == pytest.approx(brute_force_power(n, discordance, gain, alpha),
                                                                       abs=1e-9)


def test_rows_for_power_reaches_the_power_and_one_row_fewer_does_not() -> None:
    n = rows_for_power(discordance=0.10, gain=0.02, alpha=0.05, power=0.8)
    assert n is not None and 1000 < n < 2500  # the normal approximation (Connor 1987) says about 1,540
    assert mcnemar_power(n, 0.10, 0.02, 0.05) >= 0.8 > mcnemar_power(n - 1, 0.10, 0.02, 0.05)
    # A larger gain needs fewer rows; a stricter alpha more.
    assert rows_for_power(0.10, 0.04, 0.05, 0.8) < n < rows_for_power(0.10, 0.02, 0.0125, 0.8)
    assert rows_for_power(0.5, 0.001, 0.05, 0.8, max_rows=1000) is None
