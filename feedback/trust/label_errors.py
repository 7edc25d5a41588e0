"""Possible label errors, fixed where people review: the candidates a search found, and a maintainer's decisions on
them (relabel, keep, exclude from training), each with who, when and the label before and after, undoable.

A row is named by its source ("base": a row of the base data; "answer": a trusted answer's text) and its text hash,
so a decision outlives the search that proposed it. A decision is about the label the row had: *keep* hides the
row from every later search while it has that label, and the training fixes (`feedback.training.fixes`) apply a
relabel or an exclusion only to a row that still has the label it was decided on. The search itself (out-of-fold
probabilities, confident learning) is `retrain.label_errors`; this module only stores and reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import sqlalchemy as sa

from core.taxonomy import Taxonomy
from feedback.database.db import Database, iso_time
from feedback.database.query import first, inserted_id, rows
from feedback.database.tables import label_candidates, label_fixes, label_searches
from feedback.errors import FeedbackError
from feedback.meaning import allowed_keys
from feedback.trust.bulk import chosen_ids, ids_in_words, outcome_in_words, shown_limit
from feedback.validate import canonical_label

log = logging.getLogger(__name__)


class Source(StrEnum):
    """Where a candidate row comes from."""

    BASE = "base"  # a row of the base data (NEWSLOOP_DATA's files)
    ANSWER = "answer"  # the text of trusted answers in this store


class Action(StrEnum):
    """What a maintainer decided about a candidate's label."""

    RELABEL = "relabel"  # the row trains with another label
    KEEP = "keep"  # the label is right: never proposed again for that label
    EXCLUDE = "exclude"  # the row never trains (and is not judged on)


@dataclass(frozen=True)
class Candidate:
    """One row a search doubts: its given label, the label the data suggests and how sure (that label's probability)."""

    source: Source
    text_hash: str
    origin: str  # where from, in words: "train.csv row 12", "answer #7 by user:ann, 2026-01-02"
    text: str
    given_label: str
    suggested_label: str
    probability: float


@dataclass(frozen=True)
class DecisionReport:
    """What one action did, by candidate id."""

    action: Action
    decided: dict[int, int] = field(default_factory=dict)  # candidate id -> the new decision's id
    already: tuple[int, ...] = ()  # had a live decision on that label already: untouched
    missing: tuple[int, ...] = ()  # no such candidate

    def message(self) -> str:
        verb = {Action.RELABEL: "Relabelled", Action.KEEP: "Kept", Action.EXCLUDE: "Excluded"}[self.action]
        return outcome_in_words([
            (f"{verb} {len(self.decided)} row(s)", self.decided),
            (f"{len(self.already)} decided already, left as they were", self.already),
            (f"{len(self.missing)} not found", self.missing),
        ])


def _live_on(table: sa.Table) -> sa.ColumnElement[bool]:
    """A live (not undone) decision on `table`'s row with the label it has there."""
    return sa.exists().where(
        label_fixes.c.undone_at.is_(None), label_fixes.c.source == table.c.source,
        label_fixes.c.text_hash == table.c.text_hash, label_fixes.c.label_before == table.c.given_label,
    )


