"""How a model's own topics map onto a taxonomy: where a retrain's head rows start from, how the champion's
probabilities become targets over the current topics, and what champion and challenger can be compared on.

A model predicts the topic keys it was trained on (its ONNX metadata `labels`), under the taxonomy version it was
trained on. Keys are never reused, so a key names one topic across every version: a merged-away key lives on as
the topic it was merged into, and a split parent keeps its key (its child is a new one).

Pure: no I/O, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.taxonomy import Taxonomy


def successor(taxonomy: Taxonomy, key: str) -> str | None:
    """The current key a topic lives on as: itself, or the topic it was merged into (through later merges too);
    None for a key that is not current and was never merged (no topic of this taxonomy)."""
    for version in taxonomy.versions:
        change = version.change
        if change.kind == "merge" and change.topic == key:
            key = change.into
    return key if key in taxonomy.keys else None


def split_parent(taxonomy: Taxonomy, key: str) -> str | None:
    """The topic `key` was split out of, or None if it was not made by a split."""
    for version in taxonomy.versions:
        change = version.change
        if change.kind == "split" and change.key == key:
            return change.topic
    return None


def meaning_kept(taxonomy: Taxonomy, key: str) -> bool:
    """Whether labels given before any change still mean the topic `key` is now: it was neither renamed (a newsroom's
    "Politics" is not the "World" it was renamed from) nor split (part of what it was is another topic now). A
    merge keeps it: the rows of both topics are rows of the topic they became."""
    return not any(v.change.topic == key and v.change.kind in ("rename", "split") for v in taxonomy.versions)


def head_sources(model_labels: Sequence[str], taxonomy: Taxonomy) -> tuple[int | None, ...]:
    """For each current topic, the model output its head row starts from: the same key's; for a split child, its
    parent's (the set loss then pulls the two apart); None for a topic the model never knew (an added one), which
    starts from a neutral row. A merged-away topic's row is dropped; the topic it was merged into keeps its own."""
    index = {key: i for i, key in enumerate(model_labels)}

    def source(key: str | None) -> int | None:
        while key is not None:
            if key in index:
                return index[key]
            key = split_parent(taxonomy, key)
        return None

    return tuple(source(key) for key in taxonomy.keys)


def teacher_matrix(model_labels: Sequence[str], model_version: int, taxonomy: Taxonomy) -> np.ndarray:
    """A (model outputs x current topics) matrix that carries a model's probabilities into the current topics
    (`probs @ matrix`): a merged pair's probabilities summed, a split parent's probability shared evenly by the
    topics it may now mean (a neutral share: the model cannot tell them apart), a topic it lacks at 0."""
    matrix = np.zeros((len(model_labels), len(taxonomy.keys)), dtype=np.float32)
    for row, key in enumerate(model_labels):
        columns = taxonomy.indices(key, model_version)
        for column in columns:
            matrix[row, column] = 1.0 / len(columns)
    return matrix


def in_taxonomy(probs: np.ndarray, model_labels: Sequence[str], model_version: int, taxonomy: Taxonomy) -> np.ndarray:
    """A model's probabilities (columns in its own label order) over the current topics, rows summing to 1."""
    carried = np.asarray(probs, dtype=np.float32) @ teacher_matrix(model_labels, model_version, taxonomy)
    totals = carried.sum(axis=1, keepdims=True)
    return np.divide(carried, totals, out=np.zeros_like(carried), where=totals > 0)


