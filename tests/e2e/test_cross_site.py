"""Another website cannot act as the admin: cross-site requests over raw HTTP, as a foreign page's script
would send them with the admin's cookies attached (a browser does so on a Space, where the cookie is
`SameSite=None`). Refused before they run (web.server.origin_guard); an admin event without the page's anti-forgery
token is refused by the admin check (web.admin.guard). The app's own page keeps working.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from feedback.store import FeedbackStore
from testkit.server import launched_app
from tests.e2e.raw_http import JoinRefused, Visitor
from tests.e2e.test_attacks import Served, real_address, sign_in, space_settings

EVIL = "https://evil.example"
SPACE_HOST = "newsloop-demo.hf.space"


@pytest.fixture(scope="module")
def space(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("cross_site") / "home"
    shutil.copytree(tiny_champion_home, home)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SPACE_ID", "newsloop/demo")
        env.setenv("SPACE_HOST", SPACE_HOST)
        settings = space_settings(home)
        store = FeedbackStore.from_settings(settings)
        with launched_app(settings, store) as (url, _):
            yield Served(url, settings, store)


@pytest.fixture
def admin(space: Served) -> Iterator[Visitor]:
    visitor = space.visitor(real_address())
    assert sign_in(visitor) == "Signed in."
    yield visitor
    visitor.close()


def join_body(visitor: Visitor, event: str, *data: object) -> bytes:
    return json.dumps({"data": list(data), "fn_index": visitor.events()[event], "session_hash": visitor.session_hash,
                       "event_data": None, "trigger_id": None}).encode()


def versions(space: Served) -> int:
    return len(space.store.guidelines.history())


def test_a_preflight_from_another_site_is_refused_and_grants_nothing(space: Served) -> None:
    for path in ("/gradio_api/queue/join", "/admin/gradio_api/queue/join", "/admin/session", "/gradio_api/upload",
                 "/api/v1/classify"):
        response = httpx.options(f"{space.url.rstrip('/')}{path}", headers={
            "origin": EVIL, "access-control-request-method": "POST", "access-control-request-headers": "content-type"})
        assert response.status_code == 403, path
        assert "access-control-allow-origin" not in response.headers
        assert "access-control-allow-credentials" not in response.headers


def test_a_blind_json_join_from_another_site_with_the_admins_cookie_changes_nothing(space: Served, admin: Visitor) -> None:
    before = versions(space)
    admin.send_form_token = False  # a foreign page cannot read the token; it sends the cookies the browser adds
    for header in ({"origin": EVIL}, {"referer": f"{EVIL}/page.html"}, {"origin": "null"}):
        joined = admin.post(f"{admin.page_of('save')}/gradio_api/queue/join", content=join_body(admin, "save", "Forged guidelines"),
                            headers={"content-type": "application/json", **header})
        assert joined.status_code == 403, header
        assert "access-control-allow-origin" not in joined.headers and "Cross-site" in joined.json()["detail"]
    assert versions(space) == before


def test_another_sites_page_can_neither_stream_nor_reach_the_admin_routes(space: Served, admin: Visitor) -> None:
    base = space.url.rstrip("/")
    with httpx.Client(timeout=30) as http:
        stream = http.get(f"{base}/gradio_api/queue/data", params={"session_hash": admin.session_hash},
                          headers={"origin": EVIL, "cookie": admin.cookie or ""})
        assert stream.status_code == 403
        redeem = http.post(f"{base}/admin/session", json={"ticket": "x"}, headers={"origin": EVIL})
        assert redeem.status_code == 403
        export = http.get(f"{base}/admin/export/sometoken", headers={"referer": f"{EVIL}/", "cookie": admin.cookie or ""})
        assert export.status_code == 403
        # The public page and its config may be read from anywhere, but no CORS answer lets a script read them.
        for path in ("/", "/config"):
            public = http.get(f"{base}{path}", headers={"origin": EVIL})
            assert public.status_code == 200 and "access-control-allow-origin" not in public.headers


def test_an_admin_event_without_the_pages_token_is_refused(space: Served, admin: Visitor) -> None:
    before = versions(space)
    admin.send_form_token = False  # a script holding the cookie (no Origin at all) but not the token
    assert admin.call("save", "Tokenless guidelines")[0] == "Sign in first."
    admin.form_token, admin.send_form_token = "0" * 32, True  # a guessed token
    assert admin.call("save", "Guessed guidelines")[0] == "Sign in first."
    assert versions(space) == before


def test_a_session_hash_chosen_by_the_caller_confers_nothing(space: Served, admin: Visitor) -> None:
    stranger = space.visitor(real_address())
    stranger.session_hash = admin.session_hash  # the admin's tab, named by someone else
    stranger.get("/")  # a browser id and token of the stranger's own
    assert stranger.call("save", "A stranger's guidelines")[0] == "Sign in first."


def test_the_apps_own_page_works_from_its_host_and_from_the_spaces_host(space: Served, admin: Visitor) -> None:
    before = versions(space)
    own = f"http://{urlsplit(space.url).netloc}"
    message = admin.call_with("save", {"origin": own, "referer": f"{own}/"}, "Guidelines from the page itself")[0]
    assert message.startswith("Saved as version")
    # Behind the Space's proxy the request names the Space's host in its Origin.
    message = admin.call_with("save", {"origin": f"https://{SPACE_HOST}"}, "Guidelines from the Space")[0]
    assert message.startswith("Saved as version")
    assert versions(space) == before + 2
    with pytest.raises(JoinRefused) as refused:
        admin.call_with("save", {"origin": f"https://{SPACE_HOST}.evil.example"}, "Lookalike host")
    assert refused.value.status == 403
