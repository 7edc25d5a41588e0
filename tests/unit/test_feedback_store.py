"""Tests of the feedback answer store: validation, dedupe, rate limit, undo, review, export, migration, concurrency."""

from __future__ import annotations

import csv
import json
import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from core.labels import LABELS
from core.settings.policies import StoreLimits
from core.text import text_hash
from feedback.database.schema import CURRENT_VERSION
from feedback.errors import FeedbackError, RateLimited
from feedback.export.files import export_answers
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from testkit.fakes import FixedClock
from testkit.pg_cluster import StoreFactory
from testkit.races import at_once

SURE_OF_SPORTS = {"World": 0.02, "Sports": 0.95, "Business": 0.02, "Sci/Tech": 0.01}
UNSURE = [0.3, 0.4, 0.2, 0.1]




@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db")  # each test using it runs on SQLite and on PostgreSQL


def answer(store: FeedbackStore, text: str = "Stocks rally on Wall Street", **overrides: object):
    fields = {"text": text, "user_label": "Business", "annotator": "anna", "kind": "correct"} | overrides
    return store.answers.record(AnswerInput(**fields))


# Recording and validation ---------------------------------------------------------------------------


def test_record_stores_canonical_label_hash_and_probabilities(store: FeedbackStore) -> None:
    result = answer(store, user_label="business", probabilities=UNSURE, model_version="v1")
    row = store.answers.get(result.id)
    assert result.duplicate is False and result.status == "ok"
    assert row["user_label"] == "Business"
    assert row["predicted_label"] == "Sports"  # argmax of the probabilities when not given
    assert row["probabilities"] == dict(zip(LABELS, UNSURE, strict=True))
    assert row["text_hash"] == text_hash("Stocks rally on Wall Street")
    assert row["created_at"].endswith("+00:00")


@pytest.mark.parametrize("label", ["politics", "", "7", None])
def test_unknown_label_is_refused_listing_valid_labels(store: FeedbackStore, label: object) -> None:
    with pytest.raises(FeedbackError, match="expected one of World, Sports, Business, Sci/Tech"):
        answer(store, user_label=label)
    assert store.answers.count() == 0


@pytest.mark.parametrize("text", ["", "   \n\t", "<br>"])
def test_empty_text_is_refused(store: FeedbackStore, text: str) -> None:
    with pytest.raises(FeedbackError, match="empty text"):
        answer(store, text=text)


