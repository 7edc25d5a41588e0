"""A split's earlier rows: after B is split into B and C, every earlier B row may be either; a linear model over the
encoder's pooled embeddings, fit on the rows that are exactly one of the set's topics, reads each of them, and its
probabilities within the set become the row's target (docs/decisions/new-topics.md)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from transformers import PreTrainedTokenizerBase

from core.data import Example
from core.reading import Reading
from retrain.classifier.embeddings import pooled
from retrain.classifier.model import NewsClassifier

log = logging.getLogger(__name__)

# A topic needs this many exact rows before a linear model may decide set rows by it: fewer, and it decides by noise.
MIN_EXACT_ROWS = 5
# The linear model's inverse regularisation strength: the best of 0.003-1 on every mix bench/split_rows.py tried.
SET_READER_C = 0.003


@dataclass(frozen=True)
class Resolved:
    """Set rows' new targets: the rows (positions in the training rows), their target distributions over all topics,
    and the estimated share of each of the sets' topics among them."""

    rows: list[int]
    targets: np.ndarray
    prior: dict[int, float]


def mixture_prior(probs: np.ndarray, *, iterations: int = 50, tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """EM for the class mix of unlabelled rows (Saerens, Latinne and Decaestecker, Neural Computation 2002): `probs`
    (rows x classes) are posteriors under a uniform prior; returns the estimated mix and the posteriors under it."""
    probs = np.asarray(probs, dtype=np.float64)
    k = probs.shape[1]
    prior = np.full(k, 1.0 / k)
    adjusted = probs
    for _ in range(iterations):
        weighted = probs * (prior * k)
        adjusted = weighted / weighted.sum(axis=1, keepdims=True)
        new_prior = adjusted.mean(axis=0)
        if np.abs(new_prior - prior).max() < tol:
            prior = new_prior
            break
        prior = new_prior
    return prior, adjusted


def resolve_split_rows(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example],
                       reading: Reading, seed: int) -> Resolved | None:
    """Targets for the rows that allow a set (see the module), read over the encoder's pooled embeddings, or None
    when fewer than two of the sets' topics have MIN_EXACT_ROWS exact rows (the set loss then stays). `examples`:
    the training rows, repeats included."""
    return read_set_rows(lambda texts: pooled(model.encoder, tokenizer, texts, reading), examples,
                         model.num_labels, seed)


def read_set_rows(embed: Callable[[Sequence[str]], np.ndarray], examples: Sequence[Example], num_labels: int,
                  seed: int, *, balanced: bool = True, strength: float = SET_READER_C, estimate_mix: bool = False
                  ) -> Resolved | None:
    """`resolve_split_rows` over any embedding (bench/split_rows.py passes cached ones). The keywords are the
    variants the bench compares: `balanced` class weights (off: the answers' own mix is the prior), the linear
    model's `strength` (its C), and `estimate_mix`, the set rows' mix estimated by EM."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    set_rows = [i for i, e in enumerate(examples) if len(e.allowed) > 1]
    topics = sorted({t for i in set_rows for t in examples[i].allowed})
    exact = [i for i, e in enumerate(examples) if len(e.allowed) <= 1 and e.label in topics]
    counts = {t: len({examples[i].text for i in exact if examples[i].label == t}) for t in topics}
    fitted = [t for t in topics if counts[t] >= MIN_EXACT_ROWS]
    if not set_rows or len(fitted) < 2:
        return None
    texts = sorted({examples[i].text for i in [*set_rows, *exact]})
    position = {text: n for n, text in enumerate(texts)}
    vectors = StandardScaler().fit_transform(embed(texts))
    teach = sorted({(examples[i].text, examples[i].label) for i in exact if examples[i].label in fitted})
    linear = LogisticRegression(C=strength, max_iter=2000, class_weight="balanced" if balanced else None,
                                random_state=seed)
    linear.fit(vectors[[position[t] for t, _ in teach]], [label for _, label in teach])
    classes = [int(c) for c in linear.classes_]
    unique = sorted({examples[i].text for i in set_rows})
    probs = linear.predict_proba(vectors[[position[t] for t in unique]])
    prior, posterior = mixture_prior(probs) if estimate_mix else (probs.mean(axis=0), probs)
    read = dict(zip(unique, posterior, strict=True))
    targets = np.zeros((len(set_rows), num_labels), dtype=np.float32)
    for n, i in enumerate(set_rows):
        allowed = [c for c in examples[i].allowed if c in classes]
        if len(allowed) < 2:  # a set the linear model cannot split: its probability shared evenly
            targets[n, list(examples[i].allowed)] = 1.0 / len(examples[i].allowed)
            continue
        share = np.array([read[examples[i].text][classes.index(c)] for c in allowed])
        targets[n, allowed] = share / share.sum()
    log.info("set rows: %d read by a linear model fit on %s exact rows; their mix read as %s", len(set_rows),
             "/".join(str(counts[t]) for t in fitted), ", ".join(f"{p:.2f}" for p in prior))
    return Resolved(set_rows, targets, {c: float(p) for c, p in zip(classes, prior, strict=True)})
