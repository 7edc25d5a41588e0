"""Identities the server vouches for, the client address it believes, and the bounded maps and throttles."""

from __future__ import annotations

import gradio as gr
import pytest
from starlette.requests import Request as StarletteRequest

from core.serving.limits import FailureThrottle, RateLimiter
from testkit.oauth import SESSION_COOKIE, signed_session_cookie
from web.admin.actions import AdminSessions
from web.server.identity import COOKIE, IdentityService, ProxyPolicy, hf_session_user
from web.server.session_memory import BoundedMap, LastPrediction

SECRET = b"0123456789abcdef0123456789abcdef"


class Request:
    def __init__(self, cookie: str | None = None, username: str | None = None, session: dict | None = None,
                 host: str = "192.0.2.1", session_hash: str = "tab") -> None:
        self.cookies = {COOKIE: cookie} if cookie else {}
        self.username = username
        self.headers: dict[str, str] = {}
        self.client = type("Client", (), {"host": host})()
        self.session_hash = session_hash
        if session is not None:
            self.session = session


def test_browser_ids_are_signed_and_forgeries_are_nobody() -> None:
    identities = IdentityService(SECRET)
    cookie = identities.mint_cookie()
    assert identities.browser_id(cookie) and identities.browser_id(cookie) == cookie.split(".")[0]
    browser, mac = cookie.rsplit(".", 1)
    assert identities.browser_id(f"{browser}x.{mac}") == ""
    assert identities.browser_id(cookie.replace(mac, "0" * len(mac))) == ""
    assert IdentityService(b"another secret of 32 bytes......").browser_id(cookie) == ""
    for junk in ("", ".", "a" * 500, None):
        assert identities.browser_id(junk) == ""


def test_identify_gives_unverified_browsers_and_verified_accounts() -> None:
    identities = IdentityService(SECRET)
    cookie = identities.mint_cookie()
    anon = identities.identify(Request(cookie))
    assert anon.annotator.startswith("anon:") and not anon.verified and anon.browser
    assert cookie.split(".")[0] not in anon.annotator  # stored as a keyed hash, never the raw id
    assert identities.identify(Request(cookie, session_hash="other tab")).annotator == anon.annotator
    assert identities.identify(Request(cookie, session_hash="other tab")).session != anon.session
    nobody = identities.identify(Request(None))
    assert (nobody.annotator, nobody.session, nobody.browser, nobody.verified) == ("", "", "", False)
    assert identities.identify(Request(cookie, username="ada")).annotator == "user:ada"
    # Hugging Face sign-in: the profile Gradio injects into a handler, never a session the request carries.
    hf = identities.identify(Request(cookie), profile(username="grace"))
    assert (hf.annotator, hf.verified, hf.session) == ("user:grace", True, anon.session)
    carried = identities.identify(Request(cookie, session={"oauth_info": {"userinfo": {"preferred_username": "grace"}}}))
    assert (carried.annotator, carried.verified) == (anon.annotator, False)


def profile(username: str) -> gr.OAuthProfile:
    return gr.OAuthProfile({"name": username.title(), "preferred_username": username,
                            "profile": f"https://huggingface.co/{username}", "picture": ""})


def starlette_request(cookies: dict[str, str]) -> StarletteRequest:
    header = "; ".join(f"{name}={value}" for name, value in cookies.items()).encode()
    return StarletteRequest({"type": "http", "method": "POST", "path": "/gradio_api/upload", "query_string": b"",
                             "headers": [(b"cookie", header)], "client": ("192.0.2.9", 1234)})


