"""The feedback tables at the current schema version, declared once for every query on either backend.

`feedback.database.schema` builds them step by step (its steps are frozen; these follow the newest one); a test compares
the two on SQLite and PostgreSQL.
"""

from __future__ import annotations

import sqlalchemy as sa

from feedback.database.schema import FLOAT8, ROW_ID

metadata = sa.MetaData()

answers = sa.Table(
    "answers", metadata,
    sa.Column("id", ROW_ID, sa.Identity(), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("text_hash", sa.Text, nullable=False),
    sa.Column("predicted_label", sa.Text),
    sa.Column("model_version", sa.Text),
    sa.Column("user_label", sa.Text, nullable=False),
    sa.Column("annotator", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("probabilities", sa.Text),
    sa.Column("kind", sa.Text, nullable=False, server_default="correct"),
    sa.Column("item_id", sa.Integer),
    sa.Column("status", sa.Text, nullable=False, server_default="ok"),
    sa.Column("suspicious_reason", sa.Text),
    sa.Column("verified", sa.Integer, nullable=False, server_default="0"),
    sa.Column("address", sa.Text),
    sa.Column("taxonomy_version", sa.Integer),  # NULL: given before taxonomies were versioned (version 1)
)

pool = sa.Table(
    "pool", metadata,
    sa.Column("id", ROW_ID, sa.Identity(), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("text_hash", sa.Text, nullable=False, unique=True),
    sa.Column("source", sa.Text),
    sa.Column("added_at", sa.Text, nullable=False),
    sa.Column("uncertainty", FLOAT8),
    sa.Column("scored_by", sa.Text),
    sa.Column("gold_label", sa.Text),
    sa.Column("held_by", sa.Text),
    sa.Column("held_reason", sa.Text),
    sa.Column("traffic", sa.Integer),
    sa.Column("top_key", sa.Text),  # the scoring model's likeliest topic (its own key)
    sa.Column("top_prob", FLOAT8),
    sa.Column("probabilities", sa.Text),  # JSON {the scoring model's key: probability}
    sa.Column("focus", FLOAT8),  # how informative for the topic being taught (feedback.labelling.focus); NULL: not
    sa.Column("pushed", FLOAT8),  # a maintainer's search score: pushed items come first (NULL: not pushed)
    sa.Column("pushed_by", sa.Text),
    sa.Column("pushed_at", sa.Text),
)

skips = sa.Table(
    "skips", metadata,
    sa.Column("annotator", sa.Text, primary_key=True),
    sa.Column("item_id", sa.Integer, sa.ForeignKey("pool.id"), primary_key=True),
    sa.Column("skipped_at", sa.Text, nullable=False),
)

rate_hits = sa.Table(
    "rate_hits", metadata,
    sa.Column("bucket", sa.Text, nullable=False),
    sa.Column("key", sa.Text, nullable=False),
    sa.Column("at", FLOAT8, nullable=False),
)

sessions = sa.Table(
    "sessions", metadata,
    sa.Column("kind", sa.Text, primary_key=True),
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.Text),
    sa.Column("expires_at", FLOAT8, nullable=False),
)

guidelines = sa.Table(
    "guidelines", metadata,
    sa.Column("id", ROW_ID, sa.Identity(), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("saved_at", sa.Text, nullable=False),
    sa.Column("saved_by", sa.Text),
)

served_tallies = sa.Table(
    "served_tallies", metadata,
    sa.Column("day", sa.Text, primary_key=True),
    sa.Column("form", sa.Text, primary_key=True),
    sa.Column("model_version", sa.Text, primary_key=True),
    sa.Column("writer", sa.Text, primary_key=True),
    sa.Column("n", sa.Integer, nullable=False),
    sa.Column("confidence_sum", FLOAT8, nullable=False),
    sa.Column("variance_sum", FLOAT8, nullable=False),
    sa.Column("confusion", sa.Text, nullable=False),
    sa.Column("confidence_counts", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
)

taxonomy_versions = sa.Table(
    "taxonomy_versions", metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("topics", sa.Text, nullable=False),
    sa.Column("change", sa.Text, nullable=False),
    sa.Column("created_by", sa.Text),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("why", sa.Text),
)

reservations = sa.Table(
    "reservations", metadata,
    sa.Column("item_id", sa.Integer, primary_key=True),
    sa.Column("holder", sa.Text, primary_key=True),
    sa.Column("expires_at", FLOAT8, nullable=False),
    sa.Index("reservations_expires", "expires_at"),
)

label_searches = sa.Table(
    "label_searches", metadata,
    sa.Column("search_id", sa.Text, primary_key=True),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("rows", sa.Integer, nullable=False),  # rows the search read
    sa.Column("candidates", sa.Integer, nullable=False),  # candidates it found (it may store fewer)
    sa.Column("model", sa.Text),  # whose embeddings: "champion v0003", "base all-MiniLM-L6-v2"
    sa.Column("data", sa.Text),  # the base data it read, in words (Corpus.description)
    sa.Column("left_out", sa.Text),  # the topics it neither judged nor suggested, in words: "Health (2 rows)"
)

label_candidates = sa.Table(
    "label_candidates", metadata,
    sa.Column("id", ROW_ID, sa.Identity(), primary_key=True),
    sa.Column("search_id", sa.Text, nullable=False),
    sa.Column("source", sa.Text, nullable=False),  # "base" or "answer"
    sa.Column("text_hash", sa.Text, nullable=False),
    sa.Column("origin", sa.Text, nullable=False),  # where from, in words: "train.csv row 12", "answer #7 by user:ann"
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("given_label", sa.Text, nullable=False),
    sa.Column("suggested_label", sa.Text, nullable=False),
    sa.Column("probability", FLOAT8, nullable=False),  # the suggested label's out-of-fold probability
    sa.Column("rank", sa.Integer, nullable=False),  # its place in the search's ranking, 1 = likeliest error
    sa.Column("created_at", sa.Text, nullable=False),
)

label_fixes = sa.Table(
    "label_fixes", metadata,
    sa.Column("id", ROW_ID, sa.Identity(), primary_key=True),
    sa.Column("candidate_id", sa.Integer),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("text_hash", sa.Text, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("action", sa.Text, nullable=False),  # "relabel", "keep" or "exclude"
    sa.Column("label_before", sa.Text, nullable=False),
    sa.Column("label_after", sa.Text),  # the new label of a relabel; NULL otherwise
    sa.Column("decided_by", sa.Text, nullable=False),
    sa.Column("decided_at", sa.Text, nullable=False),
    sa.Column("undone_at", sa.Text),
    sa.Column("undone_by", sa.Text),
)

unlisted = sa.Table(
    "unlisted", metadata,
    sa.Column("id", ROW_ID, sa.Identity(), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("text_hash", sa.Text, nullable=False),
    sa.Column("annotator", sa.Text, nullable=False),
    sa.Column("address", sa.Text),
    sa.Column("verified", sa.Integer, nullable=False, server_default="0"),
    sa.Column("kind", sa.Text, nullable=False),  # "correct" (Classify) or "queue"
    sa.Column("item_id", sa.Integer),  # the queue item, for a queue answer
    sa.Column("name", sa.Text),  # the topic the labeller thinks is missing, if they named one
    sa.Column("predicted_label", sa.Text),
    sa.Column("model_version", sa.Text),
    sa.Column("taxonomy_version", sa.Integer),  # the topics the labeller saw, none of which fit
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False, server_default="ok"),  # ok, undone, placed or dismissed
    sa.Column("topic_key", sa.Text),  # the topic a maintainer placed it in
    sa.Column("decided_by", sa.Text),
    sa.Column("decided_at", sa.Text),
    sa.Index("unlisted_annotator_created", "annotator", "created_at"),
    sa.Index("unlisted_address_created", "address", "created_at"),
    sa.Index("unlisted_text_hash", "text_hash", "annotator"),
)

golden = sa.Table(
    "golden", metadata,
    sa.Column("id", ROW_ID, sa.Identity(), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("text_hash", sa.Text, nullable=False),
    sa.Column("label", sa.Text, nullable=False),  # a topic key, under `taxonomy_version`
    sa.Column("taxonomy_version", sa.Integer, nullable=False),
    sa.Column("source", sa.Text),  # the file it was imported from
    sa.Column("added_by", sa.Text),
    sa.Column("added_at", sa.Text, nullable=False),
    sa.Index("golden_text_hash", "text_hash", unique=True),
)

maintained = sa.Table(
    "maintained", metadata,
    sa.Column("key", sa.Text, primary_key=True),  # a setting a maintainer overrides from the admin page
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("set_by", sa.Text),
    sa.Column("set_at", sa.Text, nullable=False),
)

# What a PostgreSQL backup copies into a SQLite file, in this order (skips name pool items); the label fixes and the
# golden set go with it because a retrain reads them from that copy.
COPIED = (answers, pool, skips, served_tallies, label_searches, label_candidates, label_fixes, taxonomy_versions,
          unlisted, golden)
