"""SQLite store of users' answers and of the labelling pool, safe to share between threads and processes."""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import math
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import sqlite_utils

from core.labels import LABELS, UnknownLabelError, label_index
from core.text import text_hash
from feedback.errors import FeedbackError, PoolImportError, RateLimited
from feedback.queue import ImportReport, PoolRow, margin_uncertainty, pool_label, read_pool_file, text_problem
from feedback.schema import migrate
from feedback.trust import check_due, check_scores, contradiction_reason

log = logging.getLogger(__name__)

KINDS = ("confirm", "correct", "queue")
STATUSES = ("ok", "suspicious", "accepted", "rejected", "undone")
REVIEW_STATUSES = ("accepted", "rejected")
EXPORT_FORMATS = ("csv", "jsonl")
EXPORT_COLUMNS = (
    "id",
    "created_at",
    "annotator",
    "kind",
    "text",
    "text_hash",
    "predicted_label",
    "probabilities",
    "model_version",
    "user_label",
    "item_id",
    "status",
    "suspicious_reason",
)
BUSY_TIMEOUT_S = 10.0
RATE_WINDOW_S = 60.0
# Spreadsheets run a cell starting with one of these as a formula (CSV injection).
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# Softmax outputs in float32 do not sum to exactly 1.
_PROBABILITY_SUM_TOLERANCE = 0.01
# Connections a forked child inherited; kept referenced so they are never closed in the child.
_FORKED_CONNECTIONS: list[sqlite_utils.Database] = []


@dataclass(frozen=True)
class RecordResult:
    """Outcome of `FeedbackStore.record`: the answer's id, whether it was already stored, its status."""

    id: int
    duplicate: bool
    status: str


def canonical_label(value: object, field: str = "label") -> str:
    """The canonical topic name for a label name (any case, common aliases) or 0-based index."""
    try:
        return LABELS[label_index(value)]
    except UnknownLabelError:
        raise FeedbackError(f"unknown {field} {value!r}; expected one of {', '.join(LABELS)}") from None


def normalise_probabilities(value: Mapping[str, float] | Sequence[float] | np.ndarray) -> dict[str, float]:
    """Probabilities as {label: p} over all four labels, from a mapping or a sequence in LABELS order."""
    try:
        if isinstance(value, Mapping):
            probs = {canonical_label(key, "probability label"): float(p) for key, p in value.items()}
        else:
            flat = np.asarray(value, dtype=np.float64).ravel()
            if flat.size != len(LABELS):
                raise FeedbackError(f"expected {len(LABELS)} probabilities (one per label), got {flat.size}")
            probs = dict(zip(LABELS, (float(p) for p in flat), strict=True))
    except (TypeError, ValueError) as exc:
        if isinstance(exc, FeedbackError):
            raise
        raise FeedbackError(f"probabilities must be numbers: {exc}") from None
    missing = [label for label in LABELS if label not in probs]
    if missing:
        raise FeedbackError(f"probabilities missing for {', '.join(missing)}")
    if not all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in probs.values()):
        raise FeedbackError("probabilities must be between 0 and 1")
    if abs(sum(probs.values()) - 1.0) > _PROBABILITY_SUM_TOLERANCE:
        raise FeedbackError(f"probabilities must sum to 1, got {sum(probs.values()):.3f}")
    return {label: probs[label] for label in LABELS}


def _iso(timestamp: float) -> str:
    # Fixed width with microseconds, so ISO strings compare in time order inside SQL.
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="microseconds")


def _check_annotator(annotator: object) -> str:
    if not isinstance(annotator, str) or not annotator.strip():
        raise FeedbackError("annotator id is required (a pseudonymous id, not empty)")
    return annotator.strip()


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    if row.get("probabilities"):
        row["probabilities"] = json.loads(row["probabilities"])
    return row


def _safe_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_PREFIXES):
        return "'" + value
    return value


