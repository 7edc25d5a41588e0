"""One migration history for both backends: the tables the queries use are the ones the steps build, and
databases made by earlier releases (the old SQLite-only runner's DDL) open, upgrade and read back whole."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from core.settings.policies import QueuePolicy
from core.text import text_hash
from feedback.database.schema import CURRENT_VERSION
from feedback.database.shared_state import SharedMap
from feedback.database.tables import metadata
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from testkit.pg_cluster import StoreFactory
from tests.legacy_feedback_schema import STEPS, legacy_database

NOW = "2026-01-02T03:04:05.000006+00:00"


# Tables of steps written after the old runner was retired (schema version 9 on): it never built them.
SINCE_THE_OLD_RUNNER = {"served_tallies", "reservations", "label_searches", "label_candidates", "label_fixes",
                        "taxonomy_versions", "unlisted", "golden", "maintained"}
COLUMNS_SINCE_THE_OLD_RUNNER = {("answers", "taxonomy_version"),
                                *(("pool", c) for c in ("top_key", "top_prob", "probabilities", "focus", "pushed",
                                                        "pushed_by", "pushed_at"))}


def _every_row(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the old runner's tables, less the columns added to them since (their values are NULL)."""
    with sqlite3.connect(path) as conn:
        out = {}
        for table in metadata.tables:
            if table in SINCE_THE_OLD_RUNNER:
                continue
            kept = [c.name for c in metadata.tables[table].columns if (table, c.name) not in COLUMNS_SINCE_THE_OLD_RUNNER]
            out[table] = conn.execute(f"SELECT {', '.join(kept)} FROM {table} ORDER BY 1, 2").fetchall()
        return out


def _layout(path: Path) -> dict[str, object]:
    """Per table: columns (name, type affinity, not null, default, key position), indexes and their columns."""
    with sqlite3.connect(path) as conn:
        layout: dict[str, object] = {}
        for table in metadata.tables:
            # DOUBLE and REAL have the same (REAL) affinity; a rowid alias (INTEGER key) is never NULL either way.
            columns = [(name, kind.replace("DOUBLE", "REAL"), notnull or (kind == "INTEGER" and pk == 1), default, pk)
                       for _, name, kind, notnull, default, pk in conn.execute(f"PRAGMA table_info({table})")
                       if (table, name) not in COLUMNS_SINCE_THE_OLD_RUNNER]
            indexes = {row[1]: ([c[2] for c in conn.execute(f"PRAGMA index_info('{row[1]}')")], row[2])
                       for row in conn.execute(f"PRAGMA index_list({table})") if not row[1].startswith("sqlite_")}
            foreign = [row[2:5] for row in conn.execute(f"PRAGMA foreign_key_list({table})")]
            layout[table] = (columns, indexes, foreign)
        return layout


def test_a_new_database_has_the_layout_the_old_runner_built(tmp_path: Path) -> None:
    legacy_database(tmp_path / "old.db").close()
    FeedbackStore(tmp_path / "new.db").close()
    new, old = _layout(tmp_path / "new.db"), _layout(tmp_path / "old.db")
    assert all(new[table] != ([], {}, []) and old[table] == ([], {}, []) for table in SINCE_THE_OLD_RUNNER)
    assert {t: v for t, v in new.items() if t not in SINCE_THE_OLD_RUNNER} == \
        {t: v for t, v in old.items() if t not in SINCE_THE_OLD_RUNNER}


