"""Whether a home's topic list fits its data and its champion, said before anything is trained or served.

A home's feedback database keeps one topic list (the taxonomy): version 1 is the first champion's topics, and it
changes only by a maintainer's steps (add, rename, merge, split). Every topic a champion or the data of that home
predicts was therefore on the list at some version. A topic no version ever had means the champion or the data is
of another topic set (a CSV of your own bootstrapped into a home that first served AG News, say): pages would
offer topics the model cannot answer, and answers would name topics it never learns. So it is refused, in one
sentence naming the fix, or resolved where nothing would be lost: a list nobody worked under (only its first
version, no answer, check or decision) simply becomes the new topics.

`newsloop topics adopt` is the fix that keeps the home: the champion's (or the data's) topics become the list's next
version. Earlier answers stay stored; those naming a topic no longer listed train nothing.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from core.data import data_name, source_labels
from core.settings.policies import DataSource
from core.taxonomy import Change, Taxonomy, TaxonomyVersion, Topic, starting
from feedback.database.query import count
from feedback.database.tables import answers, label_fixes, pool, taxonomy_versions, unlisted
from feedback.labelling.demo import drop_unanswered_demo
from feedback.store import FeedbackStore

log = logging.getLogger(__name__)

# The commands a refusal names (the CLI reference documents them).
ADOPT = "newsloop topics adopt"
ADOPT_DATA = "newsloop topics adopt --data"


class HomeMismatch(ValueError):
    """A champion or data whose topics this home's topic list never had; the message is one sentence with the fix."""


def foreign(taxonomy: Taxonomy, labels: Sequence[str]) -> tuple[str, ...]:
    """The `labels` (topic keys a model or data predicts) that no version of the topic list ever had."""
    known = {topic.key for version in taxonomy.versions for topic in version.topics}
    return tuple(label for label in labels if label not in known)


@dataclass(frozen=True)
class Work:
    """What was done under a home's topic list: what a change of list could strand."""

    answers: int
    unlisted: int  # "None of these" answers
    checks: int
    decisions: int  # label-error decisions

    @property
    def none(self) -> bool:
        return not (self.answers or self.unlisted or self.checks or self.decisions)

    def words(self) -> str:
        """ "12 answers and 2 checks"; "" for none."""
        parts = [f"{n:,} {noun}{'' if n == 1 else 's'}" for n, noun in (
            (self.answers, "answer"), (self.unlisted, '"None of these" answer'), (self.checks, "check"),
            (self.decisions, "label decision")) if n]
        return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else ""


def work_done(store: FeedbackStore) -> Work:
    """Every answer (undone ones too: they are kept for audit), "None of these" answer, check and decision stored."""
    with store.database.read() as db:
        return Work(count(db, sa.select(sa.func.count()).select_from(answers)),
                    count(db, sa.select(sa.func.count()).select_from(unlisted)),
                    count(db, sa.select(sa.func.count()).where(pool.c.gold_label.is_not(None))),
                    count(db, sa.select(sa.func.count()).select_from(label_fixes)))


def _names(labels: Sequence[str]) -> str:
    return ", ".join(labels)


def fits(store: FeedbackStore, labels: Sequence[str], *, whose: str, fresh: str, adopt_command: str = ADOPT) -> str | None:
    """Check that `labels` (`whose` topics: "the champion v0002's", "own.csv's") fit the home's topic list. Returns
    None when they do (or nothing is stored yet: the list will start as them); a sentence saying what changed when
    the stored list was one nobody worked under (it is replaced by `labels`, and the demo articles of the old topics
    leave the pool); raises HomeMismatch, naming both ways out, when the home holds work under other topics: `fresh`
    (a fresh home, in words with its command) and `adopt_command`."""
    if not store.topics.stored_version():
        return None
    taxonomy = store.topics.current()
    if not foreign(taxonomy, labels):
        return None
    work = work_done(store)
    if taxonomy.version == 1 and work.none:
        _restart(store, labels, why=f"{whose} topics, in place of a first list nobody answered under")
        return (f"this home's topic list was {_names(taxonomy.names)}, with nothing answered under it: it is now "
                f"{whose} topics, {_names(labels)}")
    done = f", with {work.words()}" if not work.none else ""
    lost = f" (its {work.words()} stay stored; those naming a topic no longer listed train nothing)" if not work.none else ""
    raise HomeMismatch(f"{whose} topics are {_names(labels)}, but this home's topic list is "
                       f"{_names(taxonomy.names)}{done}: {fresh}, or run `{adopt_command}` to make {whose} topics "
                       f"this home's list{lost}")


