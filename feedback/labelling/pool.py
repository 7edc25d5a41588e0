"""The labelling pool and its queue: import, rescore, the next item, known-answer checks, skips."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

from core.settings.policies import QueuePolicy, StoreLimits
from core.taxonomy import Taxonomy
from core.text import text_hash
from feedback.database.db import Database, iso_time
from feedback.database.query import count, first, insert_on_conflict, rows
from feedback.database.tables import answers, pool, skips, unlisted
from feedback.errors import FeedbackError, PoolImportError
from feedback.labelling import reservations
from feedback.labelling.demo import DEMO_FILE, DEMO_SOURCE, drop_unanswered_demo, pool_is_empty
from feedback.labelling.focus import Teaching, focus_scores, is_focus_turn, teaching
from feedback.labelling.neighbours import nearest, similarities
from feedback.labelling.pool_files import cleaned, read_pool_file
from feedback.meaning import checks_as_meant
from feedback.traffic.traffic_set import maintained_share, mark_new_items, traffic_turn, turn_position
from feedback.validate import (
    NOT_COUNTED,
    WITHDRAWN,
    PoolRow,
    Status,
    check_annotator,
    check_model_version,
    check_pool_row,
    check_probability_rows,
    check_row_id,
)

log = logging.getLogger(__name__)


def unseen(annotator: str) -> sa.ColumnElement[bool]:
    """Pool items `annotator` has neither answered (live; "None of these" included) nor skipped, and that anybody
    may be shown: not held for a maintainer's review (`Pool.add` with `held`), or released by an accepted answer on
    their text."""
    mine, accepted = answers.alias("a"), answers.alias("v")
    return sa.and_(
        ~sa.exists().where(mine.c.text_hash == pool.c.text_hash, mine.c.annotator == annotator,
                           mine.c.status.not_in(WITHDRAWN)),
        ~sa.exists().where(unlisted.c.text_hash == pool.c.text_hash, unlisted.c.annotator == annotator,
                           unlisted.c.status != "undone"),
        ~sa.exists().where(skips.c.item_id == pool.c.id, skips.c.annotator == annotator),
        sa.or_(pool.c.held_by.is_(None),
               sa.exists().where(accepted.c.text_hash == pool.c.text_hash, accepted.c.status == Status.ACCEPTED)),
    )


def settled(required: int) -> sa.ColumnElement[bool]:
    """Pool items `required` client addresses agree on (identities sharing one are one voice, as in
    feedback.trust.rules): they leave the queue, so minted identities cannot take items away from honest labellers."""
    a = answers.alias("a")
    voices = sa.func.count(sa.distinct(sa.func.coalesce(a.c.address, a.c.annotator)))
    return sa.exists(sa.select(1).where(a.c.text_hash == pool.c.text_hash, a.c.status.not_in(NOT_COUNTED))
                     .group_by(a.c.user_label).having(voices >= required))


@dataclass(frozen=True)
class ImportReport:
    """What an import did: rows read, items added, rows skipped as already in the pool, demo items replaced."""

    rows: int
    added: int
    duplicates: int
    demo_removed: int = 0  # unanswered demo articles the import replaced (feedback.labelling.demo)
    bad: tuple[tuple[int, str], ...] = ()  # lines left out (an import with skip_bad), with why


def margin_uncertainty(probabilities: np.ndarray) -> np.ndarray:
    """Margin-based uncertainty per row: 1 - (p_top - p_second).

    1.0 when the model's two best labels tie, 0.0 when it puts all mass on one label. The margin is
    used rather than entropy because it focuses on the decision the annotator can settle.
    """
    ordered = np.sort(check_probability_rows(probabilities), axis=1)
    return 1.0 - (ordered[:, -1] - ordered[:, -2])


def read_gold(db: sa.Connection, taxonomy: Taxonomy) -> dict[str, str]:
    """The known-answer checks on this connection: text_hash -> the label a maintainer gave, read as it means under
    `taxonomy` (given under the version in force when the check was added; see `feedback.meaning`)."""
    query = sa.select(pool.c.text_hash, pool.c.gold_label, pool.c.added_at).where(pool.c.gold_label.is_not(None))
    return checks_as_meant(((d, label, at) for d, label, at in db.execute(query)), taxonomy)


def pool_counts(db: sa.Connection) -> dict[str, int]:
    """Pool items, scored items, known-answer checks and skips, for the dashboard."""
    items, scored, checks = db.execute(
        sa.select(sa.func.count(), sa.func.count(pool.c.scored_by), sa.func.count(pool.c.gold_label))).one()
    skipped = count(db, sa.select(sa.func.count()).select_from(skips))
    return {"items": int(items), "scored": int(scored), "checks": int(checks), "skips": skipped}


def check_item(db: sa.Connection, item_id: int, digest: str) -> None:
    """Refuse an answer naming a queue item that does not exist or holds another text."""
    item = db.execute(sa.select(pool.c.text_hash).where(pool.c.id == item_id)).scalar()
    if item is None:
        raise FeedbackError(f"unknown queue item {item_id}")
    if item != digest:
        raise FeedbackError(f"the text does not match queue item {item_id}")


def _insert_pool_row(
    conn: sa.Connection, row: PoolRow, source: str, added_at: str, held: tuple[str, str] | None = None
) -> bool:
    """Insert one pool item unless its text is already there; True when it was added. Adding a text that is
    held, without `held` (a maintainer's import, a signed-in author's correction), releases it."""
    by, reason = held or (None, None)
    added = conn.execute(insert_on_conflict(conn, pool).values(
        text=row.text, text_hash=row.text_hash, source=source, added_at=added_at, gold_label=row.label, held_by=by,
        held_reason=reason).on_conflict_do_nothing().returning(pool.c.id)).first() is not None
    if not added and held is None:
        conn.execute(sa.update(pool).where(pool.c.text_hash == row.text_hash).values(held_by=None, held_reason=None))
    return added


def _queue_items(annotator: str, required: int) -> sa.Select[Any]:
    """Ordinary items `annotator` may be given: unseen by them, not a check, not settled."""
    return sa.select(pool).where(pool.c.gold_label.is_(None), unseen(annotator), ~settled(required))


def _counted_on_text() -> sa.ColumnElement[bool]:
    """Pool items someone has a counted answer on."""
    return sa.exists().where(answers.c.text_hash == pool.c.text_hash, answers.c.status.not_in(NOT_COUNTED))


def _not_traffic() -> sa.ColumnElement[bool]:
    """Pool items outside the traffic set (or not drawn yet): the traffic set is a random sample, so neither a
    search nor the topic being taught may pick its items (`feedback.traffic.traffic_set`)."""
    return sa.func.coalesce(pool.c.traffic, 0) == 0


def answers_per_topic(db: sa.Connection, keys: Collection[str]) -> dict[str, int]:
    """Counted answers naming each of `keys` (key -> how many; keys nobody answered are left out)."""
    if not keys:
        return {}
    query = (sa.select(answers.c.user_label, sa.func.count()).where(answers.c.user_label.in_(sorted(keys)),
             answers.c.status.not_in(NOT_COUNTED)).group_by(answers.c.user_label))
    return {str(key): int(n) for key, n in db.execute(query)}


def _draw(
    db: sa.Connection, annotator: str, policy: QueuePolicy, items: sa.Select[Any], *, focus_turn: bool = False
) -> dict[str, Any] | None:
    """One of `items` for `annotator`: a pushed one (a maintainer's search) first; else on a traffic turn from the
    newest traffic, on a focus turn (while a topic is taught) from the most informative for it, otherwise from the
    most uncertain few."""
    ranked = items.where(pool.c.traffic == 0)
    pushed = ranked.where(pool.c.pushed.is_not(None)).order_by(pool.c.pushed.desc(), pool.c.id).limit(policy.spread)
    focused = ranked.where(pool.c.focus.is_not(None)).order_by(pool.c.focus.desc(), pool.c.id).limit(policy.spread)
    uncertain = (ranked.where(pool.c.uncertainty.is_not(None))
                 .order_by(pool.c.uncertainty.desc(), pool.c.id).limit(policy.spread))
    # Items the champion has not scored yet (feedback.labelling.scoring scores them within seconds) are not
    # "least sure": they come after scored ones, the oldest few first, never mixed in with the most uncertain.
    unscored = ranked.where(pool.c.uncertainty.is_(None)).order_by(pool.c.id).limit(policy.spread)
    # The traffic set's newest unlabelled items (see feedback.traffic.traffic_set): a traffic turn picks one at random.
    traffic = items.where(pool.c.traffic == 1).order_by(pool.c.id.desc()).limit(policy.traffic_recent)
    turns = [pushed, uncertain, unscored, traffic]  # the next kind when this kind has none left
    if traffic_turn(db, annotator, policy.traffic_share):
        turns = [pushed, traffic, uncertain, unscored]
    elif focus_turn:
        turns = [pushed, focused, uncertain, unscored, traffic]
    candidates = next((found for query in turns if (found := rows(db, query))), [])
    # Each annotator draws from the most uncertain few in their own order, so streams differ and a
    # check cannot be spotted as the one item that is not the same for every fresh identity.
    item = min(candidates, key=lambda row: text_hash(f"{annotator}:{row['text_hash']}"), default=None)
    if item is not None:
        item.pop("gold_label")
    return item


# Share of a new annotator's items that are checks until they have answered `min_checks` of them.
EARLY_CHECK_SHARE = 1 / 3


def check_due(checks_answered: int, draw: float, *, min_checks: int, share: float) -> bool:
    """Whether an annotator's next queue item should be a known-answer check.

    `draw` is a number in [0, 1) the caller derives from something the client cannot predict, so checks
    sit at random positions of each annotator's stream: a fresh identity is not served checks first,
    and rotating identities does not reveal them. Until `min_checks` are answered about one item in
    three is a check, then about `share` of them.
    """
    return draw < (max(share, EARLY_CHECK_SHARE) if checks_answered < min_checks else share)


@dataclass(frozen=True)
class _CheckState:
    """What decides whether a known-answer check is due for an annotator: checks answered, answers, skips, and the
    checks left to them (read once for a batch of items)."""

    checks: int
    answered: int
    skipped: int
    left: list[dict[str, Any]]

    @classmethod
    def read(cls, db: sa.Connection, annotator: str) -> _CheckState:
        answered_checks = (
            sa.select(sa.func.count(pool.c.gold_label), sa.func.count())
            .select_from(answers.outerjoin(pool, pool.c.text_hash == answers.c.text_hash))
            .where(answers.c.annotator == annotator, answers.c.status.not_in(WITHDRAWN))
        )
        checks, answered = (int(n) for n in db.execute(answered_checks).one())
        skipped = count(db, sa.select(sa.func.count()).where(skips.c.annotator == annotator))
        left = rows(db, sa.select(pool).where(pool.c.gold_label.is_not(None), unseen(annotator)))
        return cls(checks, answered, skipped, left)

    def due(self, annotator: str, policy: QueuePolicy, exclude: Collection[int], ahead: int) -> dict[str, Any] | None:
        """The check due at `ahead` items past the annotator's answers, or None."""
        if not self.left:
            return None
        # The draw is keyed by the set of checks, which visitors do not know, so its outcome cannot be
        # predicted from an annotator id; it is fixed for a given position, so a reload does not re-roll.
        salt = text_hash(",".join(sorted(row["text_hash"] for row in self.left)))
        # `ahead`: items the page already holds, unanswered (web.page.labelling's buffer) come before this one.
        position = self.answered + max(int(ahead), 0)
        draw = int(text_hash(f"{salt}:{annotator}:{position}:{self.skipped}")[:12], 16) / 16**12
        if not check_due(self.checks, draw, min_checks=policy.min_checks, share=policy.check_share):
            return None
        left = [row for row in self.left if int(row["id"]) not in exclude]
        if not left:
            return None
        # A per-annotator order, so annotators comparing notes do not see the same sequence of checks.
        item = dict(min(left, key=lambda row: text_hash(f"{annotator}:{row['text_hash']}")))
        item.pop("gold_label")  # what the screen shows must not give the answer away
        return item


class Pool:
    """The texts waiting for labels, their uncertainty under the champion, and who skipped what."""

    def __init__(self, db: Database, limits: StoreLimits, clock: Callable[[], float],
                 taxonomy: Callable[[], Taxonomy]) -> None:
        self._db = db
        self._limits = limits
        self._clock = clock
        self._taxonomy = taxonomy  # the store's current topics: what a check's label may name
        # What the stored focus was computed for ((taxonomy version, topic taught) or None, teach_until); None:
        # not yet in this process. A draw recomputes it when the topic taught is another (feedback.labelling.focus).
        self._focused: tuple[tuple[int, str] | None, int] | None = None
        self._teach_until = QueuePolicy().teach_until  # the last one a draw used: what a rescore refocuses with

    def import_file(self, path: Path, *, source: str | None = None, checks: bool = False,
                    skip_bad: bool = False) -> ImportReport:
        """Add the texts of a CSV/JSONL file to the pool, all or nothing.

        Every row is validated first; any bad row raises PoolImportError naming its line and nothing is written; with
        `skip_bad` the good rows are added and the bad ones reported (`ImportReport.bad`). Texts already in the pool
        (same text_hash) are skipped and counted as duplicates. With `checks`, every row needs a `label` and the rows
        become known-answer checks: the queue mixes them in (see `next_item`) and the trust rules score annotators on
        them. An import of articles (not checks) that adds any removes the demo articles nobody answered
        (`offer_demo`).
        """
        path = Path(path)
        rows, bad = read_pool_file(path, max_chars=self._limits.max_text_chars, labelled=checks,
                                   taxonomy=self._taxonomy() if checks else None, skip_bad=skip_bad)
        # A host's articles to label replace the demo pool (checks are not articles to label: they leave it).
        return replace(self._add_rows(rows, source or path.name, replaces_demo=not checks), bad=tuple(bad))

    def offer_demo(self, texts: Sequence[str] = ()) -> int:
        """Put demo articles in the pool if it is empty, marked with the source 'demo': `texts` (the data's own:
        `core.samples`), else the shipped ones written for AG News's topics (`feedback.labelling.demo`); returns how
        many. The first `import_file` of articles removes those nobody answered."""
        if texts:
            rows = [check_pool_row(n, cleaned(text), None, max_chars=self._limits.max_text_chars, labelled=False)
                    for n, text in enumerate(texts, start=1)]
        else:
            rows, _ = read_pool_file(DEMO_FILE, max_chars=self._limits.max_text_chars)
        added_at = iso_time(self._clock())
        with self._db.write() as db:
            if not pool_is_empty(db):
                return 0
            added = sum(_insert_pool_row(db, row, DEMO_SOURCE, added_at) for row in rows)
        log.info("the pool was empty: %d demo articles added (a first import replaces them)", added)
        return added

    def add(
        self, texts: Sequence[str], *, source: str, labels: Sequence[str] | None = None,
        held: tuple[str, str] | None = None,
    ) -> ImportReport:
        """Add texts to the pool, all or nothing (problems are numbered from 1 like lines).

        With `labels` (one topic per text) the texts become known-answer checks, as in `import_file`. With `held` =
        (who brought them, why), the queue serves them to nobody until a maintainer accepts an answer on their text;
        adding a held text again without `held` releases it.
        """
        if labels is not None and len(labels) != len(texts):
            raise FeedbackError(f"{len(labels)} labels for {len(texts)} texts")
        rows: list[PoolRow] = []
        problems: list[tuple[int, str]] = []
        taxonomy = self._taxonomy() if labels is not None else None
        for number, text in enumerate(texts, start=1):
            label = labels[number - 1] if labels is not None else None
            try:
                readable = cleaned(text) if isinstance(text, str) else text  # entities undone, as in files
                rows.append(
                    check_pool_row(
                        number, readable, label, max_chars=self._limits.max_text_chars, labelled=labels is not None,
                        taxonomy=taxonomy,
                    )
                )
            except FeedbackError as exc:
                problems.append((number, str(exc)))
        if problems:
            listed = "; ".join(f"item {number}: {problem}" for number, problem in problems[:20])
            raise PoolImportError(f"{len(problems)} bad texts; nothing was added: {listed}", problems)
        return self._add_rows(rows, source, None if labels is not None else held)

    def _add_rows(
        self, rows: list[PoolRow], source: str, held: tuple[str, str] | None = None, *, replaces_demo: bool = False
    ) -> ImportReport:
        added_at = iso_time(self._clock())
        added = demo_removed = 0
        # One transaction: a crash part-way leaves the pool exactly as it was.
        with self._db.write() as db:
            for row in rows:
                added += _insert_pool_row(db, row, source, added_at, held)
            if replaces_demo and added and source != DEMO_SOURCE:
                demo_removed = drop_unanswered_demo(db)
        report = ImportReport(rows=len(rows), added=added, duplicates=len(rows) - added, demo_removed=demo_removed)
        log.info("pool import from %s: %d added, %d duplicates", source, report.added, report.duplicates)
        if demo_removed:
            log.info("the import replaced the demo pool: %d unanswered demo articles removed", demo_removed)
        return report

    def rescore(
        self, scorer: Callable[[list[str]], np.ndarray], model_version: str, *, batch_size: int = 256,
        labels: Sequence[str] | None = None,
    ) -> int:
        """Recompute uncertainty for pool items not yet scored by `model_version`; returns how many.

        `scorer(texts)` returns an (n, labels) probability array, its columns the model's `labels` (default: the
        current taxonomy's keys), kept per item with the likeliest one. Uncertainty is margin-based,
        1 - (p_top - p_second), see `margin_uncertainty`. Batches are committed as they are scored, so an
        interrupted rescore resumes where it stopped. A round that scored anything recomputes the focus for the topic
        being taught (`refocus`).
        """
        model_version = check_model_version(model_version)
        keys = tuple(labels) if labels is not None else self._taxonomy().keys
        query = (sa.select(pool.c.id, pool.c.text)
                 .where(sa.or_(pool.c.scored_by.is_(None), pool.c.scored_by != model_version)).order_by(pool.c.id))
        with self._db.read() as db:
            pending = [(int(item_id), str(text)) for item_id, text in db.execute(query)]
        score = (sa.update(pool).where(pool.c.id == sa.bindparam("item"))
                 .values(uncertainty=sa.bindparam("score"), scored_by=sa.bindparam("model"),
                         top_key=sa.bindparam("top"), top_prob=sa.bindparam("p"), probabilities=sa.bindparam("probs")))
        for start in range(0, len(pending), batch_size):
            batch = pending[start : start + batch_size]
            probs = check_probability_rows(scorer([text for _, text in batch]), rows=len(batch))
            scores = margin_uncertainty(probs)
            # Columns named only when there is one name per column (a scorer without labels, of another width,
            # still gives uncertainty; its items then have no likeliest topic and no model focus).
            named = len(keys) == probs.shape[1]
            with self._db.write() as db:
                db.execute(score, [
                    {"score": float(value), "model": model_version, "item": item_id,
                     "top": keys[int(row.argmax())] if named else None, "p": float(row.max()) if named else None,
                     "probs": json.dumps({k: round(float(x), 6) for k, x in zip(keys, row, strict=True)})
                     if named else None}
                    for (item_id, _), value, row in zip(batch, scores, probs, strict=True)])
        if pending:  # the background scorer looks every few seconds: only rounds that scored something are logged
            log.info("rescored %d pool items with model %s", len(pending), model_version)
            self.refocus(self._teach_until)  # here, on the scoring thread, so no labeller's request waits for it
        return len(pending)

    def teaching(self, teach_until: int) -> Teaching | None:
        """The topic being taught now (`feedback.labelling.focus.teaching`), or None."""
        taxonomy = self._taxonomy()
        new = {v.change.key for v in taxonomy.versions if v.change.kind in ("add", "split")}
        with self._db.read() as db:
            answered = answers_per_topic(db, new)
        return teaching(taxonomy, answered, teach_until)

    def refocus(self, teach_until: int) -> Teaching | None:
        """Compute and store how informative each ordinary item is for the topic being taught
        (`feedback.labelling.focus`): the newest added or split-off topic with fewer than `teach_until` counted
        answers (all NULL when none is); returns that topic, or None. Seconds for thousands of items (one TF-IDF
        fit). The queue does this itself when that topic changes."""
        target = self.teaching(teach_until)
        self._teach_until = teach_until
        if target is None:
            with self._db.write() as db:
                db.execute(sa.update(pool).where(pool.c.focus.is_not(None)).values(focus=None))
            self._focused = (None, teach_until)
            return None
        query = (sa.select(pool.c.id, pool.c.text, pool.c.probabilities)
                 .where(pool.c.gold_label.is_(None), _not_traffic()).order_by(pool.c.id))
        with self._db.read() as db:
            found = list(db.execute(query))
        probabilities: list[Mapping[str, float] | None] = [json.loads(p) if p else None for _, _, p in found]
        texts = [str(text) for _, text, _ in found]
        scores = focus_scores(target, self._taxonomy(), probabilities, similarities(texts, target.words).tolist(),
                              texts)
        focus = sa.update(pool).where(pool.c.id == sa.bindparam("item")).values(focus=sa.bindparam("value"))
        with self._db.write() as db:
            db.execute(sa.update(pool).where(pool.c.focus.is_not(None)).values(focus=None))
            chosen = [{"item": int(item_id), "value": value}
                      for (item_id, _, _), value in zip(found, scores, strict=True) if value is not None]
            if chosen:
                db.execute(focus, chosen)
        self._focused = (target.marker, teach_until)
        log.info("the queue teaches topic %s: %d items in focus", target.key, len(chosen))
        return target

    def push_search(self, query: str, n: int, by: str) -> int:
        """Put the `n` pool items nearest `query` (words, or a pasted article; TF-IDF cosine) first in every
        annotator's queue, after due checks, until answered or settled; returns how many. Items anyone answered,
        checks and traffic-set items are never pushed."""
        query = " ".join(str(query or "").split())
        if not query:
            raise FeedbackError("give some words, or paste an article, to search for")
        if len(query) > self._limits.max_text_chars:
            raise FeedbackError(f"a search has at most {self._limits.max_text_chars} characters")
        if not 1 <= int(n) <= 1000:
            raise FeedbackError("push 1 to 1000 articles")
        candidates = (sa.select(pool.c.id, pool.c.text)
                      .where(pool.c.gold_label.is_(None), _not_traffic(), ~_counted_on_text()).order_by(pool.c.id))
        with self._db.read() as db:
            found = list(db.execute(candidates))
        matches = nearest([str(text) for _, text in found], query, int(n))
        push = (sa.update(pool).where(pool.c.id == sa.bindparam("item"))
                .values(pushed=sa.bindparam("score"), pushed_by=by, pushed_at=iso_time(self._clock())))
        if matches:
            with self._db.write() as db:
                db.execute(push, [{"item": int(found[i][0]), "score": score} for i, score in matches])
        log.info("%s pushed %d pool items to the front of the queue", by, len(matches))
        return len(matches)

    def clear_pushed(self) -> int:
        """Take every pushed item back out of the front of the queue; returns how many were pushed."""
        with self._db.write() as db:
            return int(db.execute(sa.update(pool).where(pool.c.pushed.is_not(None))
                                  .values(pushed=None, pushed_by=None, pushed_at=None)).rowcount or 0)

    def pushed_waiting(self) -> int:
        """Pushed items nobody has a counted answer on yet."""
        query = sa.select(sa.func.count()).where(pool.c.pushed.is_not(None), _not_traffic(), ~_counted_on_text())
        with self._db.read() as db:
            return count(db, query)

    def held(self, limit: int = 200) -> list[dict[str, Any]]:
        """Pool items held for a maintainer's review, newest first, with the id and label of the answer that
        brought each in: accepting that answer (`Answers.set_status`) lets the queue serve the item."""
        accepted = answers.alias("v")
        query = (
            sa.select(pool.c.id.label("item_id"), pool.c.text, pool.c.held_by, pool.c.held_reason,
                      answers.c.id.label("answer_id"), answers.c.user_label, answers.c.predicted_label)
            .join(answers, sa.and_(answers.c.text_hash == pool.c.text_hash, answers.c.annotator == pool.c.held_by))
            .where(pool.c.held_by.is_not(None), answers.c.status.not_in(NOT_COUNTED),
                   ~sa.exists().where(accepted.c.text_hash == pool.c.text_hash, accepted.c.status == Status.ACCEPTED))
            .order_by(pool.c.id.desc()).limit(int(limit))
        )
        with self._db.read() as db:
            return rows(db, query)

    def gold_labels(self, taxonomy: Taxonomy | None = None) -> dict[str, str]:
        """The known-answer checks: text_hash -> the label a maintainer gave, read as it means under `taxonomy`
        (default: the current one), as `Answers.rows` reads answers."""
        taxonomy = taxonomy or self._taxonomy()
        with self._db.read() as db:
            return read_gold(db, taxonomy)

    def next_item(
        self, annotator: str, policy: QueuePolicy, *, exclude: Collection[int] = (), ahead: int = 0,
        holder: str | None = None,
    ) -> dict[str, Any] | None:
        """The pool item this annotator should label next, or None when none is left.

        A known-answer check when one is due (see `due_check`) and one is left that they have not answered or
        skipped. Otherwise one of the `policy.spread` most uncertain ordinary items (in an order of the annotator's
        own), skipping items the annotator answered (live answers) or skipped, and items that already have
        `policy.labels_required` live, unrejected answers agreeing on one label (from any tab, matched by
        text_hash); unscored items come after scored ones, oldest first. A returned check does not carry its label.
        `exclude`: item ids not to return (those a page already holds); `ahead`: how many items that page holds
        unanswered, so a check is due by the position this item will have in the annotator's stream.
        `holder` (a tab): the ordinary item returned is held for it in the database (`hold`), and items other
        holders hold are returned only when no other is left, so tabs on any replica are not handed the same item.
        """
        found = self.next_items(annotator, policy, 1, exclude=exclude, ahead=ahead, holder=holder)
        return found[0] if found else None

    def next_items(
        self, annotator: str, policy: QueuePolicy, count: int, *, exclude: Collection[int] = (), ahead: int = 0,
        holder: str | None = None,
    ) -> list[dict[str, Any]]:
        """The next `count` items `next_item` would give this annotator one after another (the first at `ahead`,
        the next at `ahead` + 1, each excluding the ones before), fewer when fewer are left; read, chosen and (with
        `holder`) held in one transaction."""
        annotator = check_annotator(annotator)
        excluded = {int(item_id) for item_id in exclude}
        with self._db.read() as db:
            share = maintained_share(db)
        policy = policy if share is None else policy.with_(traffic_share=share)
        mark_new_items(self._db, policy.traffic_share)
        target = self.teaching(policy.teach_until)
        if (target.marker if target else None, policy.teach_until) != self._focused:
            target = self.refocus(policy.teach_until)  # a topic change, or the topic taught has its answers
        now = self._clock()
        taken: list[dict[str, Any]] = []
        ordinary: list[int] = []
        with self._db.read() as db:  # outside the lock below: no other tab's holds change what checks are due
            checks = _CheckState.read(db, annotator)
            turn = turn_position(db, annotator) + max(int(ahead), 0)
        # With a holder, chosen and held in one transaction under one lock, so two replicas choosing at once never
        # hold the same item while another is free; an item others hold is shared only when nothing else is left.
        with self._db.write(reservations.SCOPE) if holder is not None else self._db.read() as db:
            for position in range(max(int(count), 0)):
                item = checks.due(annotator, policy, excluded, ahead + position)
                if item is None:
                    items = _queue_items(annotator, policy.labels_required)
                    if excluded:
                        items = items.where(pool.c.id.not_in(sorted(excluded)))
                    free = items.where(~reservations.held_by_others(holder, now)) if holder is not None else None
                    focus = target is not None and is_focus_turn(annotator, turn + position, policy.focus_share)
                    item = ((free is not None and _draw(db, annotator, policy, free, focus_turn=focus))
                            or _draw(db, annotator, policy, items, focus_turn=focus))
                    if item is not None:
                        ordinary.append(int(item["id"]))
                if item is None:
                    break
                taken.append(item)
                excluded.add(int(item["id"]))
            if holder is not None and ordinary:
                reservations.hold(db, holder, ordinary, now, policy.reservation_s)
        return taken

    def hold(self, holder: str, item_ids: Collection[int], policy: QueuePolicy) -> None:
        """Hold queue items for `holder` (a tab) for `policy.reservation_s` seconds from now, renewing holds it
        has; other holders are given them only when nothing else is left (`feedback.labelling.reservations`)."""
        with self._db.write(reservations.SCOPE) as db:
            reservations.hold(db, holder, item_ids, self._clock(), policy.reservation_s)

    def release(self, holder: str, item_ids: Collection[int] | None = None) -> None:
        """End `holder`'s hold on `item_ids` (answered, skipped or dropped), or on all its items when None."""
        with self._db.write(reservations.SCOPE) as db:
            reservations.release(db, holder, item_ids)

    def due_check(
        self, annotator: str, policy: QueuePolicy, *, exclude: Collection[int] = (), ahead: int = 0
    ) -> dict[str, Any] | None:
        """The known-answer check this annotator should answer now, or None when none is due or left.

        Due by `check_due`, at unpredictable positions: about one item in three until the annotator answered
        `policy.min_checks` checks, then about `policy.check_share`. The position counts their live answers of
        every kind (one-click corrections too) and their skips.
        """
        annotator = check_annotator(annotator)
        with self._db.read() as db:
            checks = _CheckState.read(db, annotator)
        return checks.due(annotator, policy, {int(item_id) for item_id in exclude}, ahead)

    def skip(self, annotator: str, item_id: int, max_skips: int | None = None) -> None:
        """Remember that the annotator skipped a queue item, so it is not offered to them again.

        Raises FeedbackError when the annotator already made `max_skips` skips (bounded per identity).
        """
        annotator = check_annotator(annotator)
        item_id = check_row_id(item_id, "queue item")
        with self._db.write() as db:
            if first(db, sa.select(pool.c.id).where(pool.c.id == item_id)) is None:
                raise FeedbackError(f"unknown queue item {item_id}")
            if max_skips is not None:
                skipped = count(db, sa.select(sa.func.count()).where(skips.c.annotator == annotator))
                if skipped >= max_skips:
                    raise FeedbackError(f"you have skipped {skipped} articles, the most allowed; please label this one")
            db.execute(insert_on_conflict(db, skips).values(
                annotator=annotator, item_id=item_id, skipped_at=iso_time(self._clock())).on_conflict_do_nothing())

    def progress(self, annotator: str) -> int:
        """How many queue items this annotator has labelled: live answers, and "None of these" (key 0) ones not
        undone nor placed (a placed one is an answer now, counted there)."""
        annotator = check_annotator(annotator)
        query = sa.select(sa.func.count()).where(
            answers.c.annotator == annotator, answers.c.kind == "queue", answers.c.status.not_in(WITHDRAWN))
        none_of_these = sa.select(sa.func.count()).where(
            # feedback.topics.unlisted's OK and DISMISSED (that module imports this one)
            unlisted.c.annotator == annotator, unlisted.c.kind == "queue", unlisted.c.status.in_(("ok", "dismissed")))
        with self._db.read() as db:
            return count(db, query) + count(db, none_of_these)

    def queue_left(self, annotator: str, policy: QueuePolicy) -> int:
        """Queue items `annotator` may still be shown (checks included, not told apart)."""
        annotator = check_annotator(annotator)
        # Items this annotator has neither answered (live) nor skipped, and that the queue may still hand out:
        # every known-answer check, and ordinary items not yet settled by enough agreeing annotators. Checks and
        # ordinary items are counted together, so answering either lowers the count by one and a labeller cannot
        # infer from it which items were checks.
        query = sa.select(sa.func.count()).select_from(pool).where(
            unseen(annotator), sa.or_(pool.c.gold_label.is_not(None), ~settled(policy.labels_required)))
        with self._db.read() as db:
            return count(db, query)

    def items_left(self, labels_required: int) -> int:
        """Ordinary pool items not yet settled by `labels_required` agreeing annotators (the maintainer's count)."""
        query = sa.select(sa.func.count()).select_from(pool).where(
            pool.c.gold_label.is_(None), ~settled(int(labels_required)))
        with self._db.read() as db:
            return count(db, query)
