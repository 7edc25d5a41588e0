"""What a stored label means under a taxonomy: one rule, read by the trust rules, checks, agreement and training.

Answers and checks store the topic KEY they were given, with the taxonomy version it was given under. Read today,
a label means the current keys `Taxonomy.allowed` says: itself (a rename changes nothing), its merge target, or
after a split of its topic the set "parent or child". A set is carried as one label, its keys joined by SET_MARK in
the taxonomy's order, so everything that compares labels as strings (votes, agreement) keeps working: two old
answers "B or C" agree with each other, and with neither a new "B" nor a new "C".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.taxonomy import Taxonomy

# Joins the keys of a set-valued label. A topic name is printable (core.taxonomy.check_name) and keys are names, so
# no key contains this control character.
SET_MARK = "\x1f"


def meaning(taxonomy: Taxonomy, key: str, version: int | None) -> str | None:
    """The label `key`, given under taxonomy `version` (None: the first), as it reads now: a current key, a set of
    current keys joined by SET_MARK, or None when it names no current topic."""
    now = taxonomy.allowed(key, version)
    if not now:
        return None
    return SET_MARK.join(k for k in taxonomy.keys if k in now)


def allowed_keys(label: str) -> tuple[str, ...]:
    """The keys a label read by `meaning` allows: one for an exact label, several for a set."""
    return tuple(label.split(SET_MARK))


def agrees(given: str | None, known: str | None) -> bool:
    """Whether an answer's label (read now) is consistent with a known label (read now): every topic the answer
    allows is one the known label allows. An exact answer C agrees with a check known as "B or C"."""
    if given is None or known is None:
        return False
    return set(allowed_keys(given)) <= set(allowed_keys(known))


def label_in_words(taxonomy: Taxonomy, label: str) -> str:
    """A label read by `meaning`, in the words people see: "Science or Technology"."""
    return " or ".join(taxonomy.name_of(k) for k in allowed_keys(label))


def version_at(taxonomy: Taxonomy, at: str | None) -> int:
    """The taxonomy version in force at the ISO time `at`: for a row stored without a version (a check's label)."""
    current = 1
    for v in taxonomy.versions:
        if v.at and at and v.at <= at:
            current = v.version
    return current


def answers_as_meant(rows: Iterable[Mapping[str, Any]], taxonomy: Taxonomy) -> list[dict[str, Any]]:
    """Answer rows with `user_label` read as it means under `taxonomy` (`meaning`, given under each row's
    `taxonomy_version`); a label that names none of its topics is left as stored, for the caller to leave out
    (`feedback.training.snapshot`)."""
    out = []
    for row in rows:
        copy = dict(row)
        now = meaning(taxonomy, str(row["user_label"]), row.get("taxonomy_version"))
        if now is not None:
            copy["user_label"] = now
        out.append(copy)
    return out


def checks_as_meant(gold: Iterable[tuple[str, str, str | None]], taxonomy: Taxonomy) -> dict[str, str]:
    """Known-answer checks (text_hash, stored key, added_at) as text_hash -> the label as `taxonomy` means it (given
    under the version in force when the check was added); a check whose label names none of its topics checks nothing
    and is left out."""
    out = {}
    for digest, key, added_at in gold:
        now = meaning(taxonomy, key, version_at(taxonomy, added_at))
        if now is not None:
            out[digest] = now
    return out
