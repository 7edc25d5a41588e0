"""The chance that a challenger exactly as good as the champion passes the gate's non-inferiority test: what sizes
a non-inferiority margin (NEWSLOOP_GATE_BASE_MARGIN, NEWSLOOP_GATE_RECALL_MARGIN); the product never needs it.

    python -m bench.margin_power --rows 1636 --discordant 17 --margin 0.01    # 0.975: docs/results/loop.md

Model: the retrain's churn leaves `--discordant` rows where the two models disagree, and with equal accuracy each
of them favours either model with probability 1/2, so b is Binomial(discordant, 1/2). A margin this chance is low
for refuses good challengers as a zero tolerance does.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

from bench import options
from core.evaluation.paired import noninferiority


def noninferiority_power(n: int, discordant_rows: int, margin: float, alpha: float) -> float:
    """The chance that an equally good challenger passes the non-inferiority test on n rows (see the docstring)."""
    if not 0 <= discordant_rows <= n:
        raise ValueError(f"need 0 <= discordant_rows <= n, got {discordant_rows} and {n}")
    if discordant_rows == 0:
        return 1.0 if n else 0.0
    b = np.arange(discordant_rows + 1)
    passed = np.array([noninferiority(n, int(k), discordant_rows - int(k), margin, alpha).passed for k in b])
    return float(np.sum(binom.pmf(b, discordant_rows, 0.5)[passed]))


def main(argv: list[str] | None = None) -> int:
    parser = options.parser(__doc__, prog="python -m bench.margin_power")
    parser.add_argument("--rows", type=int, required=True, help="rows both models are scored on")
    parser.add_argument("--discordant", type=int, required=True, help="rows on which the two models disagree")
    parser.add_argument("--margin", type=float, required=True, help="the non-inferiority margin (0.01 = 1 point)")
    parser.add_argument("--alpha", type=float, default=0.05, help="the test's one-sided level (default 0.05)")
    args = parser.parse_args(argv)
    print(f"{noninferiority_power(args.rows, args.discordant, args.margin, args.alpha):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
