"""The people behind the answers: readable names, what each one did, and the texts they disagree on.

Pure functions over answer rows (as `FeedbackStore.answers` returns them), like `feedback.trust`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from core.policies import TrustPolicy
from feedback.agreement import pairwise_agreement
from feedback.trust import (
    MAINTAINER,
    annotator_agreement,
    check_scores,
    counted_answers,
    excluded_annotators,
    failed_checks,
    flagged_annotators,
)
from feedback.validate import WITHDRAWN

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
    last_week: int  # live answers in the 7 days before `now`
    last_active: str  # the newest answer's time, "YYYY-MM-DD HH:MM" UTC
    checks_right: int
    checks_answered: int
    shared: int  # texts they labelled that someone else labelled too
    agrees: float | None  # share of pairwise comparisons on shared texts that match; None below min_shared
    trains: str  # "yes", or why their answers are not trained on


def people(
    rows: Iterable[Mapping[str, Any]],
    gold: Mapping[str, str],
    policy: TrustPolicy,
    *,
    now: datetime | None = None,
    limit: int = 50,
) -> list[Person]:
    """The `limit` annotators with the most live answers, most first; the maintainer's reviews are not people's."""
    rows = [dict(row) for row in rows if row["annotator"] != MAINTAINER]
    live = [row for row in rows if row["status"] not in WITHDRAWN]
    counts = Counter(row["annotator"] for row in live)
    now = now or datetime.now(UTC)
    week_ago = (now - timedelta(days=7)).isoformat(timespec="microseconds")
    recent = Counter(row["annotator"] for row in live if str(row["created_at"]) >= week_ago)
    last: dict[str, str] = {}
    signed: set[str] = set()
    for row in live:
        last[row["annotator"]] = max(last.get(row["annotator"], ""), str(row["created_at"]))
        if row.get("verified"):
            signed.add(row["annotator"])
    scores = check_scores(rows, gold)
    overlap = pairwise_agreement(rows, policy.min_answers_for_agreement)
    why = _not_trained(rows, gold, policy)
    chosen = sorted(counts, key=lambda a: (-counts[a], a))[:limit]
    out = []
    for annotator in chosen:
        score = scores.get(annotator)
        shared, agrees = overlap.get(annotator, (0, None))
        out.append(Person(
            annotator=annotator, name=nickname(annotator), signed_in=annotator in signed, answers=counts[annotator],
            last_week=recent[annotator], last_active=last[annotator][:16].replace("T", " "),
            checks_right=score.right if score else 0, checks_answered=score.answered if score else 0,
            shared=shared, agrees=agrees,
            trains=why.get(annotator, "yes"),
        ))
    return out


def _not_trained(rows: Sequence[Mapping[str, Any]], gold: Mapping[str, str], policy: TrustPolicy) -> dict[str, str]:
    """Why each excluded annotator's answers do not train (`feedback.trust.excluded_annotators`' reasons)."""
    excluded = excluded_annotators(rows, gold, policy)
    failed = failed_checks(check_scores(rows, gold), min_checks=policy.min_checks,
                           min_accuracy=policy.min_check_accuracy)
    flagged = flagged_annotators(annotator_agreement(rows), min_annotator_agreement=policy.min_annotator_agreement,
                                 min_answers_for_agreement=policy.min_answers_for_agreement)
    out = {}
    for annotator in excluded:
        if annotator in failed:
            out[annotator] = "no: failed known-answer checks"
        elif annotator in flagged:
            out[annotator] = "no: disagrees with the others"
        else:
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
