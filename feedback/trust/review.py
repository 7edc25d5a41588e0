"""A maintainer's review at the scale of a crowd: find answers by filter, set many statuses at once, and settle
a text people disagree on with a reviewed label.

Every change reports what it did, id by id, so the page can say exactly what changed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from core.settings.policies import TrustPolicy
from core.taxonomy import Taxonomy
from feedback.database.db import Database, iso_time
from feedback.database.query import count, inserted_id, rows
from feedback.database.tables import answers, pool
from feedback.errors import FeedbackError
from feedback.labelling.answers import LIVE, decoded
from feedback.meaning import answers_as_meant
from feedback.trust.bulk import chosen_ids, outcome_in_words, shown_limit
from feedback.trust.credible import credible
from feedback.trust.rules import MAINTAINER
from feedback.validate import (
    NOT_COUNTED,
    STATUSES,
    WITHDRAWN,
    Status,
    canonical_label,
    check_review_status,
)

log = logging.getLogger(__name__)

_PERCENT = re.compile(r"\d+(?:\.\d+)?%")
HELD = "held"  # a status filter of its own: corrections held out of the queue until a maintainer accepts one


def _held() -> sa.ColumnElement[bool]:
    """The live answer that brought a held pool item in, while no answer on its text is accepted (feedback.labelling.pool)."""
    accepted = answers.alias("v")
    return sa.and_(
        answers.c.status.not_in(NOT_COUNTED),
        sa.exists().where(pool.c.text_hash == answers.c.text_hash, pool.c.held_by == answers.c.annotator),
        ~sa.exists().where(accepted.c.text_hash == answers.c.text_hash, accepted.c.status == Status.ACCEPTED),
    )


def stored_keys(taxonomy: Taxonomy, key: str) -> list[str]:
    """The keys stored answers may carry that mean `key` now: itself, and every topic merged into it (read from the
    last version that had it; a split parent's earlier answers, "parent or child", are found under the parent)."""
    last: dict[str, int] = {t.key: v.version for v in taxonomy.versions for t in v.topics}
    return sorted(k for k, version in last.items() if key in taxonomy.allowed(k, version))


@dataclass(frozen=True)
class ReviewFilter:
    """Which answers to list; every field narrows the list (None or "" means any)."""

    status: str | None = Status.SUSPICIOUS  # one of STATUSES, or HELD
    reason: str | None = None  # a pattern from `reason_choices` (SQL LIKE)
    label: str | None = None  # a topic: answers whose label means it now (a merged topic's old answers too)
    annotator: str | None = None
    text: str = ""  # a case-insensitive substring of the text
    limit: int = 200

    def where(self, taxonomy: Taxonomy) -> list[sa.ColumnElement[bool]]:
        """The conditions on `answers` (all must hold), topics read in `taxonomy`; raises FeedbackError for a bad
        value."""
        clauses: list[sa.ColumnElement[bool]] = []
        if self.status == HELD:
            clauses.append(_held())
        elif self.status:
            if self.status not in STATUSES:
                raise FeedbackError(f"unknown status {self.status!r}; expected one of {', '.join(STATUSES)}, {HELD}")
            clauses.append(answers.c.status == self.status)
        if self.reason:
            clauses.append(answers.c.suspicious_reason.like(self.reason[:200]))
        if self.label:
            clauses.append(answers.c.user_label.in_(stored_keys(taxonomy, canonical_label(self.label, taxonomy))))
        if self.annotator:
            clauses.append(answers.c.annotator == self.annotator[:200])
        if self.text.strip():
            # LOWER() on both sides, because PostgreSQL's LIKE is case-sensitive where SQLite's is not; what the
            # maintainer typed is matched literally (its % and _ escaped).
            needle = self.text.strip()[:200].lower()
            clauses.append(sa.func.lower(answers.c.text).contains(needle, autoescape=True))
        return clauses


@dataclass(frozen=True)
class ReviewReport:
    """What one bulk review did, by answer id."""

    status: str  # the status asked for: "accepted" or "rejected"
    changed: dict[int, str] = field(default_factory=dict)  # id -> the status it had before
    already: tuple[int, ...] = ()  # had that status already: untouched
    withdrawn: tuple[int, ...] = ()  # undone or replaced by their annotator: never reviewed
    missing: tuple[int, ...] = ()  # no such answer


@dataclass(frozen=True)
class Resolution:
    """A disagreement settled: the reviewed label, and which answers that accepted and rejected."""

    text_hash: str
    label: str
    maintainer_answer: int  # the id of the maintainer's own answer carrying the label
    accepted: tuple[int, ...]
    rejected: tuple[int, ...]


class Reviews:
    """The review queries and changes of one feedback database (SQLite or PostgreSQL: the same SQL)."""

    def __init__(self, db: Database, clock: Callable[[], float], taxonomy: Callable[[], Taxonomy]) -> None:
        self._db = db
        self._clock = clock
        self._taxonomy = taxonomy

    def find(self, where: ReviewFilter, trust: TrustPolicy | None = None) -> tuple[list[dict[str, Any]], int]:
        """Answers matching `where` (at most `where.limit`, capped at MAX_SHOWN), and how many match: those of
        signed-in or checked people first (`feedback.trust.credible`, with `trust`'s check rule), newest first within."""
        taxonomy = self._taxonomy()
        conditions = where.where(taxonomy)
        limit = shown_limit(where.limit)
        first = sa.case((credible(trust or TrustPolicy()), 0), else_=1)
        query = sa.select(answers).where(*conditions).order_by(first, answers.c.id.desc()).limit(limit)
        with self._db.read() as conn:
            total = count(conn, sa.select(sa.func.count()).select_from(answers).where(*conditions))
            found = [decoded(row) for row in rows(conn, query)]
        return answers_as_meant(found, taxonomy), total


    def reason_choices(self) -> list[tuple[str, str]]:
        """The kinds of suspicion recorded, as (words, LIKE pattern): "model was …% sure of World"."""
        query = (sa.select(answers.c.suspicious_reason).distinct()
                 .where(answers.c.suspicious_reason.is_not(None)).limit(2000))
        with self._db.read() as conn:
            reasons = list(conn.execute(query).scalars())
        patterns = sorted({_PERCENT.sub("%", reason) for reason in reasons if reason})
        return [(pattern.replace("%", "…%") if "%" in pattern else pattern, pattern) for pattern in patterns]


    def annotator_ids(self, limit: int = 500) -> list[str]:
        """Annotators with live answers, most answers first (at most `limit`)."""
        query = (sa.select(answers.c.annotator).where(LIVE).group_by(answers.c.annotator)
                 .order_by(sa.func.count().desc(), answers.c.annotator).limit(int(limit)))
        with self._db.read() as conn:
            return list(conn.execute(query).scalars())


    def set_statuses(self, ids: Iterable[object], status: str) -> ReviewReport:
        """Give every named answer the review `status` ('accepted': may train; 'rejected': never will), at once.

        One transaction: either every change is made or none. Answers that already have the status, were
        were taken back by their annotator, or do not exist are left alone and reported as such.
        """
        status = check_review_status(status)
        wanted = chosen_ids(ids, "answer id")
        with self._db.write() as conn:
            before = {int(i): s for i, s in conn.execute(
                sa.select(answers.c.id, answers.c.status).where(answers.c.id.in_(wanted)))}
            changed = {i: s for i, s in before.items() if s != status and s not in WITHDRAWN}
            if changed:
                conn.execute(sa.update(answers).where(answers.c.id.in_(sorted(changed))).values(status=status))
        report = ReviewReport(
            status=status,
            changed=dict(sorted(changed.items())),
            already=tuple(i for i in wanted if before.get(i) == status),
            withdrawn=tuple(i for i in wanted if before.get(i) in WITHDRAWN),
            missing=tuple(i for i in wanted if i not in before),
        )
        if changed:
            log.info("%d answer(s) %s: %s", len(changed), status, ", ".join(map(str, changed)))
        return report


    def resolve(self, text_hash: str, label: str) -> Resolution:
        """Settle a text people disagree on with a reviewed label.

        In one transaction: the live answers giving `label` are accepted, those giving another label rejected,
        and the maintainer's own answer (annotator `MAINTAINER`, accepted) records the label, so the text trains
        with it even when nobody gave it (see `feedback.trust.rules.select_trusted`).
        """
        taxonomy = self._taxonomy()
        label = canonical_label(label, taxonomy)
        if not isinstance(text_hash, str) or not re.fullmatch(r"[0-9a-f]{64}", text_hash):
            raise FeedbackError("name the text by its 64-character text hash")
        with self._db.write() as conn:
            # Compared by what each answer means now: an old answer of a topic merged into `label` gave `label`.
            on_text = (sa.select(answers.c.id, answers.c.text, answers.c.user_label, answers.c.status,
                                 answers.c.annotator, answers.c.taxonomy_version)
                       .where(answers.c.text_hash == text_hash, LIVE).order_by(answers.c.id))
            live = answers_as_meant(rows(conn, on_text), taxonomy)
            if not live:
                raise FeedbackError("no live answers on that text")
            people = [row for row in live if row["annotator"] != MAINTAINER]
            accept = [row["id"] for row in people if row["user_label"] == label and row["status"] != Status.ACCEPTED]
            reject = [row["id"] for row in live if row["user_label"] != label and row["status"] != Status.REJECTED]
            for status, ids in ((Status.ACCEPTED, accept), (Status.REJECTED, reject)):
                if ids:
                    conn.execute(sa.update(answers).where(answers.c.id.in_(ids)).values(status=status))
            mine = next((row for row in live if row["annotator"] == MAINTAINER and row["user_label"] == label), None)
            if mine is None:
                mine_id = inserted_id(conn, sa.insert(answers).values(
                    text=live[0]["text"], text_hash=text_hash, user_label=label, kind="correct", annotator=MAINTAINER,
                    created_at=iso_time(self._clock()), status=Status.ACCEPTED, verified=1,
                    taxonomy_version=taxonomy.version,
                ))
            else:
                mine_id = int(mine["id"])
                if mine["status"] != Status.ACCEPTED:
                    conn.execute(sa.update(answers).where(answers.c.id == mine_id).values(status=Status.ACCEPTED))
        log.info("text %s resolved as %s: %d accepted, %d rejected", text_hash[:12], label, len(accept), len(reject))
        return Resolution(text_hash, label, mine_id, tuple(accept), tuple(reject))


def review_message(report: ReviewReport) -> str:
    """What a bulk review did, in words that name every id (the page shows this)."""
    verb = report.status
    return outcome_in_words([
        (f"{verb.capitalize()} {len(report.changed)} answer(s)", report.changed),
        (f"{len(report.already)} already {verb}, left as they were", report.already),
        (f"{len(report.withdrawn)} taken back by their annotator, not reviewed", report.withdrawn),
        (f"{len(report.missing)} not found", report.missing),
    ])

