"""Which answers are trusted enough to train on: pure rules over the answer rows they are given."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.policies import TrustPolicy

log = logging.getLogger(__name__)

# Share of a new annotator's items that are checks until they have answered `min_checks` of them.
EARLY_CHECK_SHARE = 1 / 3
# Statuses whose answers never count: withdrawn by the annotator, or refused by a maintainer.
NOT_COUNTED = ("undone", "replaced", "rejected")
# The identity a maintainer's reviewed labels are stored under (`feedback.review.resolve`). Web identities are
# always "user:..." or "anon:...", so no visitor can answer as it. Its label settles a text; it is never excluded.
MAINTAINER = "maintainer"


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


@dataclass(frozen=True)
class CheckScore:
    """How an annotator did on known-answer checks (pool items whose label a maintainer gave)."""

    annotator: str
    answered: int
    right: int

    @property
    def accuracy(self) -> float:
        return self.right / self.answered if self.answered else 1.0


def check_due(checks_answered: int, draw: float, *, min_checks: int, share: float) -> bool:
    """Whether an annotator's next queue item should be a known-answer check.

    `draw` is a number in [0, 1) the caller derives from something the client cannot predict, so checks
    sit at random positions of each annotator's stream: a fresh identity is not served checks first,
    and rotating identities does not reveal them. Until `min_checks` are answered about one item in
    three is a check, then about `share` of them.
    """
    return draw < (max(share, EARLY_CHECK_SHARE) if checks_answered < min_checks else share)


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


def _voice(row: Mapping[str, Any]) -> str:
    """Who a vote speaks for: its client address when the page recorded one, else its annotator."""
    return row.get("address") or row["annotator"]


def _by_text(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Counted answers per text, one per client address: many identities from one address are one vote
    (the earliest), so minting identities does not buy votes."""
    grouped: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in counted_answers(rows):
        grouped[row["text_hash"]].setdefault(_voice(row), row)
    return {digest: list(by_voice.values()) for digest, by_voice in grouped.items()}


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
    where the others are tied are not compared. Only verified identities (signed in by the host) form
    the consensus, so self-minted identities cannot outvote an honest annotator into exclusion.
    """
    compared: Counter[str] = Counter()
    agreed: Counter[str] = Counter()
    annotators: set[str] = set()
    for text_rows in _by_text(rows).values():
        for row in text_rows:
            annotators.add(row["annotator"])
            others = Counter(
                other["user_label"]
                for other in text_rows
                if other["annotator"] != row["annotator"] and other.get("verified")
            )
            consensus = _top_label(others)
            if consensus is None:
                continue
            compared[row["annotator"]] += 1
            agreed[row["annotator"]] += row["user_label"] == consensus
    return {
        name: AnnotatorAgreement(annotator=name, compared=compared[name], agreed=agreed[name])
        for name in sorted(annotators)
    }


def check_scores(rows: Iterable[Mapping[str, Any]], gold: Mapping[str, str]) -> dict[str, CheckScore]:
    """Per annotator, counted answers on known-answer checks (`gold`: text_hash -> label) and how many
    gave the known label."""
    answered: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for row in counted_answers(rows):
        known = gold.get(row["text_hash"])
        if known is not None:
            answered[row["annotator"]] += 1
            right[row["annotator"]] += row["user_label"] == known
    return {name: CheckScore(name, answered[name], right[name]) for name in sorted(answered)}


def flagged_annotators(
    agreements: Mapping[str, AnnotatorAgreement], *, min_annotator_agreement: float, min_answers_for_agreement: int
) -> set[str]:
    """Annotators compared on at least `min_answers_for_agreement` texts whose agreement rate is too low."""
    return {
        name
        for name, agreement in agreements.items()
        if agreement.compared >= min_answers_for_agreement and agreement.rate < min_annotator_agreement
    }


def failed_checks(scores: Mapping[str, CheckScore], *, min_checks: int, min_accuracy: float) -> set[str]:
    """Annotators with at least `min_checks` answered checks and an accuracy on them below `min_accuracy`."""
    return {name for name, score in scores.items() if score.answered >= min_checks and score.accuracy < min_accuracy}


def excluded_annotators(
    rows: Iterable[Mapping[str, Any]], gold: Mapping[str, str] | None, policy: TrustPolicy
) -> set[str]:
    """Annotators none of whose answers count: low agreement with the others, failed known-answer checks,
    or (by `policy.train_on`) not signed in, or not yet tested by enough checks."""
    rows = list(rows)
    flagged = flagged_annotators(
        annotator_agreement(rows),
        min_annotator_agreement=policy.min_annotator_agreement,
        min_answers_for_agreement=policy.min_answers_for_agreement,
    )
    if flagged:
        log.warning("not training on answers from low-agreement annotators: %s", ", ".join(sorted(flagged)))
    scores = check_scores(rows, gold or {})
    failed = failed_checks(scores, min_checks=policy.min_checks, min_accuracy=policy.min_check_accuracy)
    if failed:
        log.warning("not training on answers from annotators who failed known-answer checks: %s",
                    ", ".join(sorted(failed)))
    return (flagged | failed | _not_eligible(rows, scores, policy)) - {MAINTAINER}


def _not_eligible(
    rows: Sequence[Mapping[str, Any]], scores: Mapping[str, CheckScore], policy: TrustPolicy
) -> set[str]:
    """Annotators whose answers `policy.train_on` does not let train (their answers are still stored)."""
    if policy.train_on == "signed_in":
        return {row["annotator"] for row in rows if not row.get("verified")}
    if policy.train_on == "checked":
        passed = {
            name for name, score in scores.items()
            if score.answered >= policy.min_checks and score.accuracy >= policy.min_check_accuracy
        }
        return {row["annotator"] for row in rows} - passed
    return set()


def select_trusted(
    rows: Iterable[Mapping[str, Any]], gold: Mapping[str, str] | None, policy: TrustPolicy
) -> list[TrustedExample]:
    """The feedback texts to train on, one per text, with the label their annotators agree on.

    `rows` are answer rows (as `FeedbackStore.answers` returns them), `gold` the known-answer checks
    (text_hash -> label). Rules, in order:
    1. Undone and rejected answers are ignored. Of the rest, only each annotator's latest answer on a
       text counts (texts are identified by `core.text.text_hash`).
    2. Each annotator's agreement is measured on texts that other annotators also answered: the share
       of those texts where they gave the other annotators' majority label (texts where the others tie
       are not compared). An annotator compared on at least `policy.min_answers_for_agreement` texts with
       an agreement below `policy.min_annotator_agreement` is flagged, and none of their answers count.
    3. Known-answer checks: an annotator who answered at least `policy.min_checks` of them with an
       accuracy below `policy.min_check_accuracy` is flagged the same way. Answers on checks never become
       training examples themselves.
    4. `policy.train_on`: "signed_in" keeps only answers of identities the host signed in; "checked" only
       those of annotators who answered at least `policy.min_checks` checks and passed them (one-click
       and queue answers alike: the rule is about the person, not the path); "anyone" keeps all.
    5. Per text, one vote per client address (identities sharing an address are one voice), then the
       remaining answers vote; the text is trusted when its top label has at least
       `policy.labels_required` votes, no other label has as many (no tie), and none of the votes for the
       top label is an unresolved 'suspicious' answer ('accepted' ones count; 'ok' ones count).
    6. A text the maintainer labelled (`MAINTAINER`, see `feedback.review.resolve`) is trusted with that label
       whatever `labels_required`, as long as it is still the text's top label.

    Each example carries the majority label's votes, agreement (votes / all counted answers on the
    text) and the annotators who gave it, in the order of each text's earliest counted answer.
    """
    rows = list(rows)
    gold = gold or {}
    excluded = excluded_annotators(rows, gold, policy)
    kept = (row for row in rows if row["annotator"] not in excluded and row["text_hash"] not in gold)
    reviewed = {row["text_hash"]: row["user_label"] for row in counted_answers(rows) if row["annotator"] == MAINTAINER}
    trusted = []
    for votes in aggregate(kept).values():
        if votes.text_hash in reviewed and reviewed[votes.text_hash] != votes.majority:
            continue  # newer answers tie with or outvote the maintainer's label: it waits for another review
        if votes.text_hash not in reviewed:
            if votes.majority is None or len(votes.majority_rows) < policy.labels_required:
                continue
            if any(row["status"] == "suspicious" for row in votes.majority_rows):
                continue
        assert votes.majority is not None  # either reviewed (equal to it) or checked above
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
