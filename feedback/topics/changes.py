"""What a change to the topics would touch, said before it is made: base rows, answers, checks and queued items.

A rename or a description changes only what people see, and an added topic touches nothing (labellers can answer it
at once); a merge relabels its topic's rows as the target's; a split makes its topic's earlier rows "parent or child",
a set of allowed topics rather than a guess. Counted here, from the database and the base data's labels; written
nowhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa

from core.labels import LABELS
from core.taxonomy import Taxonomy
from feedback.database.db import Database
from feedback.database.tables import answers, pool
from feedback.labelling.answers import LIVE
from feedback.meaning import version_at

if TYPE_CHECKING:
    from core.settings.config import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Impact:
    """How many rows of each kind the last change of a taxonomy changes the meaning of."""

    base_rows: int
    answers: int
    checks: int
    queued: int  # pool items nobody has answered yet whose known label is an affected topic
    change: str = ""  # the change in words: "merging Business into World"
    outcome: str = ""  # what the rows become: "as World", 'as "Sci/Tech or Science"'; empty: nothing changes
    data: str = ""  # the base data the rows were counted in, in words (Corpus.description)

    def words(self) -> str:
        """One plain sentence: "merging Business into World relabels 3,998 base rows, 120 answers, 4 checks and 12
        queued items as World (base rows of ag_news: train.csv (15,869 rows))"."""
        if not self.outcome:
            return self.change
        counts = [_count(self.base_rows, "base row"), _count(self.answers, "answer"), _count(self.checks, "check"),
                  _count(self.queued, "queued item")]
        listed = ", ".join(counts[:-1]) + " and " + counts[-1]
        read = f" (base rows of {self.data})" if self.data else ""
        return f"{self.change} relabels {listed} {self.outcome}{read}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def impact(db: Database, before: Taxonomy, after: Taxonomy, base_labels: Sequence[str],
           data: str = "") -> Impact:
    """What `after`'s last change, made on `before`, touches: the base rows (`base_labels`: one key per row, as the
    data gives them; `data`: that data in words, named in the sentence), the live answers, the known-answer checks
    and the queued checks whose label means the changed topic now. An add, a rename or a description touches
    nothing and says so."""
    change = after.current.change
    name = before.name_of
    if change.kind == "add":
        return Impact(0, 0, 0, 0, f"adding {change.name} touches no data: labellers can answer it at once, and it is "
                                  "marked new until a champion predicts it")
    if change.kind == "rename":
        return Impact(0, 0, 0, 0, f"renaming {name(change.topic)} to {change.name} changes only the name people see: "
                                  "answers, data and models keep its key, and no retrain is needed")
    if change.kind == "describe":
        return Impact(0, 0, 0, 0, f"describing {name(change.topic)} changes only its description")
    if change.kind == "merge":
        words, outcome = f"merging {name(change.topic)} into {name(change.into)}", f"as {name(change.into)}"
    elif change.kind == "split":
        words = f"splitting {name(change.topic)} into {name(change.topic)} and {change.name}"
        outcome = f'as "{name(change.topic)} or {change.name}" (a set of allowed topics, not a guess)'
    else:
        return Impact(0, 0, 0, 0, f"a {change.kind} touches nothing")
    touched = _touched(before, change.topic)
    with db.read() as conn:
        given = conn.execute(sa.select(answers.c.user_label, answers.c.taxonomy_version, sa.func.count())
                           .where(LIVE).group_by(answers.c.user_label, answers.c.taxonomy_version)).all()
        answered = sa.select(answers.c.text_hash).where(LIVE).correlate(None)
        checks = conn.execute(sa.select(pool.c.gold_label, pool.c.added_at, pool.c.text_hash.in_(answered))
                            .where(pool.c.gold_label.is_not(None))).all()
    base = sum(touched(label, None) for label in base_labels)
    n_answers = sum(int(n) for key, version, n in given if touched(key, version))
    affected = [was_answered for key, at, was_answered in checks if touched(key, version_at(before, at))]
    return Impact(base, n_answers, len(affected), sum(not a for a in affected), words, outcome, data)


def _touched(before: Taxonomy, topic: str) -> Callable[[str, int | None], bool]:
    """Whether a label (key, the version it was given under) means `topic` under `before`: the rows a change of
    `topic` changes the meaning of."""
    def touched(key: str, version: int | None) -> bool:
        return topic in before.allowed(key, version)
    return touched


@dataclass(frozen=True)
class BaseData:
    """The base data's label keys, one per row (training, validation and test rows), and the data in words."""

    labels: tuple[str, ...] = ()
    description: str = ""


def base_data(settings: Settings) -> BaseData:
    """The configured data's labels (`NEWSLOOP_DATA`; the seed set when a hub dataset cannot be reached, as a retrain
    reads it, its description then saying so); none, said so, when there is none to read."""
    from core.data import DataSourceError, load_corpus_or_seed  # reading data is the slow part: only a preview needs it

    data = settings.data
    try:
        corpus = load_corpus_or_seed(data.source, data.val_fraction, data.use_extra)
    except (OSError, ValueError, DataSourceError) as exc:
        log.warning("no base data to count: %s", exc)
        return BaseData((), f"no base data: {exc}")
    return BaseData(tuple(corpus.labels[e.label] for e in (*corpus.train, *corpus.validation, *corpus.test)),
                    corpus.description)


def champion_labels(settings: Settings) -> tuple[str, ...]:
    """The topics the serving champion predicts (its metadata's labels), else the shipped starter's, else the AG
    News four a fresh clone serves."""
    from core.registry.starter import starter_meta
    from core.registry.versions import ModelRegistry

    champion = ModelRegistry(settings.paths.models_dir).champion()
    meta = champion.meta if champion is not None else starter_meta()
    return tuple((meta or {}).get("labels") or LABELS)
