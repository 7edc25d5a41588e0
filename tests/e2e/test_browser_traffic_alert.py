"""The traffic alert in headless Chromium: a stream of headlines the shipped starter is unsure of goes through the
REST API and the page; the admin view then shows the alert for headlines, the day's estimate in its plot, and the
form mix in the drift panel. The real starter (its validation accuracy per form is what the estimate falls below)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from core.registry.starter import install_starter
from core.registry.versions import ModelRegistry
from core.settings.config import load_settings
from feedback.store import FeedbackStore
from testkit.models import MANY_PAGES
from testkit.server import launched_app
from tests.e2e.test_browser import _wait_for_text
from tests.e2e.test_browser_admin import PASSWORD
from tests.e2e.test_browser_flows import open_page, shot, to_admin

pytestmark = pytest.mark.browser

# Headlines with no topic in them: the starter reads each at 34-75% (its validation headlines: 87%).
VAGUE_HEADLINES = [
    "What happens next", "A look back at the week", "Five things to know today", "Officials say more later",
    "The long road ahead", "Questions remain after the meeting", "A day to remember", "Everything you need to know",
    "The big picture", "Crowds gather downtown", "Talks continue into the night", "A surprise announcement",
]
ON_THE_PAGE = "Numbers tell the story"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    home = tmp_path / "home"
    assert install_starter(ModelRegistry(home / "models")) is not None
    settings = load_settings(home=home, admin_password=SecretStr(PASSWORD), monitor_min_texts=10,
                             classify_per_minute=10_000, queue_per_minute=10_000, **MANY_PAGES)
    with launched_app(settings, FeedbackStore.from_settings(settings)) as (url, _):
        yield url


def test_a_headline_only_stream_the_model_is_unsure_of_raises_the_alert(browser, served: str) -> None:  # type: ignore[no-untyped-def]
    url = served
    response = httpx.post(f"{url}api/v1/classify", json={"text": VAGUE_HEADLINES}, timeout=120)
    assert response.status_code == 200, response.text
    page = open_page(browser, url)
    page.fill("#news-text textarea", ON_THE_PAGE)
    page.click("#classify-btn")
    _wait_for_text(page, "#topic-label", "%")

    to_admin(page)
    page.fill("#admin-password input", PASSWORD)
    page.press("#admin-password input", "Enter")
    _wait_for_text(page, "#traffic-alert", "Alert")
    alert = page.inner_text("#traffic-alert")
    assert "Estimated accuracy on headline texts" in alert and "13 texts" in alert and "below its validation" in alert
    assert page.locator("#plot-traffic img, #plot-traffic svg, #plot-traffic canvas").count() >= 1
    page.click("#drift-panel button")
    _wait_for_text(page, "#traffic-drift", "headline 100%")
    page.locator("#traffic-alert").scroll_into_view_if_needed()
    shot(page, "admin-traffic-alert")
    assert page.errors == []
