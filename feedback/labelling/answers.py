"""Users' answers: record (dedupe, rate limit, suspicion), undo, review, read, stats and export."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa

from core.serving.limits import RateLimiter
from core.settings.policies import StoreLimits
from core.taxonomy import Taxonomy
from core.text import text_hash
from feedback.database.db import Database, iso_time, parse_iso_time
from feedback.database.query import count, first, inserted_id, rows
from feedback.database.tables import answers, pool, unlisted
from feedback.errors import FeedbackError, RateLimited
from feedback.labelling.pool import check_item
from feedback.meaning import answers_as_meant
from feedback.validate import (
    KINDS,
    NOT_COUNTED,
    STATUSES,
    WITHDRAWN,
    Status,
    canonical_label,
    check_address,
    check_annotator,
    check_answer_text,
    check_kind,
    check_model_text,
    check_review_status,
    check_row_id,
    check_status,
    model_label,
    normalise_probabilities,
)

log = logging.getLogger(__name__)

RATE_WINDOW_S = 60.0
# The two channels an answer comes by: one click on a prediction (Classify), or the labelling queue. A person
# has at most one live answer per text on each channel: a change of mind replaces the earlier one.
CHANNELS = (("confirm", "correct"), ("queue",))
LIVE = answers.c.status.not_in(WITHDRAWN)  # not taken back by their annotator
COUNTED = answers.c.status.not_in(NOT_COUNTED)  # live and not rejected


class _AnswerWindow:
    """A rate limiter's window over the answer tables themselves: a key's answers are its events. Both an answer
    with a topic (`answers`) and a "None of these" (`unlisted`) count, so the two share one budget.

    Read inside the record's write transaction, so the check and the insert commit together; recording is the
    answer's own insert, and nothing is forgotten (answers stay for audit).
    """

    def __init__(self, conn: sa.Connection, column: str, key: str, *, unverified_only: bool) -> None:
        self._conn, self._column, self._key, self._unverified_only = conn, column, key, unverified_only

    def times(self, since: float) -> Sequence[float]:
        found: list[float] = []
        for table in (answers, unlisted):
            query = sa.select(table.c.created_at).where(table.c[self._column] == self._key,
                                                        table.c.created_at > iso_time(since))
            if self._unverified_only:
                query = query.where(table.c.verified == 0)
            found += [parse_iso_time(at) for at in self._conn.execute(query).scalars()]
        return sorted(found)

    def record(self, at: float, cost: int) -> None:
        pass  # the answer row the caller inserts next is the event

    def forget(self, before: float) -> None:
        pass


def check_rate(db: sa.Connection, limits: StoreLimits, annotator: str, address: str | None, verified: bool,
               now: float) -> None:
    """Refuse a write (RateLimited) when the annotator, or an unverified client address, wrote its limit of
    answers of either table in the last RATE_WINDOW_S seconds."""
    per_annotator = limits.verified_writes_per_minute if verified else limits.writes_per_minute
    _check_window(db, "annotator", annotator, per_annotator, now, unverified_only=False)
    if address is not None and not verified:  # an account is bounded by its own limit above
        _check_window(db, "address", address, limits.address_writes_per_minute, now, unverified_only=True)


def _check_window(db: sa.Connection, column: str, key: str, limit: int, now: float, *, unverified_only: bool) -> None:
    wait = RateLimiter(limit, RATE_WINDOW_S).admit(_AnswerWindow(db, column, key, unverified_only=unverified_only), now)
    if wait:
        wait_s = max(1, math.ceil(wait))
        who = " from this address" if column == "address" else ""
        raise RateLimited(f"too many answers{who}: at most {limit} a minute; try again in {wait_s} s", wait_s)


def contradiction_reason(
    predicted: str | None, probabilities: Mapping[str, float] | None, user_label: str, threshold: float
) -> str | None:
    """Why an answer looks suspicious (the model was very sure of another label), or None. An answer naming a topic
    the model does not predict (added, or split off, since it was trained) contradicts nothing it said: its
    certainty among its own topics is no evidence against one it lacks, and those answers are what teach it."""
    if predicted is None or not probabilities or user_label == predicted or user_label not in probabilities:
        return None
    confidence = probabilities.get(predicted, 0.0)
    if confidence < threshold:
        return None
    return f"model was {confidence:.0%} sure of {predicted}"


def channel_of(kind: str) -> tuple[str, ...]:
    """The kinds of answer that share `kind`'s channel (see CHANNELS)."""
    return next(kinds for kinds in CHANNELS if kind in kinds)


