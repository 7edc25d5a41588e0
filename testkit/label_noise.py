"""Label noise for tests and benches: rows with a share of their labels flipped at random, the confident joint
(confident learning's count of rows by given and confident class; its off-diagonal are the candidates), and how many
of the flipped rows a ranking finds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.data import Example
from core.evaluation.confident_learning import NO_CLASS, confident_classes
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


def confident_joint(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """C[i, j]: how many rows labelled i count for class j (the paper's equation 1, before calibration)."""
    probs, labels = np.asarray(probs, dtype=np.float64), np.asarray(labels, dtype=np.int64)
    classes = confident_classes(probs, labels)  # checks both
    joint = np.zeros((probs.shape[1], probs.shape[1]), dtype=np.int64)
    counted = classes != NO_CLASS
    np.add.at(joint, (labels[counted], classes[counted]), 1)
    return joint


def recall_precision(order: np.ndarray, flipped: np.ndarray) -> tuple[float, float]:
    """Of k flipped rows: the share found in the ranking's top 2k (recall@2k), and the share of its top k that
    are flipped (precision@k): the bench's two figures."""
    flipped_set = set(np.asarray(flipped).tolist())
    k = len(flipped_set)
    if k == 0:
        return 0.0, 0.0
    top2k = set(np.asarray(order[: 2 * k]).tolist())
    topk = set(np.asarray(order[:k]).tolist())
    return len(top2k & flipped_set) / k, len(topk & flipped_set) / k