def test_tables_declared_for_queries_are_the_tables_the_migrations_build(make_store: StoreFactory,
                                                                          tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    with store.database.read() as conn:
        inspector = sa.inspect(conn)
        for table in metadata.sorted_tables:
            built = {column["name"]: column["nullable"] for column in inspector.get_columns(table.name)}
            assert built == {column.name: column.nullable for column in table.columns}, table.name


def _fill_legacy(conn: sqlite3.Connection) -> None:
    probabilities = json.dumps({"World": 0.7, "Sports": 0.1, "Business": 0.1, "Sci/Tech": 0.1})
    answers = [
        ("a world story", "World", "World", "confirm", "ok", None, 1, "addr1", "user:ann", probabilities, None),
        ("a queue story", None, "Sports", "queue", "accepted", None, 0, None, "anon:bob", None, 1),
        ("a sure story", "World", "Business", "correct", "suspicious", "model was 97% sure of World", 0, "addr2",
         "anon:cy", probabilities, None),
        ("an undone story", "World", "Sports", "correct", "undone", None, 0, None, "anon:bob", None, None),
        ("a replaced story", "World", "Sports", "correct", "replaced", None, 0, None, "anon:bob", None, None),
        ("a rejected story", "World", "Sports", "correct", "rejected", None, 0, None, "anon:bob", None, None),
    ]
    conn.execute("BEGIN")
    conn.execute("INSERT INTO pool (text, text_hash, source, added_at, uncertainty, scored_by, gold_label, held_by, "
                 "held_reason, traffic) VALUES ('a queue story', ?, 'file', ?, 0.8125, 'v1', NULL, NULL, NULL, 0)",
                 (text_hash("a queue story"), NOW))
    conn.execute("INSERT INTO pool (text, text_hash, source, added_at, gold_label, held_by, held_reason) "
                 "VALUES ('a check story', ?, 'checks', ?, 'World', 'anon:x', 'why')", (text_hash("a check story"), NOW))
    for text, predicted, label, kind, status, reason, verified, address, who, probs, item in answers:
        conn.execute(
            "INSERT INTO answers (text, text_hash, predicted_label, model_version, user_label, annotator, created_at, "
            "probabilities, kind, item_id, status, suspicious_reason, verified, address) "
            "VALUES (?, ?, ?, 'v1', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (text, text_hash(text), predicted, label, who, NOW, probs, kind, item, status, reason, verified, address))
    conn.execute("INSERT INTO skips VALUES ('anon:bob', 2, ?)", (NOW,))
    conn.execute("INSERT INTO rate_hits VALUES ('classify', 'client', 1800000000.25)")
    conn.execute("INSERT INTO sessions VALUES ('queue_item', 'session-a', '{\"id\": 1}', 4000000000.5)")
    conn.execute("INSERT INTO guidelines (text, saved_at, saved_by) VALUES ('Label the subject.\n', ?, 'admin')", (NOW,))
    conn.execute("COMMIT")


def test_a_database_made_by_the_old_runner_opens_and_reads_back_every_row(tmp_path: Path) -> None:
    path = tmp_path / "feedback.db"
    conn = legacy_database(path)
    _fill_legacy(conn)
    conn.close()
    before = _every_row(path)
    assert all(before.values())  # every table has rows

    store = FeedbackStore(path)
    assert _every_row(path) == before  # opening changed nothing
    answers = sorted(store.answers.rows(), key=lambda row: row["id"])
    assert [(row["text"], row["status"], row["kind"], row["verified"], row["address"]) for row in answers] == [
        (row[1], row[11], row[9], row[13], row[14]) for row in before["answers"]]
    assert answers[0]["probabilities"] == {"World": 0.7, "Sports": 0.1, "Business": 0.1, "Sci/Tech": 0.1}
    assert store.stats()["by_status"] == {"ok": 1, "suspicious": 1, "accepted": 1, "rejected": 1, "undone": 1,
                                          "replaced": 1}
    assert store.pool.gold_labels() == {text_hash("a check story"): "World"}
    assert [item["text"] for item in store.pool.held()] == []  # nobody answered the held check: nothing to show
    assert store.guidelines.current().text == "Label the subject.\n" and store.guidelines.current().version == 1
    assert SharedMap(store.database, "queue_item").get("session-a") == {"id": 1}
    assert store.pool.progress("anon:bob") == 1 and store.pool.queue_left("anon:bob", QueuePolicy()) == 0
    assert store.answers.record(AnswerInput(text="a new story", user_label="World", annotator="anon:new", kind="correct")).id == 7
    with sqlite3.connect(path) as check:
        # Every step the new runner added after the old one's last (max(STEPS)) was applied on top.
        assert check.execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION > max(STEPS)


@pytest.mark.parametrize("version", range(1, max(STEPS) + 1))
def test_every_older_version_upgrades_to_the_current_layout(tmp_path: Path, version: int) -> None:
    legacy_database(tmp_path / "old.db", version).close()
    FeedbackStore(tmp_path / "old.db").close()
    FeedbackStore(tmp_path / "current.db").close()
    assert _layout(tmp_path / "old.db") == _layout(tmp_path / "current.db")


def test_a_new_database_is_created_in_one_line_and_an_upgrade_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A brand-new database used to log eight "migrated ... from schema version N to N+1" lines, one per step.
    caplog.set_level(logging.INFO, logger="feedback.database.schema")  # Alembic's own lines: quieted at the edges
    FeedbackStore(tmp_path / "new.db").close()
    assert [r.getMessage() for r in caplog.records if r.name == "feedback.database.schema"] == [
        f"created the feedback database {tmp_path / 'new.db'} at schema version {CURRENT_VERSION}"]
    caplog.clear()
    FeedbackStore(tmp_path / "new.db").close()  # already current: nothing to say
    assert [r for r in caplog.records if r.name == "feedback.database.schema"] == []
    legacy_database(tmp_path / "old.db", 2).close()
    FeedbackStore(tmp_path / "old.db").close()
    assert [r.getMessage() for r in caplog.records if r.name == "feedback.database.schema"] == [
        f"upgraded the feedback database {tmp_path / 'old.db'} from schema version 2 to {CURRENT_VERSION}"]