def test_oversized_text_is_refused_with_the_limit(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db", StoreLimits(max_text_chars=100))
    with pytest.raises(FeedbackError, match="101 characters; at most 100"):
        answer(store, text="x" * 101)


def test_unknown_kind_and_empty_annotator_are_refused(store: FeedbackStore) -> None:
    with pytest.raises(FeedbackError, match="unknown kind 'flag'"):
        answer(store, kind="flag")
    with pytest.raises(FeedbackError, match="annotator id is required"):
        answer(store, annotator="  ")


def test_confirm_must_repeat_the_prediction(store: FeedbackStore) -> None:
    with pytest.raises(FeedbackError, match="confirm"):
        answer(store, kind="confirm", predicted_label="Sports", user_label="World")
    assert answer(store, kind="confirm", predicted_label="sports", user_label="Sports").status == "ok"


@pytest.mark.parametrize("probs", [[0.5, 0.5], [0.9, 0.9, 0.1, 0.1], {"World": 1.0}, ["a", 1, 2, 3]])
def test_malformed_probabilities_are_refused(store: FeedbackStore, probs: object) -> None:
    with pytest.raises(FeedbackError, match="probabilit"):
        answer(store, probabilities=probs)


def test_identical_answer_is_stored_once(store: FeedbackStore) -> None:
    first = answer(store)
    again = answer(store, text="  stocks rally on wall street ")  # same text_hash after cleaning
    assert again == type(first)(id=first.id, duplicate=True, status="ok")
    assert store.answers.count() == 1


def test_changed_mind_and_other_annotators_are_new_answers(store: FeedbackStore) -> None:
    first = answer(store)
    answer(store, user_label="World")
    answer(store, annotator="ben")
    assert store.answers.count() == 3
    # A change of mind is kept for audit, replaced: one live answer per person (tests/unit/test_feedback_replace.py).
    assert store.answers.get(first.id)["status"] == "replaced" and store.answers.count("ok") == 2


def test_identical_answer_from_racing_threads_is_stored_once(store: FeedbackStore) -> None:
    results = at_once(8, lambda _: answer(store))
    assert store.answers.count() == 1
    assert {r.id for r in results} == {results[0].id}
    assert sum(not r.duplicate for r in results) == 1


def test_rate_limit_refuses_with_seconds_to_wait(make_store: StoreFactory, tmp_path: Path) -> None:
    clock = FixedClock()
    store = make_store(tmp_path / "f.db", StoreLimits(writes_per_minute=3), clock=clock)
    for i in range(3):
        answer(store, text=f"story {i}")
        clock.now += 10
    with pytest.raises(RateLimited, match=r"at most 3 a minute; try again in 30 s") as refused:
        answer(store, text="story 3")
    assert refused.value.retry_after_s == 30
    answer(store, text="story 3", annotator="someone else")  # the limit is per annotator
    clock.now += 31  # the first answer has left the window
    answer(store, text="story 3")
    assert store.answers.count() == 5


def test_confident_model_contradicted_marks_answer_suspicious(store: FeedbackStore) -> None:
    result = answer(store, user_label="World", probabilities=SURE_OF_SPORTS)
    row = store.answers.get(result.id)
    assert result.status == row["status"] == "suspicious"
    assert row["suspicious_reason"] == "model was 95% sure of Sports"
    assert answer(store, text="another", user_label="World", probabilities=UNSURE).status == "ok"
    assert answer(store, text="third", user_label="Sports", probabilities=SURE_OF_SPORTS).status == "ok"


# Undo and review ------------------------------------------------------------------------------------


def test_undo_marks_latest_answer_undone_and_keeps_it(store: FeedbackStore) -> None:
    first = answer(store, text="first story")
    second = answer(store, text="second story")
    answer(store, text="someone else's", annotator="ben")
    undone = store.undo_last("anna")
    assert undone["id"] == second.id and undone["status"] == "undone"
    assert store.answers.get(second.id)["status"] == "undone"
    assert store.undo_last("anna")["id"] == first.id
    assert store.undo_last("anna") is None
    assert store.answers.count() == 3 and store.answers.count("undone") == 2


def test_answer_repeated_after_undo_is_stored_again(store: FeedbackStore) -> None:
    first = answer(store)
    store.undo_last("anna")
    again = answer(store)
    assert again.duplicate is False and again.id != first.id


def test_maintainer_accepts_or_rejects_suspicious_answers(store: FeedbackStore) -> None:
    suspicious = answer(store, user_label="World", probabilities=SURE_OF_SPORTS)
    assert [row["id"] for row in store.answers.rows(status="suspicious")] == [suspicious.id]
    assert store.answers.set_status(suspicious.id, "accepted")["status"] == "accepted"
    assert store.answers.rows(status="suspicious") == []
    with pytest.raises(FeedbackError, match="unknown review status"):
        store.answers.set_status(suspicious.id, "ok")
    with pytest.raises(FeedbackError, match="no answer with id 999"):
        store.answers.set_status(999, "rejected")
    store.undo_last("anna")
    with pytest.raises(FeedbackError, match="undone"):
        store.answers.set_status(suspicious.id, "rejected")


def test_stats_count_labels_kinds_statuses_and_annotators(store: FeedbackStore) -> None:
    answer(store, text="a", user_label="World")
    answer(store, text="b", user_label="Sports", annotator="ben", kind="confirm", predicted_label="Sports")
    answer(store, text="c", user_label="World")
    store.undo_last("anna")
    stats = store.stats()
    assert stats["answers"] == 3
    assert stats["by_status"]["undone"] == 1 and stats["by_status"]["ok"] == 2
    assert stats["by_label"] == {"World": 1, "Sports": 1, "Business": 0, "Sci/Tech": 0}
    assert stats["by_kind"] == {"confirm": 1, "correct": 1, "queue": 0}
    assert stats["annotators"] == 2
    assert store.answers.count_since(0) == 2


# Export and backup ----------------------------------------------------------------------------------


def test_csv_export_escapes_spreadsheet_formulas(store: FeedbackStore, tmp_path: Path) -> None:
    risky = ["=HYPERLINK('http://x','y')", "+1 shares", "-5% today", "@SUM(A1)", "\tTabbed"]
    for text in risky:
        answer(store, text=text)
    answer(store, text="plain", annotator="=cmd|' /C calc'!A0")
    out = tmp_path / "answers.csv"
    assert export_answers(store, out, "csv") == 6
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["text"] for row in rows[:5]] == ["'" + text for text in risky]
    assert rows[5]["text"] == "plain" and rows[5]["annotator"].startswith("'=")


