"""Tests of the labelling pool and queue: file import (all or nothing), rescoring, queue order, agreement."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

import feedback
import feedback.labelling.pool
from core.settings.policies import QueuePolicy
from feedback.errors import FeedbackError, PoolImportError
from feedback.labelling.answers import AnswerInput
from feedback.labelling.pool import margin_uncertainty
from feedback.store import FeedbackStore
from testkit.pg_cluster import StoreFactory

REPO_ROOT = Path(feedback.__file__).resolve().parents[1]


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db")  # each test using it runs on SQLite and on PostgreSQL


def write_csv(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def pool_texts(store: FeedbackStore) -> list[str]:
    with store.database.read() as db:  # either backend's connection
        return [row["text"] for row in db.execute(sa.text("SELECT text FROM pool ORDER BY id")).mappings()]


def scorer_from(uncertain_words: dict[str, float]):
    """A fake model: the second-best probability is the score listed for a word in the text."""

    def score(texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            second = next((p for word, p in uncertain_words.items() if word in text), 0.0)
            rows.append([1.0 - second, second, 0.0, 0.0])
        return np.array(rows)

    return score


# Import ---------------------------------------------------------------------------------------------


def test_import_of_a_1000_row_csv_pool(store: FeedbackStore, tmp_path: Path) -> None:
    rows = [f'"Story number {i}, with a comma",World' for i in range(1000)]
    report = store.pool.import_file(write_csv(tmp_path / "pool.csv", "text,label", rows))
    assert (report.rows, report.added, report.duplicates) == (1000, 1000, 0)
    assert store.stats()["pool"]["items"] == 1000
    assert pool_texts(store)[0] == "Story number 0, with a comma"


def test_import_joins_title_and_description(store: FeedbackStore, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "ag.csv", "Label,Title,Description", ['3,"Oil prices","Crude rose 3% on Monday."'])
    store.pool.import_file(path)
    assert pool_texts(store) == ["Oil prices Crude rose 3% on Monday."]


def test_import_jsonl_with_text_or_title_and_description(store: FeedbackStore, tmp_path: Path) -> None:
    lines = [{"text": "First story"}, {"title": "Second", "description": "story", "label": 2}, {"text": "Third"}]
    path = tmp_path / "pool.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")
    assert store.pool.import_file(path).added == 3
    assert pool_texts(store) == ["First story", "Second story", "Third"]


def test_duplicate_texts_are_skipped_and_counted(store: FeedbackStore, tmp_path: Path) -> None:
    store.pool.import_file(write_csv(tmp_path / "a.csv", "text", ["Alpha", "Beta"]))
    report = store.pool.import_file(write_csv(tmp_path / "b.csv", "text", ["alpha ", "Gamma", "Gamma", "Beta"]))
    assert (report.rows, report.added, report.duplicates) == (4, 1, 3)
    assert pool_texts(store) == ["Alpha", "Beta", "Gamma"]


def test_import_with_a_bad_row_writes_nothing_and_names_the_line(store: FeedbackStore, tmp_path: Path) -> None:
    store.pool.add(["Already there"], source="seed")
    rows = ["Good one", "Good two", '""', "Good three", "x" * 20_001, "Good four"]
    with pytest.raises(PoolImportError) as refused:
        store.pool.import_file(write_csv(tmp_path / "pool.csv", "text", rows))
    message = str(refused.value)
    assert "2 bad rows; nothing was imported (--skip-bad imports the good rows" in message
    assert "line 4: empty text" in message and "line 6: text is 20,001 characters; at most 20,000" in message
    assert refused.value.problems == [(4, "empty text"), (6, "text is 20,001 characters; at most 20,000 are allowed")]
    assert pool_texts(store) == ["Already there"]


def test_an_import_asked_to_skip_bad_rows_adds_the_good_ones_and_names_the_others(
    store: FeedbackStore, tmp_path: Path
) -> None:
    long = "A long article. " * 1000  # 16,000 characters: a newsroom's feature, taken as Classify takes it
    rows = ["Good one", '""', long.strip(), "x" * 20_001, "Good four"]
    report = store.pool.import_file(write_csv(tmp_path / "pool.csv", "text", rows), skip_bad=True)
    assert report.added == 3 and report.bad == ((3, "empty text"), (5, "text is 20,001 characters; at most 20,000 "
                                                                           "are allowed"))
    assert pool_texts(store) == ["Good one", "A long article. " * 999 + "A long article.", "Good four"]
    with pytest.raises(FeedbackError, match="has no rows to import \\(2 bad\\)"):  # nothing good: nothing to say it did
        store.pool.import_file(write_csv(tmp_path / "bad.csv", "text", ['""', "x" * 20_001]), skip_bad=True)


def test_malformed_json_and_csv_rows_are_reported_by_line(store: FeedbackStore, tmp_path: Path) -> None:
    jsonl = tmp_path / "pool.jsonl"
    jsonl.write_text('{"text": "ok"}\n{"text": "broken\n[1, 2]\n{"headline": "x"}\n', encoding="utf-8")
    with pytest.raises(PoolImportError, match="line 2: malformed JSON") as refused:
        store.pool.import_file(jsonl)
    assert [line for line, _ in refused.value.problems] == [2, 3, 4]
    csv_path = write_csv(tmp_path / "pool.csv", "text,source", ["fine,a", "too,many,fields"])
    with pytest.raises(PoolImportError, match="line 3: expected 2 fields, found 3"):
        store.pool.import_file(csv_path)
    assert pool_texts(store) == []


def test_invalid_utf8_file_is_a_clear_error_naming_the_line(store: FeedbackStore, tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("text\nfine\nCaf\u00e9 news\n".encode("latin-1"))
    with pytest.raises(PoolImportError, match=r"line 3: invalid UTF-8 .*save the file as UTF-8"):
        store.pool.import_file(path)
    assert pool_texts(store) == []


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("pool.xlsx", "text\nx\n", "unsupported pool file type '.xlsx'"),
        (
            "pool.csv",
            "headline,body\nx,y\n",
            "needs a header with a 'text' column, or 'title' and 'description'; found 'headline', 'body'",
        ),
        ("pool.csv", "text\n", "has no rows to import"),
    ],
)
def test_unusable_files_are_refused_clearly(
    store: FeedbackStore, tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FeedbackError, match=message):
        store.pool.import_file(path)


def test_missing_file_is_a_clear_error(store: FeedbackStore, tmp_path: Path) -> None:
    with pytest.raises(FeedbackError, match="cannot read .*nope.csv"):
        store.pool.import_file(tmp_path / "nope.csv")


def test_exception_midway_through_import_leaves_pool_as_before(
    store: FeedbackStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.pool.add(["Already there"], source="seed")
    real_insert = feedback.labelling.pool._insert_pool_row
    calls = []

    def failing_insert(*args: object) -> bool:
        calls.append(1)
        if len(calls) == 500:
            raise OSError("disk full")
        return real_insert(*args)

    monkeypatch.setattr(feedback.labelling.pool, "_insert_pool_row", failing_insert)
    with pytest.raises(OSError, match="disk full"):
        store.pool.import_file(write_csv(tmp_path / "pool.csv", "text", [f"story {i}" for i in range(1000)]))
    assert pool_texts(store) == ["Already there"]
    monkeypatch.setattr(feedback.labelling.pool, "_insert_pool_row", real_insert)
    assert store.pool.import_file(tmp_path / "pool.csv").added == 1000  # the store is still usable


def test_process_killed_midway_through_import_leaves_pool_as_before(store: FeedbackStore, tmp_path: Path) -> None:
    store.pool.add(["Already there"], source="seed")
    pool = write_csv(tmp_path / "pool.csv", "text", [f"story {i}" for i in range(1000)])
    script = textwrap.dedent(
        """
        import os, signal, sys
        from pathlib import Path
        import feedback.labelling.pool
        import feedback.store

        real_insert = feedback.labelling.pool._insert_pool_row
        calls = []

        def dying_insert(*args):
            calls.append(1)
            if len(calls) == 500:
                os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no rollback: a real crash
            return real_insert(*args)

        feedback.labelling.pool._insert_pool_row = dying_insert
        feedback.store.FeedbackStore(sys.argv[1]).pool.import_file(Path(sys.argv[2]))  # a file or a postgresql:// URL
        """
    )
    env = os.environ | {"PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.run([sys.executable, "-c", script, str(store.path), str(pool)], env=env, timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert pool_texts(store) == ["Already there"]
    assert store.pool.import_file(pool).added == 1000


# Scoring and queue order ----------------------------------------------------------------------------


def test_margin_uncertainty_is_one_minus_top_two_gap() -> None:
    scores = margin_uncertainty(np.array([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0], [0.5, 0.3, 0.2, 0.0]]))
    assert scores == pytest.approx([1.0, 0.0, 0.8])
    with pytest.raises(FeedbackError, match="shape"):
        margin_uncertainty(np.array([0.5, 0.5]))


def test_queue_offers_most_uncertain_items_first(store: FeedbackStore) -> None:
    store.pool.add(["sure thing", "coin flip", "fairly unsure", "unscored later"], source="test")
    store.pool.rescore(scorer_from({"coin": 0.5, "fairly": 0.3}), "v1")
    store.pool.add(["added after scoring"], source="test")
    order = []
    while (item := store.pool.next_item("anna", QueuePolicy(traffic_share=0.0, spread=1))) is not None:
        order.append(item["text"])
        store.pool.skip("anna", item["id"])
    assert order == ["coin flip", "fairly unsure", "sure thing", "unscored later", "added after scoring"]


def test_rescore_only_scores_items_not_scored_by_this_model(store: FeedbackStore) -> None:
    store.pool.add(["alpha", "beta"], source="test")
    seen: list[str] = []

    def counting(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return scorer_from({"beta": 0.4})(texts)

    assert store.pool.rescore(counting, "v1") == 2
    assert store.pool.rescore(counting, "v1") == 0
    store.pool.add(["gamma"], source="test")
    assert store.pool.rescore(counting, "v1") == 1
    assert store.pool.next_item("anna", QueuePolicy(traffic_share=0.0, spread=1))["text"] == "beta"
    assert store.pool.rescore(scorer_from({"alpha": 0.5}), "v2") == 3  # a new model rescores everything
    item = store.pool.next_item("anna", QueuePolicy(traffic_share=0.0, spread=1))
    assert (item["text"], item["scored_by"], item["uncertainty"]) == ("alpha", "v2", pytest.approx(1.0))
    assert seen == ["alpha", "beta", "gamma"]


def test_scorer_with_wrong_shape_is_refused(store: FeedbackStore) -> None:
    store.pool.add(["alpha", "beta"], source="test")
    with pytest.raises(FeedbackError, match="scorer returned shape"):
        store.pool.rescore(lambda texts: np.zeros((1, 4)), "v1")


def test_answered_and_skipped_items_are_not_offered_again(store: FeedbackStore) -> None:
    store.pool.add(["first", "second", "third"], source="test")
    item = store.pool.next_item("anna", QueuePolicy(traffic_share=0.0, spread=1))
    store.answers.record(AnswerInput(text=item["text"], user_label="World", annotator="anna", kind="queue", item_id=item["id"]))
    store.pool.skip("anna", store.pool.next_item("anna", QueuePolicy(traffic_share=0.0, spread=1))["id"])
    assert store.pool.next_item("anna", QueuePolicy(traffic_share=0.0, spread=1))["text"] == "third"
    assert store.pool.next_item("ben", QueuePolicy(traffic_share=0.0, spread=1))["text"] == "second"  # one label is enough by default
    assert store.pool.next_item("ben", QueuePolicy(traffic_share=0.0, labels_required=2, spread=1))["text"] == "first"
    assert store.pool.progress("anna") == 1 and store.pool.progress("ben") == 0
    store.undo_last("anna")  # an undone answer puts the item back in the annotator's queue
    assert store.pool.next_item("anna", QueuePolicy(traffic_share=0.0, spread=1))["text"] == "first"
    assert store.pool.progress("anna") == 0


def test_labels_required_two_keeps_item_until_two_agreeing_labels(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db")
    store.pool.add(["contested story"], source="test")
    item_id = store.pool.next_item("a", QueuePolicy(traffic_share=0.0, labels_required=2, spread=1))["id"]

    def label(annotator: str, topic: str) -> None:
        store.answers.record(AnswerInput(text="contested story", user_label=topic, annotator=annotator, kind="queue", item_id=item_id))

    label("a", "World")
    assert store.pool.next_item("b", QueuePolicy(traffic_share=0.0, labels_required=2, spread=1))["id"] == item_id
    assert store.pool.next_item("b", QueuePolicy(traffic_share=0.0, labels_required=1)) is None
    label("b", "Sports")  # disagreement: still one vote per label
    assert store.pool.next_item("c", QueuePolicy(traffic_share=0.0, labels_required=2, spread=1))["id"] == item_id
    label("c", "World")
    assert store.pool.next_item("d", QueuePolicy(traffic_share=0.0, labels_required=2, spread=1)) is None


def test_queue_answers_must_name_a_matching_item(store: FeedbackStore) -> None:
    store.pool.add(["pool story"], source="test")
    item_id = store.pool.next_item("anna", QueuePolicy(traffic_share=0.0, spread=1))["id"]
    with pytest.raises(FeedbackError, match="needs the item_id"):
        store.answers.record(AnswerInput(text="pool story", user_label="World", annotator="anna", kind="queue"))
    with pytest.raises(FeedbackError, match="does not match queue item"):
        store.answers.record(AnswerInput(text="other story", user_label="World", annotator="anna", kind="queue", item_id=item_id))
    with pytest.raises(FeedbackError, match="unknown queue item 99"):
        store.pool.skip("anna", 99)
    assert store.answers.count() == 0


def test_each_annotator_draws_from_the_most_uncertain_few_in_an_order_of_their_own(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    store = make_store(tmp_path / "feedback.db")
    texts = [f"pool article {i}" for i in range(40)]
    store.pool.add(texts, source="pool")
    # Uncertainty falls with the index: items 0-3 are the four most uncertain.
    store.pool.rescore(lambda batch: np.array([[0.25 + 0.0175 * int(t.split()[-1]), 0.25, 0.25, 0.25 - 0.0175 * int(t.split()[-1])]
                                          for t in batch]) / 1.0, "v1")
    policy = QueuePolicy(traffic_share=0.0, spread=4)
    firsts = {store.pool.next_item(f"anon:{i}", policy)["text"] for i in range(16)}
    assert firsts <= set(texts[:4]) and len(firsts) > 1
