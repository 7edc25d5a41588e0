"""The golden set: a newsroom's labelled articles that judge and never train, read in the current topics, on SQLite
and PostgreSQL; and the traffic share a maintainer sets over the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings.policies import QueuePolicy, TrustPolicy
from feedback.errors import FeedbackError, PoolImportError
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.training.snapshot import read_trusted, split_trusted, traffic_hashes
from testkit.pg_cluster import StoreFactory


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db")


def write(path: Path, rows: list[tuple[str, str]]) -> Path:
    import csv

    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["label", "text"])
        writer.writerows(rows)
    return path


def test_an_import_adds_relabels_and_counts_by_topic(store: FeedbackStore, tmp_path: Path) -> None:
    first = store.golden.import_file(write(tmp_path / "g.csv", [("World", "Talks resume in Geneva"),
                                                                 ("sports", "A late goal wins the cup"),
                                                                 ("3", "Shares slide on rate fears")]), by="maya")
    assert (first.added, first.relabelled, first.total) == (3, 0, 3)
    again = store.golden.import_file(write(tmp_path / "h.csv", [("Sci/Tech", "Shares slide on rate fears"),
                                                                ("World", "Talks resume in Geneva")]), by="ola")
    assert (again.added, again.relabelled, again.unchanged, again.total) == (0, 1, 1, 3)
    summary = store.golden.summary()
    assert summary.by_topic == {"World": 1, "Sports": 1, "Business": 0, "Sci/Tech": 1}
    assert (summary.last_source, summary.last_added_by) == ("h.csv", "ola")


def test_a_bad_row_imports_nothing_and_names_its_line(store: FeedbackStore, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.csv", [("World", "Fine article"), ("Weather", "Storm warning"), ("Sports", "")])
    with pytest.raises(PoolImportError, match=r"2 bad rows; nothing was imported") as raised:
        store.golden.import_file(bad, by="maya")
    assert "line 3" in str(raised.value) and "line 4" in str(raised.value)
    assert store.golden.summary().total == 0


def test_golden_labels_follow_the_topics_and_their_texts_never_train(store: FeedbackStore, tmp_path: Path) -> None:
    store.golden.import_file(write(tmp_path / "g.csv", [("World", "Talks resume in Geneva"),
                                                        ("Sports", "A late goal wins the cup")]), by="maya")
    taxonomy = store.topics.commit(store.topics.current().rename("World", "Politics").split("Sports", "Football"), 1)
    examples = {e.text: e for e in store.golden.examples(taxonomy)}
    assert taxonomy.keys[examples["Talks resume in Geneva"].label] == "World"  # renamed: the same key
    football = examples["A late goal wins the cup"]
    assert {taxonomy.keys[i] for i in football.allowed} == {"Sports", "Football"}  # split: "parent or child"
    # An answer on a golden text is set aside: the golden label judges it, nothing trains on it.
    store.answers.record(AnswerInput(text="A late goal wins the cup", user_label="Football", annotator="ann", kind="correct"))
    store.answers.record(AnswerInput(text="Rates rise again", user_label="Business", annotator="ann", kind="correct"))
    trusted = read_trusted(store, TrustPolicy(), taxonomy=taxonomy)
    split = split_trusted(trusted, traffic_hashes(store), 0.0, taxonomy, store.golden.hashes())
    assert [e.text for e in split.train] == ["Rates rise again"] and split.on_golden == 1


def test_a_maintained_traffic_share_overrides_the_setting_for_every_replica(store: FeedbackStore) -> None:
    assert store.traffic_share.maintained() is None
    store.traffic_share.set(0.5, "maya")
    assert store.traffic_share.maintained() == 0.5
    store.pool.add([f"pool story {i}" for i in range(200)], source="test")
    store.pool.next_item("anyone", QueuePolicy(traffic_share=0.0))  # the maintained share draws the membership
    drawn = len(traffic_hashes(store))
    assert 60 < drawn < 140  # about half of 200, not none
    with pytest.raises(FeedbackError, match="from 0 to below 1"):
        store.traffic_share.set(1.5, "maya")
