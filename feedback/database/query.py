"""Small helpers every feedback module uses to run SQLAlchemy Core statements on either backend."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from feedback.errors import FeedbackError


def rows(conn: sa.Connection, statement: sa.Executable) -> list[dict[str, Any]]:
    """Every row of `statement` as a dict (column name -> value)."""
    return [dict(row) for row in conn.execute(statement).mappings()]


def first(conn: sa.Connection, statement: sa.Executable) -> dict[str, Any] | None:
    """The first row of `statement` as a dict, or None."""
    row = conn.execute(statement).mappings().first()
    return dict(row) if row is not None else None


def count(conn: sa.Connection, statement: sa.Executable) -> int:
    """The one number `statement` selects."""
    return int(conn.execute(statement).scalar_one() or 0)


def insert_on_conflict(conn: sa.Connection, table: sa.Table) -> sqlite.Insert | postgresql.Insert:
    """An INSERT into `table` that can say ON CONFLICT (`on_conflict_do_nothing`, `on_conflict_do_update`): the
    two backends' constructs share those methods and compile them to the same clause."""
    return sqlite.insert(table) if conn.dialect.name == "sqlite" else postgresql.insert(table)


def inserted_id(conn: sa.Connection, statement: sa.Insert) -> int:
    """Run a one-row INSERT and return the row's new id."""
    key = conn.execute(statement).inserted_primary_key
    if key is None:
        raise FeedbackError("the database returned no id for a new row")
    return int(key[0])
