"""Imprinting: a topic the champion lacks gets a head row aimed at its own answers, so a retrain starts it beside the
others rather than from zero recall (docs/decisions/new-topics.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from core.data import Example
from core.reading import Reading
from retrain.classifier.embeddings import head_inputs
from retrain.classifier.model import NewsClassifier

# Rows of the other topics whose mean feature is the imprinted direction's origin (a fixed random sample).
ORIGIN_ROWS = 256


@torch.no_grad()
def imprint(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, new: Mapping[int, Sequence[str]],
            others: Sequence[str], reading: Reading) -> dict[int, int]:
    """Start each head row in `new` (output index -> its topic's answer texts) from its answers: the direction from
    the mean feature of `others` (texts of the other topics) to its answers' mean feature (weight imprinting), at the
    known rows' length, with a bias that makes it tie, on average over its answers, with the topic the model reads
    them as. Returns output index -> answers used (rows with no
    answers are left as they are)."""
    last = model.head[-1]
    assert isinstance(last, torch.nn.Linear)
    known = [i for i in range(model.num_labels) if i not in new]
    wanted = {row: list(texts) for row, texts in new.items() if texts}
    if not known or not wanted or not others:
        return {}
    origin = head_inputs(model, tokenizer, others, reading).mean(dim=0)
    length = last.weight[known].norm(dim=1).mean()
    for row, texts in wanted.items():
        features = head_inputs(model, tokenizer, texts, reading)
        direction = features.mean(dim=0) - origin
        weight = direction / direction.norm().clamp(min=1e-8) * length
        rival = (features @ last.weight[known].T + last.bias[known]).max(dim=1).values.mean()
        last.weight[row] = weight
        last.bias[row] = rival - (features @ weight).mean()
    return {row: len(texts) for row, texts in wanted.items()}


def imprint_new_topics(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, champion_labels: Sequence[str],
                       feedback: Sequence[Example], base: Sequence[Example], reading: Reading, seed: int
                       ) -> dict[str, int]:
    """Imprint the rows of the topics `model` predicts (its head already fitted to the taxonomy) that the champion
    did not, from the feedback answering them exactly; returns topic key -> answers used."""
    known = set(champion_labels)
    new = {i: [e.text for e in feedback if e.label == i and len(e.allowed) <= 1]
           for i, key in enumerate(model.labels) if key not in known}
    if not any(new.values()):
        return {}
    pool = [e.text for e in [*base, *feedback] if e.label not in new]
    picked = np.random.default_rng(seed).permutation(len(pool))[:ORIGIN_ROWS]
    done = imprint(model, tokenizer, new, [pool[i] for i in sorted(picked)], reading)
    return {model.labels[row]: n for row, n in done.items()}
