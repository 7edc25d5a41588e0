"""FeedbackStore: one object over the feedback database, its parts as attributes (`store.answers.record(...)`,
`store.pool.next_item(...)`), and the few things that span parts."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.settings.policies import StoreLimits
from feedback.database.db import Database
from feedback.evaluation.golden import GoldenSet
from feedback.labelling.answers import Answers, answer_counts, answers_on_checks
from feedback.labelling.guidelines import GuidelineBook
from feedback.labelling.pool import Pool, pool_counts, read_gold
from feedback.meaning import answers_as_meant
from feedback.topics.store import TopicBook
from feedback.topics.unlisted import UnlistedAnswers
from feedback.traffic.traffic_set import TrafficShare
from feedback.trust.crowd import Crowd
from feedback.trust.label_errors import LabelErrors
from feedback.trust.review import Reviews
from feedback.trust.rules import check_scores
from feedback.validate import KINDS

if TYPE_CHECKING:
    from core.settings.config import Settings


class FeedbackStore:
    """Answers (confirmations, corrections, queue labels) and the labelling pool in one SQLite file, or in a
    PostgreSQL database when `path` is a postgresql:// URL (`feedback.database.db`; the same logic and queries).

    Safe to share between threads and processes (see `feedback.database.db.Database`); `limits` bounds what it
    accepts. `durable=False` trades the fsync per answer for speed: still safe against process crashes,
    but the last answers can be lost on power failure.

    Each part is an attribute, over the one database; each reads the current topics from `topics` when it needs them:
    - `answers`: confirmations, corrections and queue labels (record, undo, review one, read, count);
    - `pool`: the texts to label and their queue (import, rescore, the next item, holds, skips, checks, progress);
    - `unlisted`: "None of these" answers, and placing them in a topic;
    - `topics`: the taxonomy's versions (`topics.current()`: what answers may name);
    - `reviews`: find answers by filter, review many, settle disagreements;
    - `crowd`: per-person counts and the answers people share, for the people panel;
    - `label_errors`: possible label errors and the decisions on them;
    - `guidelines`: the labelling guidelines, every version kept;
    - `golden`: the newsroom's labelled evaluation file;
    - `traffic_share`: the queue's traffic share, as a maintainer set it;
    - `database`: the database itself, for what sits beside the parts (`feedback.database.shared_state`, backups).
    """

    def __init__(
        self,
        path: Path | str,
        limits: StoreLimits = StoreLimits(),  # noqa: B008 - frozen, so one shared default is safe
        *,
        clock: Callable[[], float] = time.time,
        durable: bool = True,
    ) -> None:
        self.limits = limits
        self.database = Database(path, durable=durable)
        self.topics = TopicBook(self.database, clock)
        # The parts read the topics each time they need them (a few rows), so a change is seen at once.
        current = self.topics.current
        self.answers = Answers(self.database, limits, clock, current)
        self.pool = Pool(self.database, limits, clock, current)
        self.unlisted = UnlistedAnswers(self.database, limits, clock, current, self.topics)
        self.reviews = Reviews(self.database, clock, current)
        self.crowd = Crowd(self.database, current)
        self.label_errors = LabelErrors(self.database, clock, current)
        self.guidelines = GuidelineBook(self.database, clock, current)
        self.golden = GoldenSet(self.database, limits, clock, current)
        self.traffic_share = TrafficShare(self.database, clock)

    @classmethod
    def from_settings(cls, settings: Settings) -> FeedbackStore:
        """The store the settings name, with their limits: the one way edges (app, CLIs) build it."""
        return cls(settings.storage.database_url or settings.paths.feedback_db, settings.store_limits())

    @property
    def path(self) -> Path | str:
        return self.database.path

    def __repr__(self) -> str:
        return f"FeedbackStore({str(self.path)!r})"

    def close(self) -> None:
        """Close the calling thread's connection (others close when their threads end)."""
        self.database.close()

    def undo_last(self, annotator: str, kinds: Sequence[str] = KINDS) -> dict[str, Any] | None:
        """Mark the annotator's most recent live answer of one of `kinds` 'undone' (kept for audit); return it.
        An answer it had replaced stays replaced: nothing comes back to life. A "None of these" newer than their
        newest answer is the one undone: it comes back with `unlisted` True and `user_label` None."""
        return self.unlisted.undo_if_newest(annotator, kinds) or self.answers.undo_last(annotator, kinds)

    def stats(self) -> dict[str, Any]:
        """Counts for a dashboard: by status (all answers); by label, kind, annotators (live answers); pool; and per
        annotator, known-answer checks answered right out of those answered. Read in one transaction, so the
        numbers agree with each other."""
        taxonomy = self.topics.current()
        with self.database.read() as db:
            counted = answer_counts(db, taxonomy)
            pool_numbers = pool_counts(db)
            check_rows, gold = answers_as_meant(answers_on_checks(db), taxonomy), read_gold(db, taxonomy)
        scores = check_scores(check_rows, gold)
        return {**counted, "pool": pool_numbers,
                "checks_right": {name: f"{score.right}/{score.answered}" for name, score in scores.items()}}
