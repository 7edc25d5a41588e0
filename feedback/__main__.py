"""Command line for the feedback store: import a labelling pool, export answers, show counts, inspect a SQLite file."""

from __future__ import annotations

import argparse
import json
import logging
import sqlite3
import sys
from pathlib import Path
from typing import Any

import sqlite_utils

from core.settings.config import ConfigError, load_settings
from feedback.errors import FeedbackError
from feedback.store import FeedbackStore
from feedback.validate import EXPORT_FORMATS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m feedback",
        description="Manage the NewsLoop feedback database (NEWSLOOP_HOME/feedback.db).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    importer = commands.add_parser(
        "import",
        help="add texts from a CSV or JSONL file to the labelling pool",
        description="Add texts to the labelling pool. CSV: a header with a 'text' column, or 'title' and "
        "'description'. JSONL: one object per line with 'text', or 'title' and 'description'. Any 'label' "
        "is ignored unless --checks. If any row is bad, nothing is imported and the bad lines are listed.",
    )
    importer.add_argument("file", type=Path, help="a .csv or .jsonl file (UTF-8)")
    importer.add_argument("--source", help="name recorded with the items (default: the file name)")
    importer.add_argument(
        "--checks",
        action="store_true",
        help="the rows are known-answer checks: each needs a 'label' (topic name or AG News number 1-4); the "
        "queue mixes them in and annotators who fail them are not trained on",
    )
    exporter = commands.add_parser(
        "export",
        help="write every answer as CSV or JSONL",
        description="Write every answer, undone and rejected ones included, oldest first.",
    )
    exporter.add_argument("--format", required=True, choices=EXPORT_FORMATS, dest="fmt")
    exporter.add_argument("--out", type=Path, help="output file (default: standard output)")
    commands.add_parser("stats", help="print answer and pool counts as JSON")
    tables = commands.add_parser(
        "tables",
        help="print the tables of a SQLite feedback file (the database, or a retrain's backup) as JSON",
        description="Tables, row counts, columns and schema version of a SQLite feedback file, read only: the "
        "file is neither created nor migrated, so an old backup shows as it is.",
    )
    tables.add_argument("file", type=Path, help="a SQLite file, e.g. NEWSLOOP_HOME/feedback.db or a backups/ copy")
    return parser


def describe_tables(path: Path) -> dict[str, Any]:
    """What a SQLite feedback file holds, read only (sqlite-utils: tables, counts, columns)."""
    if not path.is_file():
        raise FeedbackError(f"{path} is not a file")
    db = sqlite_utils.Database(sqlite3.connect(f"file:{path}?mode=ro", uri=True))
    try:
        return {
            "schema_version": db.execute("PRAGMA user_version").fetchone()[0],
            "tables": {table.name: {"rows": table.count, "columns": [column.name for column in table.columns]}
                       for table in db.tables},
        }
    finally:
        db.close()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    try:
        if args.command == "tables":
            print(json.dumps(describe_tables(args.file), indent=2))
            return 0
        settings = load_settings()
        settings.paths.feedback_db.parent.mkdir(parents=True, exist_ok=True)
        store = FeedbackStore.from_settings(settings)
        if args.command == "import":
            report = store.import_pool(args.file, source=args.source, checks=args.checks)
            what = "known-answer checks" if args.checks else "items"
            print(f"imported {report.added} new {what} from {args.file} ({report.duplicates} duplicates skipped)")
        elif args.command == "export":
            if args.out is None:
                store.write_export(sys.stdout, args.fmt)
            else:
                count = store.export(args.out, args.fmt)
                print(f"exported {count} answers to {args.out}", file=sys.stderr)
        else:
            print(json.dumps(store.stats(), indent=2))
    except (FeedbackError, ConfigError, sqlite3.DatabaseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        detail = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        print(f"error: {detail}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
