"""Feedback for a retrain: back the database up, then read its trusted answers as train, holdout and traffic parts, and
the maintainer's label fixes the retrain applies to the base rows."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from core.data import Example, split_by_hash
from core.evaluation.decision import FeedbackParts
from core.labels import label_index
from core.settings.policies import TrustPolicy
from core.text import text_hash
from feedback.database.db import is_database_url
from feedback.store import FeedbackStore
from feedback.traffic.traffic_set import read_traffic
from feedback.training.fixes import LabelFixes, read_fixes
from feedback.trust.rules import TrustedExample, select_trusted

# Salts the holdout split so it is independent of the unsalted base-data split (see core.data.is_validation).
HOLDOUT_SALT = "feedback-holdout"


@dataclass(frozen=True)
class FeedbackSplit:
    """Trusted feedback: the traffic set's texts (judge only, see feedback.traffic.traffic_set), the rest split by text
    hash into train and holdout; the newest answer id the snapshot held; and the live label fixes (already applied
    to these parts; the retrain applies them to the base rows)."""

    train: list[Example]
    holdout: list[Example]
    last_answer_id: int
    traffic: list[Example] = field(default_factory=list)
    fixes: LabelFixes = field(default_factory=LabelFixes)

    @property
    def parts(self) -> FeedbackParts:
        """How many trusted texts each part holds (before the run sets base-validation texts aside)."""
        return FeedbackParts(train=len(self.train), holdout=len(self.holdout), traffic=len(self.traffic))


def read_trusted(store: FeedbackStore, policy: TrustPolicy, fixes: LabelFixes | None = None) -> list[TrustedExample]:
    """The store's answers that the trust rules pass (see `feedback.trust.rules.select_trusted`), read through the
    label fixes (`fixes`, else the store's own): relabelled texts with their new label, excluded ones left out. Not
    logged here: what matters is how many of them train, which the run logs once it knows (`FeedbackParts.words`)."""
    fixes = read_fixes(store) if fixes is None else fixes
    return fixes.trusted(select_trusted(store.answers(), store.gold_labels(), policy))


def backup_database(db_path: Path | str, backups_dir: Path, keep: int = 5) -> Path | None:
    """Copy the feedback database with SQLite's backup API; keep the newest `keep` copies.

    A postgresql:// URL is copied from one REPEATABLE READ snapshot into the same kind of SQLite file
    (`feedback.database.db.Database.backup`). Returns the copy, or None when there is no database yet.
    """
    if not is_database_url(db_path) and not Path(db_path).is_file():
        return None
    backups_dir = Path(backups_dir)
    backups_dir.mkdir(parents=True, exist_ok=True)
    # The sub-second suffix keeps two backups taken within one second apart.
    dest = backups_dir / f"feedback-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 1_000_000:06d}.db"
    store = FeedbackStore(db_path)
    try:
        store.backup(dest)
    finally:
        store.close()
    for old in sorted(backups_dir.glob("feedback-*.db"))[:-keep]:
        old.unlink(missing_ok=True)
    return dest


def trusted_split(snapshot_db: Path | None, policy: TrustPolicy, holdout_fraction: float) -> FeedbackSplit:
    """Trusted feedback from a consistent copy, split by (salted) text hash into train and holdout parts."""
    if snapshot_db is None:
        return FeedbackSplit(train=[], holdout=[], last_answer_id=0)
    store = FeedbackStore(snapshot_db)
    try:
        fixes = read_fixes(store)
        trusted = read_trusted(store, policy, fixes)
        last_id = max((row["id"] for row in store.answers(limit=1)), default=0)
        split = split_trusted(trusted, traffic_hashes(store), holdout_fraction)
    finally:
        store.close()
    return FeedbackSplit(train=split.train, holdout=split.holdout, last_answer_id=last_id, traffic=split.traffic,
                         fixes=fixes)


def trusted_parts(store: FeedbackStore, policy: TrustPolicy, holdout_fraction: float) -> FeedbackParts:
    """The live store's trusted texts by part, as the next retrain's snapshot would split them (the admin tiles')."""
    return split_trusted(read_trusted(store, policy), traffic_hashes(store), holdout_fraction).parts


def traffic_hashes(store: FeedbackStore) -> set[str]:
    """The text hashes of the traffic set (pool items drawn at random; see feedback.traffic.traffic_set)."""
    with store.database.read() as conn:
        return read_traffic(conn)


def split_trusted(trusted: list[TrustedExample], traffic: set[str], holdout_fraction: float) -> FeedbackSplit:
    """Traffic texts apart (never trained on); the rest split by salted text hash into train and holdout."""
    examples = [(Example(t.text, label_index(t.label)), t.text_hash or text_hash(t.text)) for t in trusted]
    train, holdout = split_by_hash([e for e, digest in examples if digest not in traffic], holdout_fraction,
                                   salt=HOLDOUT_SALT)
    return FeedbackSplit(train=train, holdout=holdout, last_answer_id=0,
                         traffic=[e for e, digest in examples if digest in traffic])
