"""Issue 45 as a maintainer and a labeller meet it, in headless Chromium against a launched app: the maintainer adds a
topic in the admin view's Topics panel; a labeller's next page load offers it (marked new, the model is still learning
it), they answer it with its key in the queue and with its button in Classify, and the app's own database holds both
answers under it. No topic is written in the page's scripts: they read the topics the server draws."""

from __future__ import annotations

import pytest

from core.labels import LABELS
from tests.e2e.conftest import ARTICLE, PASSWORD
from tests.e2e.test_browser import _wait_for_text
from tests.e2e.test_browser_flows import open_page, to_admin
from web.server.topics import LEARNING

pytestmark = pytest.mark.browser




def _add_topic(page, name: str, description: str) -> None:  # type: ignore[no-untyped-def]
    to_admin(page)
    page.fill("#admin-password input", PASSWORD)
    page.press("#admin-password input", "Enter")
    _wait_for_text(page, "#topics-list", "Version 1")
    page.get_by_text("Change the topics", exact=True).click()
    page.fill("#topics-name textarea", name)
    page.fill("#topics-description textarea", description)
    page.fill("#topics-why textarea", "the newsroom covers health every day")
    page.click("#topics-preview")
    assert f"Adding {name} touches no data" in _wait_for_text(page, "#topics-shown", "Confirm to make it")
    page.click("#topics-confirm-btn")
    _wait_for_text(page, "#topics-msg", "now version 2")
    listed = _wait_for_text(page, "#topics-list", name)
    assert "Version 2" in listed and LEARNING in listed


def test_a_topic_added_in_the_admin_view_is_answered_in_the_queue_and_in_classify(  # type: ignore[no-untyped-def]
        browser, served) -> None:
    url, store = served
    admin = open_page(browser, url)
    _add_topic(admin, "Health", "Medicine, hospitals, public health")

    page = open_page(browser, url)  # the labeller's page load after the change
    # The queue: the new topic is the fifth button, its key 5, the hint follows.
    page.get_by_role("tab", name="Label queue").click()
    _wait_for_text(page, "#queue-article", "Queue article")
    assert "Health" in page.inner_text("#q-4") and LEARNING in page.inner_text("#q-4")
    assert "5" in page.inner_text("#queue-hint")
    page.locator("#queue-article article").focus()
    page.wait_for_timeout(400)  # queue.js takes no press within 150 ms of a new article
    page.keyboard.press("5")
    assert "Health" in _wait_for_text(page, "#queue-ack", "Saved as")

    # Classify: its button, after the model's own four.
    page.get_by_role("tab", name="Classify").click()
    text = "Hospitals report fewer flu cases this winter, health officials said on Monday."
    page.fill("#news-text textarea", text)
    page.click("#classify-btn")
    _wait_for_text(page, "#classify-info", "Model")
    page.wait_for_function("() => !document.querySelector('#fb-4').disabled")
    assert "It's actually Health" in page.inner_text("#fb-4") and LEARNING in page.inner_text("#fb-4")
    page.click("#fb-4")
    assert "Health" in _wait_for_text(page, "#feedback-ack", "saved as")
    assert "✓" in page.inner_text("#fb-4")

    stored = {(r["text"], r["kind"]): r["user_label"] for r in store.answers.rows()}
    assert stored[(ARTICLE, "queue")] == "Health" and stored[(text, "correct")] == "Health"

    # The page's own scripts name no topic: they read the buttons the server drew.
    scripts = page.evaluate("""() => [...document.querySelectorAll('script')].map((s) => s.textContent)
        .filter((t) => t.includes('newsloopQueue') || t.includes('newsloopAnswers'))
        .filter((t) => !t.includes('gradio_config'))""")
    assert len(scripts) >= 2
    for name in (*LABELS, "Health"):
        assert not any(f'"{name}"' in s or f"'{name}'" in s for s in scripts), name
    assert not admin.errors and not page.errors
