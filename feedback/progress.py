"""How much of the labelling queue is left for one annotator, counted without telling checks apart."""

from __future__ import annotations

from core.policies import QueuePolicy
from feedback.db import Database
from feedback.pool import SETTLED, UNSEEN
from feedback.validate import check_annotator

# Items this annotator has neither answered (live) nor skipped, and that the queue may still hand out:
# every known-answer check, and ordinary items not yet settled by enough agreeing annotators. Checks and
# ordinary items are counted together, so answering either lowers the count by one and a labeller cannot
# infer from it which items were checks.
_LEFT_SQL = f"SELECT COUNT(*) AS n FROM pool p WHERE {UNSEEN} AND (p.gold_label IS NOT NULL OR NOT {SETTLED})"


def queue_left(db: Database, annotator: str, policy: QueuePolicy) -> int:
    """Queue items `annotator` may still be shown (checks included, not told apart)."""
    annotator = check_annotator(annotator)
    with db.read() as conn:
        row = next(iter(conn.query(_LEFT_SQL, {"annotator": annotator, "required": policy.labels_required})))
    return int(row["n"])


_POOL_LEFT_SQL = f"SELECT COUNT(*) AS n FROM pool p WHERE p.gold_label IS NULL AND NOT {SETTLED}"


def pool_left(db: Database, labels_required: int) -> int:
    """Ordinary pool items not yet settled by `labels_required` agreeing annotators (the maintainer's count)."""
    with db.read() as conn:
        return int(next(iter(conn.query(_POOL_LEFT_SQL, {"required": int(labels_required)})))["n"])
