"""Users' answers: record (dedupe, rate limit, suspicion), undo, review, read, stats and export."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlite_utils

from core.labels import LABELS
from core.policies import StoreLimits
from core.text import text_hash
from feedback.db import Database, iso_time, parse_iso_time
from feedback.errors import FeedbackError, RateLimited
from feedback.pool import check_item, pool_counts, read_gold
from feedback.trust import check_scores, contradiction_reason
from feedback.validate import (
    KINDS,
    STATUSES,
    WITHDRAWN,
    canonical_label,
    check_address,
    check_annotator,
    check_kind,
    check_review_status,
    check_row_id,
    check_status,
    normalise_probabilities,
    text_problem,
)

log = logging.getLogger(__name__)

RATE_WINDOW_S = 60.0
# The two paths an answer comes by: one click on a prediction (Classify), or the labelling queue. A person
# has at most one live answer per text on each path: a change of mind replaces the earlier one.
PATHS = (("confirm", "correct"), ("queue",))
_LIVE = f"status NOT IN ({', '.join(repr(status) for status in WITHDRAWN)})"  # SQL: not taken back


def path_of(kind: str) -> tuple[str, ...]:
    """The kinds of answer that share `kind`'s path (see PATHS)."""
    return next(kinds for kinds in PATHS if kind in kinds)


@dataclass(frozen=True)
class RecordResult:
    """Outcome of `FeedbackStore.record`: the answer's id, whether it was already stored, its status, and the
    ids of the annotator's earlier answers on this text and path that it replaced."""

    id: int
    duplicate: bool
    status: str
    replaced: tuple[int, ...] = ()


def decoded(row: dict[str, Any]) -> dict[str, Any]:
    if row.get("probabilities"):
        row["probabilities"] = json.loads(row["probabilities"])
    return row


