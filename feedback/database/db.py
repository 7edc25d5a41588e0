"""The feedback database on SQLite or PostgreSQL: one SQLAlchemy engine, its transactions and locks, migrated on open.

Every feedback module builds its queries with SQLAlchemy Core over `feedback.database.tables` and runs them on the
connection `read()` or `write()` yields; the backends differ only in how a connection is opened and how a
write transaction excludes other writers, which is all this module holds.
"""

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
from typing import Any

import sqlalchemy as sa

from core.storage.sqlite_guard import Watch, is_live, watch
from feedback.database.schema import migrate
from feedback.database.tables import COPIED
from feedback.errors import FeedbackError

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 10.0
POOL_MAX = 8  # PostgreSQL connections per process; each replica's threads share them
CONNECT_TIMEOUT_S = 10.0
# Advisory-lock keys (any 64-bit numbers, the same on every machine). Writes to the feedback tables take
# WRITE as a transaction lock, which is what SQLite's BEGIN IMMEDIATE gives: check-then-insert rules
# (duplicates, rate limits) see no concurrent writer. MIGRATE serializes schema steps; RETRAIN is held
# for a whole retrain by its session, so one retrain runs across all machines.
WRITE_LOCK = 0x4E4C_0F_0001
MIGRATE_LOCK = 0x4E4C_0F_0002
RETRAIN_LOCK = 0x4E4C_0F_0003
_URL_SCHEMES = ("postgresql://", "postgres://")
_IMMEDIATE = "newsloop_immediate"  # a SQLite connection's info flag: its next transaction writes
# Connections a forked child inherited; kept referenced so they are never closed in the child.
_FORKED_CONNECTIONS: list[Any] = []


def is_database_url(location: object) -> bool:
    """True when `location` names a PostgreSQL server rather than a SQLite file."""
    return isinstance(location, str) and location.startswith(_URL_SCHEMES)


def redacted(url: str) -> str:
    """The URL without its password, fit for logs and repr."""
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return url.split("://", 1)[0] + "://***"


def iso_time(timestamp: float) -> str:
    """A Unix time as the database stores it."""
    # Fixed width with microseconds, so ISO strings compare in time order inside SQL.
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="microseconds")


def parse_iso_time(value: str) -> float:
    """The Unix time of a timestamp stored by `iso_time`."""
    return datetime.fromisoformat(value).timestamp()


def _reason(exc: BaseException) -> str:
    return str(exc.orig) if isinstance(exc, sa.exc.DBAPIError) else str(exc)


class _Held:
    """This thread's SQLite connection; closed when the thread ends and drops it (no pool to return it to)."""

    def __init__(self, conn: sa.Connection) -> None:
        self.conn, self.pid = conn, os.getpid()

    def __del__(self) -> None:
        if self.pid == os.getpid():
            with contextlib.suppress(Exception):
                self.conn.close()


