"""Web state in the feedback database, shared by every replica: rate limits, sign-in failures, admin
sessions and tickets, queue items.

Rate limits are `core.serving.limits.RateLimiter` itself over a database store of events (`DatabaseWindows`); the other
classes have the methods of the in-memory ones they replace (`web.admin.actions.AdminSessions`,
`web.server.session_memory.BoundedMap`), so `app.py` picks one or the other. Times are
wall-clock (`time.time`), the one clock machines share. Concurrency is the database's: every change is one
write transaction (SQLite's BEGIN IMMEDIATE; on PostgreSQL an advisory lock per key, so a client's rate-limit
check never waits for another client's or for answers being written).
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from core.serving.limits import FailureThrottle, RateLimiter
from feedback.database.db import RETRAIN_LOCK, Database, is_database_url
from feedback.database.query import insert_on_conflict
from feedback.database.tables import rate_hits, sessions

_SWEEP_CHANCE = 0.01  # share of writes that also delete every expired row (all keys)


class Busy(RuntimeError):
    """Another machine holds the lock."""


class _HitsWindow:
    """One key's rows of `rate_hits` on a connection (inside the caller's transaction)."""

    def __init__(self, conn: sa.Connection, bucket: str, key: str) -> None:
        self._conn, self._where = conn, (rate_hits.c.bucket == bucket, rate_hits.c.key == key)
        self._bucket, self._key = bucket, key

    def times(self, since: float) -> Sequence[float]:
        query = sa.select(rate_hits.c.at).where(*self._where, rate_hits.c.at > since).order_by(rate_hits.c.at)
        return list(self._conn.execute(query).scalars())

    def record(self, at: float, cost: int) -> None:
        if cost > 0:
            self._conn.execute(sa.insert(rate_hits), [{"bucket": self._bucket, "key": self._key, "at": at}] * cost)

    def forget(self, before: float) -> None:
        self._conn.execute(sa.delete(rate_hits).where(*self._where, rate_hits.c.at <= before))


class DatabaseWindows:
    """`core.serving.limits.RateLimiter`'s events in the `rate_hits` table, one bucket per limiter, seen by every replica."""

    def __init__(self, db: Database, bucket: str, window_s: float, clock: Callable[[], float] = time.time) -> None:
        self._db, self._bucket, self._window_s, self._clock = db, bucket, window_s, clock

    @contextlib.contextmanager
    def locked(self, key: str) -> Iterator[_HitsWindow]:
        # Locked per bucket and key: clients never wait for each other or for answers being written.
        with self._db.write(f"rate:{self._bucket}:{key}", relaxed=True) as conn:
            yield _HitsWindow(conn, self._bucket, key)
        if random.random() < _SWEEP_CHANCE:  # other keys' old hits, outside the per-key lock (nothing checks them)
            with self._db.write("rate:sweep", relaxed=True) as conn:
                stale = (rate_hits.c.bucket == self._bucket, rate_hits.c.at <= self._clock() - self._window_s)
                conn.execute(sa.delete(rate_hits).where(*stale))

    @contextlib.contextmanager
    def viewed(self, key: str) -> Iterator[_HitsWindow]:
        with self._db.read() as conn:
            yield _HitsWindow(conn, self._bucket, key)


class SharedRateLimiter(RateLimiter):
    """At most `limit` events per `window_s` seconds per key, counted across replicas: `RateLimiter` over the
    database's `rate_hits` (wall-clock times, the one clock machines share)."""

    def __init__(
        self, db: Database, bucket: str, limit: int, window_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(limit, window_s, clock, store=DatabaseWindows(db, bucket, window_s, clock))
        self.bucket = bucket


def shared_failure_throttle(db: Database, per_key: int = 5, everyone: int = 20, window_s: float = 300.0) -> FailureThrottle:
    """The admin sign-in's failure counts in the database, so every replica counts every replica's failures."""
    return FailureThrottle(
        SharedRateLimiter(db, "signin_failed", per_key, window_s),
        SharedRateLimiter(db, "signin_failed_all", everyone, window_s),
    )


class _Records:
    """Rows of the `sessions` table of one kind, each with an expiry."""

    def __init__(self, db: Database, kind: str, clock: Callable[[], float]) -> None:
        self._db, self._kind, self._clock = db, kind, clock

    def _live(self, key: str) -> sa.Select[str | None]:
        return sa.select(sessions.c.value).where(
            sessions.c.kind == self._kind, sessions.c.key == key, sessions.c.expires_at > self._clock())

    def put(self, key: str, value: str | None, ttl_s: float) -> None:
        now = self._clock()
        row = {"kind": self._kind, "key": key, "value": value, "expires_at": now + ttl_s}
        with self._db.write(f"{self._kind}:{key}") as conn:
            insert = insert_on_conflict(conn, sessions).values(row)
            conn.execute(insert.on_conflict_do_update(
                index_elements=[sessions.c.kind, sessions.c.key],
                set_={"value": insert.excluded.value, "expires_at": insert.excluded.expires_at}))
        if random.random() < _SWEEP_CHANCE:  # every kind's expired rows, in a transaction of its own
            with self._db.write("sessions:sweep", relaxed=True) as conn:
                conn.execute(sa.delete(sessions).where(sessions.c.expires_at <= now))

    def get(self, key: str) -> tuple[bool, str | None]:
        with self._db.read() as conn:
            found = conn.execute(self._live(key)).scalars().all()
        return (bool(found), found[0] if found else None)

    def delete(self, key: str) -> str | None:
        with self._db.write(f"{self._kind}:{key}") as conn:
            found = conn.execute(self._live(key)).scalars().all()
            conn.execute(sa.delete(sessions).where(sessions.c.kind == self._kind, sessions.c.key == key))
        return found[0] if found else None


class SharedAdminSessions:
    """Signed-in admin browsers, valid on every replica (`web.admin.actions.AdminSessions`' methods)."""

    def __init__(self, db: Database, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self.ttl_s = ttl_s
        self._records = _Records(db, "admin", clock)

    def open(self, browser: str) -> None:
        if not browser:
            raise ValueError("an admin session needs a browser id")
        self._records.put(browser, None, self.ttl_s)

    def close(self, browser: str) -> None:
        self._records.delete(browser)

    def valid(self, browser: str) -> bool:
        return bool(browser) and self._records.get(browser)[0]


class SharedMap:
    """Per-session JSON values (the queue item each browser was given), seen by every replica.

    `BoundedMap`'s methods; entries expire `ttl_s` after they were put instead of by count.
    """

    def __init__(self, db: Database, kind: str, ttl_s: float = 86_400.0, clock: Callable[[], float] = time.time) -> None:
        self.ttl_s = ttl_s
        self._records = _Records(db, kind, clock)

    def put(self, key: str, value: Any) -> None:
        self._records.put(key, json.dumps(value), self.ttl_s)

    def get(self, key: str) -> Any | None:
        found, value = self._records.get(key)
        return json.loads(value) if found and value is not None else None

    def pop(self, key: str) -> Any | None:
        value = self._records.delete(key)
        return json.loads(value) if value is not None else None


@contextlib.contextmanager
def database_lock(url: str, key: int = RETRAIN_LOCK) -> Iterator[None]:
    """Hold a PostgreSQL session advisory lock for the block, or raise Busy at once if another session has it.

    The lock lives in the server, so it excludes every machine; it is released when the block ends, and by
    the server when this process dies and its connection drops.
    """
    if not is_database_url(url):
        raise ValueError("database_lock needs a postgresql:// URL")
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        held = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        if not held or not held[0]:
            raise Busy("another retrain is running (database lock held)")
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
