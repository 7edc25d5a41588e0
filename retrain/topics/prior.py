"""A taught topic's prior: after a retrain that teaches a topic, move its output's bias so that the challenger reads
as large a share of unlabelled traffic as that topic as the traffic set's trusted answers say it holds. Pure
(numpy); `retrain.topics.taught` reads the model's logits and applies the shifts to its head. Why matched this way
rather than by logit adjustment: docs/decisions/new-topics.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Below this many exact traffic answers the topic's share is too uncertain to aim at (20 answers: +-0.1 at a 0.25
# share), and the bias stays as trained.
MIN_TRAFFIC_ANSWERS = 20
# Unlabelled traffic texts read to match on: enough for the read share to be within about a point, a few seconds
# of inference.
MATCH_TEXTS = 1000
# A shift beyond this many logits would say the trained topic is not a prior mismatch but a failure to learn it.
MAX_SHIFT = 6.0
# Below this many texts (unlabelled traffic, then the answers) the champion's share of a held topic is too coarse to
# hold (`hold_prior`).
MIN_HOLD_TEXTS = 50


@dataclass(frozen=True)
class PriorMatch:
    """What matching did: per taught topic key, its target share (of the traffic answers), the share the model read
    before and after its shift, and the shift added to its bias."""

    answers: int  # exact trusted traffic answers the targets come from (none when held)
    texts: int  # unlabelled traffic texts the shares were read on (when held, then the answers' texts)
    target: dict[str, float]
    read_before: dict[str, float]
    read_after: dict[str, float]
    shift: dict[str, float]
    held: bool = False  # the targets are the champion's own reading of the same texts (`hold_prior`)

    def params(self) -> dict[str, float | int]:
        """MLflow params: the counts, and per topic its target share and shift."""
        out: dict[str, float | int] = ({"prior_held_texts": self.texts} if self.held else
                                       {"prior_traffic_answers": self.answers, "prior_traffic_texts": self.texts})
        for key in self.target:
            out[f"prior_{'held' if self.held else 'target'}_{key}"] = round(self.target[key], 4)
            out[f"prior_{'held_' if self.held else ''}shift_{key}"] = round(self.shift[key], 3)
        return out


def topic_shares(labels: Sequence[int], num_labels: int) -> np.ndarray:
    """Each topic's share of `labels`, with one pseudo-answer per topic (Laplace), so a topic no answer named keeps a
    small share rather than none."""
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=num_labels)[:num_labels] + 1.0
    return counts / counts.sum()


def read_shares(logits: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The share of rows whose largest shifted logit is each topic."""
    predicted = (np.asarray(logits) + shift).argmax(axis=1)
    return np.bincount(predicted, minlength=logits.shape[1]) / max(len(predicted), 1)


def matching_shifts(logits: np.ndarray, topics: Sequence[int], target: np.ndarray, *, passes: int = 50,
                    steps: int = 40, tolerance: float = 0.005) -> np.ndarray:
    """Bias shifts (one per column of `logits`, zero outside `topics`) under which the share of rows read as each of
    `topics` comes as close to its `target` share as the rows allow. Bisection per topic (the share read as a topic
    only grows with its bias), in passes round the topics, since one topic's shift moves the others' shares (a
    split's parent and child take rows from each other), until every share is within `tolerance`."""
    logits = np.asarray(logits, dtype=np.float64)
    shift = np.zeros(logits.shape[1])
    if not len(logits):
        return shift
    for _ in range(passes if len(topics) > 1 else 1):
        if np.abs(read_shares(logits, shift)[list(topics)] - target[list(topics)]).max() < tolerance:
            break
        for topic in topics:
            low, high = -MAX_SHIFT, MAX_SHIFT
            for _ in range(steps):
                shift[topic] = (low + high) / 2
                if read_shares(logits, shift)[topic] < target[topic]:
                    low = shift[topic]
                else:
                    high = shift[topic]
            shift[topic] = (low + high) / 2
    return shift


def match_prior(logits: np.ndarray, keys: Sequence[str], taught: Sequence[int], traffic_labels: Sequence[int]
                ) -> PriorMatch | None:
    """The shifts for the `taught` outputs (indices into `keys`, the model's topics) read on `logits` (unlabelled
    traffic texts x topics) against `traffic_labels` (exact trusted traffic answers); None when there are fewer than
    MIN_TRAFFIC_ANSWERS answers or no texts (nothing to aim at)."""
    if len(traffic_labels) < MIN_TRAFFIC_ANSWERS or not len(logits) or not taught:
        return None
    target = topic_shares(traffic_labels, len(keys))
    shift = matching_shifts(logits, taught, target)
    before, after = read_shares(logits, np.zeros(len(keys))), read_shares(logits, shift)
    return PriorMatch(answers=len(traffic_labels), texts=len(logits),
                      target={keys[t]: float(target[t]) for t in taught},
                      read_before={keys[t]: float(before[t]) for t in taught},
                      read_after={keys[t]: float(after[t]) for t in taught},
                      shift={keys[t]: float(shift[t]) for t in taught})


def hold_prior(before: np.ndarray, after: np.ndarray, keys: Sequence[str], held: Sequence[int]) -> PriorMatch | None:
    """The shifts for the `held` outputs under which the trained model (`after`: its logits on a set of texts) reads
    each of them on as large a share of those texts as the champion did (`before`, the same texts); None with fewer
    than MIN_HOLD_TEXTS texts. For a topic only answers teach that the champion already reads: the base rows a retrain
    replays never hold it, so training drifts its prior away from the one the champion was promoted with."""
    if len(after) < MIN_HOLD_TEXTS or not held:
        return None
    target = read_shares(before, np.zeros(len(keys)))
    shift = matching_shifts(after, held, target)
    trained, matched = read_shares(after, np.zeros(len(keys))), read_shares(after, shift)
    return PriorMatch(answers=0, texts=len(after), target={keys[t]: float(target[t]) for t in held},
                      read_before={keys[t]: float(trained[t]) for t in held},
                      read_after={keys[t]: float(matched[t]) for t in held},
                      shift={keys[t]: float(shift[t]) for t in held}, held=True)
