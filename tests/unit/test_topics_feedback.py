"""The feedback side of "topics are data": answers, checks, reviews and agreement follow the store's taxonomy
(add, rename, merge, split), old answers read as what they mean now; on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core.settings.policies import TrustPolicy
from core.taxonomy import Taxonomy, TaxonomyConflict
from feedback.errors import FeedbackError
from feedback.labelling.answers import AnswerInput
from feedback.meaning import SET_MARK
from feedback.store import FeedbackStore
from feedback.training.snapshot import read_trusted, split_trusted
from feedback.trust.agreement import pairwise_agreement
from feedback.trust.label_errors import Candidate, Source
from feedback.trust.review import ReviewFilter
from testkit.pg_cluster import StoreFactory
from testkit.races import at_once


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db")


def change(store: FeedbackStore, step: Callable[[Taxonomy], Taxonomy]) -> Taxonomy:
    """One maintainer's change, committed on the version it was planned on."""
    before = store.topics.current()
    return store.topics.commit(step(before), before.version)


def answer(store: FeedbackStore, text: str, label: str, who: str = "anna", **more: object) -> int:
    return store.answers.record(AnswerInput(text=text, user_label=label, annotator=who, kind="correct", **more)).id


def labels(store: FeedbackStore) -> dict[str, str]:
    return {row["text"]: row["user_label"] for row in store.answers.rows()}


def test_answers_store_the_key_and_the_taxonomy_version(store: FeedbackStore) -> None:
    answer(store, "Rates rise", "business")
    row = store.answers.rows()[0]
    assert (row["user_label"], row["taxonomy_version"]) == ("Business", 1)
    with pytest.raises(FeedbackError, match="expected one of World, Sports, Business, Sci/Tech"):
        answer(store, "Flu season", "Health")


def test_an_added_topic_is_answerable_at_once(store: FeedbackStore) -> None:
    change(store, lambda t: t.add("Health", "medicine and public health", by="maya", why="newsroom desk"))
    answer(store, "Flu season", "health")
    answer(store, "Measles back", 4)  # positions follow the taxonomy's order: the new topic is the fifth
    assert labels(store) == {"Flu season": "Health", "Measles back": "Health"}
    assert store.answers.rows()[0]["taxonomy_version"] == 2
    assert store.stats()["by_label"]["Health"] == 2
    with pytest.raises(FeedbackError, match="expected one of World, Sports, Business, Sci/Tech, Health"):
        answer(store, "Storm", "Weather")


def test_a_rename_changes_only_the_name(store: FeedbackStore) -> None:
    answer(store, "Summit ends", "World")
    change(store, lambda t: t.rename("World", "International"))
    answer(store, "Talks stall", "International")
    answer(store, "Border row", "World")  # the former name still means the topic
    taxonomy = store.topics.current()
    assert set(labels(store).values()) == {"World"}  # keys are stable: old and new answers alike
    assert taxonomy.name_of("World") == "International"
    # A model trained before the rename still predicts "World": a confirmation of it is the same topic.
    store.answers.record(AnswerInput(text="Election called", user_label="International", annotator="anna", kind="confirm",
                 probabilities={"World": 0.7, "Sports": 0.1, "Business": 0.1, "Sci/Tech": 0.1}))
    assert store.answers.rows()[0]["predicted_label"] == "World"


def test_a_merge_reads_old_answers_as_the_target(store: FeedbackStore) -> None:
    answer(store, "Shares fall", "Business", who="anna")
    answer(store, "Shares fall", "World", who="ben")  # disagree before the merge
    change(store, lambda t: t.merge("Business", "World"))
    assert labels(store) == {"Shares fall": "World"}  # both now mean World
    assert pairwise_agreement(store.answers.rows(), min_shared=1) == {"anna": (1, 1.0), "ben": (1, 1.0)}
    answer(store, "Oil up", "Business")  # the merged name means its target now
    assert store.answers.rows()[0]["user_label"] == "World"
    assert store.stats()["by_label"] == {"World": 3, "Sports": 0, "Sci/Tech": 0}
    found, total = store.reviews.find(ReviewFilter(status=None, label="World"))
    assert total == 3 and {r["user_label"] for r in found} == {"World"}


def test_a_split_reads_earlier_answers_as_a_set_and_new_ones_exactly(store: FeedbackStore) -> None:
    answer(store, "New chip", "Sci/Tech")
    change(store, lambda t: t.split("Sci/Tech", "Science", "research and discovery"))
    answer(store, "Comet seen", "Science")
    answer(store, "Phone launch", "Sci/Tech")
    assert labels(store) == {"New chip": f"Sci/Tech{SET_MARK}Science", "Comet seen": "Science",
                             "Phone launch": "Sci/Tech"}


def test_checks_are_scored_by_what_labels_mean_now(store: FeedbackStore, tmp_path: Path) -> None:
    checks = tmp_path / "checks.csv"
    checks.write_text("label,text\nBusiness,Oil prices climb\nSci/Tech,Rover lands on Mars\n")
    store.pool.import_file(checks, checks=True)
    change(store, lambda t: t.merge("Business", "World"))
    change(store, lambda t: t.split("Sci/Tech", "Science"))
    assert store.pool.gold_labels().keys() and set(store.pool.gold_labels().values()) == {"World", f"Sci/Tech{SET_MARK}Science"}
    answer(store, "Oil prices climb", "World")  # the merged topic's check is answered by its target
    answer(store, "Rover lands on Mars", "Science")  # an exact answer within the check's set
    assert store.stats()["checks_right"] == {"anna": "2/2"}
    # A check added now is read in the current taxonomy: its numbers are 1-based positions in today's order.
    later = tmp_path / "later.csv"
    later.write_text("label,text\n4,Protein folded\n")
    store.pool.import_file(later, checks=True)
    assert list(store.pool.gold_labels().values()).count("Science") == 1