@dataclass(frozen=True)
class AnswerInput:
    """One answer with a topic, as the page, the API or a caller gives it, before any check (`Answers.record` checks
    every field): the text and the topic given (`user_label`); who gave it (`verified`: the host signed them in;
    `address`: a keyed hash of their client address, which the page supplies) and how (`kind`: 'confirm' or 'correct'
    on Classify, or 'queue' with the queue `item_id`); and what the model said (`predicted_label`; `probabilities`,
    keyed by its labels or in the taxonomy's order; `model_version`)."""

    text: str
    user_label: str
    annotator: str
    kind: str
    predicted_label: str | None = None
    probabilities: Mapping[str, float] | Sequence[float] | np.ndarray | None = None
    model_version: str | None = None
    item_id: int | None = None
    verified: bool = False
    address: str | None = None


@dataclass(frozen=True)
class RecordResult:
    """Outcome of `Answers.record`: the answer's id, whether it was already stored, its status, and the
    ids of the annotator's earlier answers on this text and channel that it replaced."""

    id: int
    duplicate: bool
    status: str
    replaced: tuple[int, ...] = ()


def decoded(row: dict[str, Any]) -> dict[str, Any]:
    if row.get("probabilities"):
        row["probabilities"] = json.loads(row["probabilities"])
    return row


def answers_on_checks(db: sa.Connection, *where: sa.ColumnElement[bool]) -> list[dict[str, Any]]:
    """Every answer (any status) on the text of a known-answer check, with `where` too: a few per person, what
    `feedback.trust.rules.check_scores` scores."""
    on_checks = answers.join(pool, pool.c.text_hash == answers.c.text_hash)
    return rows(db, sa.select(answers).select_from(on_checks).where(pool.c.gold_label.is_not(None), *where))


def answer_counts(db: sa.Connection, taxonomy: Taxonomy) -> dict[str, Any]:
    """The answers counted for a dashboard, on this connection: every answer, and by status; the live ones by label
    (what they mean under `taxonomy`: old ones of a merged topic count as its target), by kind, and their
    annotators."""

    def grouped(column: sa.ColumnElement[str], *where: sa.ColumnElement[bool]) -> dict[str, int]:
        query = sa.select(column, sa.func.count()).where(*where).group_by(column)
        return {key: int(n) for key, n in db.execute(query)}

    by_status = grouped(answers.c.status)
    by_given = db.execute(sa.select(answers.c.user_label, answers.c.taxonomy_version, sa.func.count())
                          .where(LIVE).group_by(answers.c.user_label, answers.c.taxonomy_version)).all()
    by_kind = grouped(answers.c.kind, LIVE)
    annotators = count(db, sa.select(sa.func.count(sa.distinct(answers.c.annotator))).where(LIVE))
    by_label = dict.fromkeys(taxonomy.keys, 0)
    for key, version, n in by_given:
        now = taxonomy.exact(key, version)
        if now is not None:
            by_label[now] += int(n)
    return {
        "answers": sum(by_status.values()),
        "by_status": {str(status): by_status.get(status, 0) for status in STATUSES},
        "by_label": by_label,
        "by_kind": {kind: by_kind.get(kind, 0) for kind in KINDS},
        "annotators": annotators,
    }


