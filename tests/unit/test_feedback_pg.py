"""What only the PostgreSQL backend has: its schema record, its URL in messages, replicas migrating at once."""

from __future__ import annotations

import psycopg
import pytest

from feedback.database.db import redacted
from feedback.database.schema import CURRENT_VERSION
from feedback.errors import FeedbackError
from feedback.store import FeedbackStore
from testkit.pg_cluster import Cluster
from testkit.races import at_once


def test_replicas_opening_a_new_database_at_once_migrate_it_once(pg_cluster: Cluster) -> None:
    url = pg_cluster.create_database()
    stores = at_once(4, lambda _: FeedbackStore(url))
    assert len(stores) == 4
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM newsloop_schema").fetchall() == [(CURRENT_VERSION,)]
    for store in stores:
        store.close()


def test_database_from_newer_code_is_refused(pg_cluster: Cluster) -> None:
    url = pg_cluster.create_database()
    FeedbackStore(url).close()
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE newsloop_schema SET version = 99")
    with pytest.raises(FeedbackError, match="schema version 99, newer than this code supports"):
        FeedbackStore(url)


def test_password_never_appears_in_names_or_errors(pg_cluster: Cluster) -> None:
    assert redacted("postgresql://app:s3cret@db:5432/newsloop") == "postgresql://app:***@db:5432/newsloop"
    url = f"postgresql://postgres:s3cret@127.0.0.1:{pg_cluster.port}/no_such_database"
    with pytest.raises(FeedbackError) as refused:
        FeedbackStore(url)
    assert "s3cret" not in str(refused.value) and "***" in str(refused.value)
