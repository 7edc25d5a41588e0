"""Issue 58's consent, in headless Chromium: a challenger the gate refused (a real retrain of the tiny model, under a
margin no challenger reaches) is promoted by a maintainer with a reason from the admin page; the promotion, the reason
and the gate's numbers show in the run history and in `newsloop status --json` (its alias `python -m retrain status`); a rollback from the page undoes it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from core.registry.versions import ModelRegistry
from feedback.store import FeedbackStore
from testkit.server import launched_app
from testkit.stack import TINY_ENV
from tests.e2e.test_browser import _wait_for_text
from tests.e2e.test_browser_admin import PASSWORD
from tests.e2e.test_browser_flows import open_page, shot, to_admin
from tests.e2e.test_retrain_run import add_feedback, run_retrain, settings_for

pytestmark = pytest.mark.browser
REASON = "The desk's own checks read the new model right; the golden set is still thin."


@pytest.fixture
def refused(tiny_champion_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    home = tmp_path / "home"
    shutil.copytree(tiny_champion_home, home)
    add_feedback(settings_for(home), flip=False)  # 40 true labels: a challenger that learns
    result = run_retrain(settings_for(home, gate_margin=0.9))  # a margin no challenger reaches: refused
    assert result.decision == "refused" and result.challenger == "v0002"
    # The page's button runs `python -m retrain promote` with this process's environment.
    for name, value in TINY_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NEWSLOOP_HOME", str(home))
    settings = settings_for(home, admin_password=SecretStr(PASSWORD))
    with launched_app(settings, FeedbackStore.from_settings(settings)) as (url, _):
        yield url, home


def status_json(home: Path) -> dict:
    env = os.environ | TINY_ENV | {"NEWSLOOP_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "retrain", "status", "--json"], env=env, capture_output=True,
                          text=True, check=False, timeout=120)
    return json.loads(done.stdout)


def test_a_maintainer_promotes_a_refused_challenger_with_a_reason_and_rolls_it_back(browser, refused) -> None:  # type: ignore[no-untyped-def]
    url, home = refused
    page = open_page(browser, url)
    to_admin(page)
    page.fill("#admin-password input", PASSWORD)
    page.press("#admin-password input", "Enter")
    _wait_for_text(page, "#refused-challenger", "The gate refused v0002")
    refusal = page.inner_text("#refused-challenger")
    assert "needed a gain of +90.00 points" in refusal  # the gate's own words and numbers
    page.click("#promote-btn")
    _wait_for_text(page, "#promote-msg", "Say why")  # no reason: nothing happens
    assert ModelRegistry(home / "models").champion().version == "v0001"  # type: ignore[union-attr]
    page.fill("#promote-reason textarea", REASON)
    page.click("#promote-btn")
    _wait_for_text(page, "#promote-msg", "Promoted by hand")
    assert ModelRegistry(home / "models").champion().version == "v0002"  # type: ignore[union-attr]
    _wait_for_text(page, "#history", "Promoted by hand by an admin (password)")
    history = page.inner_text("#history")
    assert REASON in history and "needed a gain of +90.00 points" in history
    shot(page, "consent-promoted")

    status = status_json(home)
    event = status["events"][-1]
    assert (status["champion"], event["action"], event["by"], event["manual"]) == (
        "v0002", "promote", "an admin (password)", True)
    assert REASON in event["reason"] and event["evidence"]["judged_against"] == "v0001"
    assert event["evidence"]["refused_because"] and "challenger_score" in event["evidence"]

    page.click("#rollback-btn")
    _wait_for_text(page, "#job-msg", "Rolled back")
    assert ModelRegistry(home / "models").champion().version == "v0001"  # type: ignore[union-attr]
    assert status_json(home)["events"][-1]["action"] == "rollback"
    assert not page.errors
    page.context.close()