def test_the_upload_guard_reads_gradios_signed_session_cookie(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAUTH_CLIENT_SECRET", "the space's secret")
    identities = IdentityService(SECRET)
    signed = {SESSION_COOKIE: signed_session_cookie("boss")}
    assert hf_session_user(starlette_request(signed)) == "boss"
    assert identities.identify(starlette_request(signed)).annotator == "user:boss"
    for cookie in (signed_session_cookie("boss", client_secret="another secret"),
                   signed_session_cookie("boss", expires_in_s=-1), "garbage", signed[SESSION_COOKIE][:-2]):
        assert hf_session_user(starlette_request({SESSION_COOKIE: cookie})) is None
    monkeypatch.delenv("OAUTH_CLIENT_SECRET")  # no Hugging Face sign-in on this server: nobody is signed in
    assert hf_session_user(starlette_request(signed)) is None


def test_only_the_configured_proxies_hops_are_believed() -> None:
    assert ProxyPolicy().client_address("192.0.2.1", "1.1.1.1") == "192.0.2.1"
    one = ProxyPolicy(hops=1, addresses=("10.0.0.0/8",))
    assert one.client_address("10.1.2.3", "6.6.6.6, 9.9.9.9") == "9.9.9.9"
    assert one.client_address("192.0.2.1", "9.9.9.9") == "192.0.2.1"
    assert one.client_address("10.1.2.3", "") == "10.1.2.3"
    two = ProxyPolicy(hops=2, addresses=("10.0.0.0/8",))
    assert two.client_address("10.1.2.3", "6.6.6.6, 9.9.9.9, 10.0.0.5") == "9.9.9.9"
    assert two.client_address("10.1.2.3", "9.9.9.9") == "10.1.2.3"  # a shorter chain than told: believe nothing
    assert ProxyPolicy(hops=1, addresses=("*",)).trusts("203.0.113.1")
    identities = IdentityService(SECRET, one)
    spoofed = [Request(host="10.0.0.1") for _ in range(2)]
    spoofed[0].headers = {"x-forwarded-for": "1.1.1.1, 9.9.9.9"}
    spoofed[1].headers = {"x-forwarded-for": "2.2.2.2, 9.9.9.9"}
    assert identities.address_of(spoofed[0]) == identities.address_of(spoofed[1]) != identities.address_of(Request(host="10.0.0.1"))


def test_bounded_map_forgets_the_least_recently_used() -> None:
    memory: BoundedMap[int] = BoundedMap(capacity=2)
    memory.put("a", 1)
    memory.put("b", 2)
    assert memory.get("a") == 1
    memory.put("c", 3)
    assert (memory.get("a"), memory.get("b"), memory.get("c"), len(memory)) == (1, None, 3, 2)


def test_bounded_map_keeps_within_its_byte_budget_too() -> None:
    memory: BoundedMap[str] = BoundedMap(capacity=1000, max_bytes=10_000, weigh=len)
    for i in range(10):
        memory.put(f"s{i}", str(i) * 3_000)
    assert len(memory) == 3 and memory.nbytes == 9_000  # the 3 most recent; the count alone allowed 1000
    assert memory.get("s9") and memory.get("s6") is None
    memory.put("s9", "small")  # replacing a value re-weighs it
    assert memory.nbytes == 6_005
    memory.put("huge", "x" * 20_000)  # larger than the whole budget: not kept, and nothing else is lost
    assert memory.get("huge") is None and len(memory) == 3
    memory.pop("s9")
    assert memory.nbytes == 6_000


def test_a_remembered_prediction_weighs_its_text_not_more() -> None:
    short = LastPrediction("id", "x" * 100, "d", "World", {"World": 1.0}, "v1")
    long = LastPrediction("id", "x" * 5_000, "d", "World", {"World": 1.0}, "v1")
    assert long.nbytes - short.nbytes == 4_900 and short.nbytes < 2_000


def test_failure_throttle_refuses_per_key_and_slows_everyone_without_refusing() -> None:
    now = [0.0]
    per_key, everyone = RateLimiter(2, 100, lambda: now[0]), RateLimiter(3, 100, lambda: now[0])
    throttle = FailureThrottle(per_key, everyone, slow_s=2.0)
    assert throttle.wait("a") == 0 and throttle.delay() == 0
    throttle.failed("a")
    throttle.failed("a")
    assert throttle.wait("a") == pytest.approx(100) and throttle.wait("b") == 0
    throttle.failed("b")
    assert throttle.delay() == 2.0  # 3 failures in all: every attempt is slowed...
    throttle.failed("c")
    assert throttle.wait("d") == 0 and throttle.delay() == 2.0  # ...and a fresh address is never refused
    now[0] = 101
    assert throttle.wait("a") == 0 and throttle.delay() == 0


def test_admin_sessions_expire_and_need_a_browser() -> None:
    now = [0.0]
    sessions = AdminSessions(ttl_s=60, capacity=2, clock=lambda: now[0])
    with pytest.raises(ValueError):
        sessions.open("")
    assert not sessions.valid("")
    sessions.open("b1")
    assert sessions.valid("b1") and not sessions.valid("b2")
    now[0] = 61
    assert not sessions.valid("b1")
    sessions.open("b1")
    sessions.close("b1")
    assert not sessions.valid("b1")
