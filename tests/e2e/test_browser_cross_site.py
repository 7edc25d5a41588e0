"""Another website cannot act as the admin, in headless Chromium: the app runs as on a Space (its cookies
`Secure; SameSite=None`, so the browser attaches them to other sites' requests) at http://localhost:PORT, and a
second site, http://evil.test:PORT2 (mapped to loopback by Chromium's resolver), is opened in another tab of the
signed-in admin's browser. Its script's requests with credentials change nothing and read nothing; the app's
own page still saves guidelines.
"""

from __future__ import annotations

import http.server
import logging
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from core.host.net import free_port
from feedback.store import FeedbackStore
from testkit.models import tiny_settings
from testkit.server import launched_app
from tests.e2e.test_attacks import PASSWORD
from tests.e2e.test_browser import CHROMIUM, CHROMIUM_ARGS, _wait_for_text, playwright_sync
from tests.e2e.test_browser_flows import open_page, to_admin

pytestmark = pytest.mark.browser

# What the foreign page's script tries, each with the admin's cookies: a JSON join of the guidelines' save
# event (read, then blind with no-cors), the event stream, and the sign-in ticket route. Each result is what
# the script could learn: "blocked" when the browser or the server withheld the answer.
ATTACK_JS = """async ([app, fnIndex]) => {
  const body = JSON.stringify({data: ['Guidelines planted by another site'], fn_index: fnIndex,
                               session_hash: 'evilsession1', event_data: null, trigger_id: null});
  const results = {};
  const attempt = async (name, url, init) => {
    try {
      const response = await fetch(url, Object.assign({credentials: 'include'}, init));
      results[name] = response.type === 'opaque' ? 'opaque' : response.status + ' ' + (await response.text()).slice(0, 200);
    } catch (error) { results[name] = 'blocked'; }
  };
  await attempt('join', app + 'gradio_api/queue/join',
                {method: 'POST', headers: {'content-type': 'application/json'}, body: body});
  await attempt('blind join', app + 'gradio_api/queue/join',
                {method: 'POST', mode: 'no-cors', headers: {'content-type': 'text/plain'}, body: body});
  await attempt('stream', app + 'gradio_api/queue/data?session_hash=evilsession1', {});
  await attempt('ticket', app + 'session', {method: 'POST', mode: 'no-cors', body: '{"ticket": "x"}'});
  return results;
}"""


@pytest.fixture(scope="module")
def served(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FeedbackStore]]:
    home = tmp_path_factory.mktemp("browser_cross_site") / "home"
    shutil.copytree(tiny_champion_home, home)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SPACE_ID", "newsloop/demo")  # Secure; SameSite=None cookies, as on a Space
        settings = tiny_settings(home, admin_password=SecretStr(PASSWORD), trusted_proxy_hops=0)
        store = FeedbackStore.from_settings(settings)
        with launched_app(settings, store) as (url, _):
            yield url.replace("127.0.0.1", "localhost"), store


@pytest.fixture(scope="module")
def evil_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("evil")
    (root / "index.html").write_text("<!doctype html><title>Win a prize</title><p>Nothing to see.</p>")
    port = free_port()
    handler = lambda *args: http.server.SimpleHTTPRequestHandler(*args, directory=str(root))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://evil.test:{port}/index.html"
    server.shutdown()


def test_another_sites_script_with_the_admins_cookies_changes_and_reads_nothing(  # type: ignore[no-untyped-def]
    served, evil_site, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    url, store = served
    caplog.set_level(logging.WARNING, logger="newsloop.app")
    with playwright_sync.sync_playwright() as pw:
        # A regular profile, as an admin's Chrome window is (an off-the-record one blocks third-party cookies).
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True,
            args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP evil.test 127.0.0.1"])
        page = open_page(None, url, context=context)
        to_admin(page)
        page.fill("#admin-password input", PASSWORD)
        page.press("#admin-password input", "Enter")
        _wait_for_text(page, "#admin-tiles", "answers")
        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies["newsloop_id"]["sameSite"] == "None" and cookies["newsloop_id"]["secure"]
        before = len(store.guidelines.history())
        fn_index = page.evaluate("() => window.gradio_config.dependencies.find(d => d.api_name === 'save').id")

        other = context.new_page()
        other.goto(evil_site)
        results = other.evaluate(ATTACK_JS, [f"{url}admin/", fn_index])  # the maintainers' page's routes
        print(f"the other site's script got {results}")
        assert results["join"] == "blocked" and results["stream"] == "blocked"  # nothing readable
        assert results["blind join"] == "opaque" and results["ticket"] == "opaque"  # sent blind...
        assert len(store.guidelines.history()) == before  # ...and changed nothing
        refused = [r.getMessage() for r in caplog.records if "refused a cross-site" in r.getMessage()]
        assert any("POST /admin/gradio_api/queue/join from http://evil.test" in m for m in refused), refused
        # Headless Chromium (156, http test origins) did not attach the cookie here, where an admin's Chrome on
        # a Space may: tests/e2e/test_cross_site.py sends the same requests with the cookie over raw HTTP.

        # The app's own page, in the same browser, still works.
        page.bring_to_front()
        page.fill("#guidelines-text textarea", "Guidelines written on the app's own page.")
        page.click("#guidelines-save")
        _wait_for_text(page, "#guidelines-msg", "Saved as version")
        assert len(store.guidelines.history()) == before + 1
        context.close()
