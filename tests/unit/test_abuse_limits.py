"""The bounds that keep one stranger from stalling, filling or locking the app: fair share of the queue,
X-Forwarded-For lines, admin sign-in tickets and one-time exports, the weak-password refusal."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import SecretStr
from starlette.requests import Request

from core.settings.config import ConfigError
from testkit.models import tiny_settings
from web.admin.exports import ExportDownloads
from web.admin.sessions import SignInTickets
from web.server.fair_share import DataBudget, FairShare, NewSessions
from web.server.identity import IdentityService, ProxyPolicy

SECRET = b"0123456789abcdef0123456789abcdef"


def test_fair_share_counts_what_the_queue_still_holds_per_address() -> None:
    live: set[str] = set()
    now = [0.0]
    share = FairShare(2, live.__contains__, max_age_s=60, clock=lambda: now[0])
    assert share.admit("a") and share.admit("a")
    assert not share.admit("a")  # two joins being answered hold both places
    assert share.admit("b")  # another address is not touched
    share.joined("a", "e1")
    share.joined("a", None)  # refused by the queue: its place is free again
    live.add("e1")
    assert share.pending("a") == 1 and share.admit("a")
    share.joined("a", "e2")
    live.add("e2")
    assert not share.admit("a")
    live.discard("e1")  # finished
    assert share.admit("a")
    share.joined("a", "e3")
    live.add("e3")
    now[0] = 61  # the queue never said e2 and e3 finished: forgotten after max_age_s all the same
    assert share.pending("a") == 0


def test_new_sessions_wait_their_turn_in_a_bounded_line_when_everyones_second_is_full() -> None:
    now = [0.0]

    async def sleep(seconds: float) -> None:  # the clock moves as the line waits (once the others have come)
        await asyncio.sleep(0)
        now[0] += seconds

    async def storm() -> tuple[list[str | None], list[float], str | None]:
        sessions = NewSessions(30, 4, line=3, clock=lambda: now[0], sleep=sleep)
        first = [await sessions.admit(f"s{i}", f"flood{i}") for i in range(4)]  # everyone's second is full now
        waited: list[float] = []

        async def newcomer(address: str) -> str | None:
            started = now[0]
            why = await sessions.admit(f"tab of {address}", address)
            waited.append(now[0] - started)
            return why

        line = [asyncio.create_task(newcomer(a)) for a in ("admin", "flood0", "b", "c", "d")]
        answers = await asyncio.gather(*line)
        return first + answers, waited, await sessions.admit("s0", "flood0")

    answers, waited, again = asyncio.run(storm())
    # The first four fill the second; the admin and two others wait in line (not refused); flood0, having opened
    # one this second, and "d", past the line of three, are refused at once.
    assert answers == [None] * 4 + [None, "address", None, None, "everyone"]
    assert max(waited) <= 1.0 and again is None  # a second at most; a session seen once joins freely


def test_event_data_is_counted_per_address() -> None:
    now = [0.0]
    budget = DataBudget(60_000, clock=lambda: now[0])  # 1,000 bytes a second
    assert budget.spend("a", 50_000) == 0 and budget.spend("a", 10_000) == 0
    assert budget.spend("a", 2_000) == pytest.approx(2.0)  # refused: nothing taken
    assert budget.spend("b", 60_000) == 0  # another address has its own
    now[0] = 2.0
    assert budget.spend("a", 2_000) == 0
    assert budget.spend("a", 10**9) == 60.0  # more than a minute's worth: a minute


def test_every_forwarded_for_line_counts_in_order() -> None:
    one = ProxyPolicy(hops=1, addresses=("127.0.0.1",))
    assert one.client_address("127.0.0.1", ["6.6.6.6", "9.9.9.9"]) == "9.9.9.9"
    assert one.client_address("127.0.0.1", ["6.6.6.6, 7.7.7.7", "9.9.9.9"]) == "9.9.9.9"
    two = ProxyPolicy(hops=2, addresses=("127.0.0.1",))
    assert two.client_address("127.0.0.1", ["6.6.6.6", "9.9.9.9", "10.0.0.1"]) == "9.9.9.9"
    identities = IdentityService(SECRET, one)

    def request(*lines: str) -> Request:
        headers = [(b"x-forwarded-for", line.encode()) for line in lines]
        return Request({"type": "http", "headers": headers, "client": ("127.0.0.1", 1234)})

    # The client writes a line of its own first; the proxy appends its line: the proxy's line decides.
    assert identities.address_of(request("1.1.1.1", "9.9.9.9")) == identities.address_of(request("9.9.9.9"))
    assert identities.address_of(request("1.1.1.1", "9.9.9.9")) != identities.address_of(request("1.1.1.1"))


def test_a_sign_in_ticket_is_one_browsers_and_works_once() -> None:
    now = [1000.0]
    tickets = SignInTickets(ttl_s=60, clock=lambda: now[0])
    ticket = tickets.issue("browser-1", admin=True)
    assert tickets.redeem(ticket, "browser-2") is None  # someone else's browser: nothing, and it stays unused
    assert tickets.redeem(ticket, "browser-1") is True
    assert tickets.redeem(ticket, "browser-1") is None  # used up
    out = tickets.issue("browser-1", admin=False)
    assert tickets.redeem(out, "browser-1") is False
    late = tickets.issue("browser-1", admin=True)
    now[0] += 61
    assert tickets.redeem(late, "browser-1") is None
    for junk in (None, "", 5, "x" * 500):
        assert tickets.redeem(junk, "browser-1") is None
    with pytest.raises(ValueError):
        tickets.issue("", admin=True)


def test_an_export_is_downloaded_once_by_its_browser_and_removed_when_it_expires(tmp_path: Path) -> None:
    (tmp_path / "exports").mkdir()
    (tmp_path / "exports" / "feedback-left-by-a-crash.csv").write_text("old")
    now = [0.0]
    exports = ExportDownloads(tmp_path / "exports", ttl_s=60, clock=lambda: now[0])
    assert list((tmp_path / "exports").iterdir()) == []  # leftovers of a stopped process are removed
    path = exports.new_file(".csv")
    token = exports.offer(path, "feedback.csv", "browser-1")
    assert exports.take(token, "browser-2") is None and exports.take("guess", "browser-1") is None
    offer = exports.take(token, "browser-1")
    assert offer is not None and offer.path == path and offer.filename == "feedback.csv"
    assert exports.take(token, "browser-1") is None  # once
    unused = exports.offer(exports.new_file(".csv"), "feedback.csv", "browser-1")
    assert len(exports) == 1
    now[0] = 61
    assert len(exports) == 0 and exports.take(unused, "browser-1") is None
    assert list((tmp_path / "exports").iterdir()) == []  # expired files are deleted, taken or not


def test_a_weak_admin_password_is_refused_on_a_public_host_without_echoing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weak = SecretStr("hunter2-hunter2")  # 15 characters
    assert tiny_settings(tmp_path, admin_password=weak).hosting.admin_password == weak  # a private machine: allowed
    monkeypatch.setenv("SPACE_ID", "newsloop/demo")
    with pytest.raises(ConfigError, match="NEWSLOOP_ADMIN_PASSWORD has 15 characters.*at least 16") as refused:
        tiny_settings(tmp_path, admin_password=weak)
    assert "hunter2" not in str(refused.value)
    assert tiny_settings(tmp_path, admin_password=SecretStr("hunter2-hunter2!")).hosting.admin_password is not None
    assert tiny_settings(tmp_path, admins="ada").hosting.admin_enabled  # Hugging Face admins need no password