def _insert_pool_row(conn: sqlite3.Connection, row: PoolRow, source: str, added_at: str) -> bool:
    """Insert one pool item unless its text is already there; True when it was added."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO pool (text, text_hash, source, added_at, gold_label) VALUES (?, ?, ?, ?, ?)",
        (row.text, row.text_hash, source, added_at, row.label),
    )
    return cursor.rowcount == 1


class FeedbackStore:
    """Answers (confirmations, corrections, queue labels) and the labelling pool in one SQLite file.

    Each thread gets its own connection (WAL journal, 10 s busy timeout), so one store object can be
    shared by any number of threads, and several processes can use the same file. Writes run in
    `BEGIN IMMEDIATE` transactions, which makes check-then-insert rules (duplicates, rate limit)
    race-free. `durable=False` trades the fsync per answer (synchronous=FULL) for synchronous=NORMAL:
    still safe against process crashes, but the last answers can be lost on power failure.
    """

    def __init__(
        self,
        path: Path,
        *,
        max_text_chars: int = 5000,
        writes_per_minute: int = 30,
        contradiction_confidence: float = 0.9,
        clock: Callable[[], float] = time.time,
        durable: bool = True,
    ) -> None:
        self.path = Path(path)
        if max_text_chars < 1 or writes_per_minute < 1:
            raise ValueError("max_text_chars and writes_per_minute must be positive")
        if not 0.0 < contradiction_confidence <= 1.0:
            raise ValueError("contradiction_confidence must be in (0, 1]")
        if not self.path.parent.is_dir():
            raise FeedbackError(f"directory {self.path.parent} does not exist; create it first")
        self.max_text_chars = max_text_chars
        self.writes_per_minute = writes_per_minute
        self.contradiction_confidence = contradiction_confidence
        self._clock = clock
        self._synchronous = "FULL" if durable else "NORMAL"
        self._local = threading.local()
        # Switching a new file to WAL takes an exclusive lock without waiting on the busy timeout, so
        # processes opening the same fresh database at once can see "locked": retry until the timeout.
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                migrate(self._db().conn)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise FeedbackError(f"cannot use {self.path} as the feedback database: {exc}") from None
                self._local.db = self._local.pid = None  # open a fresh connection on the next try
                time.sleep(0.05)
            except sqlite3.DatabaseError as exc:
                raise FeedbackError(f"cannot use {self.path} as the feedback database: {exc}") from None

    def __repr__(self) -> str:
        return f"FeedbackStore({str(self.path)!r})"

    # Connections -----------------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        # isolation_level=None: no implicit transactions; writes say BEGIN IMMEDIATE themselves.
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _db(self) -> sqlite_utils.Database:
        """This thread's connection, opened on first use; SQLite connections are never shared by threads."""
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            if getattr(local, "db", None) is not None:
                # Inherited through fork(): closing it here could disturb the parent's locks, so keep it.
                _FORKED_CONNECTIONS.append(local.db)
            local.db = sqlite_utils.Database(self._open(), execute_plugins=False)
            local.pid = os.getpid()
        return local.db

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite_utils.Database]:
        yield self._db()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite_utils.Database]:
        db = self._db()
        # IMMEDIATE takes the write lock before any check, so what we checked still holds at insert.
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.conn.execute("COMMIT")
        except BaseException:
            if db.conn.in_transaction:
                db.conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close the calling thread's connection (others close when their threads end)."""
        db = getattr(self._local, "db", None)
        if db is not None and self._local.pid == os.getpid():
            db.close()
        self._local.db = None
        self._local.pid = None

    # Answers ---------------------------------------------------------------------------------------

    def record(
        self,
        *,
        text: str,
        user_label: str,
        annotator: str,
        kind: str,
        predicted_label: str | None = None,
        probabilities: Mapping[str, float] | Sequence[float] | np.ndarray | None = None,
        model_version: str | None = None,
        item_id: int | None = None,
    ) -> RecordResult:
        """Store one answer; an identical live answer from the same annotator is returned, not repeated.

        `probabilities` is {label: p} or four numbers in LABELS order; when `predicted_label` is
        omitted it is their argmax. Raises FeedbackError for bad input and RateLimited when the
        annotator has written `writes_per_minute` answers in the last 60 s.
        """
        if not isinstance(text, str):
            raise FeedbackError("text must be a string")
        problem = text_problem(text, self.max_text_chars)
        if problem:
            raise FeedbackError(f"cannot store this answer: {problem}")
        label = canonical_label(user_label, "label")
        annotator = _check_annotator(annotator)
        if kind not in KINDS:
            raise FeedbackError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        probs = normalise_probabilities(probabilities) if probabilities is not None else None
        if predicted_label is not None:
            predicted: str | None = canonical_label(predicted_label, "predicted_label")
        else:
            predicted = max(probs, key=probs.__getitem__) if probs else None
        if kind == "confirm" and predicted != label:
            raise FeedbackError("a 'confirm' answer must repeat the model's predicted label")
        if kind == "queue" and item_id is None:
            raise FeedbackError("a 'queue' answer needs the item_id of the queue item it answers")
        reason = contradiction_reason(predicted, probs, label, self.contradiction_confidence)
        status = "suspicious" if reason else "ok"
        digest = text_hash(text)
        now = self._clock()
        row = {
            "text": text,
            "text_hash": digest,
            "predicted_label": predicted,
            "probabilities": json.dumps(probs) if probs else None,
            "model_version": model_version,
            "user_label": label,
            "kind": kind,
            "annotator": annotator,
            "item_id": item_id,
            "created_at": _iso(now),
            "status": status,
            "suspicious_reason": reason,
        }
        with self._write() as db:
            existing = next(
                db.query(
                    "SELECT id, status FROM answers WHERE annotator = ? AND text_hash = ? AND user_label = ? "
                    "AND status != 'undone' ORDER BY id LIMIT 1",
                    [annotator, digest, label],
                ),
                None,
            )
            if existing:
                return RecordResult(id=existing["id"], duplicate=True, status=existing["status"])
            if item_id is not None:
                self._check_item(db, item_id, digest)
            self._check_rate(db, annotator, now)
            answer_id = db["answers"].insert(row).last_pk
        if reason:
            log.warning("answer %s from %s marked suspicious: %s", answer_id, annotator, reason)
        return RecordResult(id=int(answer_id), duplicate=False, status=status)

    def _check_item(self, db: sqlite_utils.Database, item_id: int, digest: str) -> None:
        item = next(db.query("SELECT text_hash FROM pool WHERE id = ?", [item_id]), None)
        if item is None:
            raise FeedbackError(f"unknown queue item {item_id}")
        if item["text_hash"] != digest:
            raise FeedbackError(f"the text does not match queue item {item_id}")

    def _check_rate(self, db: sqlite_utils.Database, annotator: str, now: float) -> None:
        recent = [
            row["created_at"]
            for row in db.query(
                "SELECT created_at FROM answers WHERE annotator = ? AND created_at > ? ORDER BY created_at",
                [annotator, _iso(now - RATE_WINDOW_S)],
            )
        ]
        if len(recent) < self.writes_per_minute:
            return
        # One more write is allowed once enough of the oldest answers have left the window.
        frees_at = datetime.fromisoformat(recent[len(recent) - self.writes_per_minute]).timestamp() + RATE_WINDOW_S
        wait_s = max(1, math.ceil(frees_at - now))
        raise RateLimited(
            f"too many answers: at most {self.writes_per_minute} a minute; try again in {wait_s} s", wait_s
        )

    def undo_last(self, annotator: str) -> dict[str, Any] | None:
        """Mark the annotator's most recent live answer 'undone' (kept for audit) and return it."""
        annotator = _check_annotator(annotator)
        with self._write() as db:
            row = next(
                db.query(
                    "SELECT * FROM answers WHERE annotator = ? AND status != 'undone' ORDER BY id DESC LIMIT 1",
                    [annotator],
                ),
                None,
            )
            if row is None:
                return None
            db.execute("UPDATE answers SET status = 'undone' WHERE id = ?", [row["id"]])
        row["status"] = "undone"
        return _decoded(row)

    def set_status(self, answer_id: int, status: str) -> dict[str, Any]:
        """Record a maintainer's review of an answer: 'accepted' (counts for training) or 'rejected'."""
        if status not in REVIEW_STATUSES:
            raise FeedbackError(f"unknown review status {status!r}; expected one of {', '.join(REVIEW_STATUSES)}")
        with self._write() as db:
            row = next(db.query("SELECT * FROM answers WHERE id = ?", [answer_id]), None)
            if row is None:
                raise FeedbackError(f"no answer with id {answer_id}")
            if row["status"] == "undone":
                raise FeedbackError(f"answer {answer_id} was undone by its annotator and cannot be reviewed")
            db.execute("UPDATE answers SET status = ? WHERE id = ?", [status, answer_id])
        log.info("answer %s %s (was %s)", answer_id, status, row["status"])
        row["status"] = status
        return _decoded(row)

    def get(self, answer_id: int) -> dict[str, Any] | None:
        """One answer by id, or None."""
        with self._read() as db:
            row = next(db.query("SELECT * FROM answers WHERE id = ?", [answer_id]), None)
        return _decoded(row) if row else None

    def answers(self, status: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Answers newest first, optionally only those with `status`; probabilities decoded to a dict."""
        if status is not None and status not in STATUSES:
            raise FeedbackError(f"unknown status {status!r}; expected one of {', '.join(STATUSES)}")
        sql = "SELECT * FROM answers"
        params: list[Any] = []
        if status is not None:
            sql += " WHERE status = ?"
            params.append(status)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._read() as db:
            return [_decoded(row) for row in db.query(sql, params)]

    def count(self, status: str | None = None) -> int:
        """Number of answers, all or with one status."""
        if status is not None and status not in STATUSES:
            raise FeedbackError(f"unknown status {status!r}; expected one of {', '.join(STATUSES)}")
        with self._read() as db:
            if status is None:
                return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
            return int(db.execute("SELECT COUNT(*) FROM answers WHERE status = ?", [status]).fetchone()[0])

    def count_since(self, answer_id: int) -> int:
        """Live, unrejected answers with an id above `answer_id` (e.g. the last one a retrain used)."""
        with self._read() as db:
            sql = "SELECT COUNT(*) FROM answers WHERE id > ? AND status NOT IN ('undone', 'rejected')"
            return int(db.execute(sql, [answer_id]).fetchone()[0])

    def stats(self) -> dict[str, Any]:
        """Counts for a dashboard: by status (all answers); by label, kind, annotators (live answers); pool;
        and per annotator, known-answer checks answered right out of those answered."""
        with self._read() as db:

            def grouped(column: str, where: str = "") -> dict[str, int]:
                sql = f"SELECT {column} AS key, COUNT(*) AS n FROM answers {where} GROUP BY {column}"
                return {row["key"]: row["n"] for row in db.query(sql)}

            live = "WHERE status != 'undone'"
            by_status = grouped("status")
            by_label = grouped("user_label", live)
            by_kind = grouped("kind", live)
            annotators = db.execute(f"SELECT COUNT(DISTINCT annotator) FROM answers {live}").fetchone()[0]
            pool_items, pool_scored, checks = db.execute(
                "SELECT COUNT(*), COUNT(scored_by), COUNT(gold_label) FROM pool"
            ).fetchone()
            skips = db.execute("SELECT COUNT(*) FROM skips").fetchone()[0]
            check_rows = list(
                db.query("SELECT a.* FROM answers a JOIN pool p ON p.text_hash = a.text_hash WHERE p.gold_label IS NOT NULL")
            )
        scores = check_scores(check_rows, self.gold_labels())
        return {
            "answers": sum(by_status.values()),
            "by_status": {status: by_status.get(status, 0) for status in STATUSES},
            "by_label": {label: by_label.get(label, 0) for label in LABELS},
            "by_kind": {kind: by_kind.get(kind, 0) for kind in KINDS},
            "annotators": int(annotators),
            "pool": {"items": int(pool_items), "scored": int(pool_scored), "checks": int(checks), "skips": int(skips)},
            "checks_right": {name: f"{score.right}/{score.answered}" for name, score in scores.items()},
        }

    def export(self, path: Path, fmt: str) -> int:
        """Write every answer (undone ones included, for audit) to `path` as CSV or JSONL; returns the count.

        Written to a temporary file and renamed, so a failed export never leaves a partial file.
        """
        path = Path(path)
        if fmt not in EXPORT_FORMATS:
            raise FeedbackError(f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with open(fd, "w", encoding="utf-8", newline="") as stream:
                count = self.write_export(stream, fmt)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        log.info("exported %d answers to %s", count, path)
        return count

    def write_export(self, stream: TextIO, fmt: str) -> int:
        """Write every answer to an open text stream as CSV or JSONL, oldest first; returns the count."""
        if fmt not in EXPORT_FORMATS:
            raise FeedbackError(f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")
        count = 0
        writer = csv.writer(stream) if fmt == "csv" else None
        if writer:
            writer.writerow(EXPORT_COLUMNS)
        columns = ", ".join(EXPORT_COLUMNS)
        with self._read() as db:
            for row in db.query(f"SELECT {columns} FROM answers ORDER BY id"):
                if writer:
                    writer.writerow([_safe_cell(row[column]) for column in EXPORT_COLUMNS])
                else:
                    stream.write(json.dumps(_decoded(row), ensure_ascii=False) + "\n")
                count += 1
        return count

    def backup(self, dest: Path) -> None:
        """Copy the whole database to `dest` with SQLite's online backup API (consistent while in use)."""
        dest = Path(dest)
        if dest.resolve() == self.path.resolve():
            raise FeedbackError("backup destination is the database itself")
        target = sqlite3.connect(dest)
        try:
            self._db().conn.backup(target)
        finally:
            target.close()
        log.info("backed up %s to %s", self.path, dest)

    # Labelling pool and queue ----------------------------------------------------------------------

    def import_pool(self, path: Path, *, source: str | None = None, checks: bool = False) -> ImportReport:
        """Add the texts of a CSV/JSONL file to the labelling pool, all or nothing.

        Every row is validated first; any bad row raises PoolImportError naming its line and nothing is
        written. Texts already in the pool (same text_hash) are skipped and counted as duplicates. With
        `checks`, every row needs a `label` and the rows become known-answer checks: the queue mixes
        them in (see `next_item`) and the trust rules score annotators on them.
        """
        path = Path(path)
        rows = read_pool_file(path, max_chars=self.max_text_chars, labelled=checks)
        return self._add_rows(rows, source or path.name)

    def add_to_pool(
        self, texts: Sequence[str], *, source: str, labels: Sequence[str] | None = None
    ) -> ImportReport:
        """Add texts to the labelling pool, all or nothing (problems are numbered from 1 like lines).

        With `labels` (one topic per text) the texts become known-answer checks, as in `import_pool`.
        """
        if labels is not None and len(labels) != len(texts):
            raise FeedbackError(f"{len(labels)} labels for {len(texts)} texts")
        rows: list[PoolRow] = []
        problems: list[tuple[int, str]] = []
        for number, text in enumerate(texts, start=1):
            problem = text_problem(text, self.max_text_chars) if isinstance(text, str) else "not a string"
            label = None
            if problem is None and labels is not None:
                try:
                    label = pool_label(labels[number - 1])
                except UnknownLabelError as exc:
                    problem = str(exc)
            if problem:
                problems.append((number, problem))
            else:
                rows.append(PoolRow(line=number, text=text.strip(), text_hash=text_hash(text), label=label))
        if problems:
            listed = "; ".join(f"item {number}: {problem}" for number, problem in problems[:20])
            raise PoolImportError(f"{len(problems)} bad texts; nothing was added: {listed}", problems)
        return self._add_rows(rows, source)

    def _add_rows(self, rows: list[PoolRow], source: str) -> ImportReport:
        added_at = _iso(self._clock())
        added = 0
        # One transaction: a crash part-way leaves the pool exactly as it was.
        with self._write() as db:
            for row in rows:
                added += _insert_pool_row(db.conn, row, source, added_at)
        report = ImportReport(rows=len(rows), added=added, duplicates=len(rows) - added)
        log.info("pool import from %s: %d added, %d duplicates", source, report.added, report.duplicates)
        return report

    def rescore(self, scorer: Callable[[list[str]], np.ndarray], model_version: str, *, batch_size: int = 256) -> int:
        """Recompute uncertainty for pool items not yet scored by `model_version`; returns how many.

        `scorer(texts)` returns an (n, labels) probability array. Uncertainty is margin-based,
        1 - (p_top - p_second), see `feedback.queue.margin_uncertainty`. Batches are committed as they
        are scored, so an interrupted rescore resumes where it stopped.
        """
        if not isinstance(model_version, str) or not model_version.strip():
            raise FeedbackError("model_version is required to rescore the pool")
        with self._read() as db:
            pending = [
                (row["id"], row["text"])
                for row in db.query(
                    "SELECT id, text FROM pool WHERE scored_by IS NULL OR scored_by != ? ORDER BY id",
                    [model_version],
                )
            ]
        for start in range(0, len(pending), batch_size):
            batch = pending[start : start + batch_size]
            probs = np.asarray(scorer([text for _, text in batch]))
            if probs.ndim != 2 or probs.shape[0] != len(batch):
                raise FeedbackError(f"scorer returned shape {probs.shape} for {len(batch)} texts")
            scores = margin_uncertainty(probs)
            with self._write() as db:
                db.conn.executemany(
                    "UPDATE pool SET uncertainty = ?, scored_by = ? WHERE id = ?",
                    [(float(score), model_version, item_id) for (item_id, _), score in zip(batch, scores, strict=True)],
                )
        log.info("rescored %d pool items with model %s", len(pending), model_version)
        return len(pending)

    def gold_labels(self) -> dict[str, str]:
        """The known-answer checks: text_hash -> the label a maintainer gave."""
        with self._read() as db:
            sql = "SELECT text_hash, gold_label FROM pool WHERE gold_label IS NOT NULL"
            return {row["text_hash"]: row["gold_label"] for row in db.query(sql)}

    def next_item(
        self, annotator: str, labels_required: int = 1, *, min_checks: int = 3, check_share: float = 0.1
    ) -> dict[str, Any] | None:
        """The pool item this annotator should label next, or None when none is left.

        A known-answer check when one is due (`feedback.trust.check_due`: the annotator's first
        `min_checks` items, then about `check_share` of them) and one is left that they have not
        answered or skipped. Otherwise the most uncertain ordinary item, skipping items the annotator
        answered (live answers) or skipped, and items that already have `labels_required` live,
        unrejected answers agreeing on one label (from any tab, matched by text_hash); unscored items
        come after scored ones, oldest first. A returned check does not carry its label.
        """
        annotator = _check_annotator(annotator)
        if labels_required < 1:
            raise FeedbackError("labels_required must be at least 1")
        item = self.due_check(annotator, min_checks=min_checks, check_share=check_share)
        if item is None:
            with self._read() as db:
                item = next(db.query(self._NEXT_ITEM_SQL, {"annotator": annotator, "required": labels_required}), None)
            if item is not None:
                item.pop("gold_label")
        return item

    _UNSEEN = """
            NOT EXISTS (
                SELECT 1 FROM answers a
                WHERE a.text_hash = p.text_hash AND a.annotator = :annotator AND a.status != 'undone'
            )
            AND NOT EXISTS (SELECT 1 FROM skips s WHERE s.item_id = p.id AND s.annotator = :annotator)
    """
    _NEXT_ITEM_SQL = f"""
            SELECT p.* FROM pool p
            WHERE p.gold_label IS NULL AND {_UNSEEN}
            AND NOT EXISTS (
                SELECT 1 FROM answers a
                WHERE a.text_hash = p.text_hash AND a.status NOT IN ('undone', 'rejected')
                GROUP BY a.user_label HAVING COUNT(DISTINCT a.annotator) >= :required
            )
            ORDER BY p.uncertainty DESC NULLS LAST, p.id
            LIMIT 1
    """
    _CHECKS_SQL = f"SELECT p.* FROM pool p WHERE p.gold_label IS NOT NULL AND {_UNSEEN}"

    def due_check(self, annotator: str, *, min_checks: int = 3, check_share: float = 0.1) -> dict[str, Any] | None:
        """The known-answer check this annotator should answer now, or None when none is due or left.

        Due by `feedback.trust.check_due`, counting the annotator's live answers of every kind (one-click
        corrections too), so a share of everything they contribute is tested.
        """
        annotator = _check_annotator(annotator)
        with self._read() as db:
            counts = db.execute(
                """
                SELECT COUNT(p.gold_label), COUNT(*) FROM answers a LEFT JOIN pool p ON p.text_hash = a.text_hash
                WHERE a.annotator = ? AND a.status != 'undone'
                """,
                [annotator],
            ).fetchone()
            checks, answered = int(counts[0]), int(counts[1])
            if not check_due(checks, answered - checks, min_checks=min_checks, share=check_share):
                return None
            left = list(db.query(self._CHECKS_SQL, {"annotator": annotator}))
        # A per-annotator order, so annotators comparing notes do not see the same sequence of checks.
        item = min(left, key=lambda row: text_hash(f"{annotator}:{row['text_hash']}"), default=None)
        if item is not None:
            item.pop("gold_label")  # what the screen shows must not give the answer away
        return item

    def skip(self, annotator: str, item_id: int) -> None:
        """Remember that the annotator skipped a queue item, so it is not offered to them again."""
        annotator = _check_annotator(annotator)
        with self._write() as db:
            if next(db.query("SELECT id FROM pool WHERE id = ?", [item_id]), None) is None:
                raise FeedbackError(f"unknown queue item {item_id}")
            db.execute(
                "INSERT OR IGNORE INTO skips (annotator, item_id, skipped_at) VALUES (?, ?, ?)",
                [annotator, item_id, _iso(self._clock())],
            )

    def progress(self, annotator: str) -> int:
        """How many queue items this annotator has labelled (live answers)."""
        annotator = _check_annotator(annotator)
        with self._read() as db:
            sql = "SELECT COUNT(*) FROM answers WHERE annotator = ? AND kind = 'queue' AND status != 'undone'"
            return int(db.execute(sql, [annotator]).fetchone()[0])
