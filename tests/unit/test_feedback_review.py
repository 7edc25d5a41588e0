"""Review at the scale of a crowd (filters, bulk statuses, settling disagreements), people's names and numbers,
labelling guidelines, and pool texts cleaned of HTML entities: on SQLite and on PostgreSQL."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from core.settings.policies import StoreLimits, TrustPolicy
from core.text import text_hash
from feedback.errors import FeedbackError
from feedback.labelling.answers import AnswerInput
from feedback.labelling.guidelines import DEFAULT, built_in
from feedback.labelling.pool_files import cleaned
from feedback.store import FeedbackStore
from feedback.training.snapshot import read_trusted
from feedback.trust.people import disagreements, nickname, people
from feedback.trust.review import HELD, ReviewFilter, review_message
from feedback.trust.rules import MAINTAINER
from testkit.fakes import TickingClock
from testkit.pg_cluster import StoreFactory

SURE_OF_WORLD = {"World": 0.97, "Sports": 0.01, "Business": 0.01, "Sci/Tech": 0.01}
SURE_OF_SPORTS = {"World": 0.01, "Sports": 0.96, "Business": 0.02, "Sci/Tech": 0.01}


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db", StoreLimits(writes_per_minute=10_000), clock=TickingClock())


def suspicious(store: FeedbackStore, n: int, who: str = "anon:a", probs: dict = SURE_OF_WORLD, label: str = "Sports",
               prefix: str = "Summit talk") -> list[int]:
    ids = [store.answers.record(AnswerInput(text=f"{prefix} number {i}", user_label=label, annotator=who, kind="correct",
                        probabilities=probs)).id for i in range(n)]
    assert all(store.answers.get(i)["status"] == "suspicious" for i in ids)
    return ids


def test_bulk_review_changes_exactly_the_named_answers_and_says_what_it_did(store: FeedbackStore) -> None:
    ids = suspicious(store, 5)
    other = suspicious(store, 2, prefix="Other story")
    report = store.reviews.set_statuses(ids[:3], "accepted")
    assert sorted(report.changed) == ids[:3] and set(report.changed.values()) == {"suspicious"}
    assert [store.answers.get(i)["status"] for i in ids + other] == ["accepted"] * 3 + ["suspicious"] * 4
    assert f"Accepted 3 answer(s): #{ids[0]}, #{ids[1]}, #{ids[2]}." in review_message(report)

    again = store.reviews.set_statuses([ids[0], ids[3], 999_999], "accepted")
    assert again.already == (ids[0],) and list(again.changed) == [ids[3]] and again.missing == (999_999,)
    message = review_message(again)
    assert "1 already accepted" in message and f"#{ids[0]}" in message and "1 not found: #999999" in message

    store.undo_last("anon:a")  # the newest answer, other[-1], is taken back: never reviewed
    withdrawn = store.reviews.set_statuses([other[-1]], "rejected")
    assert withdrawn.withdrawn == (other[-1],) and not withdrawn.changed
    assert store.answers.get(other[-1])["status"] == "undone"
    with pytest.raises(FeedbackError, match="at least one"):
        store.reviews.set_statuses([], "accepted")
    with pytest.raises(FeedbackError, match="review status"):
        store.reviews.set_statuses(ids, "ok")


def test_filters_narrow_by_status_reason_label_annotator_and_text(store: FeedbackStore) -> None:
    world = suspicious(store, 4, who="anon:a")
    sports = suspicious(store, 3, who="user:bea", probs=SURE_OF_SPORTS, label="World", prefix="Cup 100%_final")
    plain = store.answers.record(AnswerInput(text="A quiet day on the markets", user_label="Business", annotator="anon:a",
                         kind="correct")).id
    find = store.reviews.find
    rows, total = find(ReviewFilter())
    assert total == 7 and [r["id"] for r in rows] == sorted(world + sports, reverse=True)  # newest first
    assert find(ReviewFilter(status=None))[1] == 8 and find(ReviewFilter(status="ok"))[0][0]["id"] == plain
    reasons = dict((words, pattern) for words, pattern in store.reviews.reason_choices())
    assert set(reasons) == {"model was …% sure of World", "model was …% sure of Sports"}
    assert {r["id"] for r in find(ReviewFilter(reason=reasons["model was …% sure of Sports"]))[0]} == set(sports)
    assert {r["id"] for r in find(ReviewFilter(label="sports"))[0]} == set(world)
    assert {r["id"] for r in find(ReviewFilter(annotator="user:bea"))[0]} == set(sports)
    # Case-insensitive on both backends; LIKE's wildcards in the search are literal characters.
    assert {r["id"] for r in find(ReviewFilter(text="CUP 100%_"))[0]} == set(sports)
    assert find(ReviewFilter(text="cup 100%x"))[1] == 0 and find(ReviewFilter(text="summit_talk"))[1] == 0
    rows, total = find(ReviewFilter(limit=2))
    assert len(rows) == 2 and total == 7
    assert store.reviews.annotator_ids()[0] == "anon:a"
    with pytest.raises(FeedbackError, match="unknown status"):
        find(ReviewFilter(status="nonsense"))


def test_held_corrections_are_found_and_released_by_a_bulk_accept(store: FeedbackStore) -> None:
    texts = [f"Pasted story {i} about a chip plant" for i in range(3)]
    ids = [store.answers.record(AnswerInput(text=t, user_label="Business", annotator="anon:x", kind="correct")).id for t in texts]
    store.pool.add(texts, source="correction", held=("anon:x", "a correction by a visitor not signed in"))
    store.answers.record(AnswerInput(text="Someone else's story", user_label="World", annotator="anon:y", kind="correct"))
    held, total = store.reviews.find(ReviewFilter(status=HELD))
    assert total == 3 and sorted(r["id"] for r in held) == ids
    assert len(store.pool.held()) == 3
    store.reviews.set_statuses(ids[:2], "accepted")
    assert [r["id"] for r in store.reviews.find(ReviewFilter(status=HELD))[0]] == [ids[2]]
    assert len(store.pool.held()) == 1  # accepted: back in the queue for everyone


def test_a_resolved_disagreement_trains_with_the_reviewed_label(store: FeedbackStore) -> None:
    text = "Chipmaker's quarterly profit beats forecasts as data-centre sales soar"
    first = store.answers.record(AnswerInput(text=text, user_label="Sci/Tech", annotator="anon:a", kind="correct")).id
    second = store.answers.record(AnswerInput(text=text, user_label="Business", annotator="anon:b", kind="correct")).id
    policy = TrustPolicy(labels_required=2)
    assert read_trusted(store, policy) == []  # a tie, and too few votes
    [found] = disagreements(store.answers.rows(), store.pool.gold_labels())
    assert found.votes == {"Sci/Tech": [nickname("anon:a")], "Business": [nickname("anon:b")]}

    resolution = store.reviews.resolve(found.text_hash, "Business")
    assert resolution.accepted == (second,) and resolution.rejected == (first,)
    assert store.answers.get(first)["status"] == "rejected" and store.answers.get(second)["status"] == "accepted"
    mine = store.answers.get(resolution.maintainer_answer)
    assert mine["annotator"] == MAINTAINER and mine["user_label"] == "Business" and mine["status"] == "accepted"
    [trusted] = read_trusted(store, policy)  # labels_required=2, yet the reviewed label settles it
    assert trusted.text == text and trusted.label == "Business"
    assert disagreements(store.answers.rows(), store.pool.gold_labels()) == []
    # Changing one's mind about the resolution: the earlier reviewed label is rejected too.
    again = store.reviews.resolve(found.text_hash, "Sci/Tech")
    assert resolution.maintainer_answer in again.rejected and first in again.accepted
    assert [t.label for t in read_trusted(store, policy)] == ["Sci/Tech"]
    with pytest.raises(FeedbackError):
        store.reviews.resolve("not-a-hash", "World")


def test_guidelines_keep_every_version_with_its_time(store: FeedbackStore) -> None:
    book = store.guidelines
    assert book.current().version == 0 and book.current().text == built_in(store.topics.current())
    assert "Business" in book.current().text and "earnings" in book.current().text  # AG News's hard cases
    assert "Business" not in DEFAULT  # the general rules name no topic
    first, new = book.save("# Rules\nEarnings are **Business**.", "admin")
    assert new and first.version > 0 and book.current() == first
    assert book.save("# Rules\nEarnings are **Business**.\n", "admin") == (first, False)  # same text: no new one
    second, _ = book.save("Version two", "admin")
    assert [g.version for g in book.history()] == [second.version, first.version]
    assert first.saved_at <= second.saved_at
    for bad in ("", "   ", "x" * 20_001, "\ud800"):
        with pytest.raises(FeedbackError):
            book.save(bad, "admin")
    assert book.current() == second


def test_pool_texts_lose_their_html_entities(store: FeedbackStore, tmp_path: Path) -> None:
    pool = tmp_path / "pool.csv"
    pool.write_text('text\n"Intel #39;s chip sales quot;soar quot; at AT&amp;T stores"\n', encoding="utf-8")
    store.pool.import_file(pool)
    store.pool.add(["Fed #39;s rate cut &quot;lifts&quot; shares\n\n\nSecond paragraph"], source="correction")
    texts = sorted(item["text"] for item in _pool(store))
    assert texts == ["Fed's rate cut \"lifts\" shares\n\nSecond paragraph", 'Intel\'s chip sales"soar" at AT&T stores']
    assert not any(re.search(r"#\d+;|quot;|&amp;", t) for t in texts)
    # The cleaned text keeps the raw text's hash: an answer on the raw text (a pasted correction) names the item.
    raw = "Intel #39;s chip sales quot;soar quot; at AT&amp;T stores\n\n\nMore"
    assert text_hash(cleaned(raw)) == text_hash(raw)


def _pool(store: FeedbackStore) -> list[dict]:
    with store.database.read() as db:
        return list(db.execute(sa.text("SELECT text FROM pool")).mappings())


def test_people_are_named_and_measured_honestly(store: FeedbackStore) -> None:
    store.pool.add(["Known check story"], source="t", labels=["World"])
    for who in ("anon:a", "anon:b", "user:cleo"):
        store.answers.record(AnswerInput(text="Known check story", user_label="World" if who != "anon:b" else "Sports", annotator=who,
                     kind="correct", verified=who.startswith("user:")))
    for i in range(6):  # a and cleo share six texts and agree on all; b shares none of these
        for who in ("anon:a", "user:cleo"):
            store.answers.record(AnswerInput(text=f"Shared story {i}", user_label="Business", annotator=who, kind="correct",
                         verified=who == "user:cleo"))
    crowd = store.crowd
    rows = people(crowd.counts(datetime.fromtimestamp(1_750_000_100, UTC)), crowd.check_scores(), crowd.shared_answers(),
                  TrustPolicy())
    by = {p.annotator: p for p in rows}
    assert by["user:cleo"].name == "cleo" and by["user:cleo"].signed_in
    assert re.fullmatch(r"[a-z]+-[a-z]+-\d\d", by["anon:a"].name) and by["anon:a"].name == nickname("anon:a")
    assert nickname("anon:a") != nickname("anon:b")
    assert by["anon:a"].answers == 7 and by["anon:a"].last_week == 7 and by["anon:a"].checks_right == 1
    assert by["anon:b"].checks_answered == 1 and by["anon:b"].checks_right == 0
    assert by["anon:a"].shared == 7 and by["anon:a"].agrees == 7 / 8  # pairs: 6 of 6 with cleo, 1 of 2 on the check
    assert by["anon:b"].agrees is None  # no overlap: not a made-up 100%
    assert [p.annotator for p in rows][0] in ("anon:a", "user:cleo")
