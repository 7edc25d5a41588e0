"""What the database counts about the people who answer, for the admin view's people panel.

Per-person numbers are GROUP BY queries, whatever the number of answers; the only answers read are those on
texts two or more people answered, which agreement and disagreements need one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from core.taxonomy import Taxonomy
from feedback.database.db import Database
from feedback.database.query import rows
from feedback.database.tables import answers
from feedback.labelling.answers import COUNTED, LIVE, answers_on_checks
from feedback.labelling.pool import read_gold
from feedback.meaning import answers_as_meant
from feedback.trust.checks import CheckScore
from feedback.trust.rules import MAINTAINER, check_scores

# What agreement, trust and disagreements read of an answer (its probabilities, the bulk of a row, are not).
SHARED_COLUMNS = (answers.c.id, answers.c.text, answers.c.text_hash, answers.c.user_label, answers.c.predicted_label,
                  answers.c.annotator, answers.c.status, answers.c.verified, answers.c.address, answers.c.kind,
                  answers.c.taxonomy_version)


@dataclass(frozen=True)
class PersonCounts:
    """One annotator's live answers (not undone or replaced), counted by the database."""

    annotator: str
    answers: int
    last_week: int  # in the 7 days before the `now` they were counted at
    last_active: str  # the newest one's stored time (ISO, UTC)
    signed_in: bool  # one of them came from an identity the host signed in
    unverified: bool  # some answer of theirs, in any status, came from an identity nobody signed in


class Crowd:
    """Queries over every answer of every person but the maintainer (whose reviews are not a person's)."""

    def __init__(self, db: Database, taxonomy: Callable[[], Taxonomy]) -> None:
        self._db = db
        self._taxonomy = taxonomy  # answers are compared by what they mean now (feedback.meaning)

    def counts(self, now: datetime | None = None, limit: int = 50) -> list[PersonCounts]:
        """The `limit` annotators with the most live answers, most first (ties by id), at `now` (default: now)."""
        week_ago = ((now or datetime.now(UTC)) - timedelta(days=7)).isoformat(timespec="microseconds")  # stored times are this ISO form
        live = sa.func.sum(sa.case((LIVE, 1), else_=0))
        query = (
            sa.select(
                answers.c.annotator,
                live.label("answers"),
                sa.func.sum(sa.case((sa.and_(LIVE, answers.c.created_at >= week_ago), 1), else_=0)).label("last_week"),
                sa.func.max(sa.case((LIVE, answers.c.created_at))).label("last_active"),
                sa.func.max(sa.case((LIVE, answers.c.verified), else_=0)).label("signed_in"),
                sa.func.min(answers.c.verified).label("all_verified"),
            )
            .where(answers.c.annotator != MAINTAINER)
            .group_by(answers.c.annotator)
            .having(live > 0)
            .order_by(live.desc(), answers.c.annotator)
            .limit(limit)
        )
        with self._db.read() as db:
            found = db.execute(query).all()
        return [PersonCounts(annotator=str(r.annotator), answers=int(r.answers), last_week=int(r.last_week),
                             last_active=str(r.last_active), signed_in=bool(r.signed_in),
                             unverified=not r.all_verified) for r in found]

    def check_scores(self) -> dict[str, CheckScore]:
        """Per annotator, their counted answers on known-answer checks, scored by the rule training uses
        (`feedback.trust.rules.check_scores`) over the answers on check texts only."""
        taxonomy = self._taxonomy()
        with self._db.read() as db:
            found, gold = answers_on_checks(db, answers.c.annotator != MAINTAINER), read_gold(db, taxonomy)
        return check_scores(answers_as_meant(found, taxonomy), gold)

    def shared_answers(self) -> list[dict[str, Any]]:
        """The counted answers (live, not rejected) on texts two or more annotators answered, the maintainer
        included, oldest first: what agreement and disagreements compare (a text one person answered has
        nothing to compare)."""
        shared = (sa.select(answers.c.text_hash).where(COUNTED).group_by(answers.c.text_hash)
                  .having(sa.func.count(sa.distinct(answers.c.annotator)) >= 2).correlate(None))
        query = sa.select(*SHARED_COLUMNS).where(COUNTED, answers.c.text_hash.in_(shared)).order_by(answers.c.id)
        with self._db.read() as db:
            found = rows(db, query)
        return answers_as_meant(found, self._taxonomy())
