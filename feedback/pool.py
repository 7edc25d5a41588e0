"""The labelling pool and its queue: import, rescore, the next item, known-answer checks, skips."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from core.policies import QueuePolicy, StoreLimits
from core.text import text_hash
from feedback.db import Database, iso_time
from feedback.errors import FeedbackError, PoolImportError
from feedback.pool_files import cleaned, read_pool_file
from feedback.traffic import mark_new_items, traffic_turn
from feedback.trust import check_due
from feedback.validate import (
    PoolRow,
    check_annotator,
    check_model_version,
    check_pool_row,
    check_probability_rows,
    check_row_id,
)

log = logging.getLogger(__name__)

# Items an annotator has neither answered (live) nor skipped, and that anybody may be shown: not held for a
# maintainer's review (`Pool.add` with `held`), or released by an accepted answer on their text.
UNSEEN = """
        NOT EXISTS (
            SELECT 1 FROM answers a
            WHERE a.text_hash = p.text_hash AND a.annotator = :annotator AND a.status NOT IN ('undone', 'replaced')
        )
        AND NOT EXISTS (SELECT 1 FROM skips s WHERE s.item_id = p.id AND s.annotator = :annotator)
        AND (p.held_by IS NULL OR EXISTS (
            SELECT 1 FROM answers v WHERE v.text_hash = p.text_hash AND v.status = 'accepted'))
"""
# An item leaves the queue once `required` client addresses (identities sharing one are one voice, as in
# feedback.trust) agree on a label, so minted identities cannot take items away from honest labellers.
SETTLED = """
        EXISTS (
            SELECT 1 FROM answers a
            WHERE a.text_hash = p.text_hash AND a.status NOT IN ('undone', 'replaced', 'rejected')
            GROUP BY a.user_label HAVING COUNT(DISTINCT COALESCE(a.address, a.annotator)) >= :required
        )
"""
_NEXT_ITEM_SQL = f"""
        SELECT p.* FROM pool p
        WHERE p.gold_label IS NULL AND p.traffic = 0 AND {UNSEEN} AND NOT {SETTLED}
        ORDER BY p.uncertainty DESC NULLS LAST, p.id
        LIMIT :spread
"""
# The traffic set's newest unlabelled items (see feedback.traffic): a traffic turn picks one at random.
_TRAFFIC_ITEM_SQL = f"""
        SELECT p.* FROM pool p
        WHERE p.gold_label IS NULL AND p.traffic = 1 AND {UNSEEN} AND NOT {SETTLED}
        ORDER BY p.id DESC
        LIMIT :recent
"""
_CHECKS_SQL = f"SELECT p.* FROM pool p WHERE p.gold_label IS NOT NULL AND {UNSEEN}"
_HELD_SQL = """
        SELECT p.id AS item_id, p.text, p.held_by, p.held_reason, a.id AS answer_id, a.user_label, a.predicted_label
        FROM pool p JOIN answers a ON a.text_hash = p.text_hash AND a.annotator = p.held_by
        WHERE p.held_by IS NOT NULL AND a.status NOT IN ('undone', 'replaced', 'rejected')
        AND NOT EXISTS (SELECT 1 FROM answers v WHERE v.text_hash = p.text_hash AND v.status = 'accepted')
        ORDER BY p.id DESC LIMIT ?
