"""Issue 22 item 4 in headless Chromium: a browser id planted before an admin signs in never becomes the admin
session (sign-in and sign-out each give the browser a fresh id), and an export is a link that downloads once,
for that browser only, leaving no file behind."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from core.settings.config import Settings
from feedback.store import FeedbackStore
from testkit.models import tiny_settings
from testkit.server import launched_app
from tests.e2e.raw_http import Visitor
from tests.e2e.test_browser import _wait_for_text
from tests.e2e.test_browser_flows import PASSWORD, open_page, sign_in, to_admin

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Settings]]:
    home = tmp_path_factory.mktemp("admin_session") / "home"
    shutil.copytree(tiny_champion_home, home)
    settings = tiny_settings(home, admin_password=SecretStr(PASSWORD))
    with launched_app(settings, FeedbackStore.from_settings(settings)) as (url, _):
        yield url, settings



def browser_id(context) -> str:  # type: ignore[no-untyped-def]
    return next(c["value"] for c in context.cookies() if c["name"] == "newsloop_id")


def test_sign_in_and_out_give_the_browser_a_fresh_id_and_exports_download_once(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, settings = served
    planted = Visitor(url)
    planted.events()  # an id the attacker holds...
    context = browser.new_context()
    context.add_cookies([{"name": "newsloop_id", "value": planted.cookie.split("=", 1)[1], "url": url}])
    page = open_page(browser, url, context=context)
    assert browser_id(context) == planted.cookie.split("=", 1)[1]  # ...is the admin's browser's id before sign-in
    sign_in(page)
    signed_in = browser_id(context)
    assert signed_in != planted.cookie.split("=", 1)[1]
    assert planted.call("overview")[0] == "Sign in first."  # the planted id is no admin

    page.click("#export-btn")
    link = page.wait_for_selector("#export-file a")
    href = link.get_attribute("href")
    with page.expect_download() as download:
        link.click()
    assert "user_label" in Path(download.value.path()).read_text().splitlines()[0]
    exports = settings.storage.home / "exports"
    assert list(exports.iterdir()) == []  # the file went with the download
    again = context.request.get(url.rstrip("/") + "/" + href)
    assert again.status == 404  # once
    assert httpx.get(url.rstrip("/") + "/" + href, timeout=30).status_code == 404

    page.click("#admin-logout")
    _wait_for_text(page, "#admin-msg", "Signed out")
    for _ in range(100):  # the tab redeems its sign-out ticket just after the message shows (HttpOnly: polled)
        if browser_id(context) != signed_in:
            break
        page.wait_for_timeout(100)
    assert browser_id(context) not in (signed_in, planted.cookie.split("=", 1)[1])  # signing out: a fresh id too
    page.reload(wait_until="domcontentloaded")
    to_admin(page)
    assert page.locator("#admin-panel").is_hidden()
    assert not page.errors
    context.close()
