"""Grouping "None of these" answers: by the name given, then by what the texts say; and `newsloop topics unlisted`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.settings.config import load_settings
from feedback.__main__ import main
from feedback.store import FeedbackStore
from feedback.topics.unlisted import UnlistedInput
from feedback.topics.unlisted_groups import group_unlisted, name_key


def row(i: int, text: str, who: str, name: str | None = None) -> dict[str, Any]:
    return {"id": i, "text": text, "annotator": who, "name": name}


ROWS = [
    row(1, "Flu vaccine shortage hits clinics", "ann", "Health"),
    row(2, "Hospital clinics report flu vaccine delays", "ben"),  # unnamed, like 1: joins Health
    row(3, "New album tops music charts", "cat", "music"),
    row(4, "Singer album release tour dates music", "dan"),  # unnamed, like 3: joins music
    row(5, "Measles outbreak in schools", "eve", " health "),  # another spelling of Health
    row(6, "Quarterly tax filing deadline", "fay"),
    row(7, "Tax filing deadline extended for quarterly returns", "gus"),  # unnamed pair: a group of its own
    row(8, "Vaccine shortage worries doctors", "hal", "Medicine"),  # like 1 but named otherwise: stays apart
]


def test_groups_follow_names_then_similar_texts() -> None:
    groups = {g.ids: g for g in group_unlisted(ROWS)}
    assert set(groups) == {(1, 2, 5), (3, 4), (6, 7), (8,)}
    assert groups[(1, 2, 5)].name == "Health" and groups[(1, 2, 5)].people == 3 and groups[(1, 2, 5)].named
    assert groups[(3, 4)].name == "music"
    unnamed = groups[(6, 7)]
    assert not unnamed.named and set(unnamed.name.split()) <= {"tax", "filing", "deadline", "quarterly"}


def test_largest_group_first_and_the_same_rows_give_the_same_groups() -> None:
    first = group_unlisted(ROWS)
    assert first[0].ids == (1, 2, 5)
    assert group_unlisted(list(reversed(ROWS))) == first


def test_people_counts_distinct_annotators_and_empty_input_gives_nothing() -> None:
    same_person = [row(1, "Flu season", "ann", "Health"), row(2, "Measles", "ann", "health")]
    assert [(g.ids, g.people) for g in group_unlisted(same_person)] == [((1, 2), 1)]
    assert group_unlisted([]) == []
    assert [g.name for g in group_unlisted([row(1, "the and of", "ann")])] == ["(no words)"]


def test_name_key_folds_case_and_spacing() -> None:
    assert name_key("  Public   HEALTH ") == name_key("public health") == "public health"
    assert name_key(None) == name_key("   ") == ""


def test_the_cli_lists_groups_and_creates_a_topic_from_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("NEWSLOOP_HOME", str(tmp_path / "home"))
    settings = load_settings()
    settings.paths.feedback_db.parent.mkdir(parents=True, exist_ok=True)
    store = FeedbackStore.from_settings(settings)
    a = store.unlisted.record(UnlistedInput(text="Flu season peaks", annotator="anna", kind="correct", name="Health")).id
    b = store.unlisted.record(UnlistedInput(text="Measles outbreak", annotator="ben", kind="correct", name="health")).id
    assert main(["topics", "unlisted"]) == 0
    out = capsys.readouterr().out
    assert f"Health: 2 answer(s), 2 people; ids {a},{b}" in out and "Flu season peaks" in out
    assert main(["topics", "unlisted", "create", "Health", "--ids", f"{a},{b}", "--by", "maya"]) == 0
    assert "created topic 'Health', with 2 label(s)" in capsys.readouterr().out
    assert store.topics.current().names[-1] == "Health" and store.answers.count("accepted") == 2
    assert main(["topics", "unlisted", "create", "Health", "--ids", "x"]) != 0
    assert main(["topics", "unlisted", "dismiss", "--ids", f"{a}"]) == 0 and "dismissed 0" in capsys.readouterr().out
    store.close()
