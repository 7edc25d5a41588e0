"""What each feedback command does (`newsloop import`, `export`, `stats`, `tables`, `review`, `topics`, `queue`,
`golden`): its work on an open store, and its result printed. feedback.cli parses the options, opens the store and
turns errors into exit statuses.

A change of topics says first what it touches (`feedback.topics.changes.impact`) and, with `dry_run`, writes nothing."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import sqlite_utils

from core.settings.policies import TrustPolicy
from core.taxonomy import LEARNING, Taxonomy
from feedback.errors import FeedbackError
from feedback.export.files import export_answers, write_answers
from feedback.meaning import label_in_words
from feedback.store import FeedbackStore
from feedback.topics.changes import BaseData, Impact, impact
from feedback.trust.label_errors import Action
from feedback.trust.review import ReviewFilter, review_message


def _print_json(payload: object) -> None:
    print(json.dumps(payload, indent=2, default=str))


def import_pool(store: FeedbackStore, file: Path, *, source: str | None = None, checks: bool = False,
                skip_bad: bool = False) -> None:
    """Add the texts of a CSV or JSONL file to the labelling pool (all or nothing; with `skip_bad`, the good rows,
    every bad line listed), as known-answer checks with `checks`."""
    report = store.pool.import_file(file, source=source, checks=checks, skip_bad=skip_bad)
    what = "known-answer checks" if checks else "items"
    print(f"imported {report.added} new {what} from {file} ({report.duplicates} duplicates skipped)")
    if report.demo_removed:
        print(f"they replace the demo pool: {report.demo_removed} unanswered demo articles removed")
    if report.bad:
        noun = "row" if len(report.bad) == 1 else "rows"
        print(f"{len(report.bad)} bad {noun} left out:")
        for line, problem in report.bad:  # every one: these are the rows to fix and import again
            print(f"  line {line}: {problem}")


def golden_import(store: FeedbackStore, file: Path, *, by: str) -> None:
    """Add or relabel the golden set's articles from a file (all or nothing), saying what changed."""
    report = store.golden.import_file(file, by=by)
    print(f"golden set: {report.added} added, {report.relabelled} relabelled, {report.unchanged} unchanged from {file} "
          f"({report.total} golden articles in all); they judge every new model and are never trained on")


def golden_status(store: FeedbackStore) -> None:
    """The golden set's size per topic and its newest import, as JSON."""
    _print_json(asdict(store.golden.summary()))


def queue_push(store: FeedbackStore, query: str, count: int, by: str) -> None:
    """Push the pool articles nearest `query` to the front of the queue, saying how many and how many wait."""
    pushed = store.pool.push_search(query, count, by)
    print(f"pushed {pushed} articles to the front of the queue ({store.pool.pushed_waiting()} pushed articles waiting)")


def queue_clear(store: FeedbackStore) -> None:
    """Take every pushed article out of the front of the queue."""
    print(f"cleared {store.pool.clear_pushed()} pushed articles")


def export(store: FeedbackStore, *, fmt: str, out: Path | None = None) -> None:
    """Every answer, oldest first, as CSV or JSONL: to standard output, or to `out` (saying how many)."""
    if out is None:
        write_answers(store, sys.stdout, fmt)
    else:
        count = export_answers(store, out, fmt)
        print(f"exported {count} answers to {out}", file=sys.stderr)


def stats(store: FeedbackStore) -> None:
    """Answer and pool counts."""
    print(json.dumps(store.stats(), indent=2))


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


def tables(file: Path) -> None:
    """The tables of a SQLite feedback file (the database, or a retrain's backup), neither created nor migrated."""
    print(json.dumps(describe_tables(file), indent=2))


def review_list(store: FeedbackStore, where: ReviewFilter, trust: TrustPolicy) -> None:
    """The answers `where` matches, as the admin view's review panel lists them (signed-in or checked people's
    first, newest first), and how many match in all."""
    found, total = store.reviews.find(where, trust)
    _print_json({"total": total, "listed": len(found), "answers": found})


def review_set(store: FeedbackStore, ids: Sequence[int], status: str) -> None:
    """Accept (they may train) or reject (they never will) the named answers at once; says what changed, by id."""
    report = store.reviews.set_statuses(ids, status)
    _print_json(asdict(report) | {"message": review_message(report)})


def review_resolve(store: FeedbackStore, text_hash: str, label: str) -> None:
    """Settle a text people disagree on with a reviewed label (its answers accepted or rejected to match)."""
    _print_json(asdict(store.reviews.resolve(text_hash, label)))


def label_errors_list(store: FeedbackStore, source: str | None, limit: int) -> None:
    """The newest search's undecided candidates, most likely error first, and how many there are in all."""
    found, total = store.label_errors.open_candidates(limit, source)
    # Labels are stored as keys (a split's earlier one as a set): named as people see them.
    taxonomy = store.topics.current()
    named = [c | {"given_as": label_in_words(taxonomy, c["given_label"]),
                  "suggested_as": label_in_words(taxonomy, c["suggested_label"])} for c in found]
    _print_json({"search": store.label_errors.latest_search(), "total": total, "listed": len(found),
                 "candidates": named})


