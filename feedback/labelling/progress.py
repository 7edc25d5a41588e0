"""How much of the labelling queue is left for one annotator, counted without telling checks apart."""

from __future__ import annotations

import sqlalchemy as sa

from core.settings.policies import QueuePolicy
from feedback.database.db import Database
from feedback.database.query import count
from feedback.database.tables import pool
from feedback.labelling.pool import settled, unseen
from feedback.validate import check_annotator


def queue_left(db: Database, annotator: str, policy: QueuePolicy) -> int:
    """Queue items `annotator` may still be shown (checks included, not told apart)."""
    annotator = check_annotator(annotator)
    # Items this annotator has neither answered (live) nor skipped, and that the queue may still hand out:
    # every known-answer check, and ordinary items not yet settled by enough agreeing annotators. Checks and
    # ordinary items are counted together, so answering either lowers the count by one and a labeller cannot
    # infer from it which items were checks.
    query = sa.select(sa.func.count()).select_from(pool).where(
        unseen(annotator), sa.or_(pool.c.gold_label.is_not(None), ~settled(policy.labels_required)))
    with db.read() as conn:
        return count(conn, query)


def pool_left(db: Database, labels_required: int) -> int:
    """Ordinary pool items not yet settled by `labels_required` agreeing annotators (the maintainer's count)."""
    query = sa.select(sa.func.count()).select_from(pool).where(
        pool.c.gold_label.is_(None), ~settled(int(labels_required)))
    with db.read() as conn:
        return count(conn, query)