"""


@dataclass(frozen=True)
class ImportReport:
    """What an import did: rows read, items added, and rows skipped as already in the pool."""

    rows: int
    added: int
    duplicates: int


def margin_uncertainty(probabilities: np.ndarray) -> np.ndarray:
    """Margin-based uncertainty per row: 1 - (p_top - p_second).

    1.0 when the model's two best labels tie, 0.0 when it puts all mass on one label. The margin is
    used rather than entropy because it focuses on the decision the annotator can settle.
    """
    ordered = np.sort(check_probability_rows(probabilities), axis=1)
    return 1.0 - (ordered[:, -1] - ordered[:, -2])


def read_gold(db: sqlite_utils.Database) -> dict[str, str]:
    """The known-answer checks on this connection: text_hash -> the label a maintainer gave."""
    sql = "SELECT text_hash, gold_label FROM pool WHERE gold_label IS NOT NULL"
    return {row["text_hash"]: row["gold_label"] for row in db.query(sql)}


def pool_counts(db: sqlite_utils.Database) -> dict[str, int]:
    """Pool items, scored items, known-answer checks and skips, for the dashboard."""
    items, scored, checks = db.execute("SELECT COUNT(*), COUNT(scored_by), COUNT(gold_label) FROM pool").fetchone()
    skips = db.execute("SELECT COUNT(*) FROM skips").fetchone()[0]
    return {"items": int(items), "scored": int(scored), "checks": int(checks), "skips": int(skips)}


def check_item(db: sqlite_utils.Database, item_id: int, digest: str) -> None:
    """Refuse an answer naming a queue item that does not exist or holds another text."""
    item = next(db.query("SELECT text_hash FROM pool WHERE id = ?", [item_id]), None)
    if item is None:
        raise FeedbackError(f"unknown queue item {item_id}")
    if item["text_hash"] != digest:
        raise FeedbackError(f"the text does not match queue item {item_id}")


def _insert_pool_row(
    conn: sqlite3.Connection, row: PoolRow, source: str, added_at: str, held: tuple[str, str] | None = None
) -> bool:
    """Insert one pool item unless its text is already there; True when it was added. Adding a text that is
    held, without `held` (a maintainer's import, a signed-in author's correction), releases it."""
    by, reason = held or (None, None)
    cursor = conn.execute(
        "INSERT OR IGNORE INTO pool (text, text_hash, source, added_at, gold_label, held_by, held_reason)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (row.text, row.text_hash, source, added_at, row.label, by, reason),
    )
    if cursor.rowcount == 0 and held is None:
        conn.execute("UPDATE pool SET held_by = NULL, held_reason = NULL WHERE text_hash = ?", (row.text_hash,))
    return cursor.rowcount == 1


class Pool:
    """The texts waiting for labels, their uncertainty under the champion, and who skipped what."""

    def __init__(self, db: Database, limits: StoreLimits, clock: Callable[[], float]) -> None:
        self._db = db
        self._limits = limits
        self._clock = clock

    def import_file(self, path: Path, *, source: str | None = None, checks: bool = False) -> ImportReport:
        """Add the texts of a CSV/JSONL file, all or nothing; see `FeedbackStore.import_pool`."""
        path = Path(path)
        rows = read_pool_file(path, max_chars=self._limits.max_text_chars, labelled=checks)
        return self._add_rows(rows, source or path.name)

    def add(
        self, texts: Sequence[str], *, source: str, labels: Sequence[str] | None = None,
        held: tuple[str, str] | None = None,
    ) -> ImportReport:
        """Add texts, all or nothing (problems are numbered from 1 like lines); see `FeedbackStore.add_to_pool`.
        `held` = (who brought them, why they wait): nobody is served them until an answer on them is accepted."""
        if labels is not None and len(labels) != len(texts):
            raise FeedbackError(f"{len(labels)} labels for {len(texts)} texts")
        rows: list[PoolRow] = []
        problems: list[tuple[int, str]] = []
        for number, text in enumerate(texts, start=1):
            label = labels[number - 1] if labels is not None else None
            try:
                readable = cleaned(text) if isinstance(text, str) else text  # entities undone, as in files
                rows.append(
                    check_pool_row(
                        number, readable, label, max_chars=self._limits.max_text_chars, labelled=labels is not None
                    )
                )
            except FeedbackError as exc:
                problems.append((number, str(exc)))
        if problems:
            listed = "; ".join(f"item {number}: {problem}" for number, problem in problems[:20])
            raise PoolImportError(f"{len(problems)} bad texts; nothing was added: {listed}", problems)
        return self._add_rows(rows, source, None if labels is not None else held)

    def _add_rows(self, rows: list[PoolRow], source: str, held: tuple[str, str] | None = None) -> ImportReport:
        added_at = iso_time(self._clock())
        added = 0
        # One transaction: a crash part-way leaves the pool exactly as it was.
        with self._db.write() as db:
            for row in rows:
                added += _insert_pool_row(db.conn, row, source, added_at, held)
        report = ImportReport(rows=len(rows), added=added, duplicates=len(rows) - added)
        log.info("pool import from %s: %d added, %d duplicates", source, report.added, report.duplicates)
        return report

    def rescore(self, scorer: Callable[[list[str]], np.ndarray], model_version: str, *, batch_size: int = 256) -> int:
        """Recompute uncertainty for items not yet scored by `model_version`; see `FeedbackStore.rescore`."""
        model_version = check_model_version(model_version)
        with self._db.read() as db:
            pending = [
                (row["id"], row["text"])
                for row in db.query(
                    "SELECT id, text FROM pool WHERE scored_by IS NULL OR scored_by != ? ORDER BY id",
                    [model_version],
                )
            ]
        for start in range(0, len(pending), batch_size):
            batch = pending[start : start + batch_size]
            probs = check_probability_rows(scorer([text for _, text in batch]), rows=len(batch))
            scores = margin_uncertainty(probs)
            with self._db.write() as db:
                db.conn.executemany(
                    "UPDATE pool SET uncertainty = ?, scored_by = ? WHERE id = ?",
                    [(float(score), model_version, item_id) for (item_id, _), score in zip(batch, scores, strict=True)],
                )
        log.info("rescored %d pool items with model %s", len(pending), model_version)
        return len(pending)

    def held(self, limit: int = 200) -> list[dict[str, Any]]:
        """Items held for review, newest first, each with the live answer of who brought it (for the admin)."""
        with self._db.read() as db:
            return list(db.query(_HELD_SQL, [int(limit)]))

    def gold_labels(self) -> dict[str, str]:
        """The known-answer checks: text_hash -> the label a maintainer gave."""
        with self._db.read() as db:
            return read_gold(db)

    def next_item(self, annotator: str, policy: QueuePolicy) -> dict[str, Any] | None:
        """The item this annotator should label next, or None; see `FeedbackStore.next_item`."""
        annotator = check_annotator(annotator)
        item = self.due_check(annotator, policy)
        if item is None:
            mark_new_items(self._db, policy.traffic_share)
            with self._db.read() as db:
                params = {"annotator": annotator, "required": policy.labels_required, "spread": policy.spread,
                          "recent": policy.traffic_recent}
                turns = [_NEXT_ITEM_SQL, _TRAFFIC_ITEM_SQL]  # the other kind when this kind has none left
                if traffic_turn(db, annotator, policy.traffic_share):
                    turns.reverse()
                candidates = next((rows for sql in turns if (rows := list(db.query(sql, params)))), [])
            # Each annotator draws from the most uncertain few in their own order, so streams differ and a
            # check cannot be spotted as the one item that is not the same for every fresh identity.
            item = min(candidates, key=lambda row: text_hash(f"{annotator}:{row['text_hash']}"), default=None)
            if item is not None:
                item.pop("gold_label")
        return item

    def due_check(self, annotator: str, policy: QueuePolicy) -> dict[str, Any] | None:
        """The known-answer check this annotator should answer now, or None; see `FeedbackStore.due_check`."""
        annotator = check_annotator(annotator)
        with self._db.read() as db:
            counts = db.execute(
                """
                SELECT COUNT(p.gold_label), COUNT(*) FROM answers a LEFT JOIN pool p ON p.text_hash = a.text_hash
                WHERE a.annotator = ? AND a.status NOT IN ('undone', 'replaced')
                """,
                [annotator],
            ).fetchone()
            checks, answered = int(counts[0]), int(counts[1])
            skipped = int(db.execute("SELECT COUNT(*) FROM skips WHERE annotator = ?", [annotator]).fetchone()[0])
            left = list(db.query(_CHECKS_SQL, {"annotator": annotator}))
        if not left:
            return None
        # The draw is keyed by the set of checks, which visitors do not know, so its outcome cannot be
        # predicted from an annotator id; it is fixed for a given position, so a reload does not re-roll.
        salt = text_hash(",".join(sorted(row["text_hash"] for row in left)))
        draw = int(text_hash(f"{salt}:{annotator}:{answered}:{skipped}")[:12], 16) / 16**12
        if not check_due(checks, draw, min_checks=policy.min_checks, share=policy.check_share):
            return None
        # A per-annotator order, so annotators comparing notes do not see the same sequence of checks.
        item = min(left, key=lambda row: text_hash(f"{annotator}:{row['text_hash']}"))
        item.pop("gold_label")  # what the screen shows must not give the answer away
        return item

    def skip(self, annotator: str, item_id: int, max_skips: int | None = None) -> None:
        """Remember that the annotator skipped an item, so it is not offered to them again."""
        annotator = check_annotator(annotator)
        item_id = check_row_id(item_id, "queue item")
        with self._db.write() as db:
            if next(db.query("SELECT id FROM pool WHERE id = ?", [item_id]), None) is None:
                raise FeedbackError(f"unknown queue item {item_id}")
            if max_skips is not None:
                skipped = db.execute("SELECT COUNT(*) FROM skips WHERE annotator = ?", [annotator]).fetchone()[0]
                if skipped >= max_skips:
                    raise FeedbackError(f"you have skipped {skipped} articles, the most allowed; please label this one")
            db.execute(
                "INSERT OR IGNORE INTO skips (annotator, item_id, skipped_at) VALUES (?, ?, ?)",
                [annotator, item_id, iso_time(self._clock())],
            )

    def progress(self, annotator: str) -> int:
        """How many queue items this annotator has labelled (live answers)."""
        annotator = check_annotator(annotator)
        with self._db.read() as db:
            sql = "SELECT COUNT(*) FROM answers WHERE annotator = ? AND kind = 'queue' AND status NOT IN ('undone', 'replaced')"
            return int(db.execute(sql, [annotator]).fetchone()[0])
