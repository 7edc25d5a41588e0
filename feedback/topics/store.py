"""The taxonomy's versions in the feedback database (SQLite or PostgreSQL: the same SQL).

Until a maintainer changes the topics nothing is stored: version 1 is the serving champion's topics, built from
the labels the caller passes. The first change stores version 1 with it. A change is a compare-and-swap on the
version it was planned on: two maintainers changing the topics at once, one wins and the other is told.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlalchemy as sa

from core.labels import LABELS
from core.taxonomy import Taxonomy, TaxonomyConflict, from_rows, starting
from feedback.database.db import Database, iso_time
from feedback.database.query import insert_on_conflict, rows
from feedback.database.tables import taxonomy_versions

SCOPE = "taxonomy"  # the PostgreSQL lock a change takes (SQLite has one writer anyway)


class TopicBook:
    """The taxonomy table of one feedback database."""

    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock

    def current(self, default_labels: Sequence[str] = LABELS) -> Taxonomy:
        """Every stored version, or version 1 made of `default_labels` (the champion's; by default the AG News four
        a fresh clone serves) if none is stored."""
        with self._db.read() as db:
            stored = rows(db, sa.select(taxonomy_versions).order_by(taxonomy_versions.c.version))
        return from_rows(stored) if stored else starting(default_labels)

    def seed(self, labels: Sequence[str], *, by: str = "", why: str = "") -> Taxonomy:
        """Store version 1 made of `labels` (the serving champion's) unless some version is stored already; returns
        the current taxonomy either way. Idempotent, and safe when two processes seed at once: the first insert wins
        and the other's does nothing (the version is the primary key)."""
        first = starting(labels, by=by, why=why).current
        with self._db.write() as db:
            db.execute(insert_on_conflict(db, taxonomy_versions)
                       .values({**first.to_row(), "created_at": iso_time(self._clock())}).on_conflict_do_nothing())
        return self.current(labels)

    def stored_version(self) -> int:
        """The newest stored version; 0 if the topics were never changed."""
        with self._db.read() as db:
            return int(db.execute(sa.select(sa.func.max(taxonomy_versions.c.version))).scalar() or 0)

    def commit(self, changed: Taxonomy, planned_on: int) -> Taxonomy:
        """Store the versions of `changed` after `planned_on`, if the newest stored version is still `planned_on`
        (or nothing is stored and `planned_on` is 1). Raises TaxonomyConflict otherwise; nothing is written then.

        Versions are stamped with the store's clock where their change left `at` empty."""
        if changed.version <= planned_on:
            raise TaxonomyConflict(f"nothing to store: version {changed.version} is not newer than {planned_on}")
        now = iso_time(self._clock())
        try:
            with self._db.write(SCOPE) as db:
                self._insert(db, changed, planned_on, now)
        except sa.exc.IntegrityError:  # another writer stored the same version first
            raise TaxonomyConflict(self._conflict(self.stored_version(), planned_on)) from None
        return self.current([t.key for t in changed.versions[0].topics])

    @staticmethod
    def _conflict(newest: int, planned_on: int) -> str:
        return (f"the topics changed while you were editing them (now version {max(newest, 1)}, you started "
                f"from {planned_on}); look at them again and redo your change")

    def _insert(self, db: sa.Connection, changed: Taxonomy, planned_on: int, now: str) -> None:
        newest = int(db.execute(sa.select(sa.func.max(taxonomy_versions.c.version))).scalar() or 0)
        if newest != planned_on and not (newest == 0 and planned_on == 1):
            raise TaxonomyConflict(self._conflict(newest, planned_on))
        fresh = [v for v in changed.versions if v.version > newest]
        db.execute(sa.insert(taxonomy_versions), [{**v.to_row(), "created_at": v.at or now} for v in fresh])
