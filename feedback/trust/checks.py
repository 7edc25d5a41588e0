"""Known-answer checks: how an annotator scored on them, and who passed or failed (when one is due is the queue's
rule, `feedback.labelling.pool.check_due`).

A check is a pool item whose label a maintainer gave. An answer on a check *tells* something about the
person only where the model's label (stored with the answer: what the model said when it was given) is not
the known one: there, repeating the model is wrong and only knowing the topic is right. On a check the model
gets right, anyone who copies the model scores, so those answers can fail a person but never pass one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from feedback.meaning import agrees

# Telling checks (the model's label was wrong) a person must have answered right before they pass.
MIN_TELLING_CHECKS = 1


@dataclass(frozen=True)
class CheckScore:
    """How an annotator did on known-answer checks, all of them and the telling ones (the model was wrong)."""

    annotator: str
    answered: int
    right: int
    telling: int = 0  # answered checks whose stored model label was not the known label
    telling_right: int = 0

    @property
    def accuracy(self) -> float:
        return self.right / self.answered if self.answered else 1.0

    @property
    def telling_accuracy(self) -> float:
        return self.telling_right / self.telling if self.telling else 0.0


def score_checks(counted: Iterable[Mapping[str, Any]], gold: Mapping[str, str]) -> dict[str, CheckScore]:
    """Per annotator, their counted answers on checks (`gold`: text_hash -> label): how many, how many gave
    the known label, and the same for telling checks (an answer without a stored model label tells nothing)."""
    answered: Counter[str] = Counter()
    right: Counter[str] = Counter()
    telling: Counter[str] = Counter()
    telling_right: Counter[str] = Counter()
    for row in counted:
        known = gold.get(row["text_hash"])
        if known is None:
            continue
        # Labels as they mean now (feedback.meaning): an answer is right when every topic it allows is one
        # the check allows, so after a split an exact answer is right on a check known as "parent or child".
        name, correct = row["annotator"], agrees(row["user_label"], known)
        answered[name] += 1
        right[name] += correct
        model = row.get("predicted_label")
        if model is not None and not agrees(model, known):
            telling[name] += 1
            telling_right[name] += correct
    return {
        name: CheckScore(name, answered[name], right[name], telling[name], telling_right[name])
        for name in sorted(answered)
    }


def failed_checks(scores: Mapping[str, CheckScore], *, min_checks: int, min_accuracy: float) -> set[str]:
    """Annotators with at least `min_checks` answered checks and an accuracy on them below `min_accuracy`."""
    return {name for name, score in scores.items() if score.answered >= min_checks and score.accuracy < min_accuracy}


def passed_checks(scores: Mapping[str, CheckScore], *, min_checks: int, min_accuracy: float) -> set[str]:
    """Annotators who answered at least `min_checks` checks with at least `min_accuracy`, and answered right at
    least MIN_TELLING_CHECKS telling ones, with at least `min_accuracy` on those too: someone who answers every
    check with the model's label scores 0 on telling checks, so copying the model never passes."""
    return {
        name for name, score in scores.items()
        if score.answered >= min_checks and score.accuracy >= min_accuracy
        and score.telling_right >= MIN_TELLING_CHECKS and score.telling_accuracy >= min_accuracy
    }
