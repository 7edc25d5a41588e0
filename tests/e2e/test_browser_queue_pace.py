"""The label queue keeps up with the hand, in headless Chromium on a real server: a press shows the next article at
once (before any answer could have come back), every press is stored, with its label, on the article that was on
screen when it was pressed, and a press that is not taken (a held key's repeat, a press right after a new article)
says so on screen and stores nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.labels import LABELS
from feedback.store import FeedbackStore
from feedback.validate import WITHDRAWN
from testkit.server import launched_app, open_limits_settings, open_limits_store
from tests.e2e.test_browser import _wait_for_text, desktop_page

pytestmark = pytest.mark.browser

PRESSES = 60
PACE_MS = 400
# Records, for every key press, the article on screen when the key went down (a capture listener on window runs
# before the page's own) and the one on screen once the page had handled it (a bubble listener on window, after).
WATCH = """() => {
  window.presses = [];
  const shown = () => { const a = document.querySelector('#queue-article article');
    return a ? {shown: a.dataset.shown || '', text: a.innerText.trim()} : {shown: '', text: ''}; };
  window.addEventListener('keydown', (e) => { window.presses.push({key: e.key, before: shown()}); }, true);
  window.addEventListener('keydown', () => { window.presses[window.presses.length - 1].after = shown(); });
}"""


@pytest.fixture(scope="module")
def served(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FeedbackStore]]:
    # The limits are the tests' own (bench/keypress.py --default-limits shows the shipped ones at work); every
    # answer still goes through them.
    store = open_limits_store(tmp_path_factory.mktemp("pace_db") / "feedback.db",
                              [f"Paced story {i}: a harbour strike, a cup final, bank rates and a chip plant"
                               for i in range(PRESSES + 40)])
    with launched_app(open_limits_settings(tiny_champion_home), store) as (url, _):
        yield url, store


@pytest.fixture
def page(served):  # type: ignore[no-untyped-def]
    with desktop_page(served[0]) as page:
        page.get_by_role("tab", name="Label queue").click()
        _wait_for_text(page, "#queue-article", "Paced story")
        page.wait_for_function("() => window.newsloopQueue.buffer.length >= 3")  # the buffer is filled
        page.evaluate(WATCH)
        yield page


def queue_answers(store: FeedbackStore) -> dict[str, list[str]]:
    """Live queue answers: article text -> the labels stored for it."""
    found: dict[str, list[str]] = {}
    for row in store.answers.rows():
        if row["kind"] == "queue" and row["status"] not in WITHDRAWN:
            found.setdefault(row["text"], []).append(row["user_label"])
    return found


def test_sixty_presses_at_a_fast_pace_are_all_stored_on_the_article_on_screen(page, served) -> None:  # type: ignore[no-untyped-def]
    store = served[1]
    page.wait_for_timeout(300)  # past the guard after the first article appeared
    intended = []
    for n in range(PRESSES):
        key = str(n % 4 + 1)
        page.keyboard.press(key)
        intended.append(LABELS[n % 4])
        page.wait_for_timeout(PACE_MS)
    presses = page.evaluate("window.presses")
    assert len(presses) == PRESSES
    # No round trip: the next article was on screen by the end of the key's own event, when no answer to it
    # could have come back (the page runs one task at a time); whatever the machine's speed.
    for press in presses:
        assert press["before"]["shown"] and press["after"]["shown"], press
        assert press["after"]["shown"] != press["before"]["shown"], press
    # Every press taken: none shown as not taken, and all of them sent and saved.
    assert page.inner_text("#queue-ack .q-sign").strip() == ""
    page.wait_for_function("() => window.newsloopQueue.outbox.length === 0 && !window.newsloopQueue.inflight")
    statuses = page.evaluate("window.newsloopQueue.log.map((e) => e.status)")
    assert statuses == ["saved"] * PRESSES
    stored = queue_answers(store)
    for press, label in zip(presses, intended, strict=True):
        assert stored.get(press["before"]["text"]) == [label], press
    assert sum(len(labels) for labels in stored.values()) == PRESSES
    _wait_for_text(page, "#queue-progress", f"labelled {PRESSES},")
    # The acknowledgement names the last article answered, never Gradio's queue timer.
    ack = page.inner_text("#queue-ack")
    assert presses[-1]["before"]["text"][:20] in ack and "queue:" not in ack
    assert not page.errors


def test_a_held_key_and_a_press_right_after_a_new_article_are_shown_as_not_taken(page, served) -> None:  # type: ignore[no-untyped-def]
    store = served[1]
    page.wait_for_timeout(300)
    before = store.answers.count()
    first = page.evaluate("window.newsloopQueue.current.text")
    # A held key: its first press answers the article on screen, its repeats answer nothing.
    page.keyboard.down("2")
    page.keyboard.down("2")  # repeat: true, as a held key sends
    page.keyboard.down("2")
    page.keyboard.up("2")
    assert "Not taken" in page.inner_text("#queue-ack .q-sign")
    assert "held down" in page.inner_text("#queue-ack .q-sign")
    page.wait_for_function("() => window.newsloopQueue.outbox.length === 0 && !window.newsloopQueue.inflight")
    assert store.answers.count() == before + 1
    assert queue_answers(store)[first] == [LABELS[1]]
    # A press within the guard after a new article appears: the article just shown is not answered. The guard
    # is widened here so the test does not depend on how fast this machine presses twice.
    page.evaluate("() => { window.newsloopQueue.guardMs = 60000; }")
    page.keyboard.press("3")
    sign = page.inner_text("#queue-ack .q-sign")
    assert "Not taken" in sign and "only just appeared" in sign
    page.wait_for_timeout(800)  # anything sent would have landed by now
    assert page.evaluate("window.newsloopQueue.outbox.length") == 0
    assert store.answers.count() == before + 1
    # The next press after the guard is taken, and the sign goes away.
    page.evaluate("() => { window.newsloopQueue.guardMs = 150; }")
    shown = page.evaluate("window.newsloopQueue.current.text")
    page.keyboard.press("4")
    assert page.inner_text("#queue-ack .q-sign").strip() == ""
    page.wait_for_function("() => window.newsloopQueue.outbox.length === 0 && !window.newsloopQueue.inflight")
    assert queue_answers(store)[shown] == [LABELS[3]]
    assert not page.errors


def test_undo_takes_back_an_answer_still_waiting_and_one_already_stored(page, served) -> None:  # type: ignore[no-untyped-def]
    store = served[1]
    page.wait_for_timeout(300)
    first = page.evaluate("window.newsloopQueue.current.text")
    page.keyboard.press("1")
    page.wait_for_function("() => window.newsloopQueue.outbox.length === 0 && !window.newsloopQueue.inflight")
    assert queue_answers(store)[first] == [LABELS[0]]
    page.wait_for_timeout(200)
    page.keyboard.press("u")  # stored already: the server withdraws it and the article comes back
    _wait_for_text(page, "#queue-ack", "Undone")
    page.wait_for_function("(t) => window.newsloopQueue.current && window.newsloopQueue.current.text === t", arg=first)
    assert first not in queue_answers(store)
    page.wait_for_timeout(200)
    page.keyboard.press("3")  # labelled again
    page.wait_for_function("() => window.newsloopQueue.outbox.length === 0 && !window.newsloopQueue.inflight")
    assert queue_answers(store)[first] == [LABELS[2]]
    # An answer not sent yet is taken back on the page itself, its article back on screen, nothing stored.
    page.evaluate("() => { window.newsloopQueue.opened = false; }")  # hold the sending back for this step
    page.wait_for_timeout(200)
    second = page.evaluate("window.newsloopQueue.current.text")
    page.keyboard.press("2")
    assert page.evaluate("window.newsloopQueue.outbox.length") == 1
    page.wait_for_timeout(200)
    page.keyboard.press("u")
    assert page.evaluate("window.newsloopQueue.outbox.length") == 0
    assert page.evaluate("window.newsloopQueue.current.text") == second
    assert "Undone" in page.inner_text("#queue-ack")
    page.evaluate("() => window.newsloopQueue.open()")
    page.wait_for_timeout(200)
    page.keyboard.press("4")
    page.wait_for_function("() => window.newsloopQueue.outbox.length === 0 && !window.newsloopQueue.inflight")
    assert queue_answers(store)[second] == [LABELS[3]]
    assert not page.errors
