"""The admin overview's counts come from the database (GROUP BY), on both backends: answers per day, live ones
only, whatever the number of answers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from core.settings.policies import StoreLimits
from feedback.labelling.answers import AnswerInput
from testkit.pg_cluster import StoreFactory

DAY = 86_400.0
START = datetime(2026, 3, 1, 12, tzinfo=UTC).timestamp()


def test_answers_per_day_count_live_answers_by_utc_day(make_store: StoreFactory, tmp_path: Path) -> None:
    now = [START]
    store = make_store(tmp_path / "feedback.db", StoreLimits(writes_per_minute=10_000), clock=lambda: now[0])
    for day, n in enumerate((3, 0, 5, 1)):
        now[0] = START + day * DAY
        for i in range(n):
            store.answers.record(AnswerInput(text=f"story {day}-{i}", user_label="World", annotator=f"anon:{day}{i}", kind="correct"))
    store.undo_last("anon:20")  # taken back: not a live answer
    assert store.answers.per_day() == {"2026-03-01": 3, "2026-03-03": 4, "2026-03-04": 1}
    assert store.answers.per_day(days=2) == {"2026-03-03": 4, "2026-03-04": 1}  # the newest days
    assert sum(store.answers.per_day().values()) == store.answers.count() - store.answers.count("undone")