def test_jsonl_export_has_every_answer_oldest_first(store: FeedbackStore, tmp_path: Path) -> None:
    answer(store, text="one", probabilities=UNSURE)
    answer(store, text="two")
    store.undo_last("anna")
    out = tmp_path / "answers.jsonl"
    export_answers(store, out, "jsonl")
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [row["text"] for row in rows] == ["one", "two"]
    assert rows[0]["probabilities"]["Sports"] == 0.4 and rows[1]["status"] == "undone"
    with pytest.raises(FeedbackError, match="unknown export format 'xlsx'"):
        export_answers(store, out, "xlsx")


def test_backup_is_a_complete_database(store: FeedbackStore, tmp_path: Path) -> None:
    for i in range(5):
        answer(store, text=f"story {i}")
    store.database.backup(tmp_path / "backup.db")
    assert FeedbackStore(tmp_path / "backup.db").answers.count() == 5


# Schema migration -----------------------------------------------------------------------------------

V1_SCHEMA = """
CREATE TABLE answers (
    id INTEGER PRIMARY KEY, text TEXT NOT NULL, text_hash TEXT NOT NULL, predicted_label TEXT,
    model_version TEXT, user_label TEXT NOT NULL, annotator TEXT NOT NULL, created_at TEXT NOT NULL
);
PRAGMA user_version = 1;
"""


def test_v1_database_is_migrated_in_place_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    conn.executemany(
        "INSERT INTO answers (text, text_hash, predicted_label, model_version, user_label, annotator, created_at)"
        " VALUES (?, ?, ?, 'v0', ?, 'anna', '2024-01-01T00:00:00.000000+00:00')",
        [
            ("old confirm", text_hash("old confirm"), "World", "World"),
            ("old fix", text_hash("old fix"), "World", "Sports"),
        ],
    )
    conn.commit()
    conn.close()

    store = FeedbackStore(path)
    rows = sorted(store.answers.rows(), key=lambda row: row["id"])
    assert [(r["text"], r["kind"], r["status"], r["probabilities"]) for r in rows] == [
        ("old confirm", "confirm", "ok", None),
        ("old fix", "correct", "ok", None),
    ]
    assert all(r["verified"] == 0 and r["address"] is None for r in rows)  # v4: nobody vouched for them
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION
    assert answer(store, text="old fix", user_label="Sports").duplicate is True
    store.pool.add(["a new pool item"], source="test")  # the v2 tables exist
    store.pool.add(["a known-answer check"], source="test", labels=["World"])  # and v3's column
    assert store.pool.gold_labels() == {text_hash("a known-answer check"): "World"}
    assert store.answers.count() == 2


def test_database_from_newer_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(FeedbackError, match="schema version 99, newer than this code supports"):
        FeedbackStore(path)


# Concurrency ----------------------------------------------------------------------------------------


def test_eight_threads_of_200_writes_lose_and_double_nothing(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db", StoreLimits(writes_per_minute=10_000))
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(200):
                answer(store, text=f"thread {worker} story {i}", annotator=f"thread-{worker}", user_label=LABELS[i % 4])
        except BaseException as exc:  # reported below: a thread's exception would otherwise vanish
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    texts = [row["text"] for row in store.answers.rows()]
    assert len(texts) == 1600 and len(set(texts)) == 1600


def _write_from_process(db_path: str, worker: int, count: int) -> None:
    # Each process opens the store itself, so they also race on creating and migrating the database.
    store = FeedbackStore(db_path, StoreLimits(writes_per_minute=10_000))  # a file path or a postgresql:// URL
    for i in range(count):
        store.answers.record(AnswerInput(
            text=f"process {worker} story {i}", user_label=LABELS[i % 4], annotator=f"p{worker}", kind="correct"
        ))


def test_four_processes_of_100_writes_lose_and_double_nothing(make_store: StoreFactory, tmp_path: Path) -> None:
    path = make_store.location(tmp_path / "f.db")
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_write_from_process, args=(str(path), worker, 100)) for worker in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    texts = [row["text"] for row in make_store(tmp_path / "f.db").answers.rows()]
    assert len(texts) == 400 and len(set(texts)) == 400
