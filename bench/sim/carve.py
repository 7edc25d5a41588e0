"""The taxonomy scenarios' rows: disjoint parts of the offline data, and a starter's data folder that lacks the
topic to teach (new) or files it under its neighbour's name (split).

From `train.csv` a seeded draw takes the queue's pool (every topic; the product never sees their labels, the
simulated labellers know them) and the evaluation rows (scored after each round, seen by no round). Every other
row goes to the starter's data folder, with the taught topic left out or renamed; that folder is also the base
data every retrain reads, so neither pool nor evaluation rows ever reach training except as answers.
"""

from __future__ import annotations

import csv
import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

from bench.sim.data import SourceFile
from core.data import Example
from core.text import text_hash

SCENARIOS = ("new", "split")
NAMED_HEADERS = {3: ["label", "title", "description"], 2: ["label", "text"]}  # a file of topic names has a header


@dataclass(frozen=True)
class TopicScenario:
    """What one scenario teaches: `topic`, missing from the starter (new) or merged into `into` there (split)."""

    kind: str  # new | split
    topic: str
    into: str

    def starter_label(self, name: str) -> str | None:
        """The label a row of topic `name` carries in the starter's data; None: the row is left out."""
        if name != self.topic:
            return name
        return None if self.kind == "new" else self.into

    def topic_command(self) -> list[str]:
        """The `newsloop topics` change that brings the topic back: added, or split out of its neighbour."""
        return ["add", self.topic] if self.kind == "new" else ["split", self.into, self.topic]


@dataclass(frozen=True)
class Carved:
    """The disjoint parts of the source's rows; `Example.label` indexes `topics`."""

    topics: tuple[str, ...]
    pool: list[Example]  # what the queue serves, in every topic
    evaluation: list[Example]  # scored after each round; never in the pool or the starter's data

    @property
    def excluded(self) -> frozenset[str]:
        """Text hashes kept out of the starter's data folder (and so out of every retrain's base rows)."""
        return frozenset(text_hash(e.text) for e in (*self.pool, *self.evaluation))


def carve(sources: list[SourceFile], topics: tuple[str, ...], *, pool: int, evaluation: int, seed: int) -> Carved:
    """Draw `pool` and then `evaluation` distinct rows of train.csv at random (seeded); every topic in its share."""
    train_csv = next(s for s in sources if s.name == "train.csv")
    unique = list({text_hash(e.text): e for e in train_csv.examples}.values())
    if pool + evaluation >= len(unique):
        raise SystemExit(f"train.csv has {len(unique)} distinct rows: too few for a pool of {pool} and "
                         f"{evaluation} evaluation rows, with rows left for the starter")
    drawn = random.Random(f"taxonomy-{seed}").sample(unique, pool + evaluation)
    return Carved(topics, drawn[:pool], drawn[pool:])


def write_starter_folder(
    sources: list[SourceFile], carved: Carved, scenario: TopicScenario, dest: Path, *, extra: bool
) -> dict[str, int]:
    """The starter's data folder: train.csv (and with `extra` the train_*.csv files) without the carved rows,
    labels written as topic names under the scenario's rule; rows written per file."""
    dest.mkdir(parents=True, exist_ok=True)
    excluded = carved.excluded
    kept: dict[str, int] = {}
    for source in sources:
        if source.name != "train.csv" and not extra:
            continue
        with (dest / source.name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            header_written = False
            n = 0
            for row, ex in zip(source.rows, source.examples, strict=True):
                label = scenario.starter_label(carved.topics[ex.label])
                if label is None or text_hash(ex.text) in excluded:
                    continue
                if not header_written:
                    writer.writerow(NAMED_HEADERS[len(row)])
                    header_written = True
                writer.writerow([label, *row[1:]])
                n += 1
        kept[source.name] = n
    return kept


def folder_digest(folder: Path) -> str:
    """A sha256 over a data folder's CSV files (names and bytes): the same folder, the same starter."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.csv")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
