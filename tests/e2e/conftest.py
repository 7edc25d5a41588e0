"""Fixtures the browser tests share."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    """One headless Chromium per test module; each test opens its own pages (each page its own context)."""
    from tests.e2e.test_browser import CHROMIUM, CHROMIUM_ARGS, playwright_sync  # skips where playwright is missing

    with playwright_sync.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
