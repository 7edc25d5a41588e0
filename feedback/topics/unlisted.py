"""Answers that no topic fits ("None of these"): recorded apart from `answers` so "no topic" never trains as a topic,
grouped for the maintainer (`feedback.topics.unlisted_groups`), and placed in a topic (a new one, or an existing one of
that name) once a maintainer confirms them: then, and only then, they become answers with that topic.

What waits is bounded: per person (`StoreLimits.unlisted_per_person`) and from everyone (`unlisted_waiting`), and the
maintainer's listing groups a sample of at most SAMPLE of them, a fair share of each person's, so neither the store nor
the admin panel grows with what one stranger sends."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from core.settings.policies import StoreLimits
from core.taxonomy import MAX_NAME_CHARS, Taxonomy
from core.text import text_hash
from feedback.database.db import Database, iso_time
from feedback.database.query import first, inserted_id, rows
from feedback.database.tables import answers, unlisted
from feedback.errors import FeedbackError
from feedback.labelling.answers import LIVE, channel_of, check_rate
from feedback.labelling.pool import check_item
from feedback.topics.store import TopicBook
from feedback.topics.unlisted_groups import Group, group_unlisted
from feedback.validate import (
    KINDS,
    Status,
    check_address,
    check_annotator,
    check_answer_text,
    check_model_text,
    check_row_id,
)

OK, UNDONE, PLACED, DISMISSED = "ok", "undone", "placed", "dismissed"
UNLISTED_KINDS = ("correct", "queue")  # from Classify's button, or the queue's key 0
# Answers a listing groups at most (bench/attacks.py: 1,000 group in about 0.3 s on 2 cores; 12,000 took 7 s).
SAMPLE = 1_000


def missing_name(value: object) -> str | None:
    """The topic a labeller says is missing: printable, whitespace collapsed, at most MAX_NAME_CHARS characters;
    None when they named none."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise FeedbackError("the missing topic's name must be text")
    name = " ".join(value.split())
    if not name:
        return None
    if len(name) > MAX_NAME_CHARS:
        raise FeedbackError(f"the missing topic's name has at most {MAX_NAME_CHARS} characters; it has {len(name)}")
    if not name.isprintable():
        raise FeedbackError("the missing topic's name must be printable characters only")
    return name


@dataclass(frozen=True)
class UnlistedInput:
    """One "None of these", as the page, the API or a caller gives it, before any check (`UnlistedAnswers.record`
    checks every field): the text; the topic the labeller thinks is missing (`name`), if they typed one; who said so
    (`verified`, `address` as for `feedback.labelling.answers.AnswerInput`) and how (`kind`: 'correct' on Classify,
    or 'queue' with the queue `item_id`); and what the model said (`predicted_label`, `model_version`)."""

    text: str
    annotator: str
    kind: str
    item_id: int | None = None
    name: object = None
    predicted_label: str | None = None
    model_version: str | None = None
    verified: bool = False
    address: str | None = None


@dataclass(frozen=True)
class UnlistedResult:
    """Outcome of recording a "None of these": the row's id, whether this person had already said so for this text
    (then only the name they gave may have changed), and the name kept."""

    id: int
    duplicate: bool
    name: str | None


@dataclass(frozen=True)
class Listing:
    """What waits for a maintainer: `groups` of the sampled `rows` (id -> row), and how many wait in all."""

    groups: list[Group]
    rows: dict[int, dict[str, Any]]
    waiting: int

    @property
    def sampled(self) -> bool:
        """Whether only some of what waits is grouped (the rest comes once these are decided)."""
        return len(self.rows) < self.waiting


@dataclass(frozen=True)
class Placement:
    """What placing answers in a topic did: the topic (key, name), whether it was created now or already existed,
    the answers it became (ids in `answers`), and the unlisted ids left alone (not 'ok' any more, or unknown)."""

    topic_key: str
    topic_name: str
    created: bool
    answer_ids: tuple[int, ...]
    skipped: tuple[int, ...]

    def words(self) -> str:
        made = "created topic" if self.created else "topic already existed:"
        left = f"; {len(self.skipped)} skipped (already decided or unknown)" if self.skipped else ""
        return f"{made} {self.topic_name!r}, with {len(self.answer_ids)} label(s) from these answers{left}"


