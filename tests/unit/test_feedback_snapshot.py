"""Tests of the retrain's view of feedback: database backups, and trusted answers split into train and holdout."""

from __future__ import annotations

from pathlib import Path

from core.data import Example, split_by_hash
from core.labels import LABELS, label_index
from core.settings.policies import StoreLimits, TrustPolicy
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.training.snapshot import FeedbackSplit, backup_database, trusted_split
from testkit.pg_cluster import StoreFactory


def filled_store(path: Path | str, texts: int) -> FeedbackStore:
    store = FeedbackStore(path, StoreLimits(writes_per_minute=10_000))
    for i in range(texts):
        store.answers.record(AnswerInput(text=f"story number {i}", user_label=LABELS[i % 4], annotator="anna", kind="correct"))
    return store


def test_backup_copies_the_database_and_keeps_the_newest_copies(tmp_path: Path) -> None:
    db = tmp_path / "feedback.db"
    assert backup_database(db, tmp_path / "backups") is None  # nothing to back up yet
    filled_store(db, 3).close()
    copies = [backup_database(db, tmp_path / "backups", keep=2) for _ in range(3)]
    assert all(copy is not None and copy.name.startswith("feedback-") for copy in copies)
    # Names sort by the second they were taken in; within one second the suffix only keeps them apart.
    kept = list((tmp_path / "backups").iterdir())
    assert len(kept) == 2 and set(kept) <= set(copies)
    assert all(FeedbackStore(copy).answers.count() == 3 for copy in kept)


def test_backup_of_either_backend_is_a_sqlite_file_the_retrain_reads(make_store: StoreFactory, tmp_path: Path) -> None:
    location = make_store.location(tmp_path / "feedback.db")
    filled_store(location, 5).close()
    copy = backup_database(location, tmp_path / "backups")
    assert copy is not None and copy.read_bytes().startswith(b"SQLite format 3")
    assert trusted_split(copy, TrustPolicy(), 0.25).last_answer_id == 5


def test_trusted_split_is_the_salted_hash_split_of_the_trusted_answers(tmp_path: Path) -> None:
    assert trusted_split(None, TrustPolicy(), 0.25) == FeedbackSplit(train=[], holdout=[], last_answer_id=0)
    db = tmp_path / "feedback.db"
    store = filled_store(db, 40)
    rejected = store.answers.record(AnswerInput(text="withdrawn story", user_label="World", annotator="ben", kind="correct"))
    store.answers.set_status(rejected.id, "rejected")
    split = trusted_split(db, TrustPolicy(), 0.25)
    assert split.last_answer_id == rejected.id
    expected = [Example(f"story number {i}", label_index(LABELS[i % 4])) for i in range(40)]
    assert (split.train, split.holdout) == split_by_hash(expected, 0.25, salt="feedback-holdout")
    assert split.train and split.holdout
    assert trusted_split(db, TrustPolicy(labels_required=2), 0.25).train == []
