"""The topics only answers teach (an added topic): which they are, and their prior matched on the challenger's head
after training (`retrain.topics.prior`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from core.data import Example
from core.reading import Reading
from retrain.classifier.embeddings import head_inputs
from retrain.classifier.model import NewsClassifier
from retrain.topics.prior import PriorMatch, match_prior

log = logging.getLogger(__name__)


def answer_taught(base: Sequence[Example], num_labels: int) -> list[int]:
    """The topics (output indices) no base row can be, exactly or within a set: only answers teach them (an added
    topic), so their share of the training rows is far below their share of traffic. A split's topics are left out:
    the parent's old rows ("B or C", read by `resolve_split_rows`) carry the pair's share (docs/decisions/new-topics.md)."""
    in_base = {t for e in base for t in (e.allowed or (e.label,))}
    return [i for i in range(num_labels) if i not in in_base]


@torch.no_grad()
def match_taught_prior(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, taught: Sequence[int],
                       traffic: Sequence[Example], texts: Sequence[str], reading: Reading) -> PriorMatch | None:
    """Shift the bias of the `taught` outputs so the model reads as much of the unlabelled traffic `texts` as each
    of them as the exact `traffic` answers name it (`retrain.topics.prior`); None (nothing changed) when those are too few."""
    if not taught or not texts:
        return None
    last = model.head[-1]
    assert isinstance(last, torch.nn.Linear)
    logits = last(head_inputs(model, tokenizer, texts, reading)).numpy()
    matched = match_prior(logits, model.labels, taught, [e.label for e in traffic if len(e.allowed) <= 1])
    if matched is not None:
        for key, shift in matched.shift.items():
            last.bias[model.labels.index(key)] += shift
        log.info("taught topics' prior matched on %d traffic texts to %d traffic answers: %s", matched.texts,
                 matched.answers, ", ".join(f"{k} read {matched.read_before[k]:.3f} -> {matched.read_after[k]:.3f} "
                                            f"(answers {matched.target[k]:.3f}, bias {matched.shift[k]:+.2f})"
                                            for k in matched.target))
    return matched
