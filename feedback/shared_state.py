"""Web state in the feedback database, shared by every replica: rate limits, sign-in failures, admin
sessions and tickets, queue items.

Each class has the methods of the in-memory one it replaces (`core.limits.RateLimiter`,
`web.admin.AdminSessions`, `web.session_memory.BoundedMap`), so `app.py` picks one or the other. Times are
wall-clock (`time.time`), the one clock machines share. Concurrency is the database's: every change is one
write transaction (SQLite's BEGIN IMMEDIATE; on PostgreSQL an advisory lock per key, so a client's rate-limit
check never waits for another client's or for answers being written).
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from core.limits import FailureThrottle, wait_for_room
from feedback.db import Database
from feedback.dialect import RETRAIN_LOCK, is_database_url

_UPSERT = (
    "INSERT INTO sessions (kind, key, value, expires_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at"
)
_SWEEP_CHANCE = 0.01  # share of writes that also delete every expired row (all keys)


class Busy(RuntimeError):
    """Another machine holds the lock."""


class SharedRateLimiter:
    """At most `limit` events per `window_s` seconds per key, counted across replicas (`RateLimiter`'s methods)."""

    def __init__(
        self, db: Database, bucket: str, limit: int, window_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        if limit < 1 or window_s <= 0:
            raise ValueError("limit must be >= 1 and window_s > 0")
        self._db, self.bucket, self.limit, self.window_s, self._clock = db, bucket, limit, window_s, clock

    def _wait(self, conn: Any, key: str, now: float, cost: int = 1) -> float:
        sql = "SELECT at FROM rate_hits WHERE bucket = ? AND key = ? AND at > ? ORDER BY at"
        hits = [row["at"] for row in conn.query(sql, [self.bucket, key, now - self.window_s])]
        return wait_for_room(hits, self.limit, self.window_s, now, cost)

    def peek(self, key: str) -> float:
        """Seconds until `key` may have another event (0 = now), without recording one."""
        with self._db.read() as conn:
            return self._wait(conn, key, self._clock())

    def check(self, key: str, cost: int = 1) -> float:
        """Record `cost` events for `key` and return 0, or refuse them all and return the seconds to wait."""
        now = self._clock()
        # Locked per bucket and key: clients never wait for each other or for answers being written.
        with self._db.write(f"rate:{self.bucket}:{key}", relaxed=True) as conn:
            wait = self._wait(conn, key, now, cost)
            if wait:
                return wait
            for _ in range(cost):
                conn.execute("INSERT INTO rate_hits (bucket, key, at) VALUES (?, ?, ?)", [self.bucket, key, now])
            stale = [self.bucket, now - self.window_s]
            conn.execute("DELETE FROM rate_hits WHERE bucket = ? AND key = ? AND at <= ?", [self.bucket, key, stale[1]])
        if random.random() < _SWEEP_CHANCE:  # other keys' old hits, outside the per-key lock (nothing checks them)
            with self._db.write("rate:sweep", relaxed=True) as conn:
                conn.execute("DELETE FROM rate_hits WHERE bucket = ? AND at <= ?", stale)
        return 0.0


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

    def put(self, key: str, value: str | None, ttl_s: float) -> None:
        now = self._clock()
        with self._db.write(f"{self._kind}:{key}") as conn:
            conn.execute(_UPSERT, [self._kind, key, value, now + ttl_s])
        if random.random() < _SWEEP_CHANCE:  # every kind's expired rows, in a transaction of its own
            with self._db.write("sessions:sweep", relaxed=True) as conn:
                conn.execute("DELETE FROM sessions WHERE expires_at <= ?", [now])

    def get(self, key: str) -> tuple[bool, str | None]:
        with self._db.read() as conn:
            sql = "SELECT value FROM sessions WHERE kind = ? AND key = ? AND expires_at > ?"
            row = next(conn.query(sql, [self._kind, key, self._clock()]), None)
        return (row is not None, row["value"] if row else None)

    def delete(self, key: str) -> str | None:
        with self._db.write(f"{self._kind}:{key}") as conn:
            sql = "SELECT value FROM sessions WHERE kind = ? AND key = ? AND expires_at > ?"
            row = next(conn.query(sql, [self._kind, key, self._clock()]), None)
            conn.execute("DELETE FROM sessions WHERE kind = ? AND key = ?", [self._kind, key])
        return row["value"] if row else None


class SharedAdminSessions:
    """Signed-in admin browsers, valid on every replica (`web.admin.AdminSessions`' methods)."""

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
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            raise Busy("another retrain is running (database lock held)")
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