class UnlistedAnswers:
    """The `unlisted` table of one feedback database."""

    def __init__(self, db: Database, limits: StoreLimits, clock: Callable[[], float],
                 taxonomy: Callable[[], Taxonomy], topics: TopicBook) -> None:
        self._db, self._limits, self._clock, self._taxonomy, self._topics = db, limits, clock, taxonomy, topics

    def record(self, answer: UnlistedInput) -> UnlistedResult:
        """Store that no topic of the current taxonomy fits `answer.text` ("None of these"), with `answer.name`, the
        topic the labeller thinks is missing, if they gave one (printable, at most 40 characters). `kind` is 'correct'
        (Classify) or 'queue' (with `item_id`: the item then leaves their queue). Kept apart from the answers, so it
        never trains as a topic. One per person and text: a repeat is a duplicate that may change the name. It counts
        against the same rate limits as `Answers.record` (RateLimited). Raises FeedbackError for bad input."""
        row = self._checked(answer)
        now = self._clock()
        with self._db.write() as db:
            mine = first(db, sa.select(unlisted).where(unlisted.c.annotator == row["annotator"],
                                                       unlisted.c.text_hash == row["text_hash"],
                                                       unlisted.c.status != UNDONE).order_by(unlisted.c.id.desc()))
            if mine is not None:  # one live "None of these" per person and text: a repeat may only change the name
                if row["name"] is not None and row["name"] != mine["name"] and mine["status"] == OK:
                    db.execute(sa.update(unlisted).where(unlisted.c.id == mine["id"]).values(name=row["name"]))
                    mine["name"] = row["name"]
                return UnlistedResult(id=int(mine["id"]), duplicate=True, name=mine["name"])
            if row["item_id"] is not None:
                check_item(db, row["item_id"], row["text_hash"])
            check_rate(db, self._limits, row["annotator"], row["address"], answer.verified, now)
            self._check_room(db, row["annotator"], row["address"], answer.verified)
            row_id = inserted_id(db, sa.insert(unlisted).values({**row, "created_at": iso_time(now), "status": OK}))
        return UnlistedResult(id=row_id, duplicate=False, name=row["name"])

    def _checked(self, answer: UnlistedInput) -> dict[str, Any]:
        """The row to store for `answer` (but its time and status): every field checked, in order (FeedbackError says
        what is wrong with the first bad one)."""
        text = check_answer_text(answer.text, self._limits.max_text_chars)
        annotator = check_annotator(answer.annotator)
        address = check_address(answer.address)
        name = missing_name(answer.name)
        kind, item_id = answer.kind, answer.item_id
        if kind not in UNLISTED_KINDS:
            raise FeedbackError(f"kind must be one of {', '.join(UNLISTED_KINDS)}, got {str(kind)[:40]!r}")
        if kind == "queue":
            if item_id is None:
                raise FeedbackError("a 'queue' answer needs the item_id of the queue item it answers")
            item_id = check_row_id(item_id, "queue item")
        model_version = check_model_text(answer.model_version, "model_version")
        predicted_label = check_model_text(answer.predicted_label, "predicted_label")
        return {
            "text": text, "text_hash": text_hash(text), "annotator": annotator, "address": address,
            "verified": int(bool(answer.verified)), "kind": kind, "item_id": item_id, "name": name,
            "predicted_label": predicted_label, "model_version": model_version,
            "taxonomy_version": self._taxonomy().version,
        }

    def undo_if_newest(self, annotator: str, kinds: Sequence[str]) -> dict[str, Any] | None:
        """Mark the annotator's newest 'ok' row of `kinds` 'undone' and return it (with `unlisted` True and no
        `user_label`), if it is newer than their newest live answer of those kinds in `answers`; else None, and
        the caller undoes that answer. One transaction, so the two tables are compared as they are."""
        annotator = check_annotator(annotator)
        kinds = [k for k in kinds if k in KINDS]
        with self._db.write() as db:
            mine = first(db, sa.select(unlisted).where(unlisted.c.annotator == annotator, unlisted.c.status == OK,
                                                       unlisted.c.kind.in_(kinds))
                         .order_by(unlisted.c.created_at.desc(), unlisted.c.id.desc()).limit(1))
            if mine is None:
                return None
            answer_at = db.execute(sa.select(sa.func.max(answers.c.created_at))
                                   .where(answers.c.annotator == annotator, LIVE, answers.c.kind.in_(kinds))).scalar()
            if answer_at is not None and answer_at > mine["created_at"]:
                return None
            db.execute(sa.update(unlisted).where(unlisted.c.id == mine["id"]).values(status=UNDONE))
        return {**mine, "status": UNDONE, "unlisted": True, "user_label": None}

    def rows(self, status: str | None = OK, ids: Sequence[int] | None = None) -> list[dict[str, Any]]:
        """Rows oldest first: those with `status` (None: all), only `ids` when given."""
        query = sa.select(unlisted).order_by(unlisted.c.id)
        if status is not None:
            query = query.where(unlisted.c.status == status)
        if ids is not None:
            query = query.where(unlisted.c.id.in_([check_row_id(i, "answer id") for i in ids]))
        with self._db.read() as db:
            return rows(db, query)

    def _check_room(self, db: sa.Connection, annotator: str, address: str | None, verified: bool) -> None:
        """Refuse one more waiting answer beyond the person's share or everyone's (FeedbackError, in words)."""
        mine = (unlisted.c.address == address) if address is not None and not verified else (
            unlisted.c.annotator == annotator)
        waiting = sa.select(sa.func.count()).select_from(unlisted).where(unlisted.c.status == OK)
        limit = self._limits.unlisted_per_person
        if int(db.execute(waiting.where(mine)).scalar() or 0) >= limit:
            who = "from this address" if address is not None and not verified else "of yours"
            raise FeedbackError(f"{limit} \"None of these\" answers {who} are waiting for a maintainer already; "
                                "more are taken once those are decided")
        if int(db.execute(waiting).scalar() or 0) >= self._limits.unlisted_waiting:
            raise FeedbackError(f"{self._limits.unlisted_waiting:,} \"None of these\" answers are waiting for a "
                                "maintainer already; more are taken once some are decided")

    def listing(self, sample: int = SAMPLE) -> Listing:
        """The 'ok' rows grouped into candidate topics (`feedback.topics.unlisted_groups.group_unlisted`): at most
        `sample` of them, taken in turn from each person (oldest first), so one person's many answers cannot crowd
        out the others' and the work is bounded whatever waits."""
        person = sa.case((sa.and_(unlisted.c.verified == 0, unlisted.c.address.is_not(None)),
                          sa.literal("address:") + unlisted.c.address), else_=unlisted.c.annotator)
        with self._db.read() as db:
            waiting = [(int(i), str(p)) for i, p in db.execute(
                sa.select(unlisted.c.id, person).where(unlisted.c.status == OK).order_by(unlisted.c.id))]
        chosen = fair_sample(waiting, sample)
        found: dict[int, dict[str, Any]] = {}
        for start in range(0, len(chosen), 500):  # bounded IN lists
            found.update((int(r["id"]), r) for r in self.rows(OK, chosen[start:start + 500]))
        return Listing(group_unlisted(list(found.values())), found, len(waiting))

    def place(self, ids: Sequence[int], name: object, *, by: str, description: object = "",
              taxonomy: Taxonomy | None = None) -> Placement:
        """Place the 'ok' rows `ids` (those a maintainer confirmed) in the topic `name`: added to the taxonomy through
        the TopicBook's compare-and-set unless a current topic has that name, then one 'accepted' answer per row
        under its key and the taxonomy's version (the labeller's own answer, confirmed: no rate limit). The rows
        become 'placed'; others are left as they are. Raises FeedbackError when no row can be placed, and the
        taxonomy's own errors (TaxonomyError, TaxonomyConflict) for a refused name or a concurrent change. `taxonomy`:
        the topics the change is planned on (default: the store's current ones)."""
        wanted = sorted({check_row_id(i, "answer id") for i in ids})
        by = check_annotator(by)
        if not wanted:
            raise FeedbackError("tick at least one answer to place in the topic")
        if not [r for r in self.rows(OK, wanted)]:
            raise FeedbackError("none of these answers is waiting any more (placed, dismissed or undone)")
        before = taxonomy or self._taxonomy()
        existing = _current_topic(before, name)
        if existing is None:
            after = self._topics.commit(before.add(name, description, by=by,
                                                   why=f"missing, said {len(wanted)} 'None of these' answer(s)"),
                                        before.version)
            key, created = after.topics[-1].key, True
        else:
            after, key, created = before, existing, False
        now = iso_time(self._clock())
        made: list[int] = []
        with self._db.write() as db:
            found = rows(db, sa.select(unlisted).where(unlisted.c.id.in_(wanted), unlisted.c.status == OK)
                         .order_by(unlisted.c.id))
            for row in found:
                made.append(_insert_answer(db, row, key, after.version, now))
            db.execute(sa.update(unlisted).where(unlisted.c.id.in_([r["id"] for r in found]))
                       .values(status=PLACED, topic_key=key, decided_by=by, decided_at=now))
        placed = {int(r["id"]) for r in found}
        return Placement(topic_key=key, topic_name=after.name_of(key), created=created, answer_ids=tuple(made),
                         skipped=tuple(i for i in wanted if i not in placed))

    def dismiss(self, ids: Sequence[int], *, by: str) -> int:
        """Mark the 'ok' rows `ids` 'dismissed' (no topic is missing for them); returns how many changed."""
        wanted = sorted({check_row_id(i, "answer id") for i in ids})
        by = check_annotator(by)
        with self._db.write() as db:
            done = db.execute(sa.update(unlisted).where(unlisted.c.id.in_(wanted), unlisted.c.status == OK)
                              .values(status=DISMISSED, decided_by=by, decided_at=iso_time(self._clock())))
        return int(done.rowcount or 0)


