"""How well the champion does on traffic nobody has labelled: confidence-based performance estimation. Pure.

When a model's probabilities are calibrated, the probability it gives its predicted label is the chance that the
prediction is right, and the probability it gives each other label is the chance that label is the true one.
Summed over served texts, they give the expected confusion matrix, and from it the expected accuracy and each
label's expected precision and recall (CBPE, as NannyML implements it for classification). Nothing here needs a
label: the estimate exists from the first request, long before the traffic set has enough answers to measure.

The estimate is only as good as the calibration it rests on: on a kind of text the model was never calibrated on,
it is a guess, which is why the admin view shows it beside the measured traffic accuracy wherever both exist.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.labels import LABELS


@dataclass(frozen=True)
class Estimate:
    """The expected performance on `n` unlabelled texts; `accuracy_se` is the standard error from the texts'
    own Bernoulli variance (how much the real accuracy of these texts may differ from its expectation)."""

    n: int
    accuracy: float
    accuracy_se: float
    precision: dict[str, float]
    recall: dict[str, float]

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        return max(0.0, self.accuracy - z * self.accuracy_se), min(1.0, self.accuracy + z * self.accuracy_se)


def expected_confusion(probs: np.ndarray) -> np.ndarray:
    """Expected counts: cell [true, predicted] sums the probability each text predicted as `predicted` gives
    `true`. Rows of `probs` are calibrated probabilities in label order."""
    probs = np.asarray(probs, dtype=np.float64)
    k = probs.shape[-1] if probs.ndim == 2 else 0
    confusion = np.zeros((k, k))
    if probs.size == 0:
        return confusion
    predicted = probs.argmax(axis=1)
    for label in range(k):
        confusion[:, label] = probs[predicted == label].sum(axis=0)
    return confusion


def estimate(probs: np.ndarray, labels: Sequence[str] = LABELS) -> Estimate:
    """The expected accuracy, per-label precision and recall of the predictions behind `probs`, whose columns are
    `labels` (the model's own; AG News's four where a caller has no model)."""
    return Tally().add(probs, len(labels)).estimate(labels)


CONFIDENCE_BINS = 10  # equal-width bins of the top probability over [0, 1]


def confidence_histogram(top: np.ndarray, bins: int = CONFIDENCE_BINS) -> np.ndarray:
    """Texts per equal-width bin of their top probability (1.0 falls in the last bin)."""
    which = np.minimum((np.asarray(top, dtype=np.float64) * bins).astype(int), bins - 1)
    return np.bincount(which, minlength=bins)


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 else math.nan


@dataclass(frozen=True)
class Tally:
    """What a server keeps of its traffic to estimate from, without keeping a text: counts and sums that add up
    across requests, processes and days (so one row per day, form and model version is enough)."""

    n: int = 0
    confidence_sum: float = 0.0  # sum of each text's top probability
    variance_sum: float = 0.0  # sum of p(1-p) of those top probabilities
    confusion: tuple[tuple[float, ...], ...] = ()
    confidence_counts: tuple[int, ...] = ()  # texts per CONFIDENCE_BINS bin of the top probability (drift)

    def add(self, probs: np.ndarray, classes: int | None = None) -> Tally:
        """This tally and the texts behind `probs`: rows of probabilities, `classes` columns (default: as many as
        the rows have; a flat array needs it)."""
        probs = np.asarray(probs, dtype=np.float64)
        probs = probs.reshape(-1, classes or probs.shape[-1])
        top = probs.max(axis=1)
        confusion = expected_confusion(probs)
        counts = confidence_histogram(top)
        if self.confusion:
            confusion = confusion + np.asarray(self.confusion)
        if self.confidence_counts:
            counts = counts + np.asarray(self.confidence_counts)
        return Tally(
            n=self.n + len(probs),
            confidence_sum=self.confidence_sum + float(top.sum()),
            variance_sum=self.variance_sum + float(np.sum(top * (1.0 - top))),
            confusion=tuple(tuple(float(x) for x in row) for row in confusion),
            confidence_counts=tuple(int(x) for x in counts),
        )

    def __add__(self, other: Tally) -> Tally:
        if not other.n:
            return self
        if not self.n:
            return other
        return Tally(
            n=self.n + other.n,
            confidence_sum=self.confidence_sum + other.confidence_sum,
            variance_sum=self.variance_sum + other.variance_sum,
            confusion=tuple(tuple(a + b for a, b in zip(r, s, strict=True))
                            for r, s in zip(self.confusion, other.confusion, strict=True)),
            confidence_counts=tuple(a + b for a, b in zip(self.confidence_counts, other.confidence_counts, strict=True)),
        )

    @property
    def predicted_counts(self) -> tuple[float, ...]:
        """Texts predicted as each label (a row of probabilities sums to one, so a confusion column sums to the
        texts predicted as its label)."""
        return tuple(float(x) for x in np.asarray(self.confusion).sum(axis=0)) if self.confusion else ()

    def estimate(self, labels: Sequence[str] | None = None) -> Estimate:
        """The estimate of the texts tallied; `labels` name the columns (the model's topics), by default their
        positions as text ("0", "1", ...), the way a tally that outlives a model is kept."""
        if self.n == 0:
            return Estimate(0, math.nan, math.nan, {}, {})
        confusion = np.asarray(self.confusion)
        if labels is None:
            labels = [str(i) for i in range(len(confusion))]
        if len(labels) != len(confusion):
            raise ValueError(f"{len(labels)} labels for a tally of {len(confusion)} columns")
        predicted_mass, true_mass = confusion.sum(axis=0), confusion.sum(axis=1)
        return Estimate(
            n=self.n,
            accuracy=self.confidence_sum / self.n,
            accuracy_se=math.sqrt(self.variance_sum) / self.n,
            precision={name: _ratio(confusion[i, i], predicted_mass[i]) for i, name in enumerate(labels)},
            recall={name: _ratio(confusion[i, i], true_mass[i]) for i, name in enumerate(labels)},
        )