class Answers:
    """Confirmations, corrections and queue labels, each kept for audit even when undone, replaced or rejected."""

    def __init__(self, db: Database, limits: StoreLimits, clock: Callable[[], float],
                 taxonomy: Callable[[], Taxonomy]) -> None:
        self._db = db
        self._limits = limits
        self._clock = clock
        self._taxonomy = taxonomy  # the store's current topics: what an answer may name

    def record(self, answer: AnswerInput) -> RecordResult:
        """Store one answer; an identical live answer from the same annotator on the same channel is returned, not
        repeated. A person has one live answer per text and channel (a one-click answer on Classify, kinds
        'confirm'/'correct', or a 'queue' answer): a different label replaces their earlier answer, which is
        kept with status 'replaced' and counted nowhere (`RecordResult.replaced` names it).

        `answer.user_label` names a topic of the current taxonomy (a name, key, former name or 0-based position); its key
        is stored, with the taxonomy's version. `probabilities` is {label: p} keyed by the model's own labels, or
        one number per topic in the taxonomy's order; when `predicted_label` is omitted it is their argmax. The
        answer is 'suspicious' when the model was at least `limits.suspicious_confidence` sure of another label.
        Raises FeedbackError for bad input and RateLimited when the annotator has written
        `limits.writes_per_minute` answers in the last 60 s (`limits.verified_writes_per_minute` when `verified`),
        or the client `address` (a keyed hash the page supplies) `limits.address_writes_per_minute`.
        `verified` says the host signed the annotator in (the trust rules weigh such answers, see
        `feedback.trust.rules`).
        """
        row = self._checked(answer)
        now = self._clock()
        same_channel = (answers.c.annotator == row["annotator"], answers.c.text_hash == row["text_hash"],
                        answers.c.kind.in_(channel_of(row["kind"])), LIVE)
        with self._db.write() as db:
            earlier = rows(db, sa.select(answers.c.id, answers.c.status, answers.c.user_label)
                           .where(*same_channel).order_by(answers.c.id))
            # A rejected answer stays the maintainer's verdict: repeating it is a duplicate, not a new answer.
            existing = next((r for r in earlier if r["user_label"] == row["user_label"]), None)
            if existing:
                return RecordResult(id=existing["id"], duplicate=True, status=existing["status"])
            if row["item_id"] is not None:
                check_item(db, row["item_id"], row["text_hash"])
            check_rate(db, self._limits, row["annotator"], row["address"], answer.verified, now)
            replaced = tuple(int(r["id"]) for r in earlier if r["status"] != Status.REJECTED)
            if replaced:  # a change of mind: the earlier answers stay for audit, and nothing counts them
                db.execute(sa.update(answers).where(*same_channel, answers.c.status != Status.REJECTED)
                           .values(status=str(Status.REPLACED)))
            answer_id = inserted_id(db, sa.insert(answers).values({**row, "created_at": iso_time(now)}))
        if row["suspicious_reason"]:
            log.warning("answer %s from %s marked suspicious: %s", answer_id, row["annotator"], row["suspicious_reason"])
        return RecordResult(id=answer_id, duplicate=False, status=Status(row["status"]), replaced=replaced)

    def _checked(self, answer: AnswerInput) -> dict[str, Any]:
        """The row to store for `answer` (but its time): every field checked, in order (FeedbackError says what is
        wrong with the first bad one), the labels read in the current taxonomy, and its status: 'suspicious' when the
        model was sure of another label."""
        text = check_answer_text(answer.text, self._limits.max_text_chars)
        taxonomy = self._taxonomy()
        label = canonical_label(answer.user_label, taxonomy, "label")
        annotator = check_annotator(answer.annotator)
        address = check_address(answer.address)
        kind = check_kind(answer.kind)
        item_id = check_row_id(answer.item_id, "queue item") if answer.item_id is not None else None
        model_version = check_model_text(answer.model_version, "model_version")
        # The model's labels may differ from the taxonomy's (a topic it does not predict yet, one merged away).
        probs = normalise_probabilities(answer.probabilities, taxonomy) if answer.probabilities is not None else None
        if answer.predicted_label is not None:
            predicted: str | None = model_label(answer.predicted_label, taxonomy, tuple(probs or ()))
        else:
            predicted = max(probs, key=probs.__getitem__) if probs else None
        if kind == "confirm" and predicted != label:
            raise FeedbackError("a 'confirm' answer must repeat the model's predicted label")
        if kind == "queue" and item_id is None:
            raise FeedbackError("a 'queue' answer needs the item_id of the queue item it answers")
        reason = contradiction_reason(predicted, probs, label, self._limits.suspicious_confidence)
        return {
            "text": text, "text_hash": text_hash(text), "predicted_label": predicted,
            "probabilities": json.dumps(probs) if probs else None, "model_version": model_version,
            "user_label": label, "kind": kind, "annotator": annotator, "item_id": item_id,
            "status": str(Status.SUSPICIOUS if reason else Status.OK), "suspicious_reason": reason,
            "verified": int(bool(answer.verified)), "address": address, "taxonomy_version": taxonomy.version,
        }

    def undo_last(self, annotator: str, kinds: Sequence[str] = KINDS) -> dict[str, Any] | None:
        """Mark the annotator's most recent live answer of one of `kinds` 'undone' (kept for audit); return it.

        Answers it replaced stay replaced: an undo withdraws a change of mind, it never revives the old answer.
        A "None of these" is undone by `FeedbackStore.undo_last`, which looks at both kinds of answer."""
        annotator = check_annotator(annotator)
        kinds = [check_kind(kind) for kind in kinds]
        with self._db.write() as db:
            row = first(db, sa.select(answers).where(answers.c.annotator == annotator, LIVE, answers.c.kind.in_(kinds))
                        .order_by(answers.c.id.desc()).limit(1))
            if row is None:
                return None
            db.execute(sa.update(answers).where(answers.c.id == row["id"]).values(status=str(Status.UNDONE)))
        row["status"] = Status.UNDONE
        return decoded(row)

    def set_status(self, answer_id: int, status: str) -> dict[str, Any]:
        """Record a maintainer's review of an answer: 'accepted' (counts for training) or 'rejected'."""
        review = check_review_status(status)
        answer_id = check_row_id(answer_id, "answer id")
        with self._db.write() as db:
            row = first(db, sa.select(answers).where(answers.c.id == answer_id))
            if row is None:
                raise FeedbackError(f"no answer with id {answer_id}")
            if row["status"] in WITHDRAWN:
                how = "undone" if row["status"] == Status.UNDONE else "replaced by a later answer"
                raise FeedbackError(f"answer {answer_id} was {how} by its annotator and cannot be reviewed")
            db.execute(sa.update(answers).where(answers.c.id == answer_id).values(status=str(review)))
        log.info("answer %s %s (was %s)", answer_id, review, row["status"])
        row["status"] = review
        return decoded(row)

    def get(self, answer_id: int) -> dict[str, Any] | None:
        """One answer by id, or None."""
        answer_id = check_row_id(answer_id, "answer id")
        with self._db.read() as db:
            row = first(db, sa.select(answers).where(answers.c.id == answer_id))
        return decoded(row) if row else None

    def rows(self, status: str | None = None, limit: int | None = None,
             taxonomy: Taxonomy | None = None) -> list[dict[str, Any]]:
        """Answers newest first, optionally only those with `status`; probabilities decoded to a dict. Each
        `user_label` is read as it means under `taxonomy` (default: the current one): a merged topic's answers as
        its target, a split topic's earlier answers as the set "parent or child" (`feedback.meaning`)."""
        query = sa.select(answers).order_by(answers.c.id.desc())
        if status is not None:
            query = query.where(answers.c.status == str(check_status(status)))
        if limit is not None:
            query = query.limit(int(limit))
        with self._db.read() as db:
            found = [decoded(row) for row in rows(db, query)]
        return answers_as_meant(found, taxonomy or self._taxonomy())

    def count(self, status: str | None = None) -> int:
        """Number of answers, all or with one status."""
        query = sa.select(sa.func.count()).select_from(answers)
        if status is not None:
            query = query.where(answers.c.status == str(check_status(status)))
        with self._db.read() as db:
            return count(db, query)

    def count_since(self, answer_id: int) -> int:
        """Live, unrejected answers with an id above `answer_id` (e.g. the last one a retrain used)."""
        with self._db.read() as db:
            return count(db, sa.select(sa.func.count()).where(answers.c.id > answer_id, COUNTED))

    def per_day(self, days: int = 30) -> dict[str, int]:
        """Live answers (undone and replaced ones not counted) per UTC day (YYYY-MM-DD), for the newest `days` days
        that have any: counted by the database, whatever the number of answers."""
        day = sa.func.substr(answers.c.created_at, 1, 10)  # ISO times: the date is their first 10 characters
        query = sa.select(day, sa.func.count()).where(LIVE).group_by(day).order_by(day.desc()).limit(days)
        with self._db.read() as db:
            return {str(d): int(n) for d, n in db.execute(query)}
