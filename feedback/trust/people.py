"""The people behind the answers: readable names, what each one did, and the texts they disagree on.

Pure functions, like `feedback.trust.rules`, over what `feedback.trust.crowd.Crowd` reads: per-person counts by the database,
and the answers on texts two or more people answered (`disagreements` takes any answer rows).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.settings.policies import TrustPolicy
from feedback.trust.agreement import pairwise_agreement
from feedback.trust.checks import CheckScore
from feedback.trust.crowd import PersonCounts
from feedback.trust.rules import (
    MAINTAINER,
    annotator_agreement,
    counted_answers,
    failed_checks,
    flagged_annotators,
    ineligible,
)

_ADJECTIVES = (
    "amber", "bold", "brave", "bright", "calm", "clever", "cosmic", "crisp", "curious", "daring", "eager", "fair",
    "fancy", "fleet", "gentle", "glad", "golden", "grand", "happy", "hardy", "honest", "jolly", "keen", "kind",
    "lively", "loyal", "lucky", "mellow", "merry", "mighty", "modest", "neat", "nimble", "noble", "patient",
    "plucky", "polite", "proud", "quick", "quiet", "rapid", "ready", "rosy", "silver", "smart", "snappy", "solid",
    "spry", "steady", "sunny", "swift", "tidy", "tranquil", "true", "upbeat", "vivid", "warm", "wise", "witty",
    "zesty", "breezy", "cheery", "dapper", "earnest",
)
_ANIMALS = (
    "badger", "bat", "bear", "beaver", "bison", "camel", "cat", "cheetah", "crane", "crow", "deer", "dingo",
    "dolphin", "donkey", "eagle", "eel", "elk", "falcon", "ferret", "finch", "fox", "frog", "gecko", "goat",
    "goose", "hare", "hawk", "heron", "horse", "ibis", "jackal", "jay", "koala", "lark", "lemur", "lion", "llama",
    "lynx", "marten", "mole", "moose", "newt", "otter", "owl", "panda", "parrot", "pelican", "puffin", "quail",
    "rabbit", "raven", "robin", "seal", "shrew", "sparrow", "stork", "swan", "tapir", "tiger", "toad", "trout",
    "walrus", "wolf", "wren",
)


def nickname(annotator: str) -> str:
    """A name a maintainer can read: a signed-in account as itself; an anonymous browser as a short, stable
    adjective-animal-NN derived from its id (the same id always gets the same name)."""
    if annotator.startswith("user:"):
        return annotator.removeprefix("user:")
    if annotator == MAINTAINER:
        return "maintainer (you)"
    n = int(hashlib.sha256(annotator.encode("utf-8", "replace")).hexdigest()[:12], 16)
    adjective = _ADJECTIVES[n % len(_ADJECTIVES)]
    animal = _ANIMALS[(n // len(_ADJECTIVES)) % len(_ANIMALS)]
    return f"{adjective}-{animal}-{(n // (len(_ADJECTIVES) * len(_ANIMALS))) % 100:02d}"


@dataclass(frozen=True)
class Person:
    """One annotator as the admin view's table shows them."""

    annotator: str  # the stored id
    name: str  # `nickname(annotator)`
    signed_in: bool
    answers: int  # live answers (not undone or replaced)
    last_week: int  # live answers in the 7 days before they were counted
    last_active: str  # the newest answer's time, "YYYY-MM-DD HH:MM" UTC
    checks_right: int
    checks_answered: int
    shared: int  # texts they labelled that someone else labelled too
    agrees: float | None  # share of pairwise comparisons on shared texts that match; None below min_shared
    trains: str  # "yes", or why their answers are not trained on


def people(
    counts: Iterable[PersonCounts],
    scores: Mapping[str, CheckScore],
    shared: Iterable[Mapping[str, Any]],
    policy: TrustPolicy,
) -> list[Person]:
    """The annotators of `counts` (`feedback.trust.crowd.Crowd.counts`), most live answers first, with their
    known-answer checks (`scores`: `Crowd.check_scores`) and their agreement on `shared`, the answers on texts
    two or more people answered (`Crowd.shared_answers`: a text one person answered compares nobody).
    The maintainer's reviews are not people's."""
    counts = sorted(counts, key=lambda c: (-c.answers, c.annotator))
    shared = [dict(row) for row in shared if row["annotator"] != MAINTAINER]
    overlap = pairwise_agreement(shared, policy.min_answers_for_agreement)
    why = _not_trained(counts, scores, shared, policy)
    out = []
    for person in counts:
        score = scores.get(person.annotator)
        overlapping, agrees = overlap.get(person.annotator, (0, None))
        out.append(Person(
            annotator=person.annotator, name=nickname(person.annotator), signed_in=person.signed_in,
            answers=person.answers, last_week=person.last_week,
            last_active=person.last_active[:16].replace("T", " "),
            checks_right=score.right if score else 0, checks_answered=score.answered if score else 0,
            shared=overlapping, agrees=agrees,
            trains=why.get(person.annotator, "yes"),
        ))
    return out


def _not_trained(
    counts: Sequence[PersonCounts], scores: Mapping[str, CheckScore], shared: Sequence[Mapping[str, Any]],
    policy: TrustPolicy,
) -> dict[str, str]:
    """Why each excluded annotator's answers do not train (`feedback.trust.rules.excluded_annotators`' rules and
    reasons; its agreement rule compares only on texts someone else answered, so `shared` is all it needs)."""
    failed = failed_checks(scores, min_checks=policy.min_checks, min_accuracy=policy.min_check_accuracy)
    flagged = flagged_annotators(annotator_agreement(shared), min_annotator_agreement=policy.min_annotator_agreement,
                                 min_answers_for_agreement=policy.min_answers_for_agreement)
    others = ineligible([c.annotator for c in counts], [c.annotator for c in counts if c.unverified], scores, policy)
    out = {}
    for annotator in (c.annotator for c in counts):
        if annotator in failed:
            out[annotator] = "no: failed known-answer checks"
        elif annotator in flagged:
            out[annotator] = "no: disagrees with the others"
        elif annotator in others:
            out[annotator] = f"no: the server trains on {policy.train_on.replace('_', ' ')} annotators only"
    return out


@dataclass(frozen=True)
class Disagreement:
    """A text whose counted answers give more than one label."""

    text_hash: str
    text: str
    votes: dict[str, list[str]]  # label -> nicknames of who gave it, most votes first
    newest_id: int  # the newest answer on it, to list recent disagreements first


def disagreements(rows: Iterable[Mapping[str, Any]], gold: Mapping[str, str], *, limit: int = 50) -> list[Disagreement]:
    """Texts people label differently (each person's latest live, unrejected answer), newest first.

    Known-answer checks are left out (their label is known) and so are texts a maintainer settled, since
    settling rejects the other labels.
    """
    by_text: dict[str, list[dict[str, Any]]] = {}
    for row in counted_answers(rows):
        by_text.setdefault(row["text_hash"], []).append(row)
    found = []
    for digest, answers in by_text.items():
        labels = Counter(row["user_label"] for row in answers)
        if digest in gold or len(labels) < 2:
            continue
        votes = {label: [nickname(row["annotator"]) for row in answers if row["user_label"] == label]
                 for label, _ in labels.most_common()}
        found.append(Disagreement(digest, answers[-1]["text"], votes, max(int(row["id"]) for row in answers)))
    return sorted(found, key=lambda d: -d.newest_id)[:limit]
