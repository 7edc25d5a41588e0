"""bench/margin_power.py: the chance an equally good challenger passes the non-inferiority test, checked against
the sum it stands for."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from bench.margin_power import main, noninferiority_power
from core.evaluation.paired import noninferiority


def test_noninferiority_power_counts_the_equal_challengers_that_pass() -> None:
    # Exact: with 4 discordant rows of 100, b ~ Binomial(4, 1/2); sum the chances of the b that pass.
    expected = sum(binom.pmf(b, 4, 0.5) for b in range(5) if noninferiority(100, b, 4 - b, 0.05, 0.05).passed)
    assert noninferiority_power(100, 4, 0.05, 0.05) == pytest.approx(expected)
    assert 0.0 < expected < 1.0
    # Without churn nothing changed, so an equal challenger always passes; more churn, less chance.
    assert noninferiority_power(1636, 0, 0.01, 0.05) == 1.0
    chances = [noninferiority_power(1636, d, 0.01, 0.05) for d in (20, 60, 120)]
    assert chances == sorted(chances, reverse=True)
    with pytest.raises(ValueError, match="discordant_rows"):
        noninferiority_power(10, 11, 0.01, 0.05)


def test_the_command_prints_the_figure_the_loop_page_quotes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--rows", "1636", "--discordant", "17", "--margin", "0.01"]) == 0
    assert capsys.readouterr().out.strip() == "0.975"  # docs/results/loop.md