def test_a_settlement_and_a_label_fix_take_the_taxonomy_s_topics(store: FeedbackStore) -> None:
    change(store, lambda t: t.add("Health"))
    answer(store, "Clinic opens", "World", who="anna")
    answer(store, "Clinic opens", "Sports", who="ben")
    digest = store.answers.rows()[0]["text_hash"]
    settled = store.reviews.resolve(digest, "health")
    assert settled.label == "Health"
    with pytest.raises(FeedbackError, match="expected one of"):
        store.reviews.resolve(digest, "Weather")
    with pytest.raises(FeedbackError, match="expected one of"):
        store.reviews.find(ReviewFilter(status=None, label="Weather"))


def test_seed_stores_the_champion_s_topics_once(store: FeedbackStore) -> None:
    seeded = store.topics.seed(["Politics", "Sport", "Culture"])
    assert seeded.names == ("Politics", "Sport", "Culture") and store.topics.stored_version() == 1
    assert store.topics.seed(["Other", "Labels"]).names == ("Politics", "Sport", "Culture")  # idempotent
    answer(store, "Vote counted", "politics")
    with pytest.raises(FeedbackError, match="expected one of Politics, Sport, Culture"):
        answer(store, "Shares fall", "Business")


def test_two_maintainers_changing_the_topics_at_once_one_wins(store: FeedbackStore) -> None:
    before = store.topics.current()
    store.topics.commit(before.add("Health"), before.version)
    with pytest.raises(TaxonomyConflict, match="look at them again"):
        store.topics.commit(before.rename("World", "International"), before.version)
    assert store.topics.current().names == ("World", "Sports", "Business", "Sci/Tech", "Health")


def test_two_changes_released_together_one_wins_the_other_is_told(store: FeedbackStore) -> None:
    before = store.topics.current()
    plans = [before.add("Health"), before.split("Sci/Tech", "Science")]

    def commit(i: int) -> str:
        try:
            store.topics.commit(plans[i], before.version)
        except TaxonomyConflict:
            return "told"
        return "won"

    assert sorted(at_once(2, commit)) == ["told", "won"]
    assert store.topics.stored_version() == 2


def test_two_processes_seeding_at_once_store_one_version(store: FeedbackStore) -> None:
    seeded = at_once(4, lambda i: store.topics.seed(["Politics", "Sport", "Culture"]).version)
    assert seeded == [1, 1, 1, 1] and store.topics.stored_version() == 1


# Training reads old answers as what they mean now -----------------------------------------------------------------

ANYONE = TrustPolicy(train_on="anyone", labels_required=1)


def examples(store: FeedbackStore, taxonomy: Taxonomy | None = None) -> tuple[dict[str, tuple[int, tuple[int, ...]]], int]:
    """text -> (label, allowed) of every trusted example (train and holdout), and how many were left out."""
    taxonomy = taxonomy or store.topics.current()
    split = split_trusted(read_trusted(store, ANYONE, taxonomy=taxonomy), set(), 0.5, taxonomy)
    assert split.labels == taxonomy.keys and split.taxonomy_version == taxonomy.version
    return {e.text: (e.label, e.allowed) for e in split.train + split.holdout}, split.left_out


def test_a_split_s_earlier_answers_train_as_sets_and_a_merge_s_as_the_target(store: FeedbackStore) -> None:
    answer(store, "New chip", "Sci/Tech")
    answer(store, "Oil up", "Business")
    change(store, lambda t: t.split("Sci/Tech", "Science"))
    answer(store, "Comet seen", "Science")
    change(store, lambda t: t.merge("Business", "World"))
    taxonomy = store.topics.current()
    assert taxonomy.keys == ("World", "Sports", "Sci/Tech", "Science")
    found, left_out = examples(store)
    assert found == {"New chip": (2, (2, 3)), "Comet seen": (3, ()), "Oil up": (0, ())} and left_out == 0


def test_a_retrain_keeps_the_taxonomy_it_started_with(store: FeedbackStore) -> None:
    answer(store, "Oil up", "Business")
    started = store.topics.current()
    change(store, lambda t: t.add("Health"))
    answer(store, "Flu season", "Health")
    change(store, lambda t: t.merge("Business", "World"))
    found, left_out = examples(store, started)  # read as the four topics it started with
    assert found == {"Oil up": (2, ())} and left_out == 1  # the Health answer names a topic it does not have
    now, _ = examples(store)
    assert now == {"Oil up": (0, ()), "Flu season": (3, ())}


def test_label_fixes_take_the_taxonomy_s_topics_and_a_split_s_sets(store: FeedbackStore) -> None:
    change(store, lambda t: t.split("Sci/Tech", "Science"))
    both = f"Sci/Tech{SET_MARK}Science"
    found = [Candidate(Source.ANSWER, "a" * 64, "answer #1", "New chip", both, "science", 0.9),
             Candidate(Source.BASE, "b" * 64, "train.csv row 2", "Comet seen", "Sci/Tech", "Science", 0.8)]
    assert store.label_errors.save_search("s1", found) == 2
    open_ones, _ = store.label_errors.open_candidates()
    assert [(c["given_label"], c["suggested_label"]) for c in open_ones] == [(both, "Science"), ("Sci/Tech", "Science")]
    with pytest.raises(FeedbackError, match="expected one of"):
        store.label_errors.decide([open_ones[0]["id"]], "relabel", "maya", "Weather")
    report = store.label_errors.decide([open_ones[0]["id"]], "relabel", "maya", "science")
    assert report.decided and store.label_errors.live_fixes()[0]["label_after"] == "Science"
