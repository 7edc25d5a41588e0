"""Suspicious answers that look true: given by people whose word carries weight, so a maintainer reviews them
first (`feedback.trust.review.Reviews.find` puts them at the front) and the admin view counts them.

A correction is flagged suspicious when the model was very sure of another label; on a shifted stream many
of those are the model's own mistakes, the most informative labels there are, and they stay out of training
until reviewed. From a person the host signed in, or who passed known-answer checks, they are likely true.
"""

from __future__ import annotations

import sqlalchemy as sa

from core.settings.policies import TrustPolicy
from feedback.database.db import Database
from feedback.database.query import count
from feedback.database.tables import answers, pool
from feedback.trust.checks import MIN_TELLING_CHECKS
from feedback.validate import NOT_COUNTED, Status


def credible(policy: TrustPolicy) -> sa.ColumnElement[bool]:
    """An `answers` row whose annotator the host signed in, or who answered at least `policy.min_checks`
    known-answer checks with at least a `policy.min_check_accuracy` share right, and at least
    MIN_TELLING_CHECKS telling ones right with that share on those too (feedback.trust.checks.passed_checks, the
    "checked" rule, on live answers)."""
    c, g = answers.alias("c"), pool.alias("g")
    right = sa.case((c.c.user_label == g.c.gold_label, 1), else_=0)
    # Of an annotator's check answers: telling (the stored model label was not the known one), and those right.
    telling = sa.case((c.c.predicted_label != g.c.gold_label, 1), else_=0)
    telling_right = sa.case((sa.and_(c.c.predicted_label != g.c.gold_label, c.c.user_label == g.c.gold_label), 1),
                            else_=0)
    share = policy.min_check_accuracy
    checked = (
        sa.select(c.c.annotator).join(g, g.c.text_hash == c.c.text_hash)
        .where(g.c.gold_label.is_not(None), c.c.status.not_in(NOT_COUNTED))
        .group_by(c.c.annotator)
        .having(sa.func.count() >= policy.min_checks, sa.func.sum(right) >= share * sa.func.count(),
                sa.func.sum(telling_right) >= MIN_TELLING_CHECKS,
                sa.func.sum(telling_right) >= share * sa.func.sum(telling))
    )
    return sa.or_(answers.c.verified == 1, answers.c.annotator.in_(checked))


def credible_waiting(db: Database, policy: TrustPolicy) -> int:
    """Suspicious answers still waiting for review from signed-in or checked people."""
    query = sa.select(sa.func.count()).select_from(answers).where(
        answers.c.status == Status.SUSPICIOUS, credible(policy))
    with db.read() as conn:
        return count(conn, query)