def label_errors_decide(store: FeedbackStore, ids: Sequence[int], action: Action, by: str, label: str | None) -> None:
    """Relabel, keep or exclude the named candidates at once; says what was decided, by id."""
    report = store.label_errors.decide(ids, action, by, label)
    _print_json(asdict(report) | {"message": report.message()})


def label_errors_undo(store: FeedbackStore, ids: Sequence[int], by: str) -> None:
    """Take back the named decisions."""
    undone = store.label_errors.undo(ids, by)
    _print_json({"undone": undone, "not_live": sorted(set(ids) - set(undone))})


def label_errors_decisions(store: FeedbackStore, limit: int, live_only: bool) -> None:
    """The decisions, newest first."""
    _print_json({"decisions": store.label_errors.decisions(limit, live_only=live_only)})


def topic_listing(taxonomy: Taxonomy, model_labels: Sequence[str]) -> dict[str, Any]:
    """The taxonomy as `topics list --json` prints it: its version, the topics in order, and every change so far."""
    learning = set(taxonomy.learning(model_labels))
    return {
        "version": taxonomy.version,
        "topics": [{"position": i + 1, "key": t.key, "name": t.name, "description": t.description,
                    "learning": t.key in learning} for i, t in enumerate(taxonomy.topics)],
        "history": [{"version": v.version, "change": v.change.to_dict(), "by": v.by, "at": v.at, "why": v.why}
                    for v in taxonomy.versions],
    }


def list_topics(taxonomy: Taxonomy, model_labels: Sequence[str], *, as_json: bool = False) -> None:
    """Print the topics: version, then each topic's position, name (its key when different), description, and
    whether the serving model predicts it yet."""
    found = topic_listing(taxonomy, model_labels)
    if as_json:
        print(json.dumps(found, indent=2))
        return
    last = taxonomy.current
    said = f" ({last.change.kind}{f' by {last.by}' if last.by else ''}{f', {last.at}' if last.at else ''})"
    print(f"topics, version {taxonomy.version}{said if last.version > 1 else ''}:")
    for t in found["topics"]:
        key = f" [key {t['key']}]" if t["key"] != t["name"] else ""
        about = f": {t['description']}" if t["description"] else ""
        new = f" ({LEARNING})" if t["learning"] else ""
        print(f"  {t['position']}. {t['name']}{key}{about}{new}")


def change_topics(store: FeedbackStore, before: Taxonomy, step: Callable[[Taxonomy], Taxonomy],
                  base_data: Callable[[], BaseData], *, dry_run: bool) -> Impact:
    """Plan a change on `before` (raises TaxonomyError when refused), print what it touches, and unless `dry_run`
    store it as the next version (raises TaxonomyConflict when someone changed the topics meanwhile)."""
    after = step(before)
    # Only a merge or a split changes what rows mean; only they need the base data's labels, which can be slow to read.
    kind = after.current.change.kind
    base = base_data() if kind in ("merge", "split") else BaseData()
    found = impact(store.database, before, after, base.labels, base.description)
    if dry_run:
        print(f"dry run, nothing written: {found.words()}")
        return found
    stored = store.topics.commit(after, before.version)
    print(f"topics version {stored.version}: {found.words()}")
    return found


def list_unlisted(store: FeedbackStore, *, as_json: bool = False) -> None:
    """Print the "None of these" answers waiting for a maintainer, grouped into candidate topics, largest first: each
    group's suggested name, answers and people, then its answers (id, the name given, who, the text's start)."""
    listing = store.unlisted.listing()
    groups, rows = listing.groups, listing.rows
    if as_json:
        print(json.dumps([{"name": g.name, "named": g.named, "people": g.people,
                           "answers": [{k: rows[i][k] for k in ("id", "text", "name", "annotator", "kind", "created_at")}
                                       for i in g.ids]} for g in groups], indent=2))
        return
    if not groups:
        print('no "None of these" answers are waiting')
        return
    if listing.sampled:
        print(f"{listing.waiting:,} answers are waiting; these groups are of {len(rows):,} of them, a fair share of "
              "each person's (decide them, then list again for the rest)")
    for g in groups:
        print(f"{g.name}{'' if g.named else ' (from the texts)'}: {len(g.ids)} answer(s), {g.people} people; "
              f"ids {','.join(str(i) for i in g.ids)}")
        for i in g.ids:
            text = " ".join(str(rows[i]["text"]).split())
            named = f"named {rows[i]['name']!r}" if rows[i]["name"] else "no name"
            print(f"  #{i} {named}, by {rows[i]['annotator']}: {text[:80]}{'…' if len(text) > 80 else ''}")
