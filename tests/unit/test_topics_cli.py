"""`newsloop topics ...` and what a change touches (`feedback.topics.changes.impact`), said before it is made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.command_line import ExitCode
from feedback.__main__ import main
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.topics.changes import Impact, impact
from testkit.pg_cluster import StoreFactory

BASE = ["World", "Business", "Business", "Sci/Tech", "Sports", "Business"]


def test_impact_counts_rows_answers_checks_and_queued_items(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db")
    checks = tmp_path / "checks.csv"
    checks.write_text("label,text\nBusiness,Oil prices climb\nBusiness,Bank fined\nWorld,Summit ends\n")
    store.pool.import_file(checks, checks=True)
    store.answers.record(AnswerInput(text="Oil prices climb", user_label="Business", annotator="anna", kind="correct"))  # answers a check
    store.answers.record(AnswerInput(text="Shares fall", user_label="Business", annotator="ben", kind="correct"))
    store.answers.record(AnswerInput(text="Shares fall", user_label="World", annotator="cleo", kind="correct"))
    undone = store.answers.record(AnswerInput(text="Rates rise", user_label="Business", annotator="dan", kind="correct"))
    assert undone and store.undo_last("dan")  # taken back: touched by nothing
    before = store.topics.current()

    merged = impact(store.database, before, before.merge("Business", "World"), BASE)
    assert merged == Impact(3, 2, 2, 1, "merging Business into World", "as World")
    assert merged.words() == "merging Business into World relabels 3 base rows, 2 answers, 2 checks and 1 queued item as World"

    split = impact(store.database, before, before.split("Business", "Finance"), BASE)
    assert (split.base_rows, split.answers, split.checks, split.queued) == (3, 2, 2, 1)
    assert '"Business or Finance"' in split.words()

    for after, said in ((before.add("Health"), "touches no data"), (before.rename("World", "International"), "only the name"),
                        (before.describe("World", "news from abroad"), "only its description")):
        found = impact(store.database, before, after, BASE)
        assert (found.base_rows, found.answers, found.checks, found.queued) == (0, 0, 0, 0) and said in found.words()

    # After a split, a merge of the new topic touches the parent's earlier rows too: they may mean it.
    split_first = before.split("Business", "Finance")
    assert impact(store.database, split_first, split_first.merge("Finance", "World"), BASE).base_rows == 3


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    data = tmp_path / "data.csv"
    data.write_text("label,text\n" + "".join(f"{label},story {i}\n" for i, label in enumerate(BASE * 2)))
    monkeypatch.setenv("NEWSLOOP_HOME", str(home))
    monkeypatch.setenv("NEWSLOOP_DATA", str(data))
    return home


def test_a_dry_run_prints_what_a_change_touches_and_writes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "merge", "Business", "World", "--dry-run"]) == 0
    assert capsys.readouterr().out.strip() == (
        "dry run, nothing written: merging Business into World relabels 6 base rows, 0 answers, 0 checks and 0 "
        "queued items as World (base rows of data.csv (12 rows))")  # the preview names the data it read
    assert FeedbackStore(home / "feedback.db").topics.stored_version() == 0


def test_changes_are_stored_with_who_and_why_and_listed(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "add", "Health", "--description", "medicine and public health", "--by", "maya",
                 "--why", "the health desk"]) == 0
    assert main(["topics", "rename", "World", "International"]) == 0
    assert main(["topics", "split", "sci/tech", "Science"]) == 0
    capsys.readouterr()
    assert main(["topics", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["version"] == 4
    assert [(t["name"], t["key"], t["learning"]) for t in listed["topics"]] == [
        ("International", "World", False), ("Sports", "Sports", False), ("Business", "Business", False),
        ("Sci/Tech", "Sci/Tech", False), ("Science", "Science", True), ("Health", "Health", True)]
    assert listed["history"][1] | {"at": ""} == {
        "version": 2, "change": {"kind": "add", "key": "Health", "name": "Health",
                                 "description": "medicine and public health"},
        "by": "maya", "at": "", "why": "the health desk"}
    assert main(["topics", "list"]) == 0
    out = capsys.readouterr().out
    assert "1. International [key World]" in out and "6. Health: medicine and public health (new: the model is still learning it)" in out
    # The store answers by the stored topics.
    store = FeedbackStore(home / "feedback.db")
    store.answers.record(AnswerInput(text="Flu season", user_label="health", annotator="anna", kind="correct"))
    assert store.answers.rows()[0]["user_label"] == "Health"


@pytest.mark.parametrize(("argv", "message"), [
    (["topics", "add", "42"], "cannot be a number"),
    (["topics", "add", "world"], "already a topic named 'World'"),
    (["topics", "add", "x" * 41], "at most 40 characters"),
    (["topics", "merge", "Weather", "World"], "unknown topic 'Weather'; expected one of World, Sports"),
    (["topics", "rename", "Sports", "  "], "cannot be empty"),
])
def test_refusals_exit_with_bad_input_and_say_why(home: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                                  message: str) -> None:
    assert main(argv) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert FeedbackStore(home / "feedback.db").topics.stored_version() == 0


def test_a_merge_that_would_leave_one_topic_is_refused(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for topic in ("Sports", "Business"):
        assert main(["topics", "merge", topic, "World"]) == 0
    assert main(["topics", "merge", "Sci/Tech", "World"]) == ExitCode.BAD_INPUT
    assert "at least 2" in capsys.readouterr().err


def test_a_change_planned_on_an_old_version_is_told_to_look_again(home: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from feedback import actions

    real = actions.change_topics

    def someone_else_first(store: FeedbackStore, before, *args, **kwargs):  # type: ignore[no-untyped-def]
        store.topics.commit(before.add("Weather"), before.version)  # another maintainer, between read and write
        return real(store, before, *args, **kwargs)

    monkeypatch.setattr(actions, "change_topics", someone_else_first)
    assert main(["topics", "add", "Health"]) == ExitCode.BUSY
    assert "look at them again" in capsys.readouterr().err
    assert FeedbackStore(home / "feedback.db").topics.current().names[-1] == "Weather"
