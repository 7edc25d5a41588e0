"""Paired comparisons of two classifiers on the same rows, as pure functions: exact McNemar, a non-inferiority
test on the paired difference, and what a comparison on n rows can see (`Power`: how many rows a stated gain needs).

Notation: of n rows, b = the challenger alone is right, c = the champion alone is right; the accuracy
difference challenger - champion is (b - c) / n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binomtest, norm

ALTERNATIVES = ("two-sided", "greater", "less")


def discordant(champion_correct: np.ndarray, challenger_correct: np.ndarray) -> tuple[int, int, int]:
    """(n, b, c) of two correct-vectors: rows, challenger alone right, champion alone right."""
    champion = np.asarray(champion_correct).astype(bool)
    challenger = np.asarray(challenger_correct).astype(bool)
    if champion.ndim != 1 or challenger.ndim != 1:
        raise ValueError("correct-vectors must be one-dimensional")
    if champion.shape != challenger.shape:
        raise ValueError(f"correct-vectors differ in length: {champion.size} vs {challenger.size}")
    return int(champion.size), int(np.count_nonzero(challenger & ~champion)), int(np.count_nonzero(champion & ~challenger))


def mcnemar_p(b: int, c: int, alternative: str = "two-sided") -> float:
    """Exact McNemar p-value from the discordant counts: binomtest(b, b + c, 0.5).

    "greater": evidence that the challenger is better (b large); "less": that it is worse. With no
    discordant pairs the models are indistinguishable, so p = 1.0.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}, got {alternative!r}")
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    return float(binomtest(b, b + c, 0.5, alternative=alternative).pvalue)


@dataclass(frozen=True)
class NonInferiority:
    """A one-sided non-inferiority test of challenger - champion accuracy against -margin."""

    n: int
    b: int  # challenger alone right
    c: int  # champion alone right
    margin: float  # the largest drop tolerated (absolute, 0..1)
    alpha: float
    p_value: float  # H0: the challenger is worse by `margin` or more
    lower_bound: float  # one-sided (1 - alpha) score confidence bound on challenger - champion

    @property
    def difference(self) -> float:
        return (self.b - self.c) / self.n if self.n else 0.0

    @property
    def passed(self) -> bool:
        # No rows: nothing can have regressed there, and nothing is claimed.
        return self.n == 0 or self.p_value < self.alpha


def tango_z(n: int, b: int, c: int, theta0: float) -> float:
    """Tango's (1998) score statistic for H0: p10 - p01 = theta0 on paired binary outcomes.

    p10 / p01: the chance a row is right for the challenger / champion alone. The variance is taken at the
    maximum-likelihood estimate of p01 restricted to H0 (a quadratic's root), which keeps the test honest
    with few discordant pairs, where the plain Wald interval is far too narrow. At theta0 = 0 it is the
    McNemar score statistic (b - c) / sqrt(b + c).
    """
    if n <= 0:
        raise ValueError("no rows to test")
    a_ = 2.0 * n
    b_ = -b - c + (2.0 * n - b + c) * theta0
    c_ = -c * theta0 * (1.0 - theta0)
    p01 = (-b_ + math.sqrt(max(b_ * b_ - 4.0 * a_ * c_, 0.0))) / (2.0 * a_)
    variance = n * (2.0 * p01 + theta0 * (1.0 - theta0))
    return (b - c - n * theta0) / math.sqrt(max(variance, 1e-300))


def noninferiority(n: int, b: int, c: int, margin: float, alpha: float) -> NonInferiority:
    """Is the challenger's accuracy not worse than the champion's by `margin` or more (one-sided, level alpha)?

    Tango's score test of H0: p10 - p01 <= -margin; the bound is where the score statistic equals
    z_(1-alpha), so `lower_bound > -margin` exactly when `p_value < alpha`.
    """
    if not (0.0 < margin < 1.0 and 0.0 < alpha < 1.0):
        raise ValueError(f"margin and alpha must lie in (0, 1), got {margin} and {alpha}")
    if n < 0 or b < 0 or c < 0 or b + c > n:
        raise ValueError(f"counts must satisfy 0 <= b + c <= n, got n={n}, b={b}, c={c}")
    if n == 0:
        return NonInferiority(0, 0, 0, margin, alpha, 1.0, -1.0)
    p_value = float(norm.sf(tango_z(n, b, c, -margin)))
    z = float(norm.isf(alpha))
    observed = (b - c) / n
    low = -1.0 + 1e-12
    # tango_z falls as theta0 rises and is 0 at the observed difference, so the root lies between.
    bound = low if tango_z(n, b, c, low) <= z else brentq(lambda t: tango_z(n, b, c, t) - z, low, observed)
    return NonInferiority(n, b, c, margin, alpha, p_value, float(bound))


@dataclass(frozen=True)
class Power:
    """What a paired comparison on `n` rows can see: the smallest accuracy gain it would pass with `power`, and how
    many rows in all a gain of `target` would need. Normal approximation of the paired difference, whose standard
    error is sqrt(discordance / n) (Connor 1987): a statement of scale for people, not a test."""

    n: int
    discordance: float  # share of rows the two models are taken to disagree on
    measured: bool  # the discordance was measured on a comparison, not assumed
    alpha: float
    power: float
    margin: float  # the loss the rule must rule out (0: the gain itself must be shown)
    visible: float | None  # the smallest gain passed with `power`; None with no rows
    target: float  # the gain the rows are sized for
    rows_for_target: int | None  # rows in all at which `target` becomes visible; None when none would do

    @property
    def more_for_target(self) -> int | None:
        return None if self.rows_for_target is None else max(0, self.rows_for_target - self.n)


def visible_gain(n: int, discordance: float, alpha: float, power: float, margin: float = 0.0) -> float | None:
    """The smallest true accuracy gain a one-sided rule on n paired rows passes with probability `power`: the rule
    passes when the observed gain is positive and its lower confidence bound (at 1 - alpha) is above -margin.
    None without rows."""
    if n <= 0:
        return None
    se = math.sqrt(discordance / n)
    z_alpha, z_power = float(norm.isf(alpha)), float(norm.isf(1.0 - power))
    return max(z_power * se, (z_alpha + z_power) * se - margin, 0.0)


def rows_for_gain(gain: float, discordance: float, alpha: float, power: float, margin: float = 0.0,
                  max_rows: int = 1_000_000) -> int | None:
    """The fewest rows at which `visible_gain` is at most `gain`; None past max_rows."""
    z_alpha, z_power = float(norm.isf(alpha)), float(norm.isf(1.0 - power))
    # visible_gain falls as n grows: each of its two terms gives a bound on sqrt(discordance / n).
    limits = [gain / z_power, (gain + margin) / (z_alpha + z_power)]
    se = min(limit for limit in limits if limit > 0) if any(limit > 0 for limit in limits) else 0.0
    if se <= 0:
        return None
    rows = math.ceil(discordance / se**2)
    return rows if rows <= max_rows else None


def power_of(n: int, discordance: float, measured: bool, alpha: float, power: float, margin: float, target: float
             ) -> Power:
    return Power(n, discordance, measured, alpha, power, margin, visible_gain(n, discordance, alpha, power, margin),
                 target, rows_for_gain(target, discordance, alpha, power, margin))
