"""What a retrain trains on: replayed base rows beside trusted feedback, with their loss weights and soft targets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from core.data import Corpus, Example
from core.labels import LABELS
from core.registry.versions import ModelVersion
from core.serving.classifier import OnnxClassifier
from core.taxonomy import Taxonomy, starting
from core.text import text_hash
from core.topic_maps import in_taxonomy


def cap_rows(examples: list[Example], max_rows: int, seed: int) -> list[Example]:
    """A fixed random subset of at most `max_rows` rows, in their original order; 0 = all."""
    if not max_rows or len(examples) <= max_rows:
        return examples
    idx = np.random.default_rng(seed).permutation(len(examples))[:max_rows]
    return [examples[i] for i in sorted(idx)]


@dataclass(frozen=True)
class TrainingRows:
    """The rows of one retrain: base rows replayed, feedback trained on, feedback held out to judge."""

    base: list[Example]
    feedback: list[Example]
    holdout: list[Example]
    validation: list[Example]
    on_validation: int = 0  # trusted feedback left out: its texts are base-validation texts
    feedback_repeats: int = 1  # times each feedback row is trained on per epoch (RetrainPolicy.feedback_repeats)
    taxonomy: Taxonomy | None = None  # the topics the rows' labels index (None: the four AG News ones)
    # Unlabelled traffic texts trained on as rows that may be any topic (RetrainPolicy.read_traffic), after the rest.
    unlabelled: list[Example] = field(default_factory=list)
    # Topic -> factor on its answers' loss weight (retrain.topics.taught.balanced): topics only answers teach.
    boost: Mapping[int, float] = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        return {
            "base_train": len(self.base),
            "feedback_train": len(self.feedback),
            "feedback_holdout": len(self.holdout),
            "base_validation": len(self.validation),
        }

    @property
    def trained_feedback(self) -> list[Example]:
        """The feedback rows as training sees them: each one `feedback_repeats` times."""
        return self.feedback * self.feedback_repeats

    @property
    def examples(self) -> list[Example]:
        """Every row training sees, in its order: base rows, feedback (repeated), unlabelled traffic."""
        return [*self.base, *self.trained_feedback, *self.unlabelled]

    @property
    def texts(self) -> list[str]:
        return [e.text for e in self.examples]

    @property
    def labels(self) -> list[int]:
        return [e.label for e in self.examples]

    def answer_weight(self, e: Example, feedback_weight: float) -> float:
        """The loss weight of one feedback row, once (boosted if only answers teach its topic)."""
        return feedback_weight * (self.boost.get(e.label, 1.0) if len(e.allowed) <= 1 else 1.0)

    def weights(self, feedback_weight: float) -> list[float]:
        return ([1.0] * len(self.base) + [self.answer_weight(e, feedback_weight) for e in self.trained_feedback]
                + [1.0] * len(self.unlabelled))

    def sets(self, num_labels: int) -> np.ndarray | None:
        """Which rows train toward a set of allowed topics (a split's old rows, unlabelled traffic), as a bool mask
        per row and topic; None when every row is exact."""
        return set_mask(self.examples, num_labels)

    def with_unlabelled(self, texts: Sequence[str], num_labels: int) -> TrainingRows:
        """These rows and `texts` as rows that may be any of the `num_labels` topics."""
        anything = tuple(range(num_labels))
        return replace(self, unlabelled=[Example(text, 0, allowed=anything) for text in texts])


def set_mask(examples: list[Example], num_labels: int) -> np.ndarray | None:
    """A bool (rows x topics) mask: True at each allowed topic of a row that allows several, all False on an exact
    row; None if no row allows several."""
    if not any(len(e.allowed) > 1 for e in examples):
        return None
    mask = np.zeros((len(examples), num_labels), dtype=bool)
    for row, e in enumerate(examples):
        if len(e.allowed) > 1:
            mask[row, list(e.allowed)] = True
    return mask


def assemble(
    corpus: Corpus, feedback: list[Example], holdout: list[Example], base_rows: int, seed: int,
    feedback_repeats: int = 1, taxonomy: Taxonomy | None = None, golden: Sequence[Example] = (),
) -> TrainingRows:
    """Base rows (capped) and trusted feedback, never training on a base-validation text nor on a golden one (they
    judge); their labels index `taxonomy`'s topics."""
    protected = {text_hash(e.text) for e in corpus.validation}
    kept = [e for e in feedback if text_hash(e.text) not in protected]
    judged = {text_hash(e.text) for e in golden}
    base = [e for e in corpus.train if text_hash(e.text) not in judged] if judged else corpus.train
    return TrainingRows(cap_rows(base, base_rows, seed), kept, holdout, corpus.validation,
                        on_validation=len(feedback) - len(kept), feedback_repeats=feedback_repeats, taxonomy=taxonomy)


def soft_targets(
    labels: Sequence[int], num_labels: int, smoothing: float, teacher: np.ndarray | None = None, teacher_weight: float = 0.0
) -> np.ndarray:
    """Per-example target distributions: label-smoothed one-hot, blended with a teacher's probabilities.

    With a teacher (the serving champion) the student is pulled toward what the champion already says on
    these rows, so a retrain that replays base data changes only what the feedback asks it to change
    ("learning without forgetting"); without one this is exactly cross-entropy with label smoothing.
    """
    if not 0.0 <= teacher_weight <= 1.0:
        raise ValueError(f"teacher_weight must lie in [0, 1], got {teacher_weight}")
    y = np.asarray(labels, dtype=int)
    targets: np.ndarray = np.full((y.size, num_labels), smoothing / num_labels, dtype=np.float32)
    targets[np.arange(y.size), y] += 1.0 - smoothing
    if teacher is not None and teacher_weight > 0:
        teacher = np.asarray(teacher, dtype=np.float32)
        if teacher.shape != targets.shape:
            raise ValueError(f"teacher probabilities have shape {teacher.shape}, expected {targets.shape}")
        targets = (1.0 - teacher_weight) * targets + teacher_weight * teacher
    return targets


def replay_targets(
    champion: ModelVersion,
    base: list[Example],
    feedback: list[Example],
    *,
    label_smoothing: float,
    distill_weight: float,
    taxonomy: Taxonomy | None = None,
) -> np.ndarray:
    """Training targets over `taxonomy`'s topics (default: the four AG News ones): base rows blend their label
    with the champion's served probabilities, carried into the taxonomy (`core.topic_maps.in_taxonomy`: a merged
    pair's summed, a split parent's shared by the set); feedback rows keep their (smoothed) label, since changing
    the champion's answer there is the point. Rows that allow a set train toward it instead (`TrainingRows.sets`)."""
    taxonomy = taxonomy or starting(LABELS)
    teacher = None
    if distill_weight > 0 and base:
        served = OnnxClassifier(champion.path)
        teacher = in_taxonomy(served.predict_proba([e.text for e in base]), served.labels,
                              trained_under(champion), taxonomy)
    num_labels = len(taxonomy.keys)
    base_targets = soft_targets([e.label for e in base], num_labels, label_smoothing, teacher, distill_weight)
    feedback_targets = soft_targets([e.label for e in feedback], num_labels, label_smoothing)
    return np.concatenate([base_targets, feedback_targets])


def trained_under(version: ModelVersion) -> int:
    """The taxonomy version a model was trained on (its meta records it; models from before taxonomies: 1)."""
    return int(version.meta.get("taxonomy_version") or 1)
