"""The real page in headless Chromium: classify, correct, and work the labelling queue like a user.

Needs Debian's `chromium` (at /usr/bin/chromium) and the `playwright` Python package; never run
`playwright install`, which downloads its own browser. Skipped when either is missing.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from core.labels import LABELS
from core.serving.classifier import ChampionService
from core.settings.policies import StoreLimits
from feedback.store import FeedbackStore
from testkit.models import tiny_settings
from testkit.server import launched_app

pytestmark = pytest.mark.browser

CHROMIUM = Path(os.environ.get("NEWSLOOP_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[1] / "screenshots"  # tests/screenshots, ignored by git
# Every wait is bounded: a hung page fails the step after this long instead of hanging CI.
STEP_TIMEOUT_MS = 30_000
ARTICLE = (
    "The striker signed a new three-year contract with the club on Monday, ending weeks of talks "
    "about a move abroad before the transfer window closes."
)
POOL = [
    "Parliament votes to extend the emergency powers for another six months.",
    "The central bank left interest rates unchanged and signalled cuts next year.",
    "A new telescope sends back its first images of a distant galaxy cluster.",
]

playwright_sync = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
if not CHROMIUM.is_file() and os.environ.get("CI"):
    raise RuntimeError(f"CI must run the browser tests, but there is no Chromium at {CHROMIUM}")
if not CHROMIUM.is_file():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


@contextlib.contextmanager
def desktop_page(url: str):  # type: ignore[no-untyped-def]
    """A fresh headless Chromium on `url`, desktop-sized, every step bounded; the page's uncaught script errors
    collect in `page.errors`, for the test to assert there are none."""
    with playwright_sync.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(STEP_TIMEOUT_MS)
            page.errors = []
            page.on("pageerror", lambda exc: page.errors.append(str(exc)))
            page.goto(url, wait_until="domcontentloaded")
            yield page
        finally:
            browser.close()


@pytest.fixture(scope="module")
def served(
    tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, FeedbackStore, ChampionService]]:
    settings = tiny_settings(tiny_champion_home, classify_per_minute=1_000)
    store = FeedbackStore(tmp_path_factory.mktemp("browser_db") / "feedback.db", StoreLimits(writes_per_minute=1_000))
    with launched_app(settings, store) as (url, service):
        yield url, store, service


@pytest.fixture
def page(served):  # type: ignore[no-untyped-def]
    url = served[0]
    SCREENSHOTS.mkdir(exist_ok=True)
    with playwright_sync.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS, timeout=STEP_TIMEOUT_MS * 2
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.set_default_timeout(STEP_TIMEOUT_MS)
            server = urlsplit(url).netloc

            # Loopback only: anything else the page asks for (web fonts, CDNs) is refused at once.
            def only_loopback(route) -> None:  # type: ignore[no-untyped-def]
                if urlsplit(route.request.url).netloc == server:
                    route.continue_()
                else:
                    route.abort()

            page.route("**/*", only_loopback)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url, wait_until="domcontentloaded")
            page.wait_for_selector("#classify-btn")
            yield page
            assert not errors, f"JavaScript errors on the page: {errors}"
        finally:
            browser.close()


def _shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _wait_for_text(page, selector: str, *needles: str) -> str:  # type: ignore[no-untyped-def]
    """Wait until the element's visible text contains any of `needles`; return that text."""
    page.wait_for_function(
        "([sel, needles]) => { const el = document.querySelector(sel);"
        " return !!el && needles.some(n => el.innerText.includes(n)); }",
        arg=[selector, list(needles)],
    )
    return page.inner_text(selector)


def test_classify_and_correct_in_the_browser(page, served) -> None:  # type: ignore[no-untyped-def]
    _, store, service = served
    predicted = service.predict([ARTICLE])[0].label
    page.fill("#news-text textarea", ARTICLE)
    _shot(page, "01-pasted")
    page.click("#classify-btn")
    shown = _wait_for_text(page, "#topic-label", *LABELS)
    _wait_for_text(page, "#classify-info", "Model", "ms")
    _shot(page, "02-classified")
    assert predicted in shown

    before = store.answers.count()
    correction_index = next(i for i, name in enumerate(LABELS) if name != predicted)
    correction = LABELS[correction_index]
    page.click(f"#fb-{correction_index}")
    ack = _wait_for_text(page, "#feedback-ack", "saved as")
    _shot(page, "03-corrected")
    assert correction in ack

    assert store.answers.count() == before + 1
    row = store.answers.rows(limit=1)[0]
    assert row["text"] == ARTICLE
    assert row["user_label"] == correction and row["kind"] == "correct"
    assert row["annotator"].startswith("anon:")  # a server-issued browser id, never the client's session


def test_label_queue_in_the_browser(page, served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, store, _ = served
    pool = tmp_path / "pool.csv"
    pool.write_text("text\n" + "\n".join(POOL) + "\n", encoding="utf-8")
    assert store.pool.import_file(pool).added == len(POOL)

    # The article corrected on the Classify tab earlier became a queue candidate too.
    candidates = [*POOL, ARTICLE]
    page.get_by_role("tab", name="Label queue").click()  # the first article loads when the tab opens
    shown = _wait_for_text(page, "#queue-article", *candidates)
    shown = next(text for text in candidates if text in shown)
    before = _wait_for_text(page, "#queue-progress", "labelled 0")
    left = int(re.search(r"(\d+) left", before).group(1))
    _shot(page, "04-queue-item")

    page.wait_for_timeout(400)  # web/page/keys.js drops a press or click within 200 ms of a new article appearing
    page.click("#q-1")
    ack = _wait_for_text(page, "#queue-ack", "Saved as")
    progress = _wait_for_text(page, "#queue-progress", "labelled 1")
    _shot(page, "05-queue-answered")
    assert LABELS[1] in ack and f"{left - 1} left" in progress
    assert shown[:20] in ack  # the message names the article it saved, not the one now shown
    # The next article replaced the answered one.
    assert shown not in page.inner_text("#queue-article")

    with sqlite3.connect(store.path) as conn:
        rows = conn.execute("SELECT text, user_label FROM answers WHERE kind = 'queue'").fetchall()
    assert rows == [(shown, LABELS[1])]
