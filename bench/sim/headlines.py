"""The headline shift scenario's data: rows kept out of the starter's training, fed later as headlines.

People paste headlines more than whole articles. To measure what the loop wins there, a few thousand
`train.csv` rows (they keep title and description apart) are held out of the starter's training by a
salted text hash; the scenario (`bench/loop.py --from-starter`) splits them into a stream the simulated
labellers see as headlines and a disjoint test part scored as headlines and as whole articles.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.sim.data import SourceFile, load_sources, write_training_folder
from core.data import Example, is_validation, split_by_hash
from core.text import text_hash

STREAM_SALT = "headline-stream"
TEST_SALT = "headline-test"
STREAM_FRACTION = 0.21  # of train.csv's non-validation rows: about 3,000 of the offline copy's 14,233
TEST_FRACTION = 0.5  # of the held-out rows: the scenario's unseen test part


@dataclass(frozen=True)
class HeadlinePlan:
    stream: list[Example]  # labellers see these as headlines, through the queue
    test: list[Example]  # never labelled: scored before and after, as headlines and as whole articles
    excluded: frozenset[str]  # text hashes kept out of the starter's and every retrain's base data


def plan_headlines(sources: list[SourceFile], val_fraction: float) -> HeadlinePlan:
    """The held-out rows: a salted-hash share of train.csv outside base validation, split into stream and test."""
    train_csv = next(s for s in sources if s.name == "train.csv")
    candidates = [ex for ex in train_csv.examples if ex.title and not is_validation(ex.text, val_fraction)]
    _, held = split_by_hash(candidates, STREAM_FRACTION, salt=STREAM_SALT)
    stream, test = split_by_hash(held, TEST_FRACTION, salt=TEST_SALT)
    return HeadlinePlan(stream, test, frozenset(text_hash(ex.text) for ex in held))


def write_starter_data(data: str, dest: Path, val_fraction: float) -> tuple[HeadlinePlan, dict[str, int]]:
    """The starter's data folder: every source row except the held-out ones (base validation unchanged)."""
    sources = load_sources(data)
    plan = plan_headlines(sources, val_fraction)
    return plan, write_training_folder(sources, plan.excluded, dest)
