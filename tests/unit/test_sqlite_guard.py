"""The process keeps its SQLite locks: nothing outside SQLite may open a live database's files."""

from __future__ import annotations

import gc
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.storage.sqlite_guard import LiveDatabaseFile, is_live
from feedback.errors import FeedbackError
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore


def held_locks(path: Path) -> set[str]:
    """Which of the database's files this process holds a POSIX lock on (from /proc/locks)."""
    inodes = {os.stat(f).st_ino: f.name for f in path.parent.glob(path.name + "*")}
    held = set()
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()
        if parts[1] == "POSIX" and parts[4] == str(os.getpid()):
            inode = int(parts[5].rsplit(":", 1)[1])
            if inode in inodes:
                held.add(inodes[inode])
    return held


def descriptor_of(path: Path) -> str:
    """A /proc/self/fd link to the database that SQLite holds open."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path.resolve()):
                return f"/proc/self/fd/{fd}"
        except OSError:
            continue
    raise AssertionError("SQLite holds no descriptor of the database")


def test_going_around_sqlite_is_refused_and_the_locks_stay(tmp_path: Path) -> None:
    db = tmp_path / "feedback.db"
    store = FeedbackStore(db)
    store.answers.record(AnswerInput(text="Markets rallied", user_label="Business", annotator="anna", kind="correct"))
    assert held_locks(db) == {"feedback.db", "feedback.db-shm"}
    attempts = {
        "read": lambda: db.read_bytes(),
        "hash the -shm": lambda: open(str(db) + "-shm", "rb").close(),
        "through a /proc link": lambda: open(descriptor_of(db), "rb").close(),
        "a path with ..": lambda: open(tmp_path / ".." / tmp_path.name / "feedback.db", "rb").close(),
        "os.open": lambda: os.close(os.open(db, os.O_RDONLY)),
        "copy": lambda: shutil.copyfile(db, tmp_path / "copy.db"),
        "pathlib": lambda: (tmp_path / "feedback.db-wal").open("rb").close(),
    }
    for name, attempt in attempts.items():
        with pytest.raises(LiveDatabaseFile, match="live SQLite database"):
            attempt()
        assert held_locks(db) == {"feedback.db", "feedback.db-shm"}, name
    with pytest.raises(FeedbackError, match="live database's file"):
        store.database.backup(Path(str(db) + "-shm"))
    assert not (tmp_path / "copy.db").exists()
    store.database.backup(tmp_path / "backup.db")  # SQLite's backup API is the way to copy it
    assert sqlite3.connect(tmp_path / "backup.db").execute("SELECT COUNT(*) FROM answers").fetchone() == (1,)

    # Another process reads, checkpoints and closes: it is not the last user, so nothing is deleted.
    other = textwrap.dedent(f"""
        import sqlite3
        conn = sqlite3.connect({str(db)!r})
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    """)
    subprocess.run([sys.executable, "-c", other], check=True, timeout=60)
    assert Path(str(db) + "-shm").exists()
    store.answers.record(AnswerInput(text="Cup final tonight", user_label="Sports", annotator="anna", kind="correct"))
    assert store.answers.count() == 2

    del store
    gc.collect()
    assert not is_live(db)
    assert db.read_bytes().startswith(b"SQLite format 3")  # closed: an ordinary file again


def test_two_stores_on_one_file_keep_it_guarded_until_both_are_gone(tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    first, second = FeedbackStore(db), FeedbackStore(db)
    del first
    gc.collect()
    assert is_live(db)
    with pytest.raises(LiveDatabaseFile):
        db.read_bytes()
    del second
    gc.collect()
    assert not is_live(db) and not is_live(str(db) + "-wal")