def data_fits_home(location: Path | str, data: DataSource) -> None:
    """Before a bootstrap trains: the data's topics must fit the home's topic list, if the home has a feedback
    database at `location` (`fits`). A list nobody worked under becomes the data's, said in one warning line; a home
    with work under other topics raises HomeMismatch, naming a fresh home and `newsloop topics adopt --data`.
    Raises core.data.DataSourceError for data it cannot read."""
    if isinstance(location, Path) and not location.is_file():
        return  # a fresh home: the app starts its list from the champion this bootstrap trains
    labels = source_labels(data.source, data.use_extra)
    with contextlib.closing(FeedbackStore(location)) as store:
        said = fits(store, labels, whose=f"{data_name(data.source)}'s", adopt_command=ADOPT_DATA,
                    fresh="bootstrap into a fresh home (NEWSLOOP_HOME=<another folder> newsloop bootstrap)")
    if said:
        log.warning("%s", said)


def rollback_refusal(location: Path | str, version: str, labels: Sequence[str]) -> str | None:
    """Why a rollback to `version` (predicting `labels`) would serve a model of topics the home's list never had (the
    AG News starter in a home of your own topics, say): one sentence, or None when it fits or nothing is stored."""
    if isinstance(location, Path) and not location.is_file():
        return None
    with contextlib.closing(FeedbackStore(location)) as store:
        if not store.topics.stored_version():
            return None
        taxonomy = store.topics.current()
    odd = foreign(taxonomy, labels)
    if not odd:
        return None
    return (f"{version} predicts {_names(labels)}, and this home's topic list ({_names(taxonomy.names)}) never had "
            f"{_names(odd)}: serving it would offer no answer the list can take; nothing was done")


def _restart(store: FeedbackStore, labels: Sequence[str], *, why: str) -> None:
    """Replace a topic list nobody worked under by `labels` as its version 1, and take the old list's unanswered demo
    articles out of the pool (the app offers the data's own when the pool is empty)."""
    with store.database.write() as db:
        db.execute(sa.delete(taxonomy_versions))
        drop_unanswered_demo(db)
    store.topics.seed(labels, by="newsloop", why=why)


@dataclass(frozen=True)
class Adoption:
    """What `adopt` did: the list before and after, and what was done under topics no longer listed."""

    before: Taxonomy
    after: Taxonomy
    stranded: Work  # answers, checks and decisions whose topic is no longer listed (they train nothing)
    demo_removed: int

    def words(self) -> str:
        if self.before.keys == self.after.keys and self.before.version == self.after.version:
            return f"the topic list already holds them: {_names(self.after.names)}; nothing changed"
        s = self.stranded
        one = s.answers + s.unlisted + s.checks + s.decisions == 1
        stranded = (f"; {s.words()} {'names' if one else 'name'} a topic no longer listed: "
                    f"{'it stays' if one else 'they stay'} stored and train{'s' if one else ''} nothing"
                    if not s.none else "")
        demo = f"; {self.demo_removed} unanswered demo articles of the old topics left the pool" if self.demo_removed else ""
        return (f"the topic list is now version {self.after.version}: {_names(self.after.names)} (it was "
                f"{_names(self.before.names)}){stranded}{demo}")


def adopt(store: FeedbackStore, labels: Sequence[str], *, by: str, why: str) -> Adoption:
    """Make `labels` (a champion's or the data's topics) the home's topic list: its next version, kept with the
    earlier ones so answers given under them keep their meaning where a topic is still listed (descriptions of
    topics that stay are kept). A list that already holds every label is left as it is. Raises TaxonomyConflict
    when another maintainer changed the topics meanwhile."""
    before = store.topics.current(labels)
    if not foreign(before, labels) and before.keys == tuple(labels):
        return Adoption(before, before, Work(0, 0, 0, 0), 0)
    if store.topics.stored_version() <= 1 and work_done(store).none:
        _restart(store, labels, why=why)
        after = store.topics.current(labels)
        return Adoption(before, after, Work(0, 0, 0, 0), 0)
    described = {topic.key: topic.description for topic in before.topics}
    topics = tuple(Topic(t.key, t.name, described.get(t.key, "")) for t in starting(labels).topics)
    step = TaxonomyVersion(before.version + 1, topics, Change("start"), by, "", why)
    after = store.topics.commit(Taxonomy((*before.versions, step)), before.version)
    with store.database.write() as db:
        demo_removed = drop_unanswered_demo(db)
    return Adoption(before, after, _stranded(store, after), demo_removed)


def _stranded(store: FeedbackStore, taxonomy: Taxonomy) -> Work:
    """The answers, "None of these" placements, checks and decisions whose topic key the list no longer has."""
    keys = sorted(taxonomy.keys)
    with store.database.read() as db:
        return Work(count(db, sa.select(sa.func.count()).where(answers.c.user_label.not_in(keys))),
                    count(db, sa.select(sa.func.count()).where(unlisted.c.topic_key.is_not(None),
                                                               unlisted.c.topic_key.not_in(keys))),
                    count(db, sa.select(sa.func.count()).where(pool.c.gold_label.is_not(None),
                                                               pool.c.gold_label.not_in(keys))),
                    count(db, sa.select(sa.func.count()).where(label_fixes.c.label_before.not_in(keys))))
