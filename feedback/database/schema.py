"""The feedback database's one migration history, for SQLite and PostgreSQL alike: an ordered list of steps.

Each step is written with Alembic's operations (`op.create_table`, `op.add_column`, ...), which compile the same
step into each backend's DDL, and SQLAlchemy expressions for data changes, so no SQL text differs between
backends. One runner applies them, one transaction per step, under the database's migrate lock (SQLite's
BEGIN IMMEDIATE; a PostgreSQL advisory lock), so replicas opening an old database at once migrate it once.

Why not Alembic's revision scripts: the steps predate it and databases in use record their version where the
first runner put it (SQLite's `user_version` header field, PostgreSQL's one-row `newsloop_schema` table);
keeping those records lets every existing database upgrade in place, with no stamping and no second history.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import sqlalchemy as sa

from feedback.errors import FeedbackError

if TYPE_CHECKING:
    from alembic.operations import Operations

log = logging.getLogger(__name__)

# Frozen column types of the steps (`feedback.database.tables` declares the tables with the same ones).
# SQLite's rowid alias (INTEGER PRIMARY KEY) on SQLite, a 64-bit identity column on PostgreSQL.
ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# 8-byte floats on both (PostgreSQL's REAL would be 4 bytes).
FLOAT8: sa.types.TypeEngine[float] = sa.Double()
Step = Callable[["Operations"], None]


def _id() -> sa.Column[int]:
    return sa.Column("id", ROW_ID, sa.Identity(), primary_key=True)


def _text(name: str, *, required: bool = False) -> sa.Column[str]:
    return sa.Column(name, sa.Text, nullable=not required)


def _v1(op: Operations) -> None:
    """The original layout: answers without probabilities, kind, status or queue tables."""
    op.create_table(
        "answers", _id(), _text("text", required=True), _text("text_hash", required=True), _text("predicted_label"),
        _text("model_version"), _text("user_label", required=True), _text("annotator", required=True),
        _text("created_at", required=True),
    )
    op.create_index("answers_annotator_created", "answers", ["annotator", "created_at"])


def _v2(op: Operations) -> None:
    """Model probabilities, the answer kind, review status and the labelling queue."""
    op.add_column("answers", _text("probabilities"))
    op.add_column("answers", sa.Column("kind", sa.Text, nullable=False, server_default="correct"))
    op.add_column("answers", sa.Column("item_id", sa.Integer))
    op.add_column("answers", sa.Column("status", sa.Text, nullable=False, server_default="ok"))
    op.add_column("answers", _text("suspicious_reason"))
    a = sa.table("answers", sa.column("kind"), sa.column("predicted_label"), sa.column("user_label"))
    op.execute(a.update().where(a.c.predicted_label.is_not(None), a.c.user_label == a.c.predicted_label)
               .values(kind="confirm"))
    op.create_index("answers_text_hash", "answers", ["text_hash", "status"])
    op.create_index("answers_dedupe", "answers", ["annotator", "text_hash", "user_label"])
    op.create_table(
        "pool", _id(), _text("text", required=True), sa.Column("text_hash", sa.Text, nullable=False, unique=True),
        _text("source"), _text("added_at", required=True), sa.Column("uncertainty", FLOAT8), _text("scored_by"),
    )
    op.create_index("pool_uncertainty", "pool", ["uncertainty"])
    op.create_table(
        "skips", _text("annotator", required=True),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("pool.id"), nullable=False), _text("skipped_at", required=True),
        sa.PrimaryKeyConstraint("annotator", "item_id"),
    )


def _v3(op: Operations) -> None:
    """Known-answer checks: pool items with a label a maintainer vouches for."""
    op.add_column("pool", _text("gold_label"))


def _v4(op: Operations) -> None:
    """Who vouches for an answer: whether the host signed its annotator in, and a keyed hash of the client
    address, so trust can count people and addresses rather than self-minted ids."""
    op.add_column("answers", sa.Column("verified", sa.Integer, nullable=False, server_default=sa.text("0")))
    op.add_column("answers", _text("address"))
    a = sa.table("answers", sa.column("verified"), sa.column("annotator"))
    op.execute(a.update().where(a.c.annotator.like("user:%")).values(verified=1))
    op.create_index("answers_address_created", "answers", ["address", "created_at"])


def _v5(op: Operations) -> None:
    """The web state replicas share (`feedback.database.shared_state`): rate-limit hits, and per-browser records with an
    expiry (admin sessions, the queue item a browser was given)."""
    op.create_table("rate_hits", _text("bucket", required=True), _text("key", required=True),
                    sa.Column("at", FLOAT8, nullable=False))
    op.create_index("rate_hits_key_at", "rate_hits", ["bucket", "key", "at"])
    op.create_table(
        "sessions", _text("kind", required=True), _text("key", required=True), _text("value"),
        sa.Column("expires_at", FLOAT8, nullable=False), sa.PrimaryKeyConstraint("kind", "key"),
    )


def _v6(op: Operations) -> None:
    """The labelling guidelines a maintainer writes (`feedback.labelling.guidelines`): every saved version with its time."""
    op.create_table("guidelines", _id(), _text("text", required=True), _text("saved_at", required=True),
                    _text("saved_by"))


def _v7(op: Operations) -> None:
    """Pool items held back from the queue until a maintainer accepts an answer on their text (`held_by`: who
    brought them in; `held_reason`: why they wait)."""
    op.add_column("pool", _text("held_by"))
    op.add_column("pool", _text("held_reason"))


def _v8(op: Operations) -> None:
    """The traffic set (`feedback.traffic.traffic_set`): NULL until the queue first draws the item; items already answered
    may have been trained on, so they are marked 0 (not traffic) now."""
    op.add_column("pool", sa.Column("traffic", sa.Integer))
    p = sa.table("pool", sa.column("traffic"), sa.column("text_hash"))
    a = sa.table("answers", sa.column("text_hash"))
    op.execute(p.update().where(sa.exists().where(a.c.text_hash == p.c.text_hash)).values(traffic=0))


def _v9(op: Operations) -> None:
    """What was served (`feedback.traffic.served`): each server's tally of the champion's calibrated probabilities per UTC
    day, input form and model version, one row per writing process (summed when read), no text kept."""
    op.create_table(
        "served_tallies", _text("day", required=True), _text("form", required=True),
        _text("model_version", required=True), _text("writer", required=True),
        sa.Column("n", sa.Integer, nullable=False), sa.Column("confidence_sum", FLOAT8, nullable=False),
        sa.Column("variance_sum", FLOAT8, nullable=False), _text("confusion", required=True),
        _text("confidence_counts", required=True), _text("updated_at", required=True),
        sa.PrimaryKeyConstraint("day", "form", "model_version", "writer"),
    )


def _v10(op: Operations) -> None:
    """Queue items held for a tab (`feedback.labelling.reservations`): who holds each and until when, so every
    replica hands a tab only items no other tab holds while others remain. One row per item and holder."""
    op.create_table(
        "reservations", sa.Column("item_id", sa.Integer, nullable=False), _text("holder", required=True),
        sa.Column("expires_at", FLOAT8, nullable=False), sa.PrimaryKeyConstraint("item_id", "holder"),
    )
    op.create_index("reservations_expires", "reservations", ["expires_at"])


def _v11(op: Operations) -> None:
    """Possible label errors (`feedback.trust.label_errors`): each search (when, how many rows, with which model), the
    candidates it found (a base row, named by its file and row, or a trusted answer's text), and every decision a
    maintainer made on one (relabel, keep or exclude from training; who, when, the label before and after), kept
    when undone."""
    op.create_table(
        "label_searches", _text("search_id", required=True), _text("created_at", required=True),
        sa.Column("rows", sa.Integer, nullable=False), sa.Column("candidates", sa.Integer, nullable=False),
        _text("model"), sa.PrimaryKeyConstraint("search_id"),
    )
    op.create_table(
        "label_candidates", _id(), _text("search_id", required=True), _text("source", required=True),
        _text("text_hash", required=True), _text("origin", required=True), _text("text", required=True),
        _text("given_label", required=True), _text("suggested_label", required=True),
        sa.Column("probability", FLOAT8, nullable=False), sa.Column("rank", sa.Integer, nullable=False),
        _text("created_at", required=True),
    )
    op.create_index("label_candidates_search", "label_candidates", ["search_id", "rank"])
    op.create_table(
        "label_fixes", _id(), sa.Column("candidate_id", sa.Integer), _text("source", required=True),
        _text("text_hash", required=True), _text("text", required=True), _text("action", required=True),
        _text("label_before", required=True), _text("label_after"), _text("decided_by", required=True),
        _text("decided_at", required=True), _text("undone_at"), _text("undone_by"),
    )
    op.create_index("label_fixes_row", "label_fixes", ["source", "text_hash"])


def _v12(op: Operations) -> None:
    """Topics as data (`feedback.topics.store`): every version of the taxonomy (its topics, the change that made
    it, who, when and why), and the taxonomy version each answer was given under, so that an answer given before
    a merge or a split reads as what it means now. Answers given before this step were under version 1."""
    op.create_table(
        "taxonomy_versions", sa.Column("version", sa.Integer, nullable=False), _text("topics", required=True),
        _text("change", required=True), _text("created_by"), _text("created_at", required=True), _text("why"),
        sa.PrimaryKeyConstraint("version"),
    )
    op.add_column("answers", sa.Column("taxonomy_version", sa.Integer))


def _v13(op: Operations) -> None:
    """A queue that finds a new topic (`feedback.labelling.focus`): the scoring model's likeliest topic, its
    probability and all its probabilities per item; how informative an item is for the topic being taught (NULL:
    not at all); and a maintainer's search that pushes items to the front (its score, who, when)."""
    op.add_column("pool", _text("top_key"))
    op.add_column("pool", sa.Column("top_prob", FLOAT8))
    op.add_column("pool", _text("probabilities"))
    op.add_column("pool", sa.Column("focus", FLOAT8))
    op.add_column("pool", sa.Column("pushed", FLOAT8))
    op.add_column("pool", _text("pushed_by"))
    op.add_column("pool", _text("pushed_at"))


def _v14(op: Operations) -> None:
    """Answers that no topic fits (`feedback.topics.unlisted`): a labeller's "None of these", with the topic they
    think is missing if they named one. Kept apart from `answers`, which training, agreement and trust read: "no
    topic" never trains as a topic. A maintainer places a group of them in a new topic (`status` 'placed',
    `topic_key`), which copies them into `answers`, or dismisses them."""
    op.create_table(
        "unlisted", _id(), _text("text", required=True), _text("text_hash", required=True),
        _text("annotator", required=True), _text("address"),
        sa.Column("verified", sa.Integer, nullable=False, server_default=sa.text("0")),
        _text("kind", required=True), sa.Column("item_id", sa.Integer), _text("name"), _text("predicted_label"),
        _text("model_version"), sa.Column("taxonomy_version", sa.Integer), _text("created_at", required=True),
        sa.Column("status", sa.Text, nullable=False, server_default="ok"), _text("topic_key"), _text("decided_by"),
        _text("decided_at"),
    )
    op.create_index("unlisted_annotator_created", "unlisted", ["annotator", "created_at"])
    op.create_index("unlisted_address_created", "unlisted", ["address", "created_at"])
    op.create_index("unlisted_text_hash", "unlisted", ["text_hash", "annotator"])


def _v15(op: Operations) -> None:
    """A label-error search names what it read (`retrain.label_errors`): its data in words (the seed set in place of
    an unreachable hub dataset says so), and the topics it left out (too few labelled rows to judge or suggest)."""
    op.add_column("label_searches", _text("data"))
    op.add_column("label_searches", _text("left_out"))


def _v16(op: Operations) -> None:
    """The golden set (`feedback.evaluation.golden`): a newsroom's own labelled articles that judge models and are
    never trained on; one label per text, the topic key under the taxonomy version it was given in."""
    op.create_table(
        "golden", _id(), _text("text", required=True), _text("text_hash", required=True), _text("label", required=True),
        sa.Column("taxonomy_version", sa.Integer, nullable=False), _text("source"), _text("added_by"),
        _text("added_at", required=True),
    )
    op.create_index("golden_text_hash", "golden", ["text_hash"], unique=True)
    # What a maintainer set on the admin page over a setting's default (the queue's traffic share), for every replica.
    op.create_table("maintained", sa.Column("key", sa.Text, primary_key=True), _text("value", required=True),
                    _text("set_by"), _text("set_at", required=True))


# MIGRATIONS[n] turns a version n-1 database into version n. Append only; never edit a released step.
MIGRATIONS: dict[int, Step] = {1: _v1, 2: _v2, 3: _v3, 4: _v4, 5: _v5, 6: _v6, 7: _v7, 8: _v8, 9: _v9, 10: _v10,
                             11: _v11, 12: _v12, 13: _v13, 14: _v14, 15: _v15, 16: _v16}
CURRENT_VERSION = max(MIGRATIONS)

# Where PostgreSQL keeps the version (SQLite keeps it in its header: `PRAGMA user_version`).
_pg_version = sa.Table("newsloop_schema", sa.MetaData(), sa.Column("version", sa.Integer, nullable=False))


def schema_version(conn: sa.Connection) -> int:
    """The database's schema version (0: a new database)."""
    if conn.dialect.name == "sqlite":
        return int(conn.exec_driver_sql("PRAGMA user_version").scalar_one())
    _pg_version.create(conn, checkfirst=True)
    return int(conn.execute(sa.select(_pg_version.c.version)).scalar() or 0)


def _record_version(conn: sa.Connection, version: int) -> None:
    if conn.dialect.name == "sqlite":
        # user_version lives in the database header, so it commits or rolls back with the step.
        conn.exec_driver_sql(f"PRAGMA user_version = {int(version)}")
    else:
        conn.execute(sa.delete(_pg_version))
        conn.execute(sa.insert(_pg_version).values(version=version))


class Migratable(Protocol):
    """What the runner needs of a database (`feedback.database.db.Database`): its name and a schema-locked transaction."""

    path: Path | str

    def write(self, *, migrating: bool) -> contextlib.AbstractContextManager[sa.Connection]: ...


def migrate(db: Migratable) -> int:
    """Bring the database to CURRENT_VERSION, one transaction per step; returns the final version.

    Each step re-reads the version under the migrate lock, so several processes opening an old database at
    once migrate it exactly once. What this process did is logged once, at the end: a new database was created,
    or an old one upgraded from one version to another (one line, not one per step).
    """
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    started_at: int | None = None  # the version before the first step this process applied
    while True:
        with db.write(migrating=True) as conn:
            version = schema_version(conn)
            if version > CURRENT_VERSION:
                raise FeedbackError(
                    f"feedback database has schema version {version}, newer than this code supports "
                    f"({CURRENT_VERSION}); upgrade NewsLoop"
                )
            if version == CURRENT_VERSION:
                break
            MIGRATIONS[version + 1](Operations(MigrationContext.configure(connection=conn)))
            _record_version(conn, version + 1)
        started_at = version if started_at is None else started_at
    if started_at == 0:
        log.info("created the feedback database %s at schema version %d", db.path, version)
    elif started_at is not None:
        log.info("upgraded the feedback database %s from schema version %d to %d", db.path, started_at, version)
    return version
