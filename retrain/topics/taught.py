"""The topics only answers teach (an added topic): which they are, and their prior matched on the challenger's head
after training (`retrain.topics.prior`)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from core.data import Example
from core.reading import Reading
from retrain.classifier.embeddings import head_inputs
from retrain.classifier.model import NewsClassifier
from retrain.topics.prior import PriorMatch, hold_prior, match_prior
from retrain.training.targets import TrainingRows

log = logging.getLogger(__name__)

BALANCE_CAP = 10.0  # the most an answer-taught topic's answers are weighted up (RetrainPolicy.balance_taught)


def answer_taught(base: Sequence[Example], num_labels: int) -> list[int]:
    """The topics (output indices) no base row can be, exactly or within a set: only answers teach them (an added
    topic), so their share of the training rows is far below their share of traffic. A split's topics are left out:
    the parent's old rows ("B or C", read by `resolve_split_rows`) carry the pair's share (docs/decisions/new-topics.md)."""
    in_base = {t for e in base for t in (e.allowed or (e.label,))}
    return [i for i in range(num_labels) if i not in in_base]


def taught_balance(rows: TrainingRows, num_labels: int, feedback_weight: float, cap: float) -> dict[int, float]:
    """Each answer-taught topic's factor on its answers' loss weight, so that its share of the training weight is its
    share of the answers (at most `cap`, never below 1). The replayed base rows can never be such a topic, so without
    this they dilute it by the base rows' weight: after a newsroom's added topic was learned, the next retrain (1,000
    base rows beside 300 answers) read it a fifth less often (docs/decisions/new-topics.md)."""
    counts = Counter(e.label for e in rows.feedback if len(e.allowed) <= 1)
    taught = [t for t in answer_taught(rows.base, num_labels) if counts[t]]
    other_answers = counts.total() - sum(counts[t] for t in taught)
    if not taught or not other_answers:
        return {}
    # A taught topic's share of the training weight is its share of the answers when, per answer, it weighs what the
    # other answers and the base rows weigh together per other answer: one factor for every such topic.
    answer = feedback_weight * rows.feedback_repeats
    return dict.fromkeys(taught, min(cap, 1.0 + len(rows.base) / (answer * other_answers)))


def balanced(rows: TrainingRows, num_labels: int, feedback_weight: float, cap: float) -> TrainingRows:
    """`rows` with the answer-taught topics' answers weighted by `taught_balance`."""
    boost = taught_balance(rows, num_labels, feedback_weight, cap)
    if boost:
        log.info("answer-taught topics' answers weighted up against the base rows: %s",
                 ", ".join(f"{k} x{v:.2f}" for k, v in sorted(boost.items())))
    return replace(rows, boost=boost)


@torch.no_grad()
def match_taught_prior(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, taught: Sequence[int],
                       traffic: Sequence[Example], texts: Sequence[str], reading: Reading) -> PriorMatch | None:
    """Shift the bias of the `taught` outputs so the model reads as much of the unlabelled traffic `texts` as each
    of them as the exact `traffic` answers name it (`retrain.topics.prior`); None (nothing changed) when those are too few."""
    if not taught or not texts:
        return None
    matched = match_prior(head_logits(model, tokenizer, texts, reading), model.labels, taught,
                          [e.label for e in traffic if len(e.allowed) <= 1])
    _shift_bias(model, matched, f"matched to {matched.answers} traffic answers" if matched else "")
    return matched


@torch.no_grad()
def head_logits(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], reading: Reading
                ) -> np.ndarray:
    """The model's logits on `texts`, dropout off (a texts x topics array)."""
    last = model.head[-1]
    assert isinstance(last, torch.nn.Linear)
    return last(head_inputs(model, tokenizer, texts, reading)).numpy()


@torch.no_grad()
def hold_champion_prior(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, held: Sequence[int],
                        texts: Sequence[str], before: np.ndarray, reading: Reading) -> PriorMatch | None:
    """Shift the bias of the `held` outputs (topics only answers teach, which the champion already reads) so the
    trained model reads as much of `texts` as each of them as the champion did (`before`: its logits on them, read
    before training); None (nothing changed) with too few texts."""
    held_match = hold_prior(before, head_logits(model, tokenizer, texts, reading), model.labels, held)
    _shift_bias(model, held_match, "held at the champion's reading")
    return held_match


def _shift_bias(model: NewsClassifier, matched: PriorMatch | None, how: str) -> None:
    if matched is None:
        return
    last = model.head[-1]
    assert isinstance(last, torch.nn.Linear)
    for key, shift in matched.shift.items():
        last.bias[model.labels.index(key)] += shift
    log.info("answer-taught topics' prior on %d texts, %s: %s", matched.texts, how,
             ", ".join(f"{k} read {matched.read_before[k]:.3f} -> {matched.read_after[k]:.3f} (target "
                       f"{matched.target[k]:.3f}, bias {matched.shift[k]:+.2f})" for k in matched.target))