class Database:
    """The feedback tables in one SQLite file or one PostgreSQL database, shared by any number of threads,
    processes and (PostgreSQL) machines.

    SQLite: each thread keeps its own connection (WAL journal, 10 s busy timeout); writes run in `BEGIN
    IMMEDIATE` transactions, which makes check-then-insert rules (duplicates, rate limits) race-free. While it
    exists, nothing in this process may open the file (or its -wal and -shm files) other than through SQLite:
    closing it would drop the process's locks (`core.storage.sqlite_guard`).

    PostgreSQL (a postgresql:// URL): a pool of POOL_MAX connections; a write transaction first takes an
    advisory lock, so those rules hold across replicas as under BEGIN IMMEDIATE; the server releases it at
    commit, rollback, or when a dead client's connection drops.

    `durable=False` trades the wait for the disk per answer (SQLite synchronous=FULL, PostgreSQL
    synchronous_commit) for speed: still safe against process crashes, but the last answers can be lost on
    power failure or a server crash.
    """

    def __init__(self, location: Path | str, *, durable: bool = True) -> None:
        self._local = threading.local()
        self._watch: Watch | None = None
        if is_database_url(location):
            self.path: Path | str = redacted(str(location))
            self.engine = _postgres_engine(str(location), durable)
        else:
            self.path = Path(location)
            if not self.path.parent.is_dir():
                raise FeedbackError(f"directory {self.path.parent} does not exist; create it first")
            self._watch = watch(self.path)
            self.engine = _sqlite_engine(self.path, durable)
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        # Switching a new SQLite file to WAL takes an exclusive lock without waiting on the busy timeout, so
        # processes opening the same fresh database at once can see "locked": retry until the timeout.
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                migrate(self)
                return
            except sa.exc.OperationalError as exc:
                if not self.is_sqlite or "locked" not in str(exc.orig) or time.monotonic() > deadline:
                    self._fail(exc)
                self.close()  # open a fresh connection on the next try
                time.sleep(0.05)
            except (sa.exc.DBAPIError, sa.exc.TimeoutError) as exc:
                self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self.engine.dispose()
        raise FeedbackError(f"cannot use {self.path} as the feedback database: {_reason(exc)}") from None

    @property
    def dialect(self) -> sa.Dialect:
        return self.engine.dialect

    def _thread_connection(self) -> sa.Connection:
        """This thread's SQLite connection, opened on first use; SQLite connections are never shared by threads."""
        held: _Held | None = getattr(self._local, "held", None)
        if held is None or held.pid != os.getpid():
            if held is not None:
                # Inherited through fork(): closing it here could disturb the parent's locks, so keep it.
                _FORKED_CONNECTIONS.append(held)
            held = self._local.held = _Held(self.engine.connect())
        return held.conn

    @contextlib.contextmanager
    def read(self) -> Iterator[sa.Connection]:
        """A connection for reads (on SQLite each statement is its own snapshot, as outside a transaction)."""
        if not self.is_sqlite:
            with self.engine.connect() as conn:
                yield conn
            return
        conn = self._thread_connection()
        if conn.in_transaction():  # inside this thread's write: read what it wrote
            yield conn
            return
        try:
            yield conn
        finally:
            if conn.in_transaction():
                conn.rollback()  # ends only SQLAlchemy's bookkeeping: no BEGIN was sent for the reads

    @contextlib.contextmanager
    def write(self, scope: str | None = None, *, relaxed: bool = False,
              migrating: bool = False) -> Iterator[sa.Connection]:
        """A write transaction, committed when the block ends and rolled back when it raises.

        On PostgreSQL the feedback tables share one lock; `scope` names a smaller one instead, for state whose
        rules are per key (one client's rate-limit hits), so those writes never queue behind answers or each
        other; `relaxed` commits without waiting for the disk (for state that may be lost in a server crash);
        `migrating` takes the schema lock. SQLite has one writer at a time whatever the scope.
        """
        if self.is_sqlite:
            conn = self._thread_connection()
            if conn.in_transaction():
                raise FeedbackError("a write transaction cannot start inside another on the same thread")
            # IMMEDIATE takes the write lock before any check, so what we checked still holds at insert.
            conn.info[_IMMEDIATE] = True
            try:
                transaction = conn.begin()
            finally:
                conn.info.pop(_IMMEDIATE, None)
            with transaction:
                yield conn
            return
        with self.engine.begin() as conn:
            if migrating:
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(MIGRATE_LOCK)))
            elif scope is None:
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(WRITE_LOCK)))
            else:
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(scope, 0))))
            if relaxed:
                conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
            yield conn

    def backup(self, dest: Path) -> None:
        """Copy the whole database to a new SQLite file at `dest`, consistent while in use.

        SQLite: its online backup API. PostgreSQL: the feedback tables from one REPEATABLE READ snapshot into a
        fresh SQLite file at the current schema, which the retrain reads exactly as it reads a SQLite backup.
        """
        dest = Path(dest)
        if self.is_sqlite:
            if dest.resolve() == Path(self.path).resolve() or is_live(dest):
                raise FeedbackError(f"backup destination {dest} is a live database's file")
            source = self._thread_connection().connection.driver_connection
            if not isinstance(source, sqlite3.Connection):
                raise FeedbackError(f"{self.path} is not open through sqlite3")
            target = sqlite3.connect(dest)
            try:
                source.backup(target)
            finally:
                target.close()
            log.info("backed up %s to %s", self.path, dest)
            return
        if dest.exists():
            raise FeedbackError(f"backup destination {dest} exists")
        copy = Database(dest, durable=False)
        try:
            snapshot = self.engine.connect().execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True, yield_per=2000)
            with snapshot, copy.write() as lite:
                for table in COPIED:  # streamed by a server-side cursor: never all rows in memory
                    result = snapshot.execute(sa.select(table).order_by(*table.primary_key.columns)).mappings()
                    for part in result.partitions():
                        lite.execute(sa.insert(table), [dict(row) for row in part])
        except BaseException:
            copy.close()
            dest.unlink(missing_ok=True)
            raise
        copy.close()
        log.info("copied %s to %s", self.path, dest)

    def close(self) -> None:
        """SQLite: close the calling thread's connection (others close when their threads end). PostgreSQL:
        close the pool, every connection of this store in every thread."""
        if not self.is_sqlite:
            self.engine.dispose()
            return
        held: _Held | None = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None and held.pid == os.getpid():
            held.conn.close()


def _sqlite_engine(path: Path, durable: bool) -> sa.Engine:
    # No pool: each thread keeps its connection (`Database._thread_connection`), as SQLite wants.
    # Nothing to reset when one is dropped: reads send no BEGIN, and every write block commits or rolls back.
    engine = sa.create_engine(f"sqlite:///{path}", poolclass=sa.NullPool, pool_reset_on_return=None,
                              connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False})
    synchronous = "FULL" if durable else "NORMAL"

    @sa.event.listens_for(engine, "connect")
    def _configure(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        # No implicit transactions from the sqlite3 module: writes say BEGIN IMMEDIATE themselves (`_begin`).
        dbapi_conn.isolation_level = None
        dbapi_conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        dbapi_conn.execute("PRAGMA journal_mode = WAL")
        dbapi_conn.execute(f"PRAGMA synchronous = {synchronous}")
        dbapi_conn.execute("PRAGMA foreign_keys = ON")

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        if conn.info.get(_IMMEDIATE):
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _postgres_engine(url: str, durable: bool) -> sa.Engine:
    args: dict[str, Any] = {"connect_timeout": int(CONNECT_TIMEOUT_S)}
    if not durable:
        args["options"] = "-c synchronous_commit=off"
    return sa.create_engine(
        sa.make_url(url).set(drivername="postgresql+psycopg"), connect_args=args, pool_size=POOL_MAX,
        max_overflow=0, pool_timeout=CONNECT_TIMEOUT_S, pool_pre_ping=True,  # survives a server restart
    )
