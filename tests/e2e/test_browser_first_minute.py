"""A fresh install's queue, in headless Chromium on a real server: the shipped demo pool is there from the first
minute, and a labeller pressing 1-4 at a 0.4 s pace from the moment the first article shows has every press stored
as intended, without a loading message ever replacing an article (issue 47: the pool was scored inside the first
request, and the article gave way to "Loading the next article…" for seconds)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.labels import LABELS
from feedback.labelling.demo import DEMO_FILE
from feedback.store import FeedbackStore
from testkit.server import launched_app, open_limits_settings, open_limits_store
from tests.e2e.test_browser import desktop_page
from tests.e2e.test_browser_queue_pace import queue_answers

pytestmark = pytest.mark.browser

PRESSES = 30
PACE_MS = 400
# Every state the queue's article takes ("item", "wait" for the loading message, "empty"), in order, from page load.
WATCH = """() => {
  window.articleStates = [];
  const record = () => {
    const a = document.querySelector('#queue-article article');
    const state = a ? (a.dataset.state || '') : '';
    if (state && window.articleStates[window.articleStates.length - 1] !== state) window.articleStates.push(state);
  };
  new MutationObserver(record).observe(document.documentElement, {childList: true, subtree: true, attributes: true});
  record();
}"""


@pytest.fixture(scope="module")
def served(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FeedbackStore]]:
    store = open_limits_store(tmp_path_factory.mktemp("first_minute_db") / "feedback.db")
    assert store.pool.offer_demo() > PRESSES  # what app.main does with a fresh install's empty store
    with launched_app(open_limits_settings(tiny_champion_home), store) as (url, _):
        yield url, store


def test_a_fresh_install_shows_a_demo_article_and_keeps_up_from_the_first_one(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    with DEMO_FILE.open(encoding="utf-8") as handle:
        demo = {row["text"] for row in csv.DictReader(handle)}
    with desktop_page(url) as page:
        page.evaluate(WATCH)
        page.get_by_role("tab", name="Label queue").click()
        page.wait_for_function("() => !!(window.newsloopQueue && window.newsloopQueue.current)")
        assert page.evaluate("window.newsloopQueue.current.text") in demo
        page.wait_for_timeout(200)  # past the guard after the first article appeared
        shown, intended = [], []
        for n in range(PRESSES):
            shown.append(page.evaluate("window.newsloopQueue.current && window.newsloopQueue.current.text"))
            page.keyboard.press(str(n % 4 + 1))
            intended.append(LABELS[n % 4])
            page.wait_for_timeout(PACE_MS)
        page.wait_for_function("() => window.newsloopQueue.outbox.length === 0 && !window.newsloopQueue.inflight")
        states = page.evaluate("window.articleStates")
        statuses = page.evaluate("window.newsloopQueue.log.map((e) => e.status)")
        sign = page.inner_text("#queue-ack .q-sign").strip()
        errors = page.errors
    # Once the first article showed, the article was never replaced by the loading message (nor emptied).
    first = states.index("item")
    assert states[first:] == ["item"], states
    assert sign == "" and statuses == ["saved"] * PRESSES
    stored = queue_answers(store)
    assert all(text in demo for text in shown)
    assert [stored.get(text) for text in shown] == [[label] for label in intended]
    assert not errors
