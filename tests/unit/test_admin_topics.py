"""The admin view's Topics panel through its handlers, on SQLite and PostgreSQL: a change is previewed (what it does
and how many base rows, answers, checks and queued items it touches), then made on the version the maintainer saw, recorded with who and why; refusals are the taxonomy's; two admins at
once, the second is told and shown the new list; a stranger changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.labels import LABELS
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.topics.changes import BaseData
from testkit.fakes import FakeAdmin
from testkit.pg_cluster import StoreFactory
from web.admin.topics_view import TopicsEditor
from web.server.topics import LEARNING

REQUEST = object()


BASE = ["Business", "Business", "World", "Sci/Tech"]  # the base data's labels, one per row


def _editor(store: FeedbackStore, **kwargs: Any) -> TopicsEditor:
    return TopicsEditor(FakeAdmin(store, **kwargs), lambda: BaseData(tuple(BASE), "data.csv (8 rows)"), choosers=[("any label", "any")])  # type: ignore[arg-type]


def _preview(editor: TopicsEditor, kind: str, topic: str = "", into: str = "", name: str = "",
             description: str = "", why: str = "") -> tuple[str, Any, Any]:
    shown, plan, confirm, last = editor.preview(kind, topic, into, name, description, why,
                                                request=REQUEST)  # type: ignore[arg-type]
    assert last == "" or shown == "Sign in first."  # a preview clears the last change's "Changed: ..." message
    return shown, plan, confirm


def test_add_is_previewed_then_made_with_who_and_why(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    editor = _editor(store)
    listed, topic, _, review = editor.load(request=REQUEST)  # type: ignore[arg-type]
    assert "Version <strong>1</strong>" in listed and topic["choices"] == list(LABELS)
    assert review["choices"] == [("any label", "any"), *LABELS]

    shown, plan, confirm = _preview(editor, "add", name="  Health ", description="Medicine", why="we cover it")
    assert shown.startswith("Adding Health touches no data: labellers can answer it at once")
    assert "version 1 → 2" in shown and confirm["visible"] is True
    assert store.topics.current().version == 1  # a preview changes nothing

    message, kept, hidden, listed, topic, _, review = editor.confirm(plan, request=REQUEST)  # type: ignore[arg-type]
    assert message.startswith("Changed: the topics are now version 2") and kept is None and hidden["visible"] is False
    assert "Health" in listed and LEARNING in listed and topic["choices"] == [*LABELS, "Health"]
    assert review["choices"][-1] == "Health"
    now = store.topics.current()
    assert now.names == (*LABELS, "Health") and (now.current.by, now.current.why) == ("maya", "we cover it")


def test_rename_merge_and_split_say_what_they_touch(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    for i, label in enumerate(["Business", "Business", "Sci/Tech"]):
        store.answers.record(AnswerInput(text=f"Answered article {i}", user_label=label, annotator=f"a{i}", kind="correct"))
    editor = _editor(store)
    shown, plan, _ = _preview(editor, "rename", topic="World", name="International")
    assert shown.startswith("Renaming World to International changes only the name people see")
    editor.confirm(plan, request=REQUEST)  # type: ignore[arg-type]
    shown, plan, _ = _preview(editor, "merge", topic="Business", into="International")
    assert shown.startswith("Merging Business into International relabels 2 base rows, 2 answers, 0 checks and 0 "
                            "queued items as International (base rows of data.csv (8 rows)). It is no longer offered")
    editor.confirm(plan, request=REQUEST)  # type: ignore[arg-type]
    shown, plan, _ = _preview(editor, "split", topic="Sci/Tech", name="Science")
    assert shown.startswith('Splitting Sci/Tech into Sci/Tech and Science relabels 1 base row, 1 answer, 0 checks and '
                            '0 queued items as "Sci/Tech or Science"')
    editor.confirm(plan, request=REQUEST)  # type: ignore[arg-type]
    assert store.topics.current().names == ("International", "Sports", "Sci/Tech", "Science")
    assert store.topics.current().version == 4


def test_refusals_are_the_taxonomys_messages_and_change_nothing(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    editor = _editor(store)
    assert _preview(editor, "add", name="sports")[0] == "Refused: there is already a topic named 'Sports'."
    assert _preview(editor, "add", name="42")[0].startswith("Refused: a topic name cannot be a number")
    assert _preview(editor, "rename", topic="", name="X")[0] == "Refused: choose a topic."
    assert _preview(editor, "merge", topic="Weather", into="World")[0].startswith("Refused: unknown topic 'Weather'")
    for topic in ("World", "Sports"):
        _, plan, _ = _preview(editor, "merge", topic=topic, into="Sci/Tech")
        editor.confirm(plan, request=REQUEST)  # type: ignore[arg-type]
    shown, plan, confirm = _preview(editor, "merge", topic="Business", into="Sci/Tech")
    assert shown.startswith("Refused: a merge would leave 1 topic") and plan is None and confirm["visible"] is False
    assert store.topics.current().names == ("Business", "Sci/Tech")


def test_two_admins_at_once_the_second_is_told_and_shown_the_new_list(make_store: StoreFactory,
                                                                      tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    maya, omar = _editor(store), _editor(store, who="omar")
    _, mayas, _ = _preview(maya, "add", name="Health")
    _, omars, _ = _preview(omar, "rename", topic="Sports", name="Athletics")
    assert maya.confirm(mayas, request=REQUEST)[0].startswith("Changed")  # type: ignore[arg-type]
    message, plan, _, listed, *_ = omar.confirm(omars, request=REQUEST)  # type: ignore[arg-type]
    assert message.startswith("Not changed: the topics changed while you were editing them") and plan is None
    assert "Version <strong>2</strong>" in listed and "Health" in listed and "Athletics" not in listed
    assert store.topics.current().names == (*LABELS, "Health")


def test_a_stranger_changes_nothing(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    _, plan, _ = _preview(_editor(store), "add", name="Health")
    stranger = _editor(store, admin=False)
    assert _preview(stranger, "add", name="Health")[0] == "Sign in first."
    assert stranger.confirm(plan, request=REQUEST)[0] == "Sign in first."  # type: ignore[arg-type]
    assert store.topics.current().version == 1
