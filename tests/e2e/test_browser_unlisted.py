"""Issue 46 item 3 as labellers and a maintainer meet it, in headless Chromium against a launched app: one labeller
presses 0 in the queue with the missing topic typed, another presses Classify's "None of these" with it typed; the
maintainer sees the two answers grouped in the admin view's "Answers with no topic" panel, picks the group and creates
the topic from it; the app's database then holds the new topic, whose first labels are exactly those two answers."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ARTICLE, PASSWORD
from tests.e2e.test_browser import _wait_for_text
from tests.e2e.test_browser_admin import choose
from tests.e2e.test_browser_flows import open_page, to_admin

pytestmark = pytest.mark.browser

CLASSIFIED = "Hospitals report fewer flu cases this winter, health officials said on Monday."


def test_none_of_these_answers_are_grouped_and_become_a_new_topics_first_labels(  # type: ignore[no-untyped-def]
        browser, served) -> None:
    url, store = served
    before = store.topics.current()

    queue = open_page(browser, url)  # the first labeller: key 0 in the queue, the missing topic typed first
    queue.get_by_role("tab", name="Label queue").click()
    _wait_for_text(queue, "#queue-article", "Queue article")
    queue.fill("#q-missing", "Health")
    queue.locator("#queue-article article").focus()
    queue.wait_for_timeout(400)  # queue.js takes no press within 150 ms of a new article
    queue.keyboard.press("0")
    assert "missing topic: Health" in _wait_for_text(queue, "#queue-ack", "Saved as")

    page = open_page(browser, url)  # the second: Classify's button, with the name in another spelling
    page.fill("#news-text textarea", CLASSIFIED)
    page.click("#classify-btn")
    _wait_for_text(page, "#classify-info", "Model")
    page.wait_for_function("() => !document.querySelector('#fb-none').disabled")
    page.fill("#fb-missing", "  health ")
    page.click("#fb-none")
    assert "None of these" in _wait_for_text(page, "#feedback-ack", "saved")
    assert "✓" in page.inner_text("#fb-none")
    assert store.answers.count() == 0 and len(store.unlisted.rows()) == 2  # kept apart: nothing trains yet

    admin = open_page(browser, url)
    to_admin(admin)
    admin.fill("#admin-password input", PASSWORD)
    admin.press("#admin-password input", "Enter")
    _wait_for_text(admin, "#topics-list", "Version 1")
    admin.get_by_text("Answers with no topic", exact=True).click()
    table = _wait_for_text(admin, "#unlisted-groups", "Health")
    assert "2" in table  # one group: two answers, two people
    # Nothing is chosen, ticked or named until the maintainer picks a group (the largest may be a flood).
    assert admin.locator("#unlisted-list input[type=checkbox]").count() == 0
    assert admin.input_value("#unlisted-name textarea") == ""
    choose(admin, "#unlisted-group", "1. Health (2 answers, 2 people)")
    _wait_for_text(admin, "#unlisted-list", "flu cases")
    listed = admin.inner_text("#unlisted-list")
    assert "heart disease" in listed and "flu cases" in listed
    assert admin.locator("#unlisted-list input[type=checkbox]:checked").count() == 2  # the group's answers, ticked
    assert admin.input_value("#unlisted-name textarea") == "Health"
    admin.click("#unlisted-create")
    assert "Created topic 'Health', with 2 label(s)" in _wait_for_text(admin, "#unlisted-msg", "Created")
    _wait_for_text(admin, "#topics-list", "Version 2")
    _wait_for_text(admin, "#unlisted-summary", "No \"None of these\" answers")

    after = store.topics.current()
    assert after.version == before.version + 1 and after.names == (*before.names, "Health")
    key = after.topics[-1].key
    first_labels = {(r["text"], r["kind"], r["status"]) for r in store.answers.rows() if r["user_label"] == key}
    assert first_labels == {(ARTICLE, "queue", "accepted"), (CLASSIFIED, "correct", "accepted")}
    assert store.answers.count() == 2
    assert {r["status"] for r in store.unlisted.rows(status=None)} == {"placed"}
    assert not queue.errors and not page.errors and not admin.errors
