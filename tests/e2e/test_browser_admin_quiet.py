"""An admin view without false alarms, in headless Chromium: signed in and idle for 60 s (six ticks of the watch
for retrains started elsewhere), then through a retrain the gate refuses and one it promotes, both started
from the page's own buttons, with no error toast, no error badge on any component and no traceback in the app's
log. Real retrains of the tiny model (testkit.stack.TINY_ENV: the recipe under which it learns the seed set)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from feedback.store import FeedbackStore
from testkit.server import launched_app
from testkit.stack import TINY_ENV
from tests.e2e.test_browser import _wait_for_text
from tests.e2e.test_browser_admin import PASSWORD
from tests.e2e.test_browser_flows import open_page, to_admin
from tests.e2e.test_retrain_run import add_feedback, settings_for

pytestmark = pytest.mark.browser
IDLE_S = 60

# Every error toast and every "Error" badge Gradio shows, as they appear (a badge may be gone by the next look).
WATCH_ERRORS_JS = """() => {
  window.__alarms = [];
  const look = (node) => {
    if (!(node instanceof Element)) return;
    for (const el of [node, ...node.querySelectorAll('[data-testid="toast-body"], [data-testid="status-tracker"] .error')]) {
      if (el.matches('[data-testid="toast-body"]') || el.matches('[data-testid="status-tracker"] .error')) {
        window.__alarms.push(el.textContent.trim().slice(0, 300));
      }
    }
  };
  new MutationObserver((changes) => changes.forEach((c) => c.addedNodes.forEach(look)))
    .observe(document.body, {childList: true, subtree: true});
}"""


@pytest.fixture
def served(tiny_champion_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    home = tmp_path / "home"
    shutil.copytree(tiny_champion_home, home)
    settings = settings_for(home, admin_password=SecretStr(PASSWORD))
    add_feedback(settings, flip=False)  # 40 true labels on seed texts: enough to learn from
    # The page's Retrain button starts `python -m retrain run` with this process's environment.
    for name, value in TINY_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NEWSLOOP_HOME", str(home))
    monkeypatch.setenv("NEWSLOOP_GATE_MARGIN", "0.9")  # the first run: a margin no challenger reaches
    with launched_app(settings, FeedbackStore.from_settings(settings)) as (url, _):
        yield url, home


def retrain_from_the_page(page, expect: str) -> str:  # type: ignore[no-untyped-def]
    page.click("#retrain-btn")
    _wait_for_text(page, "#retrain-confirm-text", "should take")
    page.click("#retrain-start")
    _wait_for_text(page, "#job-msg", "Retrain started")
    page.wait_for_function(f"() => document.querySelector('#retrain-decision').innerText.includes({expect!r})",
                           timeout=240_000)
    return page.inner_text("#retrain-decision")


def test_the_admin_view_raises_no_alarm_idle_or_through_a_refused_and_a_promoted_retrain(  # type: ignore[no-untyped-def]
    browser, served, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = served
    caplog.set_level(logging.WARNING)
    page = open_page(browser, url)
    to_admin(page)
    page.evaluate(WATCH_ERRORS_JS)  # on the maintainers' page, where it watches
    page.fill("#admin-password input", PASSWORD)
    page.press("#admin-password input", "Enter")
    _wait_for_text(page, "#admin-tiles", "answers")

    page.wait_for_timeout(IDLE_S * 1000)
    assert page.evaluate("window.__alarms") == []

    assert "Not promoted" in retrain_from_the_page(page, "Not promoted")
    monkeypatch.delenv("NEWSLOOP_GATE_MARGIN")  # the second run: the default gate, which this challenger passes
    page.wait_for_function("() => !document.querySelector('#retrain-btn').disabled")
    assert "Promoted" in retrain_from_the_page(page, "Promoted")
    page.wait_for_timeout(12_000)  # another watch tick after the run

    assert page.evaluate("window.__alarms") == []
    assert page.locator('[data-testid="status-tracker"] .error').count() == 0
    assert not page.errors
    tracebacks = [r.getMessage()[:300] for r in caplog.records
                  if r.exc_info or "Traceback" in r.getMessage() or "didn't return enough output" in r.getMessage()]
    assert tracebacks == []
    page.context.close()