class Answers:
    """Confirmations, corrections and queue labels, each kept for audit even when undone, replaced or rejected."""

    def __init__(self, db: Database, limits: StoreLimits, clock: Callable[[], float]) -> None:
        self._db = db
        self._limits = limits
        self._clock = clock

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
        verified: bool = False,
        address: str | None = None,
    ) -> RecordResult:
        """Store one answer unless the annotator already gave it, replacing their earlier live answer on the same
        text and path; see `FeedbackStore.record`."""
        if not isinstance(text, str):
            raise FeedbackError("text must be a string")
        problem = text_problem(text, self._limits.max_text_chars)
        if problem:
            raise FeedbackError(f"cannot store this answer: {problem}")
        label = canonical_label(user_label, "label")
        annotator = check_annotator(annotator)
        address = check_address(address)
        kind = check_kind(kind)
        if item_id is not None:
            item_id = check_row_id(item_id, "queue item")
        if model_version is not None and (not isinstance(model_version, str) or len(model_version) > 200):
            raise FeedbackError("model_version must be text of at most 200 characters")
        probs = normalise_probabilities(probabilities) if probabilities is not None else None
        if predicted_label is not None:
            predicted: str | None = canonical_label(predicted_label, "predicted_label")
        else:
            predicted = max(probs, key=probs.__getitem__) if probs else None
        if kind == "confirm" and predicted != label:
            raise FeedbackError("a 'confirm' answer must repeat the model's predicted label")
        if kind == "queue" and item_id is None:
            raise FeedbackError("a 'queue' answer needs the item_id of the queue item it answers")
        reason = contradiction_reason(predicted, probs, label, self._limits.suspicious_confidence)
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
            "created_at": iso_time(now),
            "status": status,
            "suspicious_reason": reason,
            "verified": int(bool(verified)),
            "address": address,
        }
        kinds = path_of(kind)
        marks = ", ".join("?" for _ in kinds)
        same_path = f"annotator = ? AND text_hash = ? AND kind IN ({marks}) AND {_LIVE}"
        with self._db.write() as db:
            earlier = list(db.query(f"SELECT id, status, user_label FROM answers WHERE {same_path} ORDER BY id",
                                    [annotator, digest, *kinds]))
            # A rejected answer stays the maintainer's verdict: repeating it is a duplicate, not a new answer.
            existing = next((r for r in earlier if r["user_label"] == label), None)
            if existing:
                return RecordResult(id=existing["id"], duplicate=True, status=existing["status"])
            if item_id is not None:
                check_item(db, item_id, digest)
            per_annotator = self._limits.verified_writes_per_minute if verified else self._limits.writes_per_minute
            self._check_rate(db, "annotator", annotator, per_annotator, now)
            if address is not None:
                self._check_rate(db, "address", address, self._limits.address_writes_per_minute, now)
            replaced = tuple(int(r["id"]) for r in earlier if r["status"] != "rejected")
            if replaced:  # a change of mind: the earlier answers stay for audit, and nothing counts them
                db.execute(f"UPDATE answers SET status = 'replaced' WHERE {same_path} AND status != 'rejected'",
                           [annotator, digest, *kinds])
            answer_id = db["answers"].insert(row).last_pk
        if reason:
            log.warning("answer %s from %s marked suspicious: %s", answer_id, annotator, reason)
        return RecordResult(id=int(answer_id), duplicate=False, status=status, replaced=replaced)

    def _check_rate(self, db: sqlite_utils.Database, column: str, key: str, limit: int, now: float) -> None:
        """Refuse a write when `key` (an annotator or a client address) wrote `limit` answers in the window."""
        recent = [
            row["created_at"]
            for row in db.query(
                f"SELECT created_at FROM answers WHERE {column} = ? AND created_at > ? ORDER BY created_at",
                [key, iso_time(now - RATE_WINDOW_S)],
            )
        ]
        if len(recent) < limit:
            return
        # One more write is allowed once enough of the oldest answers have left the window.
        frees_at = parse_iso_time(recent[len(recent) - limit]) + RATE_WINDOW_S
        wait_s = max(1, math.ceil(frees_at - now))
        who = " from this address" if column == "address" else ""
        raise RateLimited(f"too many answers{who}: at most {limit} a minute; try again in {wait_s} s", wait_s)

    def undo_last(self, annotator: str, kinds: Sequence[str] = KINDS) -> dict[str, Any] | None:
        """Mark the annotator's most recent live answer of one of `kinds` 'undone' (kept for audit); return it.

        Answers it replaced stay replaced: an undo withdraws a change of mind, it never revives the old answer."""
        annotator = check_annotator(annotator)
        kinds = [check_kind(kind) for kind in kinds]
        marks = ", ".join("?" for _ in kinds)
        with self._db.write() as db:
            row = next(
                db.query(
                    f"SELECT * FROM answers WHERE annotator = ? AND {_LIVE} AND kind IN ({marks})"
                    " ORDER BY id DESC LIMIT 1",
                    [annotator, *kinds],
                ),
                None,
            )
            if row is None:
                return None
            db.execute("UPDATE answers SET status = 'undone' WHERE id = ?", [row["id"]])
        row["status"] = "undone"
        return decoded(row)

    def set_status(self, answer_id: int, status: str) -> dict[str, Any]:
        """Record a maintainer's review of an answer: 'accepted' (counts for training) or 'rejected'."""
        status = check_review_status(status)
        answer_id = check_row_id(answer_id, "answer id")
        with self._db.write() as db:
            row = next(db.query("SELECT * FROM answers WHERE id = ?", [answer_id]), None)
            if row is None:
                raise FeedbackError(f"no answer with id {answer_id}")
            if row["status"] in WITHDRAWN:
                how = "undone" if row["status"] == "undone" else "replaced by a later answer"
                raise FeedbackError(f"answer {answer_id} was {how} by its annotator and cannot be reviewed")
            db.execute("UPDATE answers SET status = ? WHERE id = ?", [status, answer_id])
        log.info("answer %s %s (was %s)", answer_id, status, row["status"])
        row["status"] = status
        return decoded(row)

    def get(self, answer_id: int) -> dict[str, Any] | None:
        """One answer by id, or None."""
        answer_id = check_row_id(answer_id, "answer id")
        with self._db.read() as db:
            row = next(db.query("SELECT * FROM answers WHERE id = ?", [answer_id]), None)
        return decoded(row) if row else None

    def rows(self, status: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Answers newest first, optionally only those with `status`; probabilities decoded to a dict."""
        sql = "SELECT * FROM answers"
        params: list[Any] = []
        if status is not None:
            sql += " WHERE status = ?"
            params.append(check_status(status))
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._db.read() as db:
            return [decoded(row) for row in db.query(sql, params)]

    def count(self, status: str | None = None) -> int:
        """Number of answers, all or with one status."""
        with self._db.read() as db:
            if status is None:
                return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
            sql = "SELECT COUNT(*) FROM answers WHERE status = ?"
            return int(db.execute(sql, [check_status(status)]).fetchone()[0])

    def count_since(self, answer_id: int) -> int:
        """Live, unrejected answers with an id above `answer_id` (e.g. the last one a retrain used)."""
        with self._db.read() as db:
            sql = f"SELECT COUNT(*) FROM answers WHERE id > ? AND {_LIVE} AND status != 'rejected'"
            return int(db.execute(sql, [answer_id]).fetchone()[0])

    def per_day(self, days: int) -> dict[str, int]:
        """Live answers per UTC day (YYYY-MM-DD), the newest `days` days that have any; see `FeedbackStore`."""
        with self._db.read() as db:
            sql = (f"SELECT substr(created_at, 1, 10) AS day, COUNT(*) AS n FROM answers WHERE {_LIVE} "
                   "GROUP BY substr(created_at, 1, 10) ORDER BY day DESC LIMIT ?")
            return {str(row["day"]): int(row["n"]) for row in db.query(sql, [days])}

    def stats(self) -> dict[str, Any]:
        """Counts for a dashboard; see `FeedbackStore.stats`."""
        with self._db.read() as db:

            def grouped(column: str, where: str = "") -> dict[str, int]:
                sql = f"SELECT {column} AS key, COUNT(*) AS n FROM answers {where} GROUP BY {column}"
                return {row["key"]: row["n"] for row in db.query(sql)}

            live = f"WHERE {_LIVE}"
            by_status = grouped("status")
            by_label = grouped("user_label", live)
            by_kind = grouped("kind", live)
            annotators = db.execute(f"SELECT COUNT(DISTINCT annotator) FROM answers {live}").fetchone()[0]
            pool = pool_counts(db)
            check_rows = list(
                db.query("SELECT a.* FROM answers a JOIN pool p ON p.text_hash = a.text_hash WHERE p.gold_label IS NOT NULL")
            )
            gold = read_gold(db)
        scores = check_scores(check_rows, gold)
        return {
            "answers": sum(by_status.values()),
            "by_status": {status: by_status.get(status, 0) for status in STATUSES},
            "by_label": {label: by_label.get(label, 0) for label in LABELS},
            "by_kind": {kind: by_kind.get(kind, 0) for kind in KINDS},
            "annotators": int(annotators),
            "pool": pool,
            "checks_right": {name: f"{score.right}/{score.answered}" for name, score in scores.items()},
        }