def fair_sample(rows: Sequence[tuple[int, str]], limit: int) -> list[int]:
    """At most `limit` ids of (id, person) rows, oldest first: each person's oldest, then each one's second, ...
    (people in the order of their first row), so each person gets an equal share of the sample."""
    by_person: dict[str, list[int]] = {}
    for row_id, person in rows:
        by_person.setdefault(person, []).append(row_id)
    chosen: list[int] = []
    turn = 0
    while len(chosen) < limit and by_person:
        for person in [p for p, ids in by_person.items() if len(ids) <= turn]:
            del by_person[person]
        chosen.extend(ids[turn] for ids in by_person.values())
        turn += 1
    return sorted(chosen[:limit])


def _current_topic(taxonomy: Taxonomy, name: object) -> str | None:
    """The key of the current topic named `name` (case and spacing aside), or None."""
    folded = " ".join(str(name).split()).casefold() if isinstance(name, str) else ""
    return next((t.key for t in taxonomy.topics if folded in (t.name.casefold(), t.key.casefold())), None)


def _insert_answer(db: sa.Connection, row: dict[str, Any], key: str, version: int, now: str) -> int:
    """The labeller's answer, confirmed by a maintainer: 'accepted' under `key`. Their earlier live answer on the same
    text and channel (a topic they chose before) is replaced, as a change of mind would."""
    same_channel = (answers.c.annotator == row["annotator"], answers.c.text_hash == row["text_hash"],
                 answers.c.kind.in_(channel_of(row["kind"])), LIVE, answers.c.status != Status.REJECTED)
    db.execute(sa.update(answers).where(*same_channel).values(status=str(Status.REPLACED)))
    return inserted_id(db, sa.insert(answers).values(
        text=row["text"], text_hash=row["text_hash"], predicted_label=row["predicted_label"], probabilities=None,
        model_version=row["model_version"], user_label=key, kind=row["kind"], annotator=row["annotator"],
        item_id=row["item_id"], created_at=now, status=str(Status.ACCEPTED), suspicious_reason=None,
        verified=row["verified"], address=row["address"], taxonomy_version=version,
    ))
