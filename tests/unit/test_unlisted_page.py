"""The page's "None of these": key 0 in the buffered queue (web.page.labelling) and the Classify button
(web.page.actions), each stored apart from the answers, with the missing topic's name if typed."""

from __future__ import annotations

from pathlib import Path

from testkit.fakes import UnsureClassifier
from tests.unit.test_queue_buffer import Tab, make, sync
from web.page.answer_rules import NONE
from web.page.classify_view import classify_buttons
from web.server.topics import PageTopics


def test_key_0_stores_none_of_these_moves_on_and_undo_brings_it_back(tmp_path: Path) -> None:
    buffered, store = make(tmp_path)
    tab = Tab("b1", "t1")
    items = sync(buffered, tab, [], [])["items"]
    have = [item["shown"] for item in items[1:]]
    op = {"op": "none", "shown": items[0]["shown"], "missing": "  Ports   and shipping "}
    result = sync(buffered, tab, [op], have)["results"][0]
    assert result["status"] == "saved" and "missing topic: Ports and shipping" in result["message"]
    [row] = store.unlisted.rows()
    assert (row["text"], row["kind"], row["name"], row["annotator"]) == (items[0]["text"], "queue",
                                                                         "Ports and shipping", "anon:b1")
    assert store.answers.count() == 0
    assert sync(buffered, tab, [op], have)["results"][0]["status"] == "saved" and len(store.unlisted.rows()) == 1
    undone = sync(buffered, tab, [{"op": "undo"}], have)["results"][0]
    assert undone["status"] == "undone" and undone["item"]["text"] == items[0]["text"]
    assert "None of these (missing: Ports and shipping)" in undone["message"] and store.unlisted.rows() == []


def test_a_bad_missing_name_is_refused_with_a_reason(tmp_path: Path) -> None:
    buffered, store = make(tmp_path)
    tab = Tab("b1", "t1")
    items = sync(buffered, tab, [], [])["items"]
    op = {"op": "none", "shown": items[0]["shown"], "missing": "x" * 41}
    result = sync(buffered, tab, [op], [item["shown"] for item in items])["results"][0]
    assert result["status"] == "refused" and "at most 40 characters" in result["message"]
    assert store.unlisted.rows() == []


def test_classify_offers_none_of_these_with_a_box_for_the_missing_topic(tmp_path: Path) -> None:
    _, store = make(tmp_path, items=1)
    html = classify_buttons(PageTopics(UnsureClassifier(), store).offered())
    assert f'id="fb-none" class="topic-btn secondary" data-topic="{NONE}"' in html
    assert 'id="fb-missing"' in html and 'maxlength="40"' in html


def test_the_admin_panel_says_once_that_no_answer_is_waiting(tmp_path: Path) -> None:
    """Issue 59: "No "None of these" answers are waiting." showed twice (the summary and the table)."""
    from feedback.store import FeedbackStore
    from testkit.fakes import FakeAdmin
    from web.admin.unlisted_view import UnlistedPanel

    store = FeedbackStore(tmp_path / "feedback.db")
    summary, table, *_ = UnlistedPanel(FakeAdmin(store)).show(request=object())  # type: ignore[arg-type]
    assert summary == 'No "None of these" answers are waiting.' and table == ""
    store.close()
