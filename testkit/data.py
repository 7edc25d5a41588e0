"""Where the offline AG News CSVs lie for tests (NEWSLOOP_TEST_AG_NEWS, else ../shared/data/ag_news)."""

from __future__ import annotations

import os
from pathlib import Path

from core.settings.config import PROJECT_ROOT

SHARED_AG_NEWS = Path(os.environ.get("NEWSLOOP_TEST_AG_NEWS", PROJECT_ROOT.parent / "shared" / "data" / "ag_news"))

# The seed set's first three AG News topics by names of their own (its Sci/Tech rows left out): data of your own
# topics for tests (tests/e2e/test_own_topics.py, tests/unit/test_own_topics.py).
OWN_TOPICS = {"1": "Politics", "2": "Sport", "3": "Money"}


def own_topics_csv(path: Path) -> Path:
    """Write the seed rows of three topics to `path`, each labelled by a name instead of AG News's number."""
    import csv

    from core.settings.config import SEED_CSV

    with SEED_CSV.open(newline="", encoding="utf-8") as source, path.open("w", newline="", encoding="utf-8") as out:
        rows = csv.reader(source)
        writer = csv.writer(out)
        writer.writerow(next(rows))  # label,title,description
        writer.writerows([OWN_TOPICS[label], title, body] for label, title, body in rows if label in OWN_TOPICS)
    return path
