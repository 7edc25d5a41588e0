"""FeedbackStore: one object over the feedback database, composing its answers and its labelling pool."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from core.settings.policies import QueuePolicy, StoreLimits
from core.taxonomy import Taxonomy
from feedback.database.db import Database
from feedback.evaluation.golden import GoldenSet
from feedback.export.files import export_answers, write_answers
from feedback.labelling.answers import Answers, RecordResult
from feedback.labelling.guidelines import GuidelineBook
from feedback.labelling.pool import ImportReport, Pool
from feedback.labelling.progress import pool_left, queue_left
from feedback.topics.store import TopicBook
from feedback.topics.unlisted import Listing, Placement, UnlistedAnswers, UnlistedResult
from feedback.traffic.traffic_set import TrafficShare
from feedback.trust.crowd import Crowd
from feedback.trust.label_errors import LabelErrors
from feedback.trust.review import ReviewReport, Reviews
from feedback.validate import KINDS

if TYPE_CHECKING:
    from core.settings.config import Settings


class FeedbackStore:
    """Answers (confirmations, corrections, queue labels) and the labelling pool in one SQLite file, or in a
    PostgreSQL database when `path` is a postgresql:// URL (`feedback.database.db`; the same logic and queries).

    Safe to share between threads and processes (see `feedback.database.db.Database`); `limits` bounds what it
    accepts. `durable=False` trades the fsync per answer for speed: still safe against process crashes,
    but the last answers can be lost on power failure.
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
        self._db = Database(path, durable=durable)
        self.topics = TopicBook(self._db, clock)  # the taxonomy's versions: what topics answers may name
        self._answers = Answers(self._db, limits, clock, self.taxonomy)
        self._pool = Pool(self._db, limits, clock, self.taxonomy)
        self.reviews = Reviews(self._db, clock, self.taxonomy)  # find answers by filter, review many, settle disagreements
        self.guidelines = GuidelineBook(self._db, clock, self.taxonomy)  # the labelling guidelines, every version kept
        self.crowd = Crowd(self._db, self.taxonomy)  # per-person counts and the answers people share, for the people panel
        self.label_errors = LabelErrors(self._db, clock, self.taxonomy)  # possible label errors and the decisions on them
        self.unlisted = UnlistedAnswers(self._db, limits, clock, self.taxonomy, self.topics)  # "None of these"
        self.golden = GoldenSet(self._db, limits, clock, self.taxonomy)  # the newsroom's labelled evaluation file
        self.traffic_share = TrafficShare(self._db, clock)  # the queue's traffic share, as a maintainer set it

    @classmethod
    def from_settings(cls, settings: Settings) -> FeedbackStore:
        """The store the settings name, with their limits: the one way edges (app, CLIs) build it."""
        return cls(settings.storage.database_url or settings.paths.feedback_db, settings.store_limits())

    @property
    def path(self) -> Path | str:
        return self._db.path

    @property
    def database(self) -> Database:
        """The database itself (SQLite or PostgreSQL), for `feedback.database.shared_state` beside the answers."""
        return self._db

    def __repr__(self) -> str:
        return f"FeedbackStore({str(self.path)!r})"

    def taxonomy(self) -> Taxonomy:
        """The current topics: every stored version, or version 1 of the AG News four when none is stored (the app
        and `newsloop bootstrap` store the champion's own with `topics.seed`). Read each time: a few rows."""
        return self.topics.current()

    def close(self) -> None:
        """Close the calling thread's connection (others close when their threads end)."""
        self._db.close()

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
        verified: bool = False,
        address: str | None = None,
    ) -> RecordResult:
        """Store one answer; an identical live answer from the same annotator on the same path is returned, not
        repeated. A person has one live answer per text and path (a one-click answer on Classify, kinds
        'confirm'/'correct', or a 'queue' answer): a different label replaces their earlier answer, which is
        kept with status 'replaced' and counted nowhere (`RecordResult.replaced` names it).

        `user_label` names a topic of the current taxonomy (`taxonomy()`: a name, key, former name or 0-based
        position); its key is stored, with the taxonomy's version. `probabilities` is {label: p} keyed by the
        model's own labels, or one number per topic in the taxonomy's order; when `predicted_label` is
        omitted it is their argmax. The answer is 'suspicious' when the model was at least
        `limits.suspicious_confidence` sure of another label. Raises FeedbackError for bad input and
        RateLimited when the annotator has written `limits.writes_per_minute` answers in the last 60 s
        (`limits.verified_writes_per_minute` when `verified`), or the client `address` (a keyed hash the page
        supplies) `limits.address_writes_per_minute`.
        `verified` says the host signed the annotator in (the trust rules weigh such answers, see
        `feedback.trust.rules`).
        """
        return self._answers.record(
            text=text,
            user_label=user_label,
            annotator=annotator,
            kind=kind,
            predicted_label=predicted_label,
            probabilities=probabilities,
            model_version=model_version,
            item_id=item_id,
            verified=verified,
            address=address,
        )

    def undo_last(self, annotator: str, kinds: Sequence[str] = KINDS) -> dict[str, Any] | None:
        """Mark the annotator's most recent live answer of one of `kinds` 'undone' (kept for audit); return it.
        An answer it had replaced stays replaced: nothing comes back to life. A "None of these" newer than their
        newest answer is the one undone: it comes back with `unlisted` True and `user_label` None."""
        return self.unlisted.undo_if_newest(annotator, kinds) or self._answers.undo_last(annotator, kinds)

    def record_unlisted(
        self, *, text: str, annotator: str, kind: str, item_id: int | None = None, name: object = None,
        predicted_label: str | None = None, model_version: str | None = None, verified: bool = False,
        address: str | None = None,
    ) -> UnlistedResult:
        """Store that no topic of the current taxonomy fits `text` ("None of these"), with `name`, the topic the
        labeller thinks is missing, if they gave one (printable, at most 40 characters). `kind` is 'correct'
        (Classify) or 'queue' (with `item_id`: the item then leaves their queue). Kept apart from the answers, so it
        never trains as a topic. One per person and text: a repeat is a duplicate that may change the name. It counts
        against the same rate limits as `record` (RateLimited). Raises FeedbackError for bad input."""
        return self.unlisted.record(text=text, annotator=annotator, kind=kind, item_id=item_id, name=name,
                                    predicted_label=predicted_label, model_version=model_version, verified=verified,
                                    address=address)

    def unlisted_listing(self) -> Listing:
        """The "None of these" answers waiting for a maintainer, grouped into candidate topics, largest first (a
        bounded, fair sample of them when many wait: `feedback.topics.unlisted.UnlistedAnswers.listing`)."""
        return self.unlisted.listing()

    def place_unlisted(self, ids: Sequence[int], name: object, *, by: str, description: object = "",
                       taxonomy: Taxonomy | None = None) -> Placement:
        """Create the topic `name` (or use the current topic of that name) and make the confirmed "None of these"
        answers `ids` its first labels: accepted answers under its key. See `UnlistedAnswers.place`."""
        return self.unlisted.place(ids, name, by=by, description=description, taxonomy=taxonomy)

    def dismiss_unlisted(self, ids: Sequence[int], *, by: str) -> int:
        """Set aside "None of these" answers no topic is missing for; returns how many changed."""
        return self.unlisted.dismiss(ids, by=by)

    def queue_left(self, annotator: str, policy: QueuePolicy) -> int:
        """Queue items this annotator may still be shown (checks not told apart); see feedback.labelling.progress."""
        return queue_left(self._db, annotator, policy)

    def pool_left(self, labels_required: int) -> int:
        """Ordinary pool items not yet settled by enough agreeing annotators; see feedback.labelling.progress."""
        return pool_left(self._db, labels_required)

    def set_status(self, answer_id: int, status: str) -> dict[str, Any]:
        """Record a maintainer's review of an answer: 'accepted' (counts for training) or 'rejected'."""
        return self._answers.set_status(answer_id, status)

    def set_statuses(self, answer_ids: Sequence[int], status: str) -> ReviewReport:
        """Review many answers at once, in one transaction; reports which changed, which already had the
        status, which were undone and which do not exist (see `feedback.trust.review.Reviews.set_statuses`)."""
        return self.reviews.set_statuses(answer_ids, status)

    def get(self, answer_id: int) -> dict[str, Any] | None:
        """One answer by id, or None."""
        return self._answers.get(answer_id)

    def answers(self, status: str | None = None, limit: int | None = None,
                taxonomy: Taxonomy | None = None) -> list[dict[str, Any]]:
        """Answers newest first, optionally only those with `status`; probabilities decoded to a dict. Each
        `user_label` is read as it means under `taxonomy` (default: the current one): a merged topic's answers as
        its target, a split topic's earlier answers as the set "parent or child" (`feedback.topics.meaning`)."""
        return self._answers.rows(status, limit, taxonomy)

    def count(self, status: str | None = None) -> int:
        """Number of answers, all or with one status."""
        return self._answers.count(status)

    def count_since(self, answer_id: int) -> int:
        """Live, unrejected answers with an id above `answer_id` (e.g. the last one a retrain used)."""
        return self._answers.count_since(answer_id)

    def answers_per_day(self, days: int = 30) -> dict[str, int]:
        """Live answers (undone and replaced ones not counted) per UTC day, for the newest `days` days that
        have any: counted by the database, whatever the number of answers."""
        return self._answers.per_day(days)

    def stats(self) -> dict[str, Any]:
        """Counts for a dashboard: by status (all answers); by label, kind, annotators (live answers); pool;
        and per annotator, known-answer checks answered right out of those answered."""
        return self._answers.stats()

    def export(self, path: Path, fmt: str) -> int:
        """Write every answer (undone ones included, for audit) to `path` as CSV or JSONL; returns the count.

        Written to a temporary file and renamed, so a failed export never leaves a partial file.
        """
        return export_answers(self._db, path, fmt)

    def write_export(self, stream: TextIO, fmt: str) -> int:
        """Write every answer to an open text stream as CSV or JSONL, oldest first; returns the count."""
        return write_answers(self._db, stream, fmt)

    def backup(self, dest: Path) -> None:
        """Copy the whole database to `dest` with SQLite's online backup API (consistent while in use)."""
        self._db.backup(dest)

    # Labelling pool and queue ----------------------------------------------------------------------

    def import_pool(self, path: Path, *, source: str | None = None, checks: bool = False,
                    skip_bad: bool = False) -> ImportReport:
        """Add the texts of a CSV/JSONL file to the labelling pool, all or nothing.

        Every row is validated first; any bad row raises PoolImportError naming its line and nothing is
        written; with `skip_bad` the good rows are added and the bad ones reported (`ImportReport.bad`). Texts already in the pool (same text_hash) are skipped and counted as duplicates. With
        `checks`, every row needs a `label` and the rows become known-answer checks: the queue mixes
        them in (see `next_item`) and the trust rules score annotators on them. An import of articles (not
        checks) that adds any removes the demo articles nobody answered (`offer_demo_pool`).
        """
        return self._pool.import_file(path, source=source, checks=checks, skip_bad=skip_bad)

    def offer_demo_pool(self, texts: Sequence[str] = ()) -> int:
        """Put demo articles in the pool if it is empty, marked with the source 'demo': `texts` (the data's own:
        `core.samples`), else the shipped ones written for AG News's topics (`feedback.labelling.demo`); returns how
        many. The first `import_pool` of articles removes those nobody answered."""
        return self._pool.offer_demo(texts)

    def add_to_pool(
        self, texts: Sequence[str], *, source: str, labels: Sequence[str] | None = None,
        held: tuple[str, str] | None = None,
    ) -> ImportReport:
        """Add texts to the labelling pool, all or nothing (problems are numbered from 1 like lines).

        With `labels` (one topic per text) the texts become known-answer checks, as in `import_pool`. With
        `held` = (who brought them, why), the queue serves them to nobody until a maintainer accepts an answer
        on their text; adding a held text again without `held` releases it.
        """
        return self._pool.add(texts, source=source, labels=labels, held=held)

    def held_items(self, limit: int = 200) -> list[dict[str, Any]]:
        """Pool items held for a maintainer's review, newest first, with the id and label of the answer that
        brought each in: accepting that answer (`set_status`) lets the queue serve the item."""
        return self._pool.held(limit)

    def rescore(
        self, scorer: Callable[[list[str]], np.ndarray], model_version: str, *, batch_size: int = 256,
        labels: Sequence[str] | None = None,
    ) -> int:
        """Recompute uncertainty for pool items not yet scored by `model_version`; returns how many.

        `scorer(texts)` returns an (n, labels) probability array, its columns the model's `labels` (default: the
        current taxonomy's keys), kept per item with the likeliest one. Uncertainty is margin-based,
        1 - (p_top - p_second), see `feedback.labelling.pool.margin_uncertainty`. Batches are committed as they
        are scored, so an interrupted rescore resumes where it stopped. A round that scored anything recomputes
        the focus for the topic being taught (`refocus`).
        """
        return self._pool.rescore(scorer, model_version, batch_size=batch_size, labels=labels)

    def refocus(self, policy: QueuePolicy) -> str | None:
        """Recompute how informative each pool item is for the topic being taught (`feedback.labelling.focus`): the
        newest added or split-off topic with fewer than `policy.teach_until` counted answers. Returns its key, or
        None when no topic is being taught. The queue does this itself when that topic changes."""
        target = self._pool.refocus(policy.teach_until)
        return target.key if target is not None else None

    def push_search(self, query: str, n: int, by: str) -> int:
        """Put the `n` pool items nearest `query` (words, or a pasted article; TF-IDF cosine) first in every
        annotator's queue, after due checks, until answered or settled; returns how many. Items anyone answered,
        checks and traffic-set items are never pushed."""
        return self._pool.push_search(query, n, by)

    def clear_pushed(self) -> int:
        """Take every pushed item back out of the front of the queue; returns how many were pushed."""
        return self._pool.clear_pushed()

    def pushed_waiting(self) -> int:
        """Pushed items nobody has a counted answer on yet."""
        return self._pool.pushed_waiting()

    def gold_labels(self, taxonomy: Taxonomy | None = None) -> dict[str, str]:
        """The known-answer checks: text_hash -> the label a maintainer gave, read as it means under `taxonomy`
        (default: the current one), as `answers` reads answers."""
        return self._pool.gold_labels(taxonomy)

    def next_item(
        self, annotator: str, policy: QueuePolicy, *, exclude: Collection[int] = (), ahead: int = 0,
        holder: str | None = None,
    ) -> dict[str, Any] | None:
        """The pool item this annotator should label next, or None when none is left.

        A known-answer check when one is due (see `due_check`) and one is left that they have not
        answered or skipped. Otherwise one of the `policy.spread` most uncertain ordinary items (in an
        order of the annotator's own), skipping items the annotator
        answered (live answers) or skipped, and items that already have `policy.labels_required` live,
        unrejected answers agreeing on one label (from any tab, matched by text_hash); unscored items
        come after scored ones, oldest first. A returned check does not carry its label.
        `exclude`: item ids not to return (those a page already holds); `ahead`: how many items that page holds
        unanswered, so a check is due by the position this item will have in the annotator's stream.
        `holder` (a tab): the ordinary item returned is held for it in the database (`hold`), and items other
        holders hold are returned only when no other is left, so tabs on any replica are not handed the same item.
        """
        return self._pool.next_item(annotator, policy, exclude=exclude, ahead=ahead, holder=holder)

    def next_items(
        self, annotator: str, policy: QueuePolicy, count: int, *, exclude: Collection[int] = (), ahead: int = 0,
        holder: str | None = None,
    ) -> list[dict[str, Any]]:
        """The next `count` items `next_item` would give this annotator one after another (the first at `ahead`,
        the next at `ahead` + 1, each excluding the ones before), fewer when fewer are left; read, chosen and (with
        `holder`) held in one transaction."""
        return self._pool.next_items(annotator, policy, count, exclude=exclude, ahead=ahead, holder=holder)

    def hold(self, holder: str, item_ids: Collection[int], policy: QueuePolicy) -> None:
        """Hold queue items for `holder` (a tab) for `policy.reservation_s` seconds from now, renewing holds it
        has; other holders are given them only when nothing else is left (`feedback.labelling.reservations`)."""
        self._pool.hold(holder, item_ids, policy)

    def release(self, holder: str, item_ids: Collection[int] | None = None) -> None:
        """End `holder`'s hold on `item_ids` (answered, skipped or dropped), or on all its items when None."""
        self._pool.release(holder, item_ids)

    def due_check(self, annotator: str, policy: QueuePolicy) -> dict[str, Any] | None:
        """The known-answer check this annotator should answer now, or None when none is due or left.

        Due by `feedback.trust.rules.check_due`, at unpredictable positions: about one item in three until the
        annotator answered `policy.min_checks` checks, then about `policy.check_share`. The position counts
        their live answers of every kind (one-click corrections too) and their skips.
        """
        return self._pool.due_check(annotator, policy)

    def skip(self, annotator: str, item_id: int, max_skips: int | None = None) -> None:
        """Remember that the annotator skipped a queue item, so it is not offered to them again.

        Raises FeedbackError when the annotator already made `max_skips` skips (bounded per identity).
        """
        self._pool.skip(annotator, item_id, max_skips)

    def progress(self, annotator: str) -> int:
        """How many queue items this annotator has labelled (live answers)."""
        return self._pool.progress(annotator)
