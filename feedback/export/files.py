"""Every answer out to a file or stream, as CSV (spreadsheet-safe) or JSONL, for audit and sharing."""

from __future__ import annotations

import csv
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import TextIO

import sqlalchemy as sa

from feedback.database.tables import answers
from feedback.labelling.answers import decoded
from feedback.store import FeedbackStore
from feedback.validate import check_export_format

log = logging.getLogger(__name__)

EXPORT_COLUMNS = (
    "id", "created_at", "annotator", "kind", "text", "text_hash", "predicted_label", "probabilities",
    "model_version", "user_label", "item_id", "status", "suspicious_reason", "verified",
)
# Spreadsheets run a cell starting with one of these as a formula (CSV injection).
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _safe_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_PREFIXES):
        return "'" + value
    return value


def export_answers(store: FeedbackStore, path: Path, fmt: str) -> int:
    """Write every answer of `store` (undone ones included, for audit) to `path` as CSV or JSONL; returns the count.

    Written to a temporary file and renamed, so a failed export never leaves a partial file.
    """
    path = Path(path)
    check_export_format(fmt)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with open(fd, "w", encoding="utf-8", newline="") as stream:
            count = write_answers(store, stream, fmt)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    log.info("exported %d answers to %s", count, path)
    return count


def write_answers(store: FeedbackStore, stream: TextIO, fmt: str) -> int:
    """Write every answer of `store` to an open text stream as CSV or JSONL, oldest first; returns the count."""
    check_export_format(fmt)
    count = 0
    writer = csv.writer(stream) if fmt == "csv" else None
    if writer:
        writer.writerow(EXPORT_COLUMNS)
    query = sa.select(*(answers.c[column] for column in EXPORT_COLUMNS)).order_by(answers.c.id)
    with store.database.read() as conn:
        for mapping in conn.execute(query).mappings():
            row = dict(mapping)
            if writer:
                writer.writerow([_safe_cell(row[column]) for column in EXPORT_COLUMNS])
            else:
                stream.write(json.dumps(decoded(row), ensure_ascii=False) + "\n")
            count += 1
    return count
