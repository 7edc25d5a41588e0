"""Label noise for tests and benches: a copy of rows with a share of their labels flipped at random."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.data import Example
from core.labels import NUM_LABELS


def flip_labels(examples: Sequence[Example], share: float, seed: int) -> tuple[list[Example], np.ndarray]:
    """A copy of `examples` with `share` of their labels changed to another label at random (seeded), and the
    indices of the flipped rows: the bench's noise."""
    rng = np.random.default_rng(seed)
    flipped = np.sort(rng.choice(len(examples), size=max(1, round(share * len(examples))), replace=False))
    out = list(examples)
    for i in flipped.tolist():
        other = (examples[i].label + int(rng.integers(1, NUM_LABELS))) % NUM_LABELS
        out[i] = Example(examples[i].text, other, examples[i].title, examples[i].body)
    return out, flipped
