"""The feedback database's connections and transactions: one connection per thread, migrated on open."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils

from core.sqlite_guard import is_live, watch
from feedback.errors import FeedbackError
from feedback.schema import migrate

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 10.0
# Connections a forked child inherited; kept referenced so they are never closed in the child.
_FORKED_CONNECTIONS: list[sqlite_utils.Database] = []


def iso_time(timestamp: float) -> str:
    """A Unix time as the database stores it."""
    # Fixed width with microseconds, so ISO strings compare in time order inside SQL.
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="microseconds")


def parse_iso_time(value: str) -> float:
    """The Unix time of a timestamp stored by `iso_time`."""
    return datetime.fromisoformat(value).timestamp()


class Database:
    """One SQLite file, shared safely by any number of threads and processes.

    Each thread gets its own connection (WAL journal, 10 s busy timeout). Writes run in
    `BEGIN IMMEDIATE` transactions, which makes check-then-insert rules (duplicates, rate limit)
    race-free. `durable=False` trades the fsync per answer (synchronous=FULL) for synchronous=NORMAL:
    still safe against process crashes, but the last answers can be lost on power failure.

    While it exists, nothing in this process may open the file (or its -wal and -shm files) other than
    through SQLite: closing it would drop the process's locks (`core.sqlite_guard`).
    """

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise FeedbackError(f"directory {self.path.parent} does not exist; create it first")
        self._synchronous = "FULL" if durable else "NORMAL"
        self._local = threading.local()
        self._watch = watch(self.path)
        # Switching a new file to WAL takes an exclusive lock without waiting on the busy timeout, so
        # processes opening the same fresh database at once can see "locked": retry until the timeout.
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                migrate(self.connection().conn)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise FeedbackError(f"cannot use {self.path} as the feedback database: {exc}") from None
                self._local.db = self._local.pid = None  # open a fresh connection on the next try
                time.sleep(0.05)
            except sqlite3.DatabaseError as exc:
                raise FeedbackError(f"cannot use {self.path} as the feedback database: {exc}") from None

    def _open(self) -> sqlite3.Connection:
        # isolation_level=None: no implicit transactions; writes say BEGIN IMMEDIATE themselves.
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def connection(self) -> sqlite_utils.Database:
        """This thread's connection, opened on first use; SQLite connections are never shared by threads."""
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            if getattr(local, "db", None) is not None:
                # Inherited through fork(): closing it here could disturb the parent's locks, so keep it.
                _FORKED_CONNECTIONS.append(local.db)
            local.db = sqlite_utils.Database(self._open(), execute_plugins=False)
            local.pid = os.getpid()
        return local.db

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite_utils.Database]:
        """This thread's connection, for reads outside a transaction."""
        yield self.connection()

    @contextlib.contextmanager
    def write(self, scope: str | None = None, *, relaxed: bool = False) -> Iterator[sqlite_utils.Database]:
        """A write transaction, committed when the block ends and rolled back when it raises.

        `scope` and `relaxed` matter on PostgreSQL only (see `feedback.pg.PgDatabase.write`); SQLite has one
        writer at a time whatever the scope.
        """
        db = self.connection()
        # IMMEDIATE takes the write lock before any check, so what we checked still holds at insert.
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.conn.execute("COMMIT")
        except BaseException:
            if db.conn.in_transaction:
                db.conn.execute("ROLLBACK")
            raise

    def backup(self, dest: Path) -> None:
        """Copy the whole database to `dest` with SQLite's online backup API (consistent while in use)."""
        dest = Path(dest)
        if dest.resolve() == self.path.resolve() or is_live(dest):
            raise FeedbackError(f"backup destination {dest} is a live database's file")
        target = sqlite3.connect(dest)
        try:
            self.connection().conn.backup(target)
        finally:
            target.close()
        log.info("backed up %s to %s", self.path, dest)

    def close(self) -> None:
        """Close the calling thread's connection (others close when their threads end)."""
        db = getattr(self._local, "db", None)
        if db is not None and self._local.pid == os.getpid():
            db.close()
        self._local.db = None
        self._local.pid = None
