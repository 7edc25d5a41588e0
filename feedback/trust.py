"""Which answers are trusted enough to train on: pure rules over answer rows, and one entry point."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from feedback.store import FeedbackStore

log = logging.getLogger(__name__)

# Statuses whose answers never count: withdrawn by the annotator, or refused by a maintainer.
NOT_COUNTED = ("undone", "rejected")


@dataclass(frozen=True)
class TrustedExample:
    """A text with the label its annotators agree on."""

    text: str
    label: str  # canonical name from core.labels.LABELS
    votes: int  # counted answers giving `label`
    agreement: float  # votes / all counted answers on this text
    annotators: tuple[str, ...]  # who gave `label`, sorted
    text_hash: str = ""


@dataclass(frozen=True)
class TextVotes:
    """The counted answers on one text (one text_hash), by label."""

    text_hash: str
    text: str
    counts: dict[str, int]
    majority: str | None  # None when two labels tie for the most votes
    majority_rows: tuple[dict[str, Any], ...]
    total: int


@dataclass(frozen=True)
class AnnotatorAgreement:
    """How often an annotator agreed with the other annotators' consensus."""

    annotator: str
    compared: int  # texts where others answered and their consensus was not a tie
    agreed: int

    @property
    def rate(self) -> float:
        return self.agreed / self.compared if self.compared else 1.0


def contradiction_reason(
    predicted: str | None, probabilities: Mapping[str, float] | None, user_label: str, threshold: float
) -> str | None:
    """Why an answer looks suspicious (the model was very sure of another label), or None."""
    if predicted is None or not probabilities or user_label == predicted:
        return None
    confidence = probabilities.get(predicted, 0.0)
    if confidence < threshold:
        return None
    return f"model was {confidence:.0%} sure of {predicted}"


def counted_answers(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The answers that count, oldest first: not undone or rejected, and per annotator and text only the
    latest one (a later answer replaces the annotator's earlier one on the same text)."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        if row["status"] in NOT_COUNTED:
            continue
        latest[(row["text_hash"], row["annotator"])] = dict(row)
    return sorted(latest.values(), key=lambda r: r["id"])


def _by_text(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in counted_answers(rows):
        grouped[row["text_hash"]].append(row)
    return grouped


def _top_label(counts: Counter[str]) -> str | None:
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def aggregate(rows: Iterable[Mapping[str, Any]]) -> dict[str, TextVotes]:
    """Counted answers grouped per text_hash with their majority label (None on a tie)."""
    result: dict[str, TextVotes] = {}
    for digest, text_rows in _by_text(rows).items():
        counts = Counter(row["user_label"] for row in text_rows)
        majority = _top_label(counts)
        result[digest] = TextVotes(
            text_hash=digest,
            text=text_rows[0]["text"],
            counts=dict(counts),
            majority=majority,
            majority_rows=tuple(row for row in text_rows if row["user_label"] == majority),
            total=len(text_rows),
        )
    return result


def annotator_agreement(rows: Iterable[Mapping[str, Any]]) -> dict[str, AnnotatorAgreement]:
    """Per annotator, agreement with the consensus of the *other* annotators on shared texts.

    Leaving the annotator out of the consensus keeps one annotator from agreeing with themselves; texts
    where the others are tied are not compared.
    """
    compared: Counter[str] = Counter()
    agreed: Counter[str] = Counter()
    annotators: set[str] = set()
    for text_rows in _by_text(rows).values():
        for row in text_rows:
            annotators.add(row["annotator"])
            others = Counter(other["user_label"] for other in text_rows if other["annotator"] != row["annotator"])
            consensus = _top_label(others)
            if consensus is None:
                continue
            compared[row["annotator"]] += 1
            agreed[row["annotator"]] += row["user_label"] == consensus
    return {
        name: AnnotatorAgreement(annotator=name, compared=compared[name], agreed=agreed[name])
        for name in sorted(annotators)
    }


def flagged_annotators(
    agreements: Mapping[str, AnnotatorAgreement], *, min_annotator_agreement: float, min_answers_for_agreement: int
) -> set[str]:
    """Annotators compared on at least `min_answers_for_agreement` texts whose agreement rate is too low."""
    return {
        name
        for name, agreement in agreements.items()
        if agreement.compared >= min_answers_for_agreement and agreement.rate < min_annotator_agreement
    }


def select_trusted(
    rows: Iterable[Mapping[str, Any]],
    *,
    labels_required: int = 1,
    min_annotator_agreement: float = 0.6,
    min_answers_for_agreement: int = 5,
) -> list[TrustedExample]:
    """The rules of `trusted_examples`, applied to answer rows; see there."""
    rows = list(rows)
    flagged = flagged_annotators(
        annotator_agreement(rows),
        min_annotator_agreement=min_annotator_agreement,
        min_answers_for_agreement=min_answers_for_agreement,
    )
    if flagged:
        log.warning("not training on answers from low-agreement annotators: %s", ", ".join(sorted(flagged)))
    trusted = []
    for votes in aggregate(row for row in rows if row["annotator"] not in flagged).values():
        if votes.majority is None or len(votes.majority_rows) < labels_required:
            continue
        if any(row["status"] == "suspicious" for row in votes.majority_rows):
            continue
        trusted.append(
            TrustedExample(
                text=votes.text,
                label=votes.majority,
                votes=len(votes.majority_rows),
                agreement=len(votes.majority_rows) / votes.total,
                annotators=tuple(sorted(row["annotator"] for row in votes.majority_rows)),
                text_hash=votes.text_hash,
            )
        )
    return trusted


def trusted_examples(
    store: FeedbackStore,
    *,
    labels_required: int = 1,
    min_annotator_agreement: float = 0.6,
    min_answers_for_agreement: int = 5,
) -> list[TrustedExample]:
    """The feedback texts to train on, one per text, with the label their annotators agree on.

    Rules, in order:
    1. Undone and rejected answers are ignored. Of the rest, only each annotator's latest answer on a
       text counts (texts are identified by `core.text.text_hash`).
    2. Each annotator's agreement is measured on texts that other annotators also answered: the share
       of those texts where they gave the other annotators' majority label (texts where the others tie
       are not compared). An annotator compared on at least `min_answers_for_agreement` texts with an
       agreement below `min_annotator_agreement` is flagged, and none of their answers count.
    3. Per text, the remaining answers vote; the text is trusted when its top label has at least
       `labels_required` votes, no other label has as many (no tie), and none of the votes for the top
       label is an unresolved 'suspicious' answer ('accepted' ones count; 'ok' ones count).

    Each example carries the majority label's votes, agreement (votes / all counted answers on the
    text) and the annotators who gave it, in the order of each text's earliest counted answer.
    """
    examples = select_trusted(
        store.answers(),
        labels_required=labels_required,
        min_annotator_agreement=min_annotator_agreement,
        min_answers_for_agreement=min_answers_for_agreement,
    )
    log.info("%d trusted feedback examples (labels_required=%d)", len(examples), labels_required)
    return examples
