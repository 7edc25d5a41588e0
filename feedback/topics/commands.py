"""`newsloop topics ...`: list the topics, and add, rename, merge, split or describe one, each change saying first
what it touches (`feedback.topics.changes.impact`) and, with `dry_run`, writing nothing. feedback.cli parses the
options and turns refusals into exit statuses."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from core.taxonomy import LEARNING, Taxonomy
from feedback.store import FeedbackStore
from feedback.topics.changes import BaseData, Impact, impact


def listing(taxonomy: Taxonomy, model_labels: Sequence[str]) -> dict[str, Any]:
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
    found = listing(taxonomy, model_labels)
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
    found = impact(store, before, after, base.labels, base.description)
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
