"""The golden set: a newsroom's own labelled articles, imported from a file, that judge every challenger and are
never trained on (a retrain reads them as an evaluation set of their own, and keeps their texts out of training).

One label per text: importing a text again relabels it. Each label is stored as the topic key it named under the
taxonomy version it was given in, so a later rename, merge or split reads it as it means now (a split parent's
label as "parent or child", like every older answer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from core.data import Example
from core.settings.policies import StoreLimits
from core.taxonomy import Taxonomy
from feedback.database.db import Database, iso_time
from feedback.database.query import count, rows
from feedback.database.tables import golden
from feedback.labelling.pool_files import read_pool_file
from feedback.validate import PoolRow


@dataclass(frozen=True)
class GoldenImport:
    """What one import did: rows read, texts new to the set, texts whose label changed, texts already so labelled."""

    rows: int
    added: int
    relabelled: int
    unchanged: int
    total: int  # texts in the golden set after it


@dataclass(frozen=True)
class GoldenSummary:
    """The golden set now: its size, per current topic name, and its newest import."""

    total: int
    by_topic: dict[str, int]
    last_source: str
    last_added_at: str
    last_added_by: str


class GoldenSet:
    """The golden table of one feedback database (SQLite or PostgreSQL: the same SQL)."""

    def __init__(self, db: Database, limits: StoreLimits, clock: Callable[[], float],
                 taxonomy: Callable[[], Taxonomy]) -> None:
        self._db = db
        self._limits = limits
        self._clock = clock
        self._taxonomy = taxonomy

    def import_file(self, path: Path, *, by: str) -> GoldenImport:
        """Add or relabel every row of a CSV or JSONL file of `label` and `text` (or `title` and `description`), all
        or nothing: a label names a current topic (by name, or its 1-based position), as a known-answer check's does
        (`feedback.labelling.pool_files`). Raises PoolImportError naming every bad line."""
        path = Path(path)
        taxonomy = self._taxonomy()
        read, _ = read_pool_file(path, max_chars=self._limits.max_text_chars, labelled=True, taxonomy=taxonomy)
        return self._put(read, taxonomy.version, path.name, by)

    def _put(self, read: Sequence[PoolRow], version: int, source: str, by: str) -> GoldenImport:
        added_at = iso_time(self._clock())
        added = relabelled = unchanged = 0
        with self._db.write() as db:  # one transaction: a crash part-way leaves the set as it was
            for row in {r.text_hash: r for r in read}.values():  # a file's last label of a text wins
                found = db.execute(sa.select(golden.c.id, golden.c.label, golden.c.taxonomy_version)
                                   .where(golden.c.text_hash == row.text_hash)).first()
                if found is None:
                    db.execute(sa.insert(golden).values(text=row.text, text_hash=row.text_hash, label=row.label,
                                                        taxonomy_version=version, source=source, added_by=by,
                                                        added_at=added_at))
                    added += 1
                elif (found.label, found.taxonomy_version) == (row.label, version):
                    unchanged += 1
                else:
                    db.execute(sa.update(golden).where(golden.c.id == found.id).values(
                        label=row.label, taxonomy_version=version, source=source, added_by=by, added_at=added_at))
                    relabelled += 1
            total = count(db, sa.select(sa.func.count()).select_from(golden))
        return GoldenImport(len(read), added, relabelled, unchanged, total)

    def examples(self, taxonomy: Taxonomy | None = None) -> list[Example]:
        """The golden rows in the taxonomy's current topics (labels index its keys; a split parent's label allows
        "parent or child"); a row whose topic no longer exists is left out."""
        taxonomy = taxonomy or self._taxonomy()
        with self._db.read() as db:
            stored = rows(db, sa.select(golden.c.text, golden.c.label, golden.c.taxonomy_version)
                          .order_by(golden.c.id))
        out = []
        for row in stored:
            allowed = taxonomy.indices(row["label"], int(row["taxonomy_version"]))
            if allowed:
                exact = taxonomy.exact(row["label"], int(row["taxonomy_version"]))
                label = taxonomy.keys.index(exact) if exact is not None else allowed[0]
                out.append(Example(row["text"], label, allowed=allowed if len(allowed) > 1 else ()))
        return out

    def hashes(self) -> set[str]:
        """The golden texts' hashes: what training must never see."""
        with self._db.read() as db:
            return {r["text_hash"] for r in rows(db, sa.select(golden.c.text_hash))}

    def summary(self) -> GoldenSummary:
        taxonomy = self._taxonomy()
        by_topic = {name: 0 for name in taxonomy.names}
        for example in self.examples(taxonomy):
            by_topic[taxonomy.names[example.label]] += 1
        with self._db.read() as db:
            newest = rows(db, sa.select(golden.c.source, golden.c.added_at, golden.c.added_by)
                          .order_by(golden.c.id.desc()).limit(1))
        last = newest[0] if newest else {"source": "", "added_at": "", "added_by": ""}
        return GoldenSummary(sum(by_topic.values()), by_topic, last["source"] or "", last["added_at"] or "",
                             last["added_by"] or "")

    def clear(self) -> int:
        """Remove every golden row; how many there were."""
        with self._db.write() as db:
            return int(db.execute(sa.delete(golden)).rowcount or 0)
