"""A reload of the admin view never undoes what the maintainer did in between (web.admin.tab_memory), through the
panels' handlers on a real SQLite store. The review list: a relist that still holds every answer a tab was shown
leaves its ticks to the page, one that drops some keeps the ticked answers still listed, an accept unticks what it
acted on. The guidelines editor keeps a draft while the version in force is the one it was filled with. The Topics
panel leaves the topic dropdowns as chosen while the taxonomy is the version they offer. (The page itself:
tests/e2e/test_browser_flows.py.)"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from testkit.fakes import FakeAdmin
from web.admin.guidelines_view import GuidelinesEditor
from web.admin.review_view import ANY, ReviewPanel
from web.admin.tab_memory import TabMemory
from web.admin.topics_view import TopicsEditor

SURE_OF_WORLD = {"World": 0.97, "Sports": 0.01, "Business": 0.01, "Sci/Tech": 0.01}
SUSPICIOUS = ("suspicious", ANY, ANY, ANY, "")


def _suspicious(store: FeedbackStore, text: str) -> int:
    return store.answers.record(AnswerInput(text=text, user_label="Sports", annotator="user:someone", kind="correct",
                        probabilities=SURE_OF_WORLD, verified=True)).id


def _tab(name: str) -> Any:
    return SimpleNamespace(session_hash=name)


def test_a_relist_holding_every_shown_answer_leaves_the_ticks_to_the_page(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    panel = ReviewPanel(FakeAdmin(store))  # type: ignore[arg-type]
    first = _suspicious(store, "Summit talks resume")
    _, listed = panel.search([], *SUSPICIOUS, request=_tab("a"))
    assert listed["value"] == [] and [v for _, v in listed["choices"]] == [first]
    second = _suspicious(store, "Markets rally on summit news")
    # Its ticks were read when it was sent ([]), but the page's may be newer: the update names none.
    _, relisted = panel.search([], *SUSPICIOUS, request=_tab("a"))
    assert "value" not in relisted and {v for _, v in relisted["choices"]} == {first, second}
    # Another tab has its own memory: its first list sets its ticks.
    assert panel.search([], *SUSPICIOUS, request=_tab("b"))[1]["value"] == []


def test_a_relist_that_drops_answers_keeps_the_ticked_ones_still_listed(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    panel = ReviewPanel(FakeAdmin(store))  # type: ignore[arg-type]
    kept, gone, other = (_suspicious(store, f"Story {i} on the summit") for i in range(3))
    panel.search([], *SUSPICIOUS, request=_tab("a"))
    store.reviews.set_statuses([gone], "rejected")  # another admin rejects one: it leaves the suspicious list
    _, relisted = panel.search([kept, gone], *SUSPICIOUS, request=_tab("a"))
    assert relisted["value"] == [kept] and {v for _, v in relisted["choices"]} == {kept, other}


def test_accept_unticks_what_it_acted_on(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    panel = ReviewPanel(FakeAdmin(store))  # type: ignore[arg-type]
    ids = [_suspicious(store, f"Story {i} on the summit") for i in range(2)]
    panel.search([], *SUSPICIOUS, request=_tab("a"))
    message, _, relisted = panel.act("accepted")(ids[:1], ANY, ANY, ANY, ANY, "", request=_tab("a"))
    assert message == f"Accepted 1 answer(s): #{ids[0]}."
    assert relisted["value"] == [] and {v for _, v in relisted["choices"]} == set(ids)  # "any status" lists both


def test_the_guidelines_draft_stays_until_another_version_is_in_force(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    editor = GuidelinesEditor(FakeAdmin(store))  # type: ignore[arg-type]
    text, line, topics = editor.load(request=_tab("a"))
    assert text == store.guidelines.current().text and "built-in default" in line
    assert topics.startswith("**The topics**\n\n- **World**: international affairs")
    # The maintainer types; Refresh (or sign-in's second reload) must not put the text in force back over it.
    assert editor.load(request=_tab("a"))[0] == {"__type__": "update"}  # gr.skip(): the editor is left alone
    assert editor.save("Chip earnings are Business.", request=_tab("a"))[0].startswith("Saved as version 1")
    assert editor.load(request=_tab("a"))[0] == {"__type__": "update"}  # what it holds is what was saved
    store.guidelines.save("Another admin's rules.", "lee")  # version 2, saved elsewhere: the tab is shown it
    assert editor.load(request=_tab("a"))[0].strip() == "Another admin's rules."
    assert editor.load(request=_tab("b"))[0].strip() == "Another admin's rules."  # a new tab is filled


def test_topic_dropdowns_stay_as_chosen_until_the_topics_change(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    editor = TopicsEditor(FakeAdmin(store), choosers=[("any label", ANY)])  # type: ignore[arg-type]
    table, topic, into, label_filter = editor.load(request=_tab("a"))
    assert topic["value"] is None and label_filter["value"] == ANY and "Version <strong>1</strong>" in table
    table, *dropdowns = editor.load(request=_tab("a"))
    assert dropdowns == [{"__type__": "update"}] * 3 and "Version <strong>1</strong>" in table
    shown, plan, _, _ = editor.preview("add", "", "", "Health", "Medicine", "", request=_tab("a"))
    message, *_, topic, _, label_filter = editor.confirm(plan, request=_tab("a"))
    assert message.startswith("Changed") and "Health" in topic["choices"]
    assert editor.load(request=_tab("a"))[1:] == ({"__type__": "update"},) * 3  # confirm gave it version 2 already
    store.topics.commit(store.topics.current().describe("Health", "Medicine and care"), 2)  # another admin, elsewhere
    assert editor.load(request=_tab("a"))[1]["choices"] == [*editor.topics.taxonomy().names]


def test_tab_memory_forgets_the_least_recent_tab_and_ignores_calls_from_no_tab() -> None:
    memory = TabMemory(tabs=2)
    assert memory.swap(_tab("a"), 1) is None and memory.swap(_tab("b"), 1) is None
    assert memory.swap(_tab("a"), 2) == 1  # "a" is now the most recent
    memory.swap(_tab("c"), 1)  # "b" is forgotten; "a" and "c" are remembered
    assert memory.swap(_tab("a"), 3) == 2 and memory.swap(_tab("b"), 5) is None
    assert memory.swap(object(), 1) is None and memory.swap(object(), 1) is None
