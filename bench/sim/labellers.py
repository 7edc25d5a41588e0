"""Simulated labellers: honest readers and trolls answering the feedback queue (or a random sample) each round."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from core.data import Example
from core.labels import LABELS
from core.settings.policies import QueuePolicy
from core.text import text_hash
from feedback.labelling.answers import AnswerInput

if TYPE_CHECKING:
    from core.serving.classifier import OnnxClassifier
    from feedback.store import FeedbackStore

HONEST = ("reader-1", "reader-2", "reader-3", "reader-4", "reader-5")
MALICIOUS = ("troll-1", "troll-2", "troll-3")
SYBIL_PREFIX = "sybil-"  # an attacker's cheap identities: unverified, all from one client address
SYBIL_ANSWERS_PER_IDENTITY = 12  # long enough to pass known-answer checks with the model's answers


@dataclass
class Stream:
    """What the labellers have not labelled yet: future articles, and the current candidate pool."""

    upcoming: list[Example]
    pending: dict[str, str] = field(default_factory=dict)  # text hash -> text, in the pool, unlabelled

    def refill(self, size: int) -> list[str]:
        """Top the candidate pool up to `size` with the next articles; returns the new texts."""
        added = []
        while len(self.pending) < size and self.upcoming:
            ex = self.upcoming.pop(0)
            self.pending[text_hash(ex.text)] = ex.text
            added.append(ex.text)
        return added


@dataclass
class Tally:
    labels: int = 0
    corrections: int = 0
    malicious: int = 0
    suspicious: int = 0
    checks: int = 0


class Labellers:
    """Simulated annotators: honest ones give the true label; trolls, who do a `malicious` share of the
    work, always give a wrong one (on known-answer checks too). Readers and trolls are signed-in accounts.

    A Sybil attacker (a `sybil` share of the work) mints a new unverified identity every
    SYBIL_ANSWERS_PER_IDENTITY answers, all from one address; it answers checks with the model's own
    prediction (as an attacker can, by classifying them first) and gives every other text one agreed wrong
    label, so its identities vote together.

    `truth` holds each text's topic as an index into `names` (the source's topics, AG News's four by default);
    answers name topics by those names, which the store reads in its current taxonomy."""

    def __init__(
        self, store: FeedbackStore, truth: dict[str, int], malicious: float, rng: random.Random, queue: QueuePolicy,
        sybil: float = 0.0, names: Sequence[str] = LABELS,
    ) -> None:
        self.store = store
        self.truth = truth
        self.names = tuple(names)
        self.malicious = malicious
        self.sybil = sybil
        self.sybil_answers = 0
        self.rng = rng
        self.queue = queue
        self.checks = set(store.pool.gold_labels())
        self.tally = Tally()

    def pick(self) -> str:
        """Who takes the next item. The draws are the ones the simulation always made (a share, then a
        name), so runs without trolls label exactly what they did before checks existed."""
        if self.sybil and self.rng.random() < self.sybil:
            return f"{SYBIL_PREFIX}{self.sybil_answers // SYBIL_ANSWERS_PER_IDENTITY}"
        if self.rng.random() < self.malicious:
            return self.rng.choice(MALICIOUS)
        return self.rng.choice(HONEST)

    def due_check(self, annotator: str) -> dict[str, Any] | None:
        return self.store.pool.due_check(annotator, self.queue) if self.checks else None

    def next_item(self, annotator: str) -> dict[str, Any] | None:
        return self.store.pool.next_item(annotator, self.queue)

    def answer(
        self, annotator: str, text: str, clf: OnnxClassifier, probs: np.ndarray, version: str,
        item_id: int | None = None,
    ) -> None:
        digest = text_hash(text)
        true_label = self.names[self.truth[digest]]
        predicted = clf.labels[int(np.argmax(probs))]
        sybil = annotator.startswith(SYBIL_PREFIX)
        if sybil:
            self.sybil_answers += 1
            label = predicted if digest in self.checks else self.names[(self.truth[digest] + 1) % len(self.names)]
            self.tally.malicious += label != true_label
        elif annotator in MALICIOUS:
            label = self.rng.choice([name for name in self.names if name != true_label])
            self.tally.malicious += 1
        else:
            label = true_label
        kind = "queue" if item_id is not None else "confirm" if label == predicted else "correct"
        result = self.store.answers.record(AnswerInput(
            text=text, user_label=label, annotator=annotator, kind=kind, predicted_label=predicted,
            probabilities={name: float(p) for name, p in zip(clf.labels, probs, strict=True)},
            model_version=version, item_id=item_id,
            verified=not sybil, address="addr:sybil" if sybil else f"addr:{annotator}",
        ))
        self.tally.labels += 1
        self.tally.corrections += label != predicted
        self.tally.suspicious += result.status == "suspicious"
        self.tally.checks += digest in self.checks

    def review(self) -> int:
        """An oracle maintainer: accept suspicious answers that are right, reject the others."""
        reviewed = 0
        for row in self.store.answers.rows(status="suspicious"):
            right = row["user_label"] == self.names[self.truth[row["text_hash"]]]
            self.store.answers.set_status(row["id"], "accepted" if right else "rejected")
            reviewed += 1
        return reviewed


def label_round(
    labellers: Labellers, stream: Stream, clf: OnnxClassifier, version: str, *, order: str, budget: int,
    pool_size: int, round_no: int, scores: dict[str, np.ndarray],
) -> int:
    """Let the labellers answer up to `budget` items in the given order; returns how many they answered.

    uncertainty: the real queue. New candidates go into the store's pool, `rescore` scores them with the
    champion (margin uncertainty), and `next_item` hands each annotator a due known-answer check or the
    most uncertain unanswered item. random: a uniform sample of the same candidate pool, with the same
    checks whenever one is due.
    """
    store = labellers.store
    added = stream.refill(pool_size)
    if order == "random":
        chosen = labellers.rng.sample(list(stream.pending.values()), min(budget, len(stream.pending)))
        probs = dict(zip(chosen, clf.predict_proba(chosen), strict=True)) if chosen else {}
        queue = iter(chosen)
        answered = 0
        while answered < budget:
            annotator = labellers.pick()
            check = labellers.due_check(annotator)
            if check is not None:
                row = clf.predict_proba([check["text"]])[0]
                labellers.answer(annotator, check["text"], clf, row, version, item_id=check["id"])
            else:
                text = next(queue, None)
                if text is None:
                    break
                labellers.answer(annotator, text, clf, probs[text], version)
                stream.pending.pop(text_hash(text), None)
            answered += 1
        return answered

    if added:
        store.pool.add(added, source=f"loop-round-{round_no}")

    def scorer(texts: list[str]) -> np.ndarray:
        probs = clf.predict_proba(texts)
        scores.update({text_hash(t): p for t, p in zip(texts, probs, strict=True)})
        return probs

    store.pool.rescore(scorer, version, labels=clf.labels)  # as the page's background scorer does
    answered = 0
    while answered < budget:
        annotator = labellers.pick()
        # Every answered ordinary item leaves the queue (labels_required = 1); checks stay for others.
        item = labellers.next_item(annotator)
        if item is None:
            break
        digest = text_hash(item["text"])
        probs = scores[digest] if digest in scores else scorer([item["text"]])[0]
        labellers.answer(annotator, item["text"], clf, probs, version, item_id=item["id"])
        stream.pending.pop(digest, None)
        answered += 1
    return answered
