"""The traffic set: pool items set aside by a random draw, offered in random turns of the queue, whose trusted
labels judge challengers and are never trained on (`feedback.snapshot`).

Why: the uncertainty queue asks about the items the champion finds hardest, so its labels are a biased,
small sample of what users send. A share of pool items, chosen by a salted hash of the text (independent
of any model), is kept out of the uncertainty order; a share of each annotator's queue turns offers one
of them, uniformly at random among the newest unlabelled ones. Their labels are an unbiased sample of the
pool on which the gate can show a gain.

An item's membership is drawn once, when the queue first sees it (`pool.traffic` NULL -> 0 or 1), so
changing the share later never moves an item that may have been trained on into the traffic set. Items
that already have answers when drawn are never traffic.
"""

from __future__ import annotations

import hashlib

import sqlite_utils

from core.text import text_hash
from feedback.db import Database

SALT = "traffic"

_UNDRAWN_SQL = """
    SELECT p.id, p.text_hash, EXISTS (SELECT 1 FROM answers a WHERE a.text_hash = p.text_hash) AS answered
    FROM pool p WHERE p.traffic IS NULL AND p.gold_label IS NULL
"""


def draw(digest: str) -> float:
    """A number in [0, 1) fixed by the text's hash (salted, so it is independent of the other hash splits)."""
    return int(hashlib.sha256(f"{SALT}\0{digest}".encode()).hexdigest()[:12], 16) / 16**12


def mark_new_items(db: Database, share: float) -> int:
    """Draw the traffic membership of pool items the queue has not seen yet; returns how many were drawn."""
    with db.read() as conn:
        undrawn = list(conn.query(_UNDRAWN_SQL))
    if not undrawn:
        return 0
    marks = [(int(not row["answered"] and draw(row["text_hash"]) < share), row["id"]) for row in undrawn]
    with db.write() as conn:
        # `traffic IS NULL` again: another process may have drawn them meanwhile (with the same result).
        conn.conn.executemany("UPDATE pool SET traffic = ? WHERE id = ? AND traffic IS NULL", marks)
    return len(marks)


def traffic_turn(conn: sqlite_utils.Database, annotator: str, share: float) -> bool:
    """Whether this annotator's next ordinary queue item should come from the traffic set.

    Keyed by the annotator's position (answers and skips so far), so a reload does not re-roll it, and
    about `share` of each annotator's turns are traffic turns.
    """
    if share <= 0:
        return False
    answered = int(conn.execute("SELECT COUNT(*) FROM answers WHERE annotator = ?", [annotator]).fetchone()[0])
    skipped = int(conn.execute("SELECT COUNT(*) FROM skips WHERE annotator = ?", [annotator]).fetchone()[0])
    return int(text_hash(f"traffic-turn:{annotator}:{answered + skipped}")[:12], 16) / 16**12 < share


def read_traffic(conn: sqlite_utils.Database) -> set[str]:
    """The text hashes of the traffic set's items."""
    return {row["text_hash"] for row in conn.query("SELECT text_hash FROM pool WHERE traffic = 1")}
