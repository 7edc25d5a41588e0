"""Labelling guidelines: markdown a maintainer writes, every saved version kept with its time.

Each version keeps when it was saved (`saved_at`) and by whom, beside answers' own `created_at`. Until a maintainer
saves a version, `DEFAULT` is in force (version 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from feedback.database.db import Database, iso_time
from feedback.database.query import first, inserted_id, rows
from feedback.database.tables import guidelines
from feedback.errors import FeedbackError
from feedback.validate import is_valid_unicode

MAX_CHARS = 20_000  # a page of guidance, not a manual; bounds what one save writes and every page load sends

DEFAULT = """\
**Label the article's main subject**: what is it *about*, not who is in it or where it happened.

- **World**: international affairs, politics and government, conflict, diplomacy, elections, disasters.
- **Sports**: games, athletes, teams, leagues, results, transfers and coaching.
- **Business**: companies, markets, earnings, deals, jobs, the economy, prices and trade.
- **Sci/Tech**: science, research, health research, space, and technology products and the internet.

**Hard cases**

- *A tech company's earnings, shares, layoffs or merger* → **Business** (the story is money). *Its new chip, phone, software or security flaw* → **Sci/Tech** (the story is the technology).
- *Trade, sanctions or a central bank* → **Business** when the story is markets, prices or companies; **World** when it is governments and diplomacy (a summit, a treaty, a war's effect on a country).
- *The business of sport* (a club's sale, TV rights, a stadium deal, a sponsor) → **Sports** when it is about teams and competitions; **Business** when it is about a company's results or shares.
- *Health*: a study, a drug trial or a new treatment → **Sci/Tech**; a government's health policy or an epidemic's toll on a country → **World**; a drug maker's profits → **Business**.
- *Space and science agencies*: missions, launches, discoveries → **Sci/Tech**, even when a government runs them.

When two topics fit equally, choose the one the headline leads with. If you cannot tell, **skip** the article rather than guess: a skipped article costs nothing, a wrong label teaches the model the wrong thing.
"""


@dataclass(frozen=True)
class Guidelines:
    """One saved version of the guidelines (version 0: the built-in default, never saved)."""

    version: int
    text: str
    saved_at: str  # ISO time as the database stores it; "" for the default
    saved_by: str


BUILT_IN = Guidelines(0, DEFAULT, "", "built in")
_NEWEST = sa.select(guidelines).order_by(guidelines.c.id.desc()).limit(1)


def _row(row: dict[str, Any]) -> Guidelines:
    return Guidelines(int(row["id"]), str(row["text"]), str(row["saved_at"]), str(row["saved_by"] or ""))


class GuidelineBook:
    """The guidelines table of one feedback database (SQLite or PostgreSQL: the same SQL)."""

    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock

    def current(self) -> Guidelines:
        """The guidelines in force now: the newest saved version, else the built-in default."""
        with self._db.read() as db:
            row = first(db, _NEWEST)
        return _row(row) if row else BUILT_IN

    def history(self, limit: int = 20) -> list[Guidelines]:
        """Saved versions, newest first (at most `limit`)."""
        with self._db.read() as db:
            return [_row(row) for row in rows(db, _NEWEST.limit(max(1, int(limit))))]

    def save(self, text: object, saved_by: str) -> tuple[Guidelines, bool]:
        """Save `text` as the new version; returns it and whether it was new (the same text is not saved twice).

        Raises FeedbackError for text that is empty, too long or not valid Unicode; nothing is written then.
        """
        if not isinstance(text, str) or not text.strip():
            raise FeedbackError("the guidelines are empty; write what labellers should know")
        if len(text) > MAX_CHARS or not is_valid_unicode(text):
            raise FeedbackError(f"the guidelines must be valid text of at most {MAX_CHARS:,} characters")
        text = text.strip() + "\n"
        with self._db.write() as db:
            newest = first(db, _NEWEST)
            if newest is not None and newest["text"] == text:
                return _row(newest), False
            if newest is None and text == DEFAULT:
                return BUILT_IN, False
            row = {"text": text, "saved_at": iso_time(self._clock()), "saved_by": saved_by[:200]}
            version = inserted_id(db, sa.insert(guidelines).values(row))
        return Guidelines(version, text, row["saved_at"], row["saved_by"]), True
