"""Feedback for a retrain: back the database up, then read its trusted answers as train, holdout and traffic parts, and
the maintainer's label fixes the retrain applies to the base rows."""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.data import Example, split_by_hash
from core.evaluation.decision import FeedbackParts
from core.settings.policies import TrustPolicy
from core.taxonomy import Taxonomy
from core.text import text_hash
from feedback.database.db import Database, is_database_url
from feedback.meaning import allowed_keys
from feedback.store import FeedbackStore
from feedback.traffic.traffic_set import read_traffic, traffic_texts
from feedback.training.fixes import LabelFixes, read_fixes
from feedback.trust.rules import TrustedExample, select_trusted

# Salts the holdout split so it is independent of the unsalted base-data split (see core.data.is_validation).
HOLDOUT_SALT = "feedback-holdout"


@dataclass(frozen=True)
class FeedbackSplit:
    """Trusted feedback: the traffic set's texts (judge only, see feedback.traffic.traffic_set), the rest split by text
    hash into train and holdout; the newest answer id the snapshot held; and the live label fixes (already applied
    to these parts; the retrain applies them to the base rows). Examples' labels index `labels` (the taxonomy's
    keys it was read in); a text whose topic that taxonomy no longer has is left out, counted in `left_out`.
    `unlabelled_traffic`: texts of traffic-set items no trusted answer labels (a taught topic's prior is matched on
    them, `retrain.topics.prior`)."""

    train: list[Example]
    holdout: list[Example]
    last_answer_id: int
    traffic: list[Example] = field(default_factory=list)
    fixes: LabelFixes = field(default_factory=LabelFixes)
    labels: tuple[str, ...] = ()
    taxonomy_version: int = 0
    left_out: int = 0
    unlabelled_traffic: list[str] = field(default_factory=list)
    golden: list[Example] = field(default_factory=list)  # the golden set: judges only (feedback.evaluation.golden)
    on_golden: int = 0  # trusted texts set aside because the golden set holds them: its label judges them

    @property
    def parts(self) -> FeedbackParts:
        """How many trusted texts each part holds (before the run sets base-validation texts aside)."""
        return FeedbackParts(train=len(self.train), holdout=len(self.holdout), traffic=len(self.traffic))


def read_trusted(store: FeedbackStore, policy: TrustPolicy, fixes: LabelFixes | None = None,
                 taxonomy: Taxonomy | None = None) -> list[TrustedExample]:
    """The store's answers that the trust rules pass (see `feedback.trust.rules.select_trusted`), each read as it
    means under `taxonomy` (default: the store's current one; `feedback.meaning`), read through the label
    fixes (`fixes`, else the store's own): relabelled texts with their new label, excluded ones left out. Not
    logged here: what matters is how many of them train, which the run logs once it knows (`FeedbackParts.words`)."""
    fixes = read_fixes(store) if fixes is None else fixes
    taxonomy = taxonomy or store.topics.current()
    rows = store.answers.rows(taxonomy=taxonomy)
    return fixes.trusted(select_trusted(rows, store.pool.gold_labels(taxonomy), policy))


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
    database = Database(db_path)  # the database alone: a backup needs none of the store's parts
    try:
        database.backup(dest)
    finally:
        database.close()
    for old in sorted(backups_dir.glob("feedback-*.db"))[:-keep]:
        old.unlink(missing_ok=True)
    return dest


def trusted_split(snapshot_db: Path | None, policy: TrustPolicy, holdout_fraction: float,
                  taxonomy: Taxonomy | None = None, unlabelled_traffic: int = 0) -> FeedbackSplit:
    """Trusted feedback from a consistent copy, split by (salted) text hash into train and holdout parts, read in
    `taxonomy` (the one the retrain started with; default: the copy's current one), with up to `unlabelled_traffic`
    texts of traffic items that have no trusted answer."""
    if snapshot_db is None:
        return FeedbackSplit(train=[], holdout=[], last_answer_id=0, labels=taxonomy.keys if taxonomy else (),
                             taxonomy_version=taxonomy.version if taxonomy else 0)
    store = FeedbackStore(snapshot_db)
    try:
        taxonomy = taxonomy or store.topics.current()
        fixes = read_fixes(store)
        trusted = read_trusted(store, policy, fixes, taxonomy)
        last_id = max((row["id"] for row in store.answers.rows(limit=1)), default=0)
        split = split_trusted(trusted, traffic_hashes(store), holdout_fraction, taxonomy, store.golden.hashes())
        answered = {text_hash(e.text) for e in split.traffic}
        with store.database.read() as conn:
            texts = traffic_texts(conn, answered, unlabelled_traffic) if unlabelled_traffic else []
        golden = store.golden.examples(taxonomy)
    finally:
        store.close()
    return replace(split, last_answer_id=last_id, fixes=fixes, unlabelled_traffic=texts, golden=golden)


def trusted_parts(store: FeedbackStore, policy: TrustPolicy, holdout_fraction: float) -> FeedbackParts:
    """The live store's trusted texts by part, as the next retrain's snapshot would split them (the admin tiles')."""
    taxonomy = store.topics.current()
    return split_trusted(read_trusted(store, policy, taxonomy=taxonomy), traffic_hashes(store), holdout_fraction,
                         taxonomy, store.golden.hashes()).parts


def traffic_hashes(store: FeedbackStore) -> set[str]:
    """The text hashes of the traffic set (pool items drawn at random; see feedback.traffic.traffic_set)."""
    with store.database.read() as conn:
        return read_traffic(conn)


def as_example(text: str, label: str, taxonomy: Taxonomy) -> Example | None:
    """A trusted text as a training example in `taxonomy`: `label` (read by `feedback.meaning`) indexes its
    keys, and a set-valued label (a split topic's earlier answers) trains as its set (`Example.allowed`). None when
    the label names a topic the taxonomy does not have."""
    keys = allowed_keys(label)
    if not all(k in taxonomy.keys for k in keys):
        return None
    indices = tuple(sorted(taxonomy.keys.index(k) for k in keys))
    return Example(text, indices[0], allowed=indices if len(indices) > 1 else ())


def split_trusted(trusted: list[TrustedExample], traffic: set[str], holdout_fraction: float,
                  taxonomy: Taxonomy, golden: Collection[str] = frozenset()) -> FeedbackSplit:
    """Traffic texts apart (never trained on); the rest split by salted text hash into train and holdout; labels
    index `taxonomy`'s keys, and texts whose topic it does not have are left out and counted. Texts of the golden set
    (`golden`: their hashes) are set aside and counted: the golden set's own label judges them, nothing trains on
    them."""
    examples = []
    left_out = 0
    on_golden = sum(1 for t in trusted if (t.text_hash or text_hash(t.text)) in golden)
    for t in trusted:
        if (t.text_hash or text_hash(t.text)) in golden:
            continue
        example = as_example(t.text, t.label, taxonomy)
        if example is None:
            left_out += 1
        else:
            examples.append((example, t.text_hash or text_hash(t.text)))
    train, holdout = split_by_hash([e for e, digest in examples if digest not in traffic], holdout_fraction,
                                   salt=HOLDOUT_SALT)
    return FeedbackSplit(train=train, holdout=holdout, last_answer_id=0,
                         traffic=[e for e, digest in examples if digest in traffic], labels=taxonomy.keys,
                         taxonomy_version=taxonomy.version, left_out=left_out, on_golden=on_golden)
