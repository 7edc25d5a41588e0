"""The demo pool: articles an empty pool starts with, so a fresh install has something to label from its first
minute. With data of your own topics they are the data's own training rows (`core.samples`); with AG News they are
the forty short news-like articles the project ships (written for its four topics, not AG News rows). They enter an
empty pool at start, marked with the source 'demo'; a host's first real import removes those nobody has answered
(answered ones stay, with their answers)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from feedback.database.tables import answers, pool, reservations, skips

DEMO_SOURCE = "demo"
DEMO_FILE = Path(__file__).with_name("demo_pool.csv")


def pool_is_empty(conn: sa.Connection) -> bool:
    return conn.execute(sa.select(pool.c.id).limit(1)).first() is None


def drop_unanswered_demo(conn: sa.Connection) -> int:
    """Remove the demo items nobody answered (their skips and holds too); how many were removed."""
    unanswered = sa.select(pool.c.id).where(
        pool.c.source == DEMO_SOURCE, ~sa.exists().where(answers.c.text_hash == pool.c.text_hash))
    ids = [int(item_id) for item_id in conn.execute(unanswered).scalars()]
    if not ids:
        return 0
    conn.execute(sa.delete(skips).where(skips.c.item_id.in_(ids)))
    conn.execute(sa.delete(reservations).where(reservations.c.item_id.in_(ids)))
    conn.execute(sa.delete(pool).where(pool.c.id.in_(ids)))
    return len(ids)