@dataclass(frozen=True)
class Comparison:
    """What champion and challenger can both be judged on: the current topics the champion predicts (a merged pair
    as one), as comparison classes 0..len(keys)-1. Class len(keys) stands for "a topic outside these": a challenger
    predicting a topic the champion lacks, on a row of a shared topic, is wrong there."""

    keys: tuple[str, ...]  # current keys both models predict, in the taxonomy's order
    truth: tuple[int, ...]  # per current topic index: its comparison class, -1 if the champion lacks the topic
    challenger: tuple[int, ...]  # per current topic index: the class its prediction counts as
    champion: tuple[int, ...]  # per champion output: the class its prediction counts as
    new_topics: tuple[str, ...]  # current keys the champion lacks, judged on their own held-out answers

    @property
    def outside(self) -> int:
        return len(self.keys)

    def truths(self, labels: Sequence[int] | np.ndarray, allowed: Sequence[Sequence[int]] = ()) -> np.ndarray:
        """Each row's comparison class (-1: a topic the champion lacks). A row that allows a set (a split's earlier
        answer "B or C") is the class of the first topic of its set the champion has, whichever its label names."""
        sets = list(allowed) or [()] * len(labels)
        return np.asarray([next((self.truth[j] for j in a if self.truth[j] >= 0), -1) if a else self.truth[i]
                           for i, a in zip(labels, sets, strict=True)], dtype=np.int64)

    def challenger_classes(self, predictions: Sequence[int] | np.ndarray) -> np.ndarray:
        return np.asarray([self.challenger[i] for i in predictions], dtype=np.int64)

    def champion_classes(self, predictions: Sequence[int] | np.ndarray) -> np.ndarray:
        return np.asarray([self.champion[i] for i in predictions], dtype=np.int64)


def comparison(champion_labels: Sequence[str], taxonomy: Taxonomy) -> Comparison:
    """The comparison classes of a champion predicting `champion_labels` against a challenger of `taxonomy`.

    The champion's prediction of a merged-away topic counts as the topic it was merged into. The challenger's
    prediction of a split child counts as its parent when the champion lacks the child (a set row "B or C" is
    then right either way, and the child's own precision is judged apart); of an added topic, as "outside"."""
    carried = [successor(taxonomy, key) for key in champion_labels]
    keys = tuple(k for k in taxonomy.keys if k in set(carried))
    at = {key: i for i, key in enumerate(keys)}
    outside = len(keys)

    def challenger_class(key: str | None) -> int:
        while key is not None:
            if key in at:
                return at[key]
            key = split_parent(taxonomy, key)
        return outside

    return Comparison(
        keys=keys,
        truth=tuple(at.get(k, -1) for k in taxonomy.keys),
        challenger=tuple(challenger_class(k) for k in taxonomy.keys),
        champion=tuple(at[k] if k is not None else outside for k in carried),
        new_topics=tuple(k for k in taxonomy.keys if k not in at),
    )


@dataclass(frozen=True)
class NewTopicScore:
    """A topic the champion lacks, as the challenger does on the evaluation rows: `n` held-out answers of it, `found`
    of them read as it; `predicted` rows read as it, `right` of those allowed it."""

    key: str
    name: str
    n: int
    found: int
    predicted: int
    right: int

    @property
    def recall(self) -> float:
        return self.found / self.n if self.n else 0.0

    @property
    def precision(self) -> float:
        return self.right / self.predicted if self.predicted else 0.0


def new_topic_scores(
    taxonomy: Taxonomy, keys: Sequence[str], labels: Sequence[int], allowed: Sequence[Sequence[int]],
    predictions: Sequence[int],
) -> list[NewTopicScore]:
    """The challenger's recall and precision on each topic in `keys`, over evaluation rows in the current topics'
    index space: `labels`, each row's allowed set (empty: exactly its label) and the challenger's predictions.
    Recall counts the rows answered exactly that topic; precision counts a prediction right when the row allows it
    (a split's old row "B or C" predicted C is right)."""
    scores = []
    for key in keys:
        j = taxonomy.keys.index(key)
        exact = [not a and y == j for y, a in zip(labels, allowed, strict=True)]
        hits = [p == j for p in predictions]
        right = [p == j and (j in a if a else y == j) for y, a, p in zip(labels, allowed, predictions, strict=True)]
        found = sum(e and h for e, h in zip(exact, hits, strict=True))
        scores.append(NewTopicScore(key, taxonomy.name_of(key), sum(exact), found, sum(hits), sum(right)))
    return scores
