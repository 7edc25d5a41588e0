"""Which requests are the app's own (web.server.origin_guard), the bounds on new page sessions and the shrinking fair
share (web.server.fair_share): pure rules, tested without a server."""

from __future__ import annotations

import asyncio

import pytest

from web.server.fair_share import FairShare, NewSessions
from web.server.origin_guard import OriginPolicy

SPACE = OriginPolicy.from_urls(["https://news.example.org/"], space_host="owner-newsloop.hf.space")


@pytest.mark.parametrize(("source", "host", "own"), [
    ("https://owner-newsloop.hf.space", "owner-newsloop.hf.space", True),  # the page on its own host
    ("https://owner-newsloop.hf.space", "10.0.0.7:7860", True),  # the Space's host, whatever the proxy names
    ("https://news.example.org", "10.0.0.7:7860", True),  # a configured public URL
    ("http://127.0.0.1:7860/?__theme=dark", "127.0.0.1:7860", True),  # a Referer of the page itself
    ("http://localhost:5173", "localhost:7860", True),  # local use: a localhost page, a localhost app
    ("http://localhost:5173", "owner-newsloop.hf.space", False),  # but localhost is nobody's page on a Space
    ("https://evil.example", "owner-newsloop.hf.space", False),
    ("https://owner-newsloop.hf.space.evil.example", "owner-newsloop.hf.space", False),  # a lookalike
    ("null", "owner-newsloop.hf.space", False),  # a sandboxed frame or a file:// page
    ("javascript:alert(1)", "owner-newsloop.hf.space", False),
    ("https://owner-newsloop.hf.space:8443", "owner-newsloop.hf.space", False),  # another port is another origin
])
def test_the_apps_own_origins(source: str, host: str, own: bool) -> None:
    assert SPACE.own(source, host) is own


def test_a_foreign_page_may_read_public_data_only() -> None:
    foreign, host = {"origin": "https://evil.example", "host": "owner-newsloop.hf.space"}, "owner-newsloop.hf.space"
    assert not SPACE.refuses("GET", "/", foreign) and not SPACE.refuses("GET", "/config", foreign)
    assert not SPACE.refuses("GET", "/gradio_api/info", foreign)
    for method, path in [("POST", "/gradio_api/queue/join"), ("POST", "/api/v1/classify"), ("PUT", "/x"),
                         ("GET", "/gradio_api/queue/data"), ("GET", "/gradio_api/heartbeat/abc"),
                         ("GET", "/admin/export/token")]:
        assert SPACE.refuses(method, path, foreign), (method, path)
    preflight = foreign | {"access-control-request-method": "POST"}
    assert SPACE.refuses("OPTIONS", "/gradio_api/queue/join", preflight)
    assert not SPACE.refuses("POST", "/gradio_api/queue/join", {"host": host})  # a script: no page behind it
    referred = {"referer": "https://evil.example/page", "host": host}
    assert SPACE.refuses("POST", "/gradio_api/queue/join", referred)  # Referer decides when Origin is absent
    assert SPACE.cors_origins == ["https://news.example.org", "https://owner-newsloop.hf.space"]


def test_new_sessions_are_bounded_per_address_and_for_everyone_and_seen_ones_pass() -> None:
    now = [0.0]
    sessions = NewSessions(per_address=3, per_second=8, line=0, clock=lambda: now[0])  # no line: refused at once

    async def run() -> None:
        async def admit(session: str, address: str) -> str | None:
            return await sessions.admit(session, address)

        assert [await admit(f"a{i}", "addr-a") for i in range(3)] == [None, None, "address"]  # 2 a second each
        assert await admit("a0", "addr-a") is None  # a session seen once joins freely
        assert [await admit(f"{x}0", f"addr-{x}") for x in "bcd"] == [None, None, None]
        assert [await admit(f"{x}1", f"addr-{x}") for x in "bcd"] == [None, None, None]
        assert await admit("e0", "addr-e") == "everyone"  # 8 new sessions this second already
        now[0] += 1.5
        assert await admit("e0", "addr-e") is None
        assert await admit("a2", "addr-a") is None
        assert await admit("a3", "addr-a") == "address"  # its 3 a minute
        now[0] += 60
        assert await admit("a9", "addr-a") is None  # the address's minute is over

    asyncio.run(run())


def test_each_addresses_share_shrinks_when_many_wait_but_never_below_the_floor() -> None:
    share = FairShare(16, lambda _: True, budget=48, floor=2)
    assert share.share("alone") == 16
    for i in range(6):
        assert share.admit(f"addr{i}")
    assert share.share("addr0") == 8 and share.share("newcomer") == 6  # 48 over the addresses waiting, asker included
    for i in range(40):
        share.admit(f"crowd{i}")
    assert share.share("newcomer") == 2
