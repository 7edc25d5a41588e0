"""What a retrain trains on: replayed base rows beside trusted feedback, with their loss weights and soft targets."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.data import Corpus, Example
from core.labels import NUM_LABELS
from core.registry.versions import ModelVersion
from core.serving.classifier import OnnxClassifier
from core.text import text_hash
from retrain.train import soft_targets


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
    def texts(self) -> list[str]:
        return [e.text for e in self.base] + [e.text for e in self.trained_feedback]

    @property
    def labels(self) -> list[int]:
        return [e.label for e in self.base] + [e.label for e in self.trained_feedback]

    def weights(self, feedback_weight: float) -> list[float]:
        return [1.0] * len(self.base) + [feedback_weight] * len(self.trained_feedback)


def assemble(
    corpus: Corpus, feedback: list[Example], holdout: list[Example], base_rows: int, seed: int,
    feedback_repeats: int = 1,
) -> TrainingRows:
    """Base rows (capped) and trusted feedback, never training on a base-validation text."""
    protected = {text_hash(e.text) for e in corpus.validation}
    kept = [e for e in feedback if text_hash(e.text) not in protected]
    return TrainingRows(cap_rows(corpus.train, base_rows, seed), kept, holdout, corpus.validation,
                        on_validation=len(feedback) - len(kept), feedback_repeats=feedback_repeats)


def replay_targets(
    champion: ModelVersion,
    base: list[Example],
    feedback: list[Example],
    *,
    label_smoothing: float,
    distill_weight: float,
) -> np.ndarray:
    """Training targets: base rows blend their label with the champion's served probabilities; feedback
    rows keep their (smoothed) label, since changing the champion's answer there is the point."""
    teacher = None
    if distill_weight > 0 and base:
        teacher = OnnxClassifier(champion.path).proba_in_label_order([e.text for e in base])
    base_targets = soft_targets([e.label for e in base], NUM_LABELS, label_smoothing, teacher, distill_weight)
    feedback_targets = soft_targets([e.label for e in feedback], NUM_LABELS, label_smoothing)
    return np.concatenate([base_targets, feedback_targets])
