"""The feedback schema as the SQLite-only migration runner before SQLAlchemy wrote it (feedback/database/schema.py at
commit d4671e1): its DDL verbatim, applied the way that runner applied it. Tests build databases from it to
check that databases made by earlier releases open and upgrade without loss."""

from __future__ import annotations

import sqlite3
from pathlib import Path

_V1 = """
CREATE TABLE answers (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    predicted_label TEXT,
    model_version TEXT,
    user_label TEXT NOT NULL,
    annotator TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX answers_annotator_created ON answers (annotator, created_at);
"""

# Version 2 adds model probabilities, the answer kind, review status and the labelling queue.
_V2 = """
ALTER TABLE answers ADD COLUMN probabilities TEXT;
ALTER TABLE answers ADD COLUMN kind TEXT NOT NULL DEFAULT 'correct';
ALTER TABLE answers ADD COLUMN item_id INTEGER;
ALTER TABLE answers ADD COLUMN status TEXT NOT NULL DEFAULT 'ok';
ALTER TABLE answers ADD COLUMN suspicious_reason TEXT;
UPDATE answers SET kind = 'confirm' WHERE predicted_label IS NOT NULL AND user_label = predicted_label;
CREATE INDEX answers_text_hash ON answers (text_hash, status);
CREATE INDEX answers_dedupe ON answers (annotator, text_hash, user_label);
CREATE TABLE pool (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL,
    text_hash TEXT NOT NULL UNIQUE,
    source TEXT,
    added_at TEXT NOT NULL,
    uncertainty REAL,
    scored_by TEXT
);
CREATE INDEX pool_uncertainty ON pool (uncertainty);
CREATE TABLE skips (
    annotator TEXT NOT NULL,
    item_id INTEGER NOT NULL REFERENCES pool (id),
    skipped_at TEXT NOT NULL,
    PRIMARY KEY (annotator, item_id)
);
"""


# Version 3 adds known-answer checks: pool items with a label a maintainer vouches for.
_V3 = """
ALTER TABLE pool ADD COLUMN gold_label TEXT;
"""


# Version 4 records who vouches for an answer: whether its annotator was signed in by the host, and a keyed
# hash of the client address, so trust can count people and addresses rather than self-minted ids.
_V4 = """
ALTER TABLE answers ADD COLUMN verified INTEGER NOT NULL DEFAULT 0;
ALTER TABLE answers ADD COLUMN address TEXT;
UPDATE answers SET verified = 1 WHERE annotator LIKE 'user:%';
CREATE INDEX answers_address_created ON answers (address, created_at);
"""


# Version 5 keeps the web state replicas share (`feedback.database.shared_state`): rate-limit hits, and per-browser
# records with an expiry (admin sessions, the queue item a browser was given).
_V5 = """
CREATE TABLE rate_hits (bucket TEXT NOT NULL, key TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX rate_hits_key_at ON rate_hits (bucket, key, at);
CREATE TABLE sessions (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT,
    expires_at REAL NOT NULL,
    PRIMARY KEY (kind, key)
);
"""


# Version 6 keeps the labelling guidelines a maintainer writes in the admin view (`feedback.labelling.guidelines`): every
# saved version with its time, so an answer can be read beside the guidelines in force when it was given.
_V6 = """
CREATE TABLE guidelines (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL,
    saved_at TEXT NOT NULL,
    saved_by TEXT
);
"""


# Version 7 holds pool items back from the labelling queue until a maintainer accepts an answer on their text:
# corrections that visitors the host did not sign in brought in (`held_by`: who; `held_reason`: why it waits).
_V7 = """
ALTER TABLE pool ADD COLUMN held_by TEXT;
ALTER TABLE pool ADD COLUMN held_reason TEXT
"""


# Version 8 marks the traffic set (`feedback.labelling.pool`): pool items kept out of the uncertainty order, offered at
# random, whose labels only judge challengers. NULL until the queue first sees the item and draws it; items
# already answered before this version may have been trained on, so they are marked 0 (not traffic) now.
_V8 = """
ALTER TABLE pool ADD COLUMN traffic INTEGER;
UPDATE pool SET traffic = 0 WHERE EXISTS (SELECT 1 FROM answers a WHERE a.text_hash = pool.text_hash)
"""


STEPS = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5, 6: _V6, 7: _V7, 8: _V8}


def legacy_database(path: Path, version: int = max(STEPS)) -> sqlite3.Connection:
    """A SQLite file at `version` of the old schema, as the old runner left it; an open connection to fill it."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for step in range(1, version + 1):
        conn.execute("BEGIN IMMEDIATE")
        for statement in STEPS[step].split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {step}")
        conn.execute("COMMIT")
    return conn
