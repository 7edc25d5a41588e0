"""Possible label errors in the feedback store (feedback.trust.label_errors) and training read through the decisions
(feedback.training.fixes), on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.data import Example
from core.labels import label_index
from core.settings.policies import TrustPolicy
from core.text import text_hash
from feedback.errors import FeedbackError
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.training.fixes import LabelFixes, read_fixes
from feedback.training.snapshot import backup_database, read_trusted, trusted_split
from feedback.trust.label_errors import Candidate, Source
from testkit.pg_cluster import StoreFactory

BASE = [Example("Stocks fall on rate fears", label_index("Sports")),  # wrong: Business
        Example("Striker signs for the champions", label_index("Sports")),
        Example("New chip doubles battery life", label_index("World")),  # wrong: Sci/Tech
        Example("Ceasefire holds in the north", label_index("World"))]


def _candidate(example: Example, suggested: str, p: float, row: int) -> Candidate:
    from core.labels import LABELS

    return Candidate(Source.BASE, text_hash(example.text), f"train.csv row {row}", example.text,
                     LABELS[example.label], suggested, p)


def _search(store: FeedbackStore, search_id: str = "s1") -> list[int]:
    store.label_errors.save_search(search_id, [
        _candidate(BASE[0], "Business", 0.9, 1), _candidate(BASE[2], "Sci/Tech", 0.8, 3),
        _candidate(BASE[3], "Business", 0.6, 4)])
    found, total = store.label_errors.open_candidates()
    assert total == 3
    return [row["id"] for row in found]


def test_candidates_list_in_rank_order_with_where_they_came_from(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    assert store.label_errors.open_candidates() == ([], 0)
    _search(store)
    found, _ = store.label_errors.open_candidates()
    assert [(r["rank"], r["origin"], r["given_label"], r["suggested_label"]) for r in found] == [
        (1, "train.csv row 1", "Sports", "Business"), (2, "train.csv row 3", "World", "Sci/Tech"),
        (3, "train.csv row 4", "World", "Business")]


def test_relabel_keep_and_exclude_are_recorded_with_who_and_the_labels(make_store: StoreFactory,
                                                                         tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    first, second, third = _search(store)
    report = store.label_errors.decide([first], "relabel", by="admin:ann")
    assert list(report.decided) == [first] and report.message().startswith("Relabelled 1 row(s)")
    store.label_errors.decide([second, third], "exclude", by="admin:bo")
    assert store.label_errors.open_candidates() == ([], 0)
    decisions = store.label_errors.decisions()
    assert [(d["action"], d["label_before"], d["label_after"], d["decided_by"]) for d in decisions] == [
        ("exclude", "World", None, "admin:bo"), ("exclude", "World", None, "admin:bo"),
        ("relabel", "Sports", "Business", "admin:ann")]
    again = store.label_errors.decide([first, 999], "keep", by="admin:ann")
    assert again.decided == {} and again.already == (first,) and again.missing == (999,)


def test_keep_hides_the_row_from_later_searches_for_that_label_only(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    first, *_ = _search(store)
    store.label_errors.decide([first], "keep", by="admin")
    assert read_fixes(store).examples(BASE) == BASE  # keep changes no training row
    _search_again = store.label_errors.save_search("s2", [_candidate(BASE[0], "Business", 0.95, 1)])
    assert _search_again == 1 and store.label_errors.open_candidates() == ([], 0)
    relabelled = Example(BASE[0].text, label_index("World"))  # the row, its label since changed
    store.label_errors.save_search("s3", [_candidate(relabelled, "Business", 0.9, 1)])
    assert [r["given_label"] for r in store.label_errors.open_candidates()[0]] == ["World"]


def test_undo_brings_the_candidate_back_and_the_row_trains_as_before(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    first, second, _ = _search(store)
    fix_ids = store.label_errors.decide([first, second], "exclude", by="admin").decided
    assert [e.text for e in read_fixes(store).examples(BASE)] == [BASE[1].text, BASE[3].text]
    assert store.label_errors.undo([fix_ids[second]], by="admin") == [fix_ids[second]]
    assert store.label_errors.undo([fix_ids[second]], by="admin") == []  # already undone
    assert [e.text for e in read_fixes(store).examples(BASE)] == [BASE[1].text, BASE[2].text, BASE[3].text]
    assert [r["id"] for r in store.label_errors.open_candidates()[0]] == [second, _]
    [undone] = [d for d in store.label_errors.decisions() if d["id"] == fix_ids[second]]
    assert undone["undone_at"] and undone["undone_by"] == "admin"
    assert len(store.label_errors.decisions(live_only=True)) == 1


def test_training_rows_read_through_the_fixes(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    first, second, third = _search(store)
    store.label_errors.decide([first], "relabel", by="admin")
    store.label_errors.decide([second], "relabel", by="admin", label="Business")  # not the suggested one
    store.label_errors.decide([third], "exclude", by="admin")
    fixes = read_fixes(store)
    assert len(fixes) == 3 and fixes.touched(BASE) == 3
    assert [(e.text, e.label) for e in fixes.examples(BASE)] == [
        (BASE[0].text, label_index("Business")), (BASE[1].text, label_index("Sports")),
        (BASE[2].text, label_index("Business"))]
    # a fix is about the label it was decided on: the same text with another label trains as it is
    other = Example(BASE[0].text, label_index("World"))
    assert fixes.examples([other]) == [other]
    assert fixes.examples(BASE, Source.ANSWER) == BASE  # base fixes never touch answers


def test_trusted_answers_read_through_answer_fixes_in_the_retrains_snapshot(make_store: StoreFactory,
                                                                            tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    texts = ["Market rallies on jobs data", "Goalkeeper saves late penalty"]
    for text in texts:
        store.answers.record(AnswerInput(text=text, user_label="World", annotator="user:ann", kind="correct", verified=True))
    policy = TrustPolicy(labels_required=1)
    assert {t.text: t.label for t in read_trusted(store, policy)} == dict.fromkeys(texts, "World")
    store.label_errors.save_search("s1", [
        Candidate(Source.ANSWER, text_hash(t), "answer", t, "World", s, 0.9)
        for t, s in zip(texts, ["Business", "Sports"], strict=True)])
    first, second = [r["id"] for r in store.label_errors.open_candidates()[0]]
    store.label_errors.decide([first], "relabel", by="admin")
    store.label_errors.decide([second], "exclude", by="admin")
    assert {t.text: t.label for t in read_trusted(store, policy)} == {texts[0]: "Business"}
    snapshot = backup_database(store.database.path if make_store.backend == "sqlite" else
                               make_store.location(tmp_path / "feedback.db"), tmp_path / "backups")
    split = trusted_split(snapshot, policy, 0.0)
    assert [(e.text, e.label) for e in split.train] == [(texts[0], label_index("Business"))]
    assert len(split.fixes) == 2  # the copy carries the decisions (PostgreSQL's backup copies their tables)


def test_each_search_is_recorded_and_the_newest_one_is_listed(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    _search(store)
    store.label_errors.save_search("s2", [], rows=4, candidates=0, model="champion v0002")
    search = store.label_errors.latest_search()
    assert search is not None and (search["search_id"], search["rows"], search["candidates"], search["model"]) == (
        "s2", 4, 0, "champion v0002")
    assert store.label_errors.open_candidates() == ([], 0)  # nothing found now: the older list is not shown
    with pytest.raises(FeedbackError, match="stored already"):
        store.label_errors.save_search("s2", [])


@pytest.mark.parametrize(("action", "label", "error"), [
    ("delete", None, "unknown action"), ("keep", "World", "only a relabel takes a label"),
    ("relabel", "Sports", "has the label Sports already"),
])
def test_bad_decisions_are_refused_and_change_nothing(make_store: StoreFactory, tmp_path: Path, action: str,
                                                      label: str | None, error: str) -> None:
    store = make_store(tmp_path / "feedback.db")
    first, *_ = _search(store)
    with pytest.raises(FeedbackError, match=error):
        store.label_errors.decide([first], action, by="admin", label=label)
    assert store.label_errors.decisions() == []
    with pytest.raises(FeedbackError, match="choose at least one"):
        store.label_errors.decide([], "keep", by="admin")


def test_no_fixes_leave_rows_as_they_are() -> None:
    assert LabelFixes().examples(BASE) == BASE and len(LabelFixes()) == 0


def test_limit_0_lists_every_candidate_and_decision_as_the_search_stores_every_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`newsloop label-errors --limit 0` stores all; `review label-errors list --limit 0` lists all (it was an error)."""
    import json

    from feedback.trust.bulk import MAX_SHOWN
    from newsloop.cli import main

    monkeypatch.setenv("NEWSLOOP_HOME", str(tmp_path))
    store = FeedbackStore(tmp_path / "feedback.db")
    many = [_candidate(Example(f"Story {i} on the summit", label_index("Sports")), "World", 0.9, i)
            for i in range(MAX_SHOWN + 20)]
    store.label_errors.save_search("20260101-000000", many, rows=2000)
    assert len(store.label_errors.open_candidates(0)[0]) == MAX_SHOWN + 20
    assert main(["review", "label-errors", "list", "--limit", "0"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["listed"] == listed["total"] == MAX_SHOWN + 20
    assert main(["review", "label-errors", "decisions", "--limit", "0"]) == 0
    assert json.loads(capsys.readouterr().out) == {"decisions": []}
    store.close()
