"""Paired comparisons of two classifiers on the same rows, as pure functions: exact McNemar, a non-inferiority
test on the paired difference, and the power of the exact McNemar test (how many rows a stated gain needs).

Notation: of n rows, b = the challenger alone is right, c = the champion alone is right; the accuracy
difference challenger - champion is (b - c) / n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom, binomtest, norm

from core.settings.policies import GateConfig

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


def mcnemar_power(n: int, discordance: float, gain: float, alpha: float) -> float:
    """Power of the one-sided exact McNemar test (reject when p < alpha) on n paired rows.

    Model: each row is discordant with probability `discordance` (p10 + p01), and the challenger's
    accuracy is higher by `gain` (p10 - p01). The number of discordant rows m is Binomial(n, discordance);
    given m, b is Binomial(m, (discordance + gain) / (2 discordance)). Exact: it sums over m.
    """
    if n <= 0:
        return 0.0
    if not 0.0 < gain <= discordance <= 1.0:
        raise ValueError(f"need 0 < gain <= discordance <= 1, got gain={gain}, discordance={discordance}")
    # Only the m within 12 standard deviations of n * discordance carry weight (the rest is below 1e-30).
    spread = 12.0 * math.sqrt(n * discordance * (1.0 - discordance)) + 1.0
    m = np.arange(max(0, math.floor(n * discordance - spread)), min(n, math.ceil(n * discordance + spread)) + 1)
    critical = _critical_b(m, alpha)
    share = (discordance + gain) / (2.0 * discordance)
    reject = np.where(critical > m, 0.0, binom.sf(critical - 1, m, share))
    return float(np.sum(binom.pmf(m, n, discordance) * reject))


def rows_for_power(discordance: float, gain: float, alpha: float, power: float, max_rows: int = 200_000) -> int | None:
    """The fewest paired rows at which the one-sided exact McNemar test reaches `power`; None past max_rows.

    `discordance` below `gain` is raised to it (every discordant row then favours the challenger). The
    exact test's power saw-tooths with n, so this is the first n of a bisection, not every n beyond it.
    """
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie in (0, 1), got {power}")
    discordance = min(1.0, max(discordance, gain))
    # Bracket from the normal approximation (Connor 1987), then bisect with the exact power.
    z_alpha, z_power = norm.isf(alpha), norm.isf(1.0 - power)
    guess = (z_alpha * math.sqrt(discordance) + z_power * math.sqrt(discordance - gain**2)) ** 2 / gain**2
    high = max(1, math.ceil(guess))
    while mcnemar_power(high, discordance, gain, alpha) < power:
        if high >= max_rows:
            return None
        high = min(max_rows, 2 * high)
    low = high // 2
    while low > 0 and mcnemar_power(low, discordance, gain, alpha) >= power:
        low //= 2
    while high - low > 1:  # power(low) < target <= power(high)
        middle = (low + high) // 2
        if mcnemar_power(middle, discordance, gain, alpha) >= power:
            high = middle
        else:
            low = middle
    return high


def _critical_b(m: np.ndarray, alpha: float) -> np.ndarray:
    """Per m, the smallest b with one-sided exact p = P(B >= b | m, 1/2) below alpha (m + 1 when none)."""
    guess = binom.isf(alpha, m, 0.5).astype(int) + 1  # P(B > k) <= alpha at k = isf, so b = k + 1
    # Floating point can leave the guess one off either way: step it to the exact rule (p < alpha).
    guess = np.where(binom.sf(guess - 1, m, 0.5) >= alpha, guess + 1, guess)
    guess = np.where(binom.sf(guess - 2, m, 0.5) < alpha, guess - 1, guess)
    return np.minimum(guess, m + 1)


@dataclass(frozen=True)
class SampleSize:
    """How many traffic labels the gate's test needs to detect a stated gain, and the assumptions behind it."""

    have: int  # trusted traffic labels now
    needed: int | None  # rows at which the test reaches `power` (None: beyond any practical size)
    gain: float  # the accuracy gain to detect (absolute)
    power: float
    alpha: float  # per test: the gate's alpha over `tests` (Bonferroni)
    tests: int  # how many tests the gate's GAIN rule will make
    discordance: float  # share of rows the two models are assumed to disagree on
    measured: bool  # discordance measured by the last run's traffic test, not the setting's assumption

    @property
    def more(self) -> int | None:
        return None if self.needed is None else max(0, self.needed - self.have)


def traffic_sample_size(have: int, config: GateConfig, tests: int, measured: tuple[int, int] | None = None,
                        min_measured_rows: int = 30) -> SampleSize:
    """The traffic labels needed to detect `config.target_gain` with `config.power` by the gate's one-sided exact
    McNemar test at alpha / tests. The discordance rate is the last run's on traffic, `measured` = (rows,
    discordant rows), when it saw at least `min_measured_rows`; else the setting's assumption."""
    discordance, from_run = config.discordance, False
    if measured is not None and measured[0] >= min_measured_rows:
        discordance, from_run = measured[1] / measured[0], True
    discordance = min(1.0, max(discordance, config.target_gain))
    alpha = config.alpha / max(1, tests)
    needed = rows_for_power(discordance, config.target_gain, alpha, config.power)
    return SampleSize(have, needed, config.target_gain, config.power, alpha, tests, discordance, from_run)
