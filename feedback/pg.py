"""The feedback database on PostgreSQL (psycopg 3): the same interface as `feedback.db.Database`.

The feedback modules keep one implementation of their SQL; `Connection` runs it through
`feedback.dialect.to_postgres` and offers the few sqlite-utils calls they use (`query`, `execute`,
`executemany`, `conn`, `db[table].insert(row).last_pk`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from feedback.dialect import MIGRATE_LOCK, WRITE_LOCK, redacted, to_postgres
from feedback.errors import FeedbackError
from feedback.schema import CURRENT_VERSION, MIGRATIONS

log = logging.getLogger(__name__)

POOL_MAX = 8  # connections per process; each replica's threads share them
CONNECT_TIMEOUT_S = 10.0
_TABLES = ("answers", "pool", "skips")  # copied, in this order, by `backup`


@dataclass(frozen=True)
class _Inserted:
    last_pk: int


class _Table:
    def __init__(self, conn: Connection, name: str) -> None:
        self._conn, self._name = conn, name

    def insert(self, row: Mapping[str, Any]) -> _Inserted:
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        sql = f"INSERT INTO {self._name} ({columns}) VALUES ({marks}) RETURNING id"
        return _Inserted(int(self._conn.execute(sql, list(row.values())).fetchone()[0]))


class Connection:
    """One pooled psycopg connection that takes the feedback modules' SQLite-flavoured SQL."""

    def __init__(self, raw: psycopg.Connection) -> None:
        self.raw = raw

    @property
    def conn(self) -> Connection:
        return self  # the modules call db.conn.execute(...) for plain cursor work

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> psycopg.Cursor:
        return self.raw.execute(to_postgres(sql), params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.raw.cursor() as cursor:
            cursor.executemany(to_postgres(sql), rows)

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Iterator[dict[str, Any]]:
        with self.raw.cursor(row_factory=dict_row) as cursor:
            return iter(cursor.execute(to_postgres(sql), params).fetchall())

    def __getitem__(self, table: str) -> _Table:
        return _Table(self, table)


class PgDatabase:
    """The feedback tables in a PostgreSQL database, shared by any number of threads, processes and machines.

    Writes run in a transaction that first takes a transaction-scoped advisory lock, so check-then-insert
    rules hold across replicas as they do under SQLite's BEGIN IMMEDIATE; the database releases it at
    commit, rollback, or when a dead client's connection drops. `durable=False` turns off
    synchronous_commit (a crash of the server can lose the last answers, never corrupt them).
    """

    def __init__(self, url: str, *, durable: bool = True) -> None:
        self.url = url
        self.path = redacted(url)
        options = {} if durable else {"options": "-c synchronous_commit=off"}
        self._pool = ConnectionPool(
            url, min_size=1, max_size=POOL_MAX, kwargs=options, open=False, timeout=CONNECT_TIMEOUT_S,
            name="newsloop-feedback", check=ConnectionPool.check_connection,  # survives a server restart
        )
        try:
            # One plain connection first: a wrong URL fails at once with the server's reason, not a pool timeout.
            with psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT_S), **options) as raw:
                migrate(Connection(raw))
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except Exception as exc:
            self._pool.close()
            if isinstance(exc, FeedbackError):
                raise
            raise FeedbackError(f"cannot use {self.path} as the feedback database: {exc}") from None

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A pooled connection for reads (its transaction ends with the block)."""
        with self._pool.connection() as raw:
            yield Connection(raw)

    @contextlib.contextmanager
    def write(self, scope: str | None = None, *, relaxed: bool = False) -> Iterator[Connection]:
        """A write transaction holding the write lock; committed when the block ends, rolled back if it raises.

        The feedback tables share one lock. `scope` names a smaller one instead, for state whose rules are per
        key (one client's rate-limit hits), so those writes never queue behind answers or each other.
        `relaxed` commits without waiting for the disk: for state that may be lost in a server crash.
        """
        with self._pool.connection() as raw:
            if scope is None:
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            else:
                raw.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (scope,))
            if relaxed:
                raw.execute("SET LOCAL synchronous_commit = off")
            yield Connection(raw)

    def connection(self) -> Connection:
        raise NotImplementedError("use read() or write(): PostgreSQL connections are pooled")

    def backup(self, dest: Path) -> None:
        """Copy the feedback tables into a new SQLite file at `dest`, from one REPEATABLE READ snapshot.

        The retrain reads its trusted feedback from that file exactly as it reads a SQLite backup.
        """
        from feedback.db import Database  # the SQLite side: a fresh file at the current schema

        dest = Path(dest)
        if dest.exists():
            raise FeedbackError(f"backup destination {dest} exists")
        target = Database(dest, durable=False)
        lite = target.connection().conn
        try:
            with self._pool.connection() as raw:
                raw.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                lite.execute("BEGIN IMMEDIATE")
                for table in _TABLES:
                    with raw.cursor(name=f"copy_{table}") as cursor:  # server-side: never all rows in memory
                        cursor.execute(f"SELECT * FROM {table} ORDER BY 1")
                        columns = [c.name for c in cursor.description or ()]
                        marks = ", ".join("?" for _ in columns)
                        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
                        while rows := cursor.fetchmany(2000):
                            lite.executemany(sql, rows)
                lite.execute("COMMIT")
        except BaseException:
            if lite.in_transaction:
                lite.execute("ROLLBACK")
            target.close()
            dest.unlink(missing_ok=True)
            raise
        target.close()
        log.info("copied %s to %s", self.path, dest)

    def close(self) -> None:
        """Close the pool: every connection of this store, in every thread."""
        self._pool.close(timeout=1.0)


def migrate(conn: Connection) -> int:
    """Bring the database to CURRENT_VERSION with the same steps as SQLite, one transaction per step.

    The version lives in a one-row table; the migrate advisory lock makes replicas starting together
    apply each step exactly once.
    """
    while True:
        with conn.raw.transaction():
            conn.raw.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            conn.raw.execute("CREATE TABLE IF NOT EXISTS newsloop_schema (version INTEGER NOT NULL)")
            row = conn.raw.execute("SELECT version FROM newsloop_schema").fetchone()
            version = int(row[0]) if row else 0
            if version > CURRENT_VERSION:
                raise FeedbackError(
                    f"feedback database has schema version {version}, newer than this code supports "
                    f"({CURRENT_VERSION}); upgrade NewsLoop"
                )
            if version == CURRENT_VERSION:
                return version
            MIGRATIONS[version + 1](conn)  # type: ignore[arg-type]
            conn.raw.execute("DELETE FROM newsloop_schema")
            conn.raw.execute("INSERT INTO newsloop_schema (version) VALUES (%s)", (version + 1,))
        log.info("migrated feedback database %s to schema version %d", redacted(conn.raw.info.dsn), version + 1)

