"""The recipe for a changed taxonomy: how a retrain starts a topic its champion never predicted, and what it trains a
split's old rows toward.

Two parts, each a `RetrainPolicy` switch (docs/concepts/topics.md, "How a retrain learns a new topic"):

- **Imprint** (`imprint_new_topics`). A topic the champion lacks gets a head row aimed at its own answers: the
  direction from the other rows' mean feature to its answers' mean feature (weight imprinting, Qi et al., CVPR 2018),
  at the known rows' length, with a bias that makes it tie, on average over its answers, with the topic the champion
  reads them as. Started from a neutral row far below the others instead, a topic with a few dozen answers beside
  a thousand replayed rows has to climb from zero recall within one short epoch.
- **Resolve split rows** (`resolve_split_rows`). After a split of B into B and C, every earlier B row may be either.
  Trained toward the set alone ("B or C" is right whichever the model says), nothing tells the model which, and C
  swallows B or never moves. Here a linear model over the encoder's pooled embeddings, fit on the rows that are
  exactly one of the set's topics (answers given after the split), reads each set row; its probabilities within the
  set become the row's target. It is fit with balanced class weights, since the answers' mix follows what the queue
  chose to ask, not what the old rows hold, and strongly regularised (SET_READER_C): on the real rows
  (bench/split_rows.py) both read more rows right than sklearn's defaults whatever the answers' mix, and estimating
  the rows' mix by EM (`mixture_prior`) read fewer right as soon as the answers leaned to one topic. An added topic
  has no old rows; the traffic set's unlabelled items, rows that may be any topic (`TrainingRows.with_unlabelled`,
  RetrainPolicy.read_traffic), are read the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from core.data import Example
from core.reading import Reading
from retrain.label_errors import pooled
from retrain.model import NewsClassifier
from retrain.prior import PriorMatch, match_prior

log = logging.getLogger(__name__)

# A topic needs this many exact rows before a linear model may decide set rows by it: fewer, and it decides by noise.
MIN_EXACT_ROWS = 5
# The linear model's inverse regularisation strength: the best of 0.003-1 on every mix bench/split_rows.py tried.
SET_READER_C = 0.003
# Rows of the other topics whose mean feature is the imprinted direction's origin (a fixed random sample).
ORIGIN_ROWS = 256


@dataclass(frozen=True)
class Resolved:
    """Set rows' new targets: the rows (positions in the training rows), their target distributions over all topics,
    and the estimated share of each of the sets' topics among them."""

    rows: list[int]
    targets: np.ndarray
    prior: dict[int, float]


@torch.no_grad()
def head_inputs(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], reading: Reading
                ) -> torch.Tensor:
    """What the head's last layer reads for each text: the pooled encoder output through the head's hidden layer,
    dropout off."""
    vectors = torch.from_numpy(pooled(model.encoder, tokenizer, texts, reading))
    model.eval()
    return model.head[:-1](vectors)


@torch.no_grad()
def imprint(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, new: Mapping[int, Sequence[str]],
            others: Sequence[str], reading: Reading) -> dict[int, int]:
    """Start each head row in `new` (output index -> its topic's answer texts) from its answers (see the module);
    `others`: texts of the other topics, the direction's origin. Returns output index -> answers used (rows with no
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


def answer_taught(base: Sequence[Example], num_labels: int) -> list[int]:
    """The topics (output indices) no base row can be, exactly or within a set: only answers teach them (an added
    topic), so their share of the training rows is far below their share of traffic. A split's topics are left out:
    the parent's old rows ("B or C", read by `resolve_split_rows`) carry the pair's share, and on bench/taxonomy.py
    matching the child's prior as well cut its recall (0.849 to 0.819 at 200 labels, 0.877 to 0.813 at 400)."""
    in_base = {t for e in base for t in (e.allowed or (e.label,))}
    return [i for i in range(num_labels) if i not in in_base]


@torch.no_grad()
def match_taught_prior(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, taught: Sequence[int],
                       traffic: Sequence[Example], texts: Sequence[str], reading: Reading) -> PriorMatch | None:
    """Shift the bias of the `taught` outputs so the model reads as much of the unlabelled traffic `texts` as each
    of them as the exact `traffic` answers name it (`retrain.prior`); None (nothing changed) when those are too few."""
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
