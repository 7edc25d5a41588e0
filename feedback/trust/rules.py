"""Which answers are trusted enough to train on: pure rules over the answer rows they are given."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.settings.policies import TrustPolicy
from feedback.trust.checks import CheckScore, failed_checks, passed_checks, score_checks
from feedback.validate import NOT_COUNTED, Status

log = logging.getLogger(__name__)

# The identity a maintainer's reviewed labels are stored under (`feedback.trust.review.resolve`). Web identities are
# always "user:..." or "anon:...", so no visitor can answer as it. Its label settles a text; it is never excluded.
MAINTAINER = "maintainer"
# Kinds of answer on a text the annotator brought in themselves (pasted on Classify), rather than one the
# queue chose for them: anyone can bring in any text, so under "checked" such answers need an independent voice.
SELF_BROUGHT = ("confirm", "correct")


@dataclass(frozen=True)
class TrustedExample:
    """A text with the label its annotators agree on."""

    text: str
    label: str  # a topic key as it means now, or a split topic's set of keys (feedback.meaning)
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
    """Per annotator, counted answers on known-answer checks (`gold`: text_hash -> label), how many gave the
    known label, and the same on telling checks (see `feedback.trust.checks`)."""
    return score_checks(counted_answers(rows), gold)


def flagged_annotators(
    agreements: Mapping[str, AnnotatorAgreement], *, min_annotator_agreement: float, min_answers_for_agreement: int
) -> set[str]:
    """Annotators compared on at least `min_answers_for_agreement` texts whose agreement rate is too low."""
    return {
        name
        for name, agreement in agreements.items()
        if agreement.compared >= min_answers_for_agreement and agreement.rate < min_annotator_agreement
    }


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


def _not_eligible(rows: Sequence[Mapping[str, Any]], scores: Mapping[str, CheckScore], policy: TrustPolicy) -> set[str]:
    """Annotators whose answers `policy.train_on` does not let train (their answers are still stored)."""
    return ineligible({r["annotator"] for r in rows}, {r["annotator"] for r in rows if not r.get("verified")}, scores, policy)


def ineligible(annotators: Iterable[str], unverified: Iterable[str], scores: Mapping[str, CheckScore],
               policy: TrustPolicy) -> set[str]:
    """Of `annotators`, those `policy.train_on` does not let train: under "signed_in" the `unverified` ones (an
    answer came unsigned), under "checked" those who did not pass the checks (`scores`), under "anyone" none."""
    if policy.train_on == "signed_in":
        return set(unverified)
    if policy.train_on == "checked":
        passed = passed_checks(scores, min_checks=policy.min_checks, min_accuracy=policy.min_check_accuracy)
        return set(annotators) - passed
    return set()


def _self_brought(row: Mapping[str, Any]) -> bool:
    """A one-click answer on a text its annotator brought in, that no maintainer accepted."""
    return row.get("kind") in SELF_BROUGHT and row["status"] != Status.ACCEPTED and row["annotator"] != MAINTAINER


def independently_agreed(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`rows` less the self-brought answers no independent answer agrees with.

    An answer on a text its annotator brought in stays only when another annotator, on another client
    address, gave the same label to that text on a channel the annotator did not choose: a queue answer (the
    server picked what they saw), an answer a maintainer accepted, or the maintainer's own label. Two
    identities pasting the same text agree only with each other, so they count for nothing.
    """
    copies = [dict(row) for row in rows]
    independent: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in copies:
        if not _self_brought(row):
            independent[(row["text_hash"], row["user_label"])].append(row)
    return [
        row for row in copies
        if not _self_brought(row) or any(
            other["annotator"] != row["annotator"] and _voice(other) != _voice(row)
            for other in independent[(row["text_hash"], row["user_label"])]
        )
    ]


def select_trusted(
    rows: Iterable[Mapping[str, Any]], gold: Mapping[str, str] | None, policy: TrustPolicy
) -> list[TrustedExample]:
    """The feedback texts to train on, one per text, with the label their annotators agree on.

    `rows` are answer rows (as `Answers.rows` returns them), `gold` the known-answer checks
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
       those of annotators who answered at least `policy.min_checks` checks and passed them, telling ones
       included (`feedback.trust.checks.passed_checks`: copying the model's label never passes); "anyone" keeps all.
       Under "checked", an answer on a text its annotator brought in (a one-click answer on pasted text)
       also needs an independent checked voice agreeing (`independently_agreed`), or a maintainer's accept.
    5. Per text, one vote per client address (identities sharing an address are one voice), then the
       remaining answers vote; the text is trusted when its top label has at least
       `policy.labels_required` votes, no other label has as many (no tie), and none of the votes for the
       top label is an unresolved 'suspicious' answer ('accepted' ones count; 'ok' ones count).
    6. A text the maintainer labelled (`MAINTAINER`, see `feedback.trust.review.resolve`) is trusted with that label
       whatever `labels_required`, as long as it is still the text's top label.

    Each example carries the majority label's votes, agreement (votes / all counted answers on the
    text) and the annotators who gave it, in the order of each text's earliest counted answer.
    """
    rows = list(rows)
    gold = gold or {}
    excluded = excluded_annotators(rows, gold, policy)
    kept: Sequence[Mapping[str, Any]] = [
        row for row in rows if row["annotator"] not in excluded and row["text_hash"] not in gold]
    if policy.train_on == "checked":
        kept = independently_agreed(counted_answers(kept))
    reviewed = {row["text_hash"]: row["user_label"] for row in counted_answers(rows) if row["annotator"] == MAINTAINER}
    trusted = []
    for votes in aggregate(kept).values():
        if votes.text_hash in reviewed and reviewed[votes.text_hash] != votes.majority:
            continue  # newer answers tie with or outvote the maintainer's label: it waits for another review
        if votes.text_hash not in reviewed:
            if votes.majority is None or len(votes.majority_rows) < policy.labels_required:
                continue
            if any(row["status"] == Status.SUSPICIOUS for row in votes.majority_rows):
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
