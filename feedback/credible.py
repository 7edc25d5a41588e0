"""Suspicious answers that look true: given by people whose word carries weight, so a maintainer reviews them
first (`feedback.review.Reviews.find` puts them at the front) and the admin view counts them.

A correction is flagged suspicious when the model was very sure of another label; on a shifted stream many
of those are the model's own mistakes, the most informative labels there are, and they stay out of training
until reviewed. From a person the host signed in, or who passed known-answer checks, they are likely true.
"""

from __future__ import annotations

from typing import Any

from core.policies import TrustPolicy
from feedback.checks import MIN_TELLING_CHECKS
from feedback.db import Database

# Of an annotator's check answers: telling (the stored model label was not the known one), and those right.
_TELLING = "CASE WHEN c.predicted_label != g.gold_label THEN 1 ELSE 0 END"
_TELLING_RIGHT = "CASE WHEN c.predicted_label != g.gold_label AND c.user_label = g.gold_label THEN 1 ELSE 0 END"
# An answer row `answers` whose annotator the host signed in, or who answered at least ? known-answer checks
# with at least a ? share right, and at least ? telling ones right with that share on those too
# (feedback.checks.passed_checks, the "checked" rule, on live answers). Takes four positional parameters:
# `credible_params(policy)`.
CREDIBLE = f"""
    (answers.verified = 1 OR answers.annotator IN (
        SELECT c.annotator FROM answers c JOIN pool g ON g.text_hash = c.text_hash
        WHERE g.gold_label IS NOT NULL AND c.status NOT IN ('undone', 'replaced', 'rejected')
        GROUP BY c.annotator
        HAVING COUNT(*) >= ? AND SUM(CASE WHEN c.user_label = g.gold_label THEN 1 ELSE 0 END) >= ? * COUNT(*)
        AND SUM({_TELLING_RIGHT}) >= ? AND SUM({_TELLING_RIGHT}) >= ? * SUM({_TELLING})
    ))
"""


def credible_params(policy: TrustPolicy) -> list[Any]:
    return [policy.min_checks, policy.min_check_accuracy, MIN_TELLING_CHECKS, policy.min_check_accuracy]


def credible_waiting(db: Database, policy: TrustPolicy) -> int:
    """Suspicious answers still waiting for review from signed-in or checked people."""
    with db.read() as conn:
        sql = f"SELECT COUNT(*) FROM answers WHERE status = 'suspicious' AND {CREDIBLE}"
        return int(conn.execute(sql, credible_params(policy)).fetchone()[0])
