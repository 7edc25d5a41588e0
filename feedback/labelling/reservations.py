"""Queue items held for a tab, in the database every replica shares: who holds each item and until when.

A tab's buffer (`web.page.labelling.BufferedQueue`) holds a few items ahead of the one on screen; each is a row of
`reservations` (item, holder, expiry), so a tab on any replica is handed items no other tab holds while others
remain. A row ends when its tab answers, skips or drops the item, or when it expires (a tab closed mid-way). Times
are wall-clock (the one clock machines share). The statements here run inside the caller's write transaction.
"""

from __future__ import annotations

from collections.abc import Collection

import sqlalchemy as sa

from feedback.database.query import insert_on_conflict
from feedback.database.tables import pool, reservations

# The PostgreSQL advisory lock (`Database.write` scope) under which an item is chosen and held: two replicas
# choosing at once take turns, so the second sees what the first holds. SQLite has one writer anyway.
SCOPE = "queue:reservations"


def held_by_others(holder: str, now: float) -> sa.ColumnElement[bool]:
    """Pool items another holder holds, unexpired."""
    return sa.exists().where(reservations.c.item_id == pool.c.id, reservations.c.holder != holder,
                             reservations.c.expires_at > now)


def hold(conn: sa.Connection, holder: str, item_ids: Collection[int], now: float, ttl_s: float) -> None:
    """Hold `item_ids` for `holder` for `ttl_s` from `now` (renewing rows it has), and drop every expired row."""
    conn.execute(sa.delete(reservations).where(reservations.c.expires_at <= now))
    if not item_ids:
        return
    insert = insert_on_conflict(conn, reservations)
    rows = [{"item_id": int(i), "holder": holder, "expires_at": now + ttl_s} for i in sorted(set(item_ids))]
    conn.execute(
        insert.values(rows)
        .on_conflict_do_update(index_elements=[reservations.c.item_id, reservations.c.holder],
                               set_={"expires_at": insert.excluded.expires_at}))


def release(conn: sa.Connection, holder: str, item_ids: Collection[int] | None = None) -> None:
    """End `holder`'s hold on `item_ids` (all its items when None); another holder's rows stay."""
    query = sa.delete(reservations).where(reservations.c.holder == holder)
    if item_ids is not None:
        query = query.where(reservations.c.item_id.in_(sorted({int(i) for i in item_ids})))
    conn.execute(query)

