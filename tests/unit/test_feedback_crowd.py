"""The people panel's numbers counted by the database (feedback.trust.crowd) equal the same numbers worked out from
every answer row, on SQLite and on PostgreSQL; agreement, exclusions and disagreements need only the answers
on texts two or more people answered."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.settings.policies import TRAIN_ON, StoreLimits, TrustPolicy
from core.text import text_hash
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.trust.agreement import agreement, pairwise_agreement
from feedback.trust.crowd import PersonCounts
from feedback.trust.people import disagreements, people
from feedback.trust.rules import MAINTAINER, annotator_agreement, check_scores, excluded_annotators
from feedback.validate import WITHDRAWN
from testkit.fakes import TickingClock
from testkit.pg_cluster import StoreFactory

DAY = 86_400.0
LABELS = ("World", "Sports", "Business", "Sci/Tech")


@pytest.fixture
def crowd_store(make_store: StoreFactory, tmp_path: Path) -> tuple[FeedbackStore, TickingClock]:
    clock = TickingClock()
    store = make_store(tmp_path / "feedback.db", StoreLimits(writes_per_minute=10_000), clock=clock)
    checks = [f"Known check {i}" for i in range(4)]
    store.pool.add(checks, source="t", labels=["World", "Sports", "Business", "Sci/Tech"])

    def answer(who: str, text: str, label: str, *, verified: bool = True, model: str | None = None) -> int:
        return store.answers.record(AnswerInput(text=text, user_label=label, annotator=who, kind="correct", predicted_label=model,
                            verified=verified)).id

    for i in range(5):  # dan's old answers: ten days before the rest, outside "the last 7 days"
        answer("anon:dan", f"Old story {i}", "World", verified=False)
    answer("anon:dan", "Old story 5", "Sports", verified=False)
    clock.now += 10 * DAY
    for i in range(8):  # ann and ben agree on shared texts; cat mostly does not; dan joins on some
        answer("user:ann", f"Shared story {i}", LABELS[i % 4])
        answer("user:ben", f"Shared story {i}", LABELS[i % 4])
        answer("anon:cat", f"Shared story {i}", LABELS[(i + 1) % 4] if i % 3 else LABELS[i % 4], verified=False)
        if i % 2:
            answer("anon:dan", f"Shared story {i}", LABELS[i % 4], verified=False)
    answer("anon:cat", "Shared story 1", "Sports", verified=False)  # a change of mind replaces the earlier answer
    for i in range(3):
        answer("user:ann", f"Ann alone {i}", "Business")
    answer("user:eve", "Eve alone", "World", verified=False)  # an identity once seen without its sign-in
    answer("user:eve", "Shared story 0", "World")
    for i, text in enumerate(checks):  # model labels one off the known one: every check tells
        known = LABELS[i]
        model = LABELS[(i + 1) % 4]
        answer("user:ann", text, known, model=model)
        answer("anon:cat", text, model, model=model, verified=False)
        if i < 2:
            answer("user:ben", text, model, model=model)
            answer("user:ben", text, known, model=model)  # ben's latest answer on the check is the one that counts
    rejected = answer("user:ben", "Shared story 5", "Business")
    store.answers.set_status(rejected, "rejected")
    assert store.undo_last("anon:dan")["text"] == "Shared story 7"  # dan's newest answer, now withdrawn
    store.reviews.resolve(text_hash("Shared story 2"), "Business")  # the maintainer settles one text
    return store, clock


def _expected_counts(rows: list[dict], now: datetime) -> dict[str, PersonCounts]:
    """Each person's numbers worked out from every answer row (what the panel computed before)."""
    rows = [row for row in rows if row["annotator"] != MAINTAINER]
    live = [row for row in rows if row["status"] not in WITHDRAWN]
    week_ago = datetime.fromtimestamp(now.timestamp() - 7 * DAY, UTC).isoformat(timespec="microseconds")
    out = {}
    for who in {row["annotator"] for row in live}:
        mine = [row for row in live if row["annotator"] == who]
        out[who] = PersonCounts(
            annotator=who, answers=len(mine), last_week=sum(row["created_at"] >= week_ago for row in mine),
            last_active=max(row["created_at"] for row in mine), signed_in=any(row["verified"] for row in mine),
            unverified=any(not row["verified"] for row in rows if row["annotator"] == who))
    return out


def test_per_person_counts_and_checks_from_the_database_match_the_answer_rows(crowd_store) -> None:
    store, clock = crowd_store
    now = datetime.fromtimestamp(clock.now + 60, UTC)
    every = store.answers.rows()
    expected = _expected_counts(every, now)
    counted = store.crowd.counts(now)
    assert {c.annotator: c for c in counted} == expected
    assert expected["anon:dan"].last_week < expected["anon:dan"].answers  # the week boundary is exercised
    assert expected["user:eve"].signed_in and expected["user:eve"].unverified
    assert [c.annotator for c in store.crowd.counts(now, limit=2)] == ["user:ann", "anon:cat"]  # most answers first

    people_rows = [row for row in every if row["annotator"] != MAINTAINER]
    scores = store.crowd.check_scores()
    assert scores == check_scores(people_rows, store.pool.gold_labels())
    assert scores["user:ben"].right == 2 and scores["anon:cat"].telling_right == 0  # latest answers; copying fails


def test_agreement_exclusions_and_disagreements_need_only_the_shared_texts(crowd_store) -> None:
    store, clock = crowd_store
    every, shared, gold = store.answers.rows(), store.crowd.shared_answers(), store.pool.gold_labels()
    assert 0 < len(shared) < len(every)
    assert {row["text"] for row in shared}.isdisjoint({"Eve alone", "Ann alone 0", "Old story 0"})
    people_only = [row for row in every if row["annotator"] != MAINTAINER]
    shared_people = [row for row in shared if row["annotator"] != MAINTAINER]
    assert pairwise_agreement(shared) == pairwise_agreement(every)
    on_shared, on_all = annotator_agreement(shared_people), annotator_agreement(people_only)
    assert all(on_all[name] == found for name, found in on_shared.items())
    assert all(found.compared == 0 for name, found in on_all.items() if name not in on_shared)  # nobody to compare
    assert agreement(shared, max_annotators=0) == agreement(every, max_annotators=0)
    assert disagreements(shared, gold) == disagreements(every, gold) != []

    now = datetime.fromtimestamp(clock.now + 60, UTC)
    for train_on in TRAIN_ON:
        policy = TrustPolicy(train_on=train_on, min_checks=2)
        shown = people(store.crowd.counts(now), store.crowd.check_scores(), shared, policy)
        not_trained = {p.annotator for p in shown if p.trains != "yes"}
        assert not_trained == excluded_annotators(people_only, gold, policy), train_on
    cat = next(p for p in shown if p.annotator == "anon:cat")
    assert cat.trains == "no: failed known-answer checks" and cat.shared > 0
