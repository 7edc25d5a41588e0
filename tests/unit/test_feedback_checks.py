"""Known-answer checks: importing them, mixing them into the queue, and not training on annotators who fail them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.settings.policies import QueuePolicy, StoreLimits, TrustPolicy
from core.text import text_hash
from feedback.__main__ import main
from feedback.errors import FeedbackError, PoolImportError
from feedback.labelling.answers import AnswerInput
from feedback.labelling.pool import check_due
from feedback.store import FeedbackStore
from feedback.training.snapshot import read_trusted
from feedback.trust.rules import check_scores
from testkit.pg_cluster import StoreFactory

CHECKS = {
    "Federer wins the final in straight sets": "Sports",
    "Central bank raises interest rates again": "Business",
    "New chip doubles battery life of phones": "Sci/Tech",
    "Leaders meet for peace talks in Geneva": "World",
    "Striker signs a five-year contract": "Sports",
}


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    store = make_store(tmp_path / "feedback.db", StoreLimits(writes_per_minute=10_000))  # SQLite and PostgreSQL
    store.pool.add(list(CHECKS), source="checks", labels=list(CHECKS.values()))
    store.pool.add([f"ordinary article number {i}" for i in range(40)], source="pool")
    return store


def label_queue(store: FeedbackStore, annotator: str, answers: int, *, lie: bool, **policy: object) -> list[str]:
    """Take `answers` items from the queue; a liar gives a wrong label on checks. Returns the texts served."""
    served = []
    for _ in range(answers):
        item = store.pool.next_item(annotator, QueuePolicy(**policy))
        assert item is not None and "gold_label" not in item  # the screen never learns the answer
        known = CHECKS.get(item["text"])
        label = ("World" if known != "World" else "Sports") if (lie and known) else (known or "Business")
        store.answers.record(AnswerInput(text=item["text"], user_label=label, annotator=annotator, kind="queue", item_id=item["id"]))
        served.append(item["text"])
    return served


def test_check_due_is_a_draw_with_a_higher_share_until_the_minimum_is_answered() -> None:
    assert check_due(0, 0.30, min_checks=3, share=0.1) and not check_due(0, 0.40, min_checks=3, share=0.1)
    assert check_due(3, 0.05, min_checks=3, share=0.1) and not check_due(3, 0.30, min_checks=3, share=0.1)
    assert not check_due(3, 0.0001, min_checks=3, share=0.0)


def test_checks_sit_at_positions_of_each_annotators_own(store: FeedbackStore) -> None:
    positions = {}
    for annotator in [f"anon:{i}" for i in range(12)]:
        served = label_queue(store, annotator, 12, lie=False, min_checks=3, check_share=0.1, labels_required=10)
        assert len(set(served)) == len(served)  # nothing served twice, checks included
        positions[annotator] = tuple(i for i, text in enumerate(served) if text in CHECKS)
    # A fresh identity is not handed checks first, and identities do not share one pattern to compare.
    assert sum(pos[:1] == (0,) for pos in positions.values()) < len(positions)
    assert len(set(positions.values())) > len(positions) // 2
    assert all(pos for pos in positions.values())  # and yet everyone meets checks early


def test_the_draw_does_not_change_on_reload_and_one_click_answers_move_it(store: FeedbackStore) -> None:
    first = [store.pool.next_item("anna", QueuePolicy())["text"] for _ in range(3)]
    assert len(set(first)) == 1  # asking again (a reload) does not re-roll
    outcomes = set()
    for i in range(30):
        store.answers.record(AnswerInput(text=f"pasted story {i}", user_label="World", annotator="anna", kind="correct"))
        check = store.pool.due_check("anna", QueuePolicy())
        assert check is None or (check["text"] in CHECKS and "gold_label" not in check)
        outcomes.add(check is None)
    assert outcomes == {True, False}  # one-click answers count toward when a check is due


def test_queue_falls_back_to_ordinary_items_when_checks_run_out(store: FeedbackStore) -> None:
    served = label_queue(store, "anna", 44, lie=False, min_checks=10)
    assert sum(text in CHECKS for text in served) == len(CHECKS)
    assert store.pool.next_item("anna", QueuePolicy(min_checks=10))["text"] not in CHECKS


def test_annotator_who_fails_checks_is_not_trained_on_and_check_answers_are_not_training_rows(
    store: FeedbackStore,
) -> None:
    store.pool.add([f"more ordinary news {i}" for i in range(60)], source="pool")
    label_queue(store, "honest", 30, lie=False)
    label_queue(store, "troll", 30, lie=True)
    scores = check_scores(store.answers.rows(), store.pool.gold_labels())
    assert scores["honest"].answered >= 3 and scores["honest"].right == scores["honest"].answered
    assert scores["troll"].answered >= 3 and scores["troll"].right == 0
    assert store.stats()["checks_right"] == {
        "honest": f"{scores['honest'].answered}/{scores['honest'].answered}",
        "troll": f"0/{scores['troll'].answered}",
    }

    examples = read_trusted(store, TrustPolicy(min_checks=3, min_check_accuracy=0.6))
    assert examples and {a for e in examples for a in e.annotators} == {"honest"}
    assert not {e.text for e in examples} & set(CHECKS)


def test_one_miss_in_three_checks_passes_and_fewer_checks_than_the_minimum_are_not_judged(
    store: FeedbackStore,
) -> None:
    texts = list(CHECKS)
    store.answers.record(AnswerInput(text=texts[0], user_label="World", annotator="unlucky", kind="correct"))  # a miss
    for text in texts[1:3]:
        store.answers.record(AnswerInput(text=text, user_label=CHECKS[text], annotator="unlucky", kind="correct"))
    store.answers.record(AnswerInput(text=texts[0], user_label="World", annotator="newcomer", kind="correct"))  # one miss, one check
    for who in ("unlucky", "newcomer"):
        store.answers.record(AnswerInput(text=f"fresh story from {who}", user_label="Business", annotator=who, kind="correct"))
    trusted_by = {a for e in read_trusted(store, TrustPolicy(min_checks=3, min_check_accuracy=0.6)) for a in e.annotators}
    assert trusted_by == {"unlucky", "newcomer"}
    stricter = {a for e in read_trusted(store, TrustPolicy(min_checks=1, min_check_accuracy=0.6)) for a in e.annotators}
    assert stricter == {"unlucky"}


def test_check_files_need_a_valid_label_on_every_row(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db")
    ag_news = tmp_path / "checks.csv"  # AG News CSVs number topics 1-4
    ag_news.write_text('label,title,description\n2,"Cup final","Penalties decide it."\n3,"Oil","Crude up."\n')
    assert store.pool.import_file(ag_news, checks=True).added == 2
    assert set(store.pool.gold_labels().values()) == {"Sports", "Business"}

    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(row) for row in [
        {"text": "fine", "label": "world"}, {"text": "no label"}, {"text": "odd", "label": "Weather"},
        {"text": "zero", "label": 0},
    ]))
    with pytest.raises(PoolImportError) as info:
        store.pool.import_file(bad, checks=True)
    assert [line for line, _ in info.value.problems] == [2, 3, 4]
    assert "missing label" in str(info.value) and "'Weather'" in str(info.value)
    assert store.stats()["pool"]["items"] == 2  # nothing from the bad file

    no_column = tmp_path / "texts.csv"
    no_column.write_text("text\nA story\n")
    with pytest.raises(FeedbackError, match="needs a 'label' column"):
        store.pool.import_file(no_column, checks=True)
    assert store.pool.import_file(no_column).added == 1  # the same file is a fine ordinary pool
    with pytest.raises(FeedbackError, match="1 labels for 2 texts"):
        store.pool.add(["a", "b"], source="x", labels=["World"])


def test_cli_imports_checks_and_stats_show_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEWSLOOP_HOME", str(tmp_path / "home"))
    checks = tmp_path / "checks.csv"
    checks.write_text("text,label\nFederer wins the final in straight sets,Sports\n")
    assert main(["import", str(checks), "--checks"]) == 0
    assert "imported 1 new known-answer checks" in capsys.readouterr().out
    store = FeedbackStore(tmp_path / "home" / "feedback.db")
    # With nothing else to label, a check is not served (an empty queue would give it away); answer it anyway.
    assert store.pool.next_item("anna", QueuePolicy()) is None
    store.answers.record(AnswerInput(text="Federer wins the final in straight sets", user_label="World", annotator="anna", kind="correct"))
    assert main(["stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["pool"]["checks"] == 1 and stats["checks_right"] == {"anna": "0/1"}
    assert store.pool.gold_labels() == {text_hash("Federer wins the final in straight sets"): "Sports"}
