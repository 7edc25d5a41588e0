"""Identities the server vouches for, the client address it believes, and the bounded maps and throttles."""

from __future__ import annotations

import pytest

from core.limits import FailureThrottle
from web.admin import AdminSessions
from web.identity import COOKIE, BoundedMap, Gatekeeper, ProxyPolicy

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
    gate = Gatekeeper(SECRET)
    cookie = gate.mint_cookie()
    assert gate.browser_id(cookie) and gate.browser_id(cookie) == cookie.split(".")[0]
    browser, mac = cookie.rsplit(".", 1)
    assert gate.browser_id(f"{browser}x.{mac}") == ""
    assert gate.browser_id(cookie.replace(mac, "0" * len(mac))) == ""
    assert Gatekeeper(b"another secret of 32 bytes......").browser_id(cookie) == ""
    for junk in ("", ".", "a" * 500, None):
        assert gate.browser_id(junk) == ""


def test_identify_gives_unverified_browsers_and_verified_accounts() -> None:
    gate = Gatekeeper(SECRET)
    cookie = gate.mint_cookie()
    anon = gate.identify(Request(cookie))
    assert anon.annotator.startswith("anon:") and not anon.verified and anon.browser
    assert cookie.split(".")[0] not in anon.annotator  # stored as a keyed hash, never the raw id
    assert gate.identify(Request(cookie, session_hash="other tab")).annotator == anon.annotator
    assert gate.identify(Request(cookie, session_hash="other tab")).session != anon.session
    nobody = gate.identify(Request(None))
    assert (nobody.annotator, nobody.session, nobody.browser, nobody.verified) == ("", "", "", False)
    assert gate.identify(Request(cookie, username="ada")).annotator == "user:ada"
    hf = gate.identify(Request(None, session={"oauth_info": {"userinfo": {"preferred_username": "grace"}}}))
    assert (hf.annotator, hf.verified) == ("user:grace", True)


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
    gate = Gatekeeper(SECRET, one)
    spoofed = [Request(host="10.0.0.1") for _ in range(2)]
    spoofed[0].headers = {"x-forwarded-for": "1.1.1.1, 9.9.9.9"}
    spoofed[1].headers = {"x-forwarded-for": "2.2.2.2, 9.9.9.9"}
    assert gate.address_of(spoofed[0]) == gate.address_of(spoofed[1]) != gate.address_of(Request(host="10.0.0.1"))


def test_bounded_map_forgets_the_least_recently_used() -> None:
    memory: BoundedMap[int] = BoundedMap(capacity=2)
    memory.put("a", 1)
    memory.put("b", 2)
    assert memory.get("a") == 1
    memory.put("c", 3)
    assert (memory.get("a"), memory.get("b"), memory.get("c"), len(memory)) == (1, None, 3, 2)


def test_failure_throttle_counts_failures_per_key_and_backs_off_globally() -> None:
    now = [0.0]
    throttle = FailureThrottle(per_key=2, window_s=100, global_limit=3, base_backoff_s=2, clock=lambda: now[0])
    assert throttle.wait("a") == 0
    throttle.failed("a")
    throttle.failed("a")
    assert throttle.wait("a") == pytest.approx(100) and throttle.wait("b") == 0
    throttle.failed("b")
    assert throttle.wait("c") == pytest.approx(2)  # 3 failures in all: everyone waits
    throttle.failed("c")
    assert throttle.wait("d") == pytest.approx(4)  # and the wait doubles with each further failure
    now[0] = 101
    assert throttle.wait("a") == throttle.wait("d") == 0


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