class LabelErrors:
    """The label-error candidates and decisions of one feedback database (SQLite or PostgreSQL: the same SQL)."""

    def __init__(self, db: Database, clock: Callable[[], float], taxonomy: Callable[[], Taxonomy]) -> None:
        self._db = db
        self._clock = clock
        self._taxonomy = taxonomy  # what a label may name

    def save_search(self, search_id: str, found: Sequence[Candidate], *, rows: int = 0, candidates: int | None = None,
                    model: str = "", data: str = "", left_out: str = "") -> int:
        """Record one search (it read `rows` rows of `data` and trusted answers with `model`'s embeddings, left the
        topics `left_out` aside (in words), and found `candidates`, by default as many as `found`) and store `found`,
        most likely error first (their order is their rank); returns how many were stored. A search that found
        nothing is recorded too: the panel then lists nothing, not an older search."""
        if not search_id:
            raise FeedbackError("a search needs an id")
        now = iso_time(self._clock())
        taxonomy = self._taxonomy()
        values = [{
            "search_id": search_id, "source": Source(c.source).value, "text_hash": c.text_hash, "origin": c.origin,
            "text": c.text, "given_label": _given(c.given_label, taxonomy),
            "suggested_label": canonical_label(c.suggested_label, taxonomy), "probability": float(c.probability),
            "rank": rank, "created_at": now,
        } for rank, c in enumerate(found, start=1)]
        with self._db.write() as conn:
            if first(conn, sa.select(label_searches.c.search_id).where(label_searches.c.search_id == search_id)):
                raise FeedbackError(f"a search {search_id} is stored already")
            conn.execute(sa.insert(label_searches).values(
                search_id=search_id, created_at=now, rows=int(rows), model=model or None, data=data or None,
                left_out=left_out or None, candidates=len(values) if candidates is None else int(candidates)))
            if values:
                conn.execute(sa.insert(label_candidates), values)
        log.info("label-error search %s: %d candidate(s) stored", search_id, len(values))
        return len(values)

    def latest_search(self) -> dict[str, Any] | None:
        """The newest search recorded (search_id, created_at, rows, candidates, model, data, left_out), or None."""
        with self._db.read() as conn:
            return first(conn, sa.select(label_searches)
                         .order_by(label_searches.c.created_at.desc(), label_searches.c.search_id.desc()).limit(1))

    def open_candidates(self, limit: int = 200, source: str | None = None) -> tuple[list[dict[str, Any]], int]:
        """The newest search's candidates nobody has decided on for their label (a live decision), in rank order (at
        most `limit`, capped at MAX_SHOWN; 0: every one, as the command line's --limit 0 asks), and how many there
        are in all."""
        search = self.latest_search()
        if search is None:
            return [], 0
        where = [label_candidates.c.search_id == search["search_id"], ~_live_on(label_candidates)]
        if source:
            where.append(label_candidates.c.source == Source(source).value)
        listed = sa.select(label_candidates).where(*where).order_by(label_candidates.c.rank)
        if int(limit) != 0:
            listed = listed.limit(shown_limit(limit))
        with self._db.read() as conn:
            total = int(conn.execute(sa.select(sa.func.count()).select_from(label_candidates).where(*where))
                        .scalar_one())
            found = rows(conn, listed)
        return found, total

    def decide(self, ids: Iterable[object], action: str, by: str, label: str | None = None) -> DecisionReport:
        """Decide on the named candidates at once, in one transaction: relabel (to `label`, else each one's suggested
        label), keep, or exclude. A candidate whose row already has a live decision on that label is left alone."""
        chosen = _action(action)
        wanted = chosen_ids(ids, "candidate id")
        new_label = canonical_label(label, self._taxonomy()) if label else None
        if new_label is not None and chosen is not Action.RELABEL:
            raise FeedbackError("only a relabel takes a label")
        by = (by or "").strip()[:200]
        if not by:
            raise FeedbackError("a decision needs who made it")
        now = iso_time(self._clock())
        decided: dict[int, int] = {}
        already: list[int] = []
        with self._db.write() as conn:
            found = {int(r["id"]): r for r in rows(conn, sa.select(
                label_candidates, _live_on(label_candidates).label("decided")).where(label_candidates.c.id.in_(wanted)))}
            rows_done: set[tuple[str, str, str]] = set()  # one decision per row, when a bulk names it twice
            for cid in wanted:
                c = found.get(cid)
                if c is None:
                    continue
                key = (c["source"], c["text_hash"], c["given_label"])
                if c["decided"] or key in rows_done:
                    already.append(cid)
                    continue
                after = (new_label or c["suggested_label"]) if chosen is Action.RELABEL else None
                if after == c["given_label"]:
                    raise FeedbackError(f"candidate #{cid} has the label {after} already; choose keep")
                decided[cid] = inserted_id(conn, sa.insert(label_fixes).values(
                    candidate_id=cid, source=c["source"], text_hash=c["text_hash"], text=c["text"], action=chosen.value,
                    label_before=c["given_label"], label_after=after, decided_by=by, decided_at=now,
                ))
                rows_done.add(key)
        if decided:
            log.info("%s: %s %d label-error candidate(s): %s", by, chosen.value, len(decided), ids_in_words(decided))
        return DecisionReport(chosen, decided, tuple(already), tuple(i for i in wanted if i not in found))

    def undo(self, ids: Iterable[object], by: str) -> list[int]:
        """Take back the named decisions (kept, marked undone, with who and when); returns the ids that were live."""
        wanted = chosen_ids(ids, "decision id")
        now = iso_time(self._clock())
        with self._db.write() as conn:
            live = [int(i) for i in conn.execute(sa.select(label_fixes.c.id).where(
                label_fixes.c.id.in_(wanted), label_fixes.c.undone_at.is_(None))).scalars()]
            if live:
                conn.execute(sa.update(label_fixes).where(label_fixes.c.id.in_(live))
                             .values(undone_at=now, undone_by=(by or "").strip()[:200] or None))
        if live:
            log.info("%s: undid %d label decision(s): %s", by, len(live), ids_in_words(live))
        return sorted(live)

    def decisions(self, limit: int = 200, *, live_only: bool = False) -> list[dict[str, Any]]:
        """Decisions, newest first (at most `limit`, capped at MAX_SHOWN; 0: every one); undone ones too unless
        `live_only`."""
        query = sa.select(label_fixes).order_by(label_fixes.c.id.desc())
        if int(limit) != 0:
            query = query.limit(shown_limit(limit))
        if live_only:
            query = query.where(label_fixes.c.undone_at.is_(None))
        with self._db.read() as conn:
            return rows(conn, query)

    def live_fixes(self) -> list[dict[str, Any]]:
        """Every live decision, oldest first: what training reads through (`feedback.training.fixes`)."""
        with self._db.read() as conn:
            return rows(conn, sa.select(label_fixes).where(label_fixes.c.undone_at.is_(None))
                        .order_by(label_fixes.c.id))


def _given(label: str, taxonomy: Taxonomy) -> str:
    """A candidate's given label: a topic's key, or a split topic's earlier label as its set of current keys
    (`feedback.meaning`), kept as it is so a decision on it matches the row training reads."""
    keys = allowed_keys(label)
    if len(keys) > 1 and all(k in taxonomy.keys for k in keys):
        return label
    return canonical_label(label, taxonomy)


def _action(value: object) -> Action:
    try:
        return Action(str(value))
    except ValueError:
        raise FeedbackError(f"unknown action {str(value)[:40]!r}; expected one of {', '.join(Action)}") from None
