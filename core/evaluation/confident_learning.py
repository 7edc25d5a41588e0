"""Rows whose given label is likely wrong, by confident learning (Northcutt, Jiang and Chuang, JAIR 2021), pure numpy.

Input: for every row, its given label and out-of-fold probabilities (from a model that did not train on that row).
Per class j, the threshold t_j is the mean predicted p_j over the rows labelled j (the model's average
self-confidence on that class). A row labelled i is counted in the confident joint at (i, j), where j is the
likeliest class among those whose probability reaches their threshold (p_k >= t_k); it is a candidate label error
when j != i (an off-diagonal entry, cleanlab's `filter_by="confident_learning"`). Candidates are ranked by
self-confidence (p of the given label, lowest first) or by normalized margin (p_given - max other p).

Why written here rather than imported from cleanlab: cleanlab is AGPL-3.0, so a host serving NewsLoop publicly
would have to offer its whole source to every user. The method is a few lines; `tests/unit/test_confident_learning.py`
checks them against the paper's definition on a matrix worked by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

NO_CLASS = -1  # a row with no class at or above its threshold: counted nowhere in the joint


class RankBy(StrEnum):
    """How candidates are ordered, most likely error first."""

    SELF_CONFIDENCE = "self_confidence"  # p of the given label, ascending
    NORMALIZED_MARGIN = "normalized_margin"  # p_given - max_{k != given} p_k, ascending


def _check(probs: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if probs.ndim != 2 or labels.shape != (probs.shape[0],):
        raise ValueError(f"expected probs (n, classes) and labels (n,); got {probs.shape} and {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= probs.shape[1]):
        raise ValueError("labels must be class indices below the number of columns of probs")
    return probs, labels


def thresholds(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """t_j: the mean p_j over the rows labelled j (inf for a class no row has, so nothing lands in it)."""
    probs, labels = _check(probs, labels)
    out = np.full(probs.shape[1], np.inf)
    for j in range(probs.shape[1]):
        rows = labels == j
        if rows.any():
            out[j] = probs[rows, j].mean()
    return out


def confident_classes(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per row, the class it counts for in the confident joint: the argmax of p over the classes with p_k >= t_k,
    or NO_CLASS when no class reaches its threshold."""
    probs, labels = _check(probs, labels)
    above = probs >= thresholds(probs, labels)[None, :]
    masked = np.where(above, probs, -np.inf)
    best = masked.argmax(axis=1)
    return np.where(above.any(axis=1), best, NO_CLASS)


def scores(probs: np.ndarray, labels: np.ndarray, rank_by: RankBy = RankBy.SELF_CONFIDENCE) -> np.ndarray:
    """How sure the model is of the given label (lower: likelier an error)."""
    probs, labels = _check(probs, labels)
    given = probs[np.arange(len(labels)), labels]
    if rank_by is RankBy.SELF_CONFIDENCE:
        return given
    others = probs.copy()
    others[np.arange(len(labels)), labels] = -np.inf
    return given - others.max(axis=1)


@dataclass(frozen=True)
class LabelIssues:
    """The confident-learning verdict on every row."""

    order: np.ndarray  # every row index, candidates first (most likely error first), then the rest likewise
    candidates: int  # how many of `order`'s first rows are candidates (off-diagonal in the confident joint)
    suggested: np.ndarray  # per row: its confident class, or the likeliest other class when it has none
    score: np.ndarray  # per row: `scores` (lower = likelier an error)

    @property
    def candidate_rows(self) -> np.ndarray:
        return self.order[: self.candidates]


def find_label_issues(
    probs: np.ndarray, labels: np.ndarray, rank_by: RankBy = RankBy.SELF_CONFIDENCE
) -> LabelIssues:
    """The rows whose given label the out-of-fold `probs` doubt, ranked; see the module's docstring."""
    probs, labels = _check(probs, labels)
    classes = confident_classes(probs, labels)
    is_candidate = (classes != NO_CLASS) & (classes != labels)
    score = scores(probs, labels, rank_by)
    others = probs.copy()
    others[np.arange(len(labels)), labels] = -np.inf
    suggested = np.where(is_candidate, classes, others.argmax(axis=1)) if len(labels) else classes
    # Sorted by (not a candidate, score, index): a stable, total order.
    order = np.lexsort((np.arange(len(labels)), score, ~is_candidate))
    return LabelIssues(order=order, candidates=int(is_candidate.sum()), suggested=suggested, score=score)
