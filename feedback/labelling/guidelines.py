"""Labelling guidelines: a section per topic, drawn from the topic list, and markdown a maintainer writes (general
rules, hard cases), every saved version kept with its time.

The topics' section is the current topic list, each topic with its description (`core.labels.descriptions`: the
maintainers' own, or what an AG News topic covers), so a rename, a split or a new topic is in the guidelines the
moment it is in the list: the guidelines are versioned with the topic list. The maintainer's text follows it. Each
version keeps when it was saved (`saved_at`) and by whom, beside answers' own `created_at`, and the topic list in
force then is found by the same time. Until a maintainer saves a version, the built-in default is in force (version
0): general rules, and, for AG News's topics, its hard cases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from core.labels import descriptions, is_ag_news_list
from core.taxonomy import Taxonomy
from feedback.database.db import Database, iso_time
from feedback.database.query import first, inserted_id, rows
from feedback.database.tables import guidelines
from feedback.errors import FeedbackError
from feedback.validate import is_valid_unicode

MAX_CHARS = 20_000  # a page of guidance, not a manual; bounds what one save writes and every page load sends

DEFAULT = """\
**Label the article's main subject**: what is it *about*, not who is in it or where it happened.

When two topics fit equally, choose the one the headline leads with. If you cannot tell, **skip** the article rather than guess: a skipped article costs nothing, a wrong label teaches the model the wrong thing.
"""

# AG News's hard cases, part of the built-in default only while the topic list is AG News's; [[key]] is the topic's
# current name (a rename shows in them).
AG_NEWS_HARD_CASES = """\
**Hard cases**

- *A tech company's earnings, shares, layoffs or merger* → **[[Business]]** (the story is money). *Its new chip, phone, software or security flaw* → **[[Sci/Tech]]** (the story is the technology).
- *Trade, sanctions or a central bank* → **[[Business]]** when the story is markets, prices or companies; **[[World]]** when it is governments and diplomacy (a summit, a treaty, a war's effect on a country).
- *The business of sport* (a club's sale, TV rights, a stadium deal, a sponsor) → **[[Sports]]** when it is about teams and competitions; **[[Business]]** when it is about a company's results or shares.
- *Health*: a study, a drug trial or a new treatment → **[[Sci/Tech]]**; a government's health policy or an epidemic's toll on a country → **[[World]]**; a drug maker's profits → **[[Business]]**.
- *Space and science agencies*: missions, launches, discoveries → **[[Sci/Tech]]**, even when a government runs them.
"""


def built_in(taxonomy: Taxonomy) -> str:
    """The built-in default's text for `taxonomy`: the general rules, and AG News's hard cases (by the topics'
    current names) when the list is AG News's."""
    if not is_ag_news_list(taxonomy):
        return DEFAULT
    hard = AG_NEWS_HARD_CASES
    for key in ("World", "Sports", "Business", "Sci/Tech"):
        hard = hard.replace(f"[[{key}]]", taxonomy.name_of(key))
    text, _, last = DEFAULT.rstrip("\n").rpartition("\n\n")  # the hard cases before the closing advice
    return f"{text}\n\n{hard}\n{last}\n"


def topics_section(taxonomy: Taxonomy) -> str:
    """The guidelines' section per topic: each current topic by name, in the list's order, with its description."""
    described = descriptions(taxonomy)
    lines = [f"- **{t.name}**" + (f": {described[t.key]}" if described[t.key] else "") for t in taxonomy.topics]
    return "**The topics**\n\n" + "\n".join(lines) + "\n"


def changes_since(taxonomy: Taxonomy, saved_at: str) -> list[str]:
    """The topic list's changes after `saved_at` (ISO time, as the database stores it), in words, oldest first: what a
    maintainer's text written then may no longer name rightly."""
    said = []
    for before, after in zip(taxonomy.versions, taxonomy.versions[1:], strict=False):
        if not after.at or after.at <= saved_at:
            continue
        c = after.change
        old = {t.key: t.name for t in before.topics}
        said.append({"add": f"{c.name} added", "rename": f"{old.get(c.topic, c.topic)} renamed {c.name}",
                     "merge": f"{old.get(c.topic, c.topic)} merged into {old.get(c.into, c.into)}",
                     "split": f"{c.name} split out of {old.get(c.topic, c.topic)}",
                     "describe": f"{old.get(c.topic, c.topic)} described", "start": "a new topic list"}[c.kind])
    return said


def render(text: str, taxonomy: Taxonomy) -> str:
    """What labellers read: the topics' section, then the guidelines' text."""
    return f"{topics_section(taxonomy)}\n{text.strip()}\n"


@dataclass(frozen=True)
class Guidelines:
    """One saved version of the guidelines (version 0: the built-in default, never saved)."""

    version: int
    text: str
    saved_at: str  # ISO time as the database stores it; "" for the default
    saved_by: str


_NEWEST = sa.select(guidelines).order_by(guidelines.c.id.desc()).limit(1)


def _row(row: dict[str, Any]) -> Guidelines:
    return Guidelines(int(row["id"]), str(row["text"]), str(row["saved_at"]), str(row["saved_by"] or ""))


class GuidelineBook:
    """The guidelines table of one feedback database (SQLite or PostgreSQL: the same SQL)."""

    def __init__(self, db: Database, clock: Callable[[], float], taxonomy: Callable[[], Taxonomy]) -> None:
        self._db = db
        self._clock = clock
        self._taxonomy = taxonomy  # the store's topic list: what the built-in default is written for

    def current(self, taxonomy: Taxonomy | None = None) -> Guidelines:
        """The guidelines in force now: the newest saved version, else the built-in default for `taxonomy` (default:
        the store's topic list)."""
        with self._db.read() as db:
            row = first(db, _NEWEST)
        return _row(row) if row else Guidelines(0, built_in(taxonomy or self._taxonomy()), "", "built in")

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
            if newest is None and text == built_in(self._taxonomy()):
                return self.current(), False
            row = {"text": text, "saved_at": iso_time(self._clock()), "saved_by": saved_by[:200]}
            version = inserted_id(db, sa.insert(guidelines).values(row))
        return Guidelines(version, text, row["saved_at"], row["saved_by"]), True
