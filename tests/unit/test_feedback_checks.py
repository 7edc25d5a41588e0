"""Known-answer checks: importing them, mixing them into the queue, and not training on annotators who fail them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.policies import QueuePolicy, StoreLimits, TrustPolicy
from core.text import text_hash
from feedback.__main__ import main
from feedback.errors import FeedbackError, PoolImportError
from feedback.snapshot import read_trusted
from feedback.store import FeedbackStore
from feedback.trust import check_due, check_scores

CHECKS = {
    "Federer wins the final in straight sets": "Sports",
    "Central bank raises interest rates again": "Business",
    "New chip doubles battery life of phones": "Sci/Tech",
    "Leaders meet for peace talks in Geneva": "World",
    "Striker signs a five-year contract": "Sports",
}


@pytest.fixture
def store(tmp_path: Path) -> FeedbackStore:
    store = FeedbackStore(tmp_path / "feedback.db", StoreLimits(writes_per_minute=10_000))
    store.add_to_pool(list(CHECKS), source="checks", labels=list(CHECKS.values()))
    store.add_to_pool([f"ordinary article number {i}" for i in range(40)], source="pool")
    return store


def label_queue(store: FeedbackStore, annotator: str, answers: int, *, lie: bool, **policy: object) -> list[str]:
    """Take `answers` items from the queue; a liar gives a wrong label on checks. Returns the texts served."""
    served = []
    for _ in range(answers):
        item = store.next_item(annotator, QueuePolicy(**policy))
        assert item is not None and "gold_label" not in item  # the screen never learns the answer
        known = CHECKS.get(item["text"])
        label = ("World" if known != "World" else "Sports") if (lie and known) else (known or "Business")
        store.record(text=item["text"], user_label=label, annotator=annotator, kind="queue", item_id=item["id"])
        served.append(item["text"])
    return served


def test_check_due_front_loads_then_keeps_a_share() -> None:
    assert [check_due(c, 0, min_checks=3, share=0.1) for c in range(4)] == [True, True, True, False]
    assert not check_due(3, 30, min_checks=3, share=0.1)
    assert check_due(3, 31, min_checks=3, share=0.1)
    assert not check_due(3, 10_000, min_checks=3, share=0.0)


def test_queue_serves_checks_first_then_a_share_of_later_items(store: FeedbackStore) -> None:
    served = label_queue(store, "anna", 35, lie=False, min_checks=3, check_share=0.1)
    is_check = [text in CHECKS for text in served]
    assert is_check[:4] == [True, True, True, False]
    # After 3 checks and 31 other items a fourth check is due; checks are never served twice.
    assert sum(is_check) == 4 and is_check[34] is True
    assert len(set(served)) == len(served)


def test_one_click_corrections_count_toward_the_share_of_checks(store: FeedbackStore) -> None:
    label_queue(store, "anna", 3, lie=False)  # the three opening checks
    for i in range(30):
        store.record(text=f"pasted story {i}", user_label="World", annotator="anna", kind="correct")
    assert store.due_check("anna", QueuePolicy()) is None
    store.record(text="pasted story 30", user_label="World", annotator="anna", kind="correct")
    check = store.due_check("anna", QueuePolicy())
    assert check is not None and check["text"] in CHECKS and "gold_label" not in check


def test_checks_stay_in_everyones_queue_and_annotators_see_their_own_order(store: FeedbackStore) -> None:
    firsts = {}
    for annotator in ("anna", "ben", "carl", "dora"):
        first = label_queue(store, annotator, 3, lie=False, min_checks=3, labels_required=1)
        assert all(text in CHECKS for text in first)  # answered checks never leave the queue for others
        firsts[annotator] = tuple(first)
    assert len(set(firsts.values())) > 1


def test_queue_falls_back_to_ordinary_items_when_checks_run_out(store: FeedbackStore) -> None:
    served = label_queue(store, "anna", 20, lie=False, min_checks=10)
    assert sum(text in CHECKS for text in served) == len(CHECKS)
    assert all(text not in CHECKS for text in served[len(CHECKS):])


def test_annotator_who_fails_checks_is_not_trained_on_and_check_answers_are_not_training_rows(
    store: FeedbackStore,
) -> None:
    label_queue(store, "honest", 8, lie=False)
    label_queue(store, "troll", 8, lie=True)
    scores = check_scores(store.answers(), store.gold_labels())
    assert (scores["honest"].right, scores["honest"].answered) == (3, 3)
    assert (scores["troll"].right, scores["troll"].answered) == (0, 3)
    assert store.stats()["checks_right"] == {"honest": "3/3", "troll": "0/3"}

    examples = read_trusted(store, TrustPolicy(min_checks=3, min_check_accuracy=0.6))
    assert examples and {a for e in examples for a in e.annotators} == {"honest"}
    assert not {e.text for e in examples} & set(CHECKS)


def test_one_miss_in_three_checks_passes_and_fewer_checks_than_the_minimum_are_not_judged(
    store: FeedbackStore,
) -> None:
    texts = list(CHECKS)
    store.record(text=texts[0], user_label="World", annotator="unlucky", kind="correct")  # a miss
    for text in texts[1:3]:
        store.record(text=text, user_label=CHECKS[text], annotator="unlucky", kind="correct")
    store.record(text=texts[0], user_label="World", annotator="newcomer", kind="correct")  # one miss, one check
    for who in ("unlucky", "newcomer"):
        store.record(text=f"fresh story from {who}", user_label="Business", annotator=who, kind="correct")
    trusted_by = {a for e in read_trusted(store, TrustPolicy(min_checks=3, min_check_accuracy=0.6)) for a in e.annotators}
    assert trusted_by == {"unlucky", "newcomer"}
    stricter = {a for e in read_trusted(store, TrustPolicy(min_checks=1, min_check_accuracy=0.6)) for a in e.annotators}
    assert stricter == {"unlucky"}


def test_check_files_need_a_valid_label_on_every_row(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "f.db")
    ag_news = tmp_path / "checks.csv"  # AG News CSVs number topics 1-4
    ag_news.write_text('label,title,description\n2,"Cup final","Penalties decide it."\n3,"Oil","Crude up."\n')
    assert store.import_pool(ag_news, checks=True).added == 2
    assert set(store.gold_labels().values()) == {"Sports", "Business"}

    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(row) for row in [
        {"text": "fine", "label": "world"}, {"text": "no label"}, {"text": "odd", "label": "Weather"},
        {"text": "zero", "label": 0},
    ]))
    with pytest.raises(PoolImportError) as info:
        store.import_pool(bad, checks=True)
    assert [line for line, _ in info.value.problems] == [2, 3, 4]
    assert "missing label" in str(info.value) and "'Weather'" in str(info.value)
    assert store.stats()["pool"]["items"] == 2  # nothing from the bad file

    no_column = tmp_path / "texts.csv"
    no_column.write_text("text\nA story\n")
    with pytest.raises(FeedbackError, match="needs a 'label' column"):
        store.import_pool(no_column, checks=True)
    assert store.import_pool(no_column).added == 1  # the same file is a fine ordinary pool
    with pytest.raises(FeedbackError, match="1 labels for 2 texts"):
        store.add_to_pool(["a", "b"], source="x", labels=["World"])


def test_cli_imports_checks_and_stats_show_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEWSLOOP_HOME", str(tmp_path / "home"))
    checks = tmp_path / "checks.csv"
    checks.write_text("text,label\nFederer wins the final in straight sets,Sports\n")
    assert main(["import", str(checks), "--checks"]) == 0
    assert "imported 1 new known-answer checks" in capsys.readouterr().out
    store = FeedbackStore(tmp_path / "home" / "feedback.db")
    item = store.next_item("anna", QueuePolicy())
    store.record(text=item["text"], user_label="World", annotator="anna", kind="queue", item_id=item["id"])
    assert main(["stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["pool"]["checks"] == 1 and stats["checks_right"] == {"anna": "0/1"}
    assert store.gold_labels() == {text_hash("Federer wins the final in straight sets"): "Sports"}
