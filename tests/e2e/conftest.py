"""Fixtures the browser tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from feedback.store import FeedbackStore
from testkit.server import launched_app, open_limits_settings, open_limits_store

PASSWORD = "a long admin password for the browser tests"
ARTICLE = "Queue article: the clinic opened a new ward for patients with heart disease"


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    """One headless Chromium per test module; each test opens its own pages (each page its own context)."""
    from tests.e2e.test_browser import CHROMIUM, CHROMIUM_ARGS, playwright_sync  # skips where playwright is missing

    with playwright_sync.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def served(tiny_home_copy: Path) -> Iterator[tuple[str, FeedbackStore]]:
    """A launched app with open limits, admin password PASSWORD, and ARTICLE alone in its queue."""
    settings = open_limits_settings(tiny_home_copy, admin_password=SecretStr(PASSWORD))
    store = open_limits_store(settings.paths.feedback_db, [ARTICLE])
    with launched_app(settings, store) as (url, _):
        yield url, store
    store.close()
