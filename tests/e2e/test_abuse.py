"""Short versions of the soak's attacks: one stranger must not stall, fill or lock the app for everyone else.

Each attack runs against a launched app configured as a Space (SPACE_ID set: one trusted proxy hop, so each
client's address is the last X-Forwarded-For entry, as in tests/e2e/test_attacks.py). For each: the attacker
is answered with a 4xx under 64 KB within 2 s, another visitor's classification meanwhile within 1 s (both
printed, and asserted with a margin: see `assert_bounded`), and the app's memory grows by under 300 MB. The app runs in
this process (`launched_app`), so "app memory" is this process's resident set.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings.config import PROJECT_ROOT, setting_fields
from feedback.store import FeedbackStore
from testkit.attackers import CROWD, blind_join, list_bomb_body, send_chunked, two_forwarded_lines, unlisted_flood
from testkit.models import MANY_PAGES
from testkit.server import launched_app
from tests.e2e.raw_http import Visitor
from tests.e2e.test_attacks import sign_in, space_settings

MAX_REFUSAL_BYTES = 64 * 1024
MAX_GROWTH_MB = 300
MARGIN = 3  # on the 2 s and 1 s, for a machine busy with other work
_next = iter(range(1, 250))


def address() -> str:
    return f"198.51.100.{next(_next)}"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class App:
    url: str
    store: FeedbackStore

    def classify(self, client: str, headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
        headers = {"x-forwarded-for": client} | (headers or {})
        return httpx.post(f"{self.url}api/v1/classify", headers=headers, timeout=60, **kwargs)


@pytest.fixture(scope="module")
def app(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    home = tmp_path_factory.mktemp("abuse") / "home"
    shutil.copytree(tiny_champion_home, home)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SPACE_ID", "newsloop/demo")
        # The shipped bounds on new pages (testkit.models lifts them for other tests).
        shipped = {item.flat: item.info.default for item in setting_fields() if item.flat in MANY_PAGES}
        assert set(shipped) == set(MANY_PAGES)
        settings = space_settings(home, classify_per_minute=1000, queue_per_minute=1000, events_per_address=8,
                                  **shipped)
        store = FeedbackStore.from_settings(settings)
        with launched_app(settings, store) as (url, _):
            yield App(url, store)


def while_attacked(app: App, attack: Callable[[], Any]) -> tuple[Any, float, list[float]]:
    """Run `attack`, and meanwhile another visitor's REST classifications, one after another; returns the
    attack's result, its seconds, and the visitor's seconds per classification (each must succeed)."""
    visitor, done, times = address(), threading.Event(), []

    def honest() -> None:
        while not done.is_set():
            started = time.perf_counter()
            response = app.classify(visitor, json={"text": "The striker scored twice in the cup final."})
            assert response.status_code == 200, response.text
            times.append(time.perf_counter() - started)

    app.classify(visitor, json={"text": "Warm-up"})
    thread = threading.Thread(target=honest, daemon=True)
    thread.start()
    started = time.perf_counter()
    try:
        result = attack()
    finally:
        seconds = time.perf_counter() - started
        time.sleep(0.2)  # at least one classification after the attack's answer
        done.set()
        thread.join(timeout=30)
    print(f"attack answered in {seconds:.3f} s; the other visitor's {len(times)} classifications: "
          f"slowest {max(times):.3f} s")
    return result, seconds, times


def assert_bounded(response_status: int, body: bytes, seconds: float, times: list[float], grew_mb: float) -> None:
    """The issue's bounds: a 4xx under 64 KB within 2 s for the attacker, the other visitor within 1 s, memory
    under +300 MB. The times are asserted with a margin (MARGIN x), so that a busy machine does not fail the
    default run; they are printed, and the attacks' old costs (tens of seconds) are far outside either."""
    print(f"refusal {response_status}, {len(body)} bytes; memory {grew_mb:+.0f} MB")
    assert 400 <= response_status < 500 and len(body) < MAX_REFUSAL_BYTES, (response_status, len(body))
    assert seconds < 2.0 * MARGIN, f"the attacker waited {seconds:.2f} s for the refusal"
    assert times and max(times) < 1.0 * MARGIN, f"the other visitor waited {max(times):.2f} s"
    assert grew_mb < MAX_GROWTH_MB, f"memory grew by {grew_mb:.0f} MB"


@pytest.mark.parametrize("items", [1_800_000, 150_000])
def test_a_huge_list_of_invalid_items_is_refused_before_any_costly_work(app: App, items: int) -> None:
    body = list_bomb_body(items)
    assert len(body) < 3_844_096  # under the body cap: the list length decides, not the size
    before = rss_mb()
    response, seconds, times = while_attacked(app, lambda: app.classify(address(), content=body))
    assert_bounded(response.status_code, response.content, seconds, times, rss_mb() - before)
    assert response.status_code == 413 and f"{items:,} texts in one request" in response.json()["detail"]


def test_wrong_item_types_name_only_the_first_few(app: App) -> None:
    response = app.classify(address(), json={"text": ["fine", *range(31)]})
    assert response.status_code == 422 and len(response.content) < 300
    assert response.json()["detail"].endswith("text[3] must be a string (and 28 more).")


def test_a_chunked_body_is_refused_at_the_cap_without_reading_the_rest(app: App) -> None:
    total = 300 * 1024 * 1024
    before = rss_mb()
    (status, body, sent), seconds, times = while_attacked(
        app, lambda: send_chunked(app.url, "/api/v1/classify", total, address()))
    assert_bounded(status, body, seconds, times, rss_mb() - before)
    assert status == 413 and b"over the limit" in body
    print(f"{sent / 2**20:.0f} MB of {total / 2**20:.0f} MB sent before the refusal")
    assert sent < total / 4
    # The page's own routes are bounded the same way.
    (status, _, sent), _, _ = while_attacked(
        app, lambda: send_chunked(app.url, "/gradio_api/queue/join", total, address()))
    assert status == 413 and sent < total / 4


def test_a_body_that_is_not_utf8_gets_422_and_the_docs_list_only_newsloop(app: App) -> None:
    response = app.classify(address(), content=b'{"text": "caf\xe9"}', headers={"content-type": "application/json"})
    assert response.status_code == 422 and "UTF-8" in response.json()["detail"]
    spec = httpx.get(f"{app.url}openapi.json", timeout=30).json()
    assert set(spec["paths"]) == {"/api/v1/classify", "/api/v1/topics", "/healthz", "/readyz"}


def test_one_address_flooding_the_queue_leaves_others_served(app: App) -> None:
    flooder, other = Visitor(app.url, forwarded_for=address()), Visitor(app.url, forwarded_for=address())
    fn_index = flooder.events()["classify"]
    stop, answers = threading.Event(), Counter()

    def flood() -> None:  # joins that never read their results, as fast as 16 connections allow
        with ThreadPoolExecutor(16) as pool:
            while not stop.is_set():
                for response in pool.map(lambda _: blind_join(app.url, flooder.forwarded_for or "", fn_index, timeout=30), range(40)):
                    answers[response.status_code] += 1
                    # 429: its share of the queue, or of new pages, is used; 503: everyone's new pages this second.
                    assert response.status_code in (200, 429, 503) and len(response.content) < MAX_REFUSAL_BYTES

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while sum(answers.values()) < 100 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sum(answers.values()) >= 100, f"the flood stopped: {dict(answers)}"
        served = [other.call("classify", f"Visitor story {i} about the league")[0]["label"] for i in range(10)]
    finally:
        stop.set()
        thread.join(timeout=60)
    print(f"flood: {dict(answers)}")
    assert len(served) == 10 and answers[429] > 0 and answers[200] > 0


def test_the_real_admin_signs_in_at_once_during_a_distributed_guessing_run(app: App) -> None:
    guessers, stop, results = [address() for _ in range(5)], threading.Event(), Counter()

    def guess(client: str) -> None:
        visitor = Visitor(app.url, forwarded_for=client)
        while not stop.is_set():
            # A locked-out address is refused at the join (429), before the queue: counted by its message.
            outcome = visitor.outputs_or_refusal("login", f"guess {uuid.uuid4().hex[:6]}")[0]
            results[outcome.removeprefix("429: ").split(":")[0]] += 1
            time.sleep(0.1)

    threads = [threading.Thread(target=guess, args=(g,), daemon=True) for g in guessers]
    for thread in threads:
        thread.start()
    try:
        while results["Wrong password."] < 22:  # past the 20 failures from everyone that slow every attempt
            time.sleep(0.05)
        admin = Visitor(app.url, forwarded_for=address())
        started = time.perf_counter()
        assert sign_in(admin) == "Signed in."  # the first try
        took = time.perf_counter() - started
        assert admin.call("overview")[0].startswith("Champion")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    print(f"the admin signed in in {took:.1f} s while guessers got {dict(results)}")
    assert results["Too many failed attempts"] > 0 and results["Wrong password."] <= 25


def test_the_proxys_forwarded_for_line_decides_even_after_the_clients_line(app: App) -> None:
    real, texts, codes = address(), ["Shares fell after the profit warning."] * 32, []
    for i in range(33):  # 32 texts a request against 1,000 a minute: the 32nd request is over the limit
        lines = two_forwarded_lines(f"10.9.{i}.1", real)  # the client's line, then the proxy's
        codes.append(httpx.post(f"{app.url}api/v1/classify", json={"text": texts}, headers=lines, timeout=60).status_code)
    assert codes[:31] == [200] * 31 and codes[31:] == [429, 429]


def page_visitor_times(app: App, done: threading.Event, every_s: float = 0.0) -> tuple[threading.Thread, list[float]]:
    """Another visitor classifying on the page (through its event queue) one text after another (or one every
    `every_s` seconds) until `done`; the seconds each took (each must succeed)."""
    visitor, times = Visitor(app.url, forwarded_for=address()), []
    visitor.call("classify", "Warm-up")

    def honest() -> None:
        while not done.is_set():
            started = time.perf_counter()
            assert visitor.call("classify", "The striker scored twice in the cup final.")[0]["label"]
            times.append(time.perf_counter() - started)
            done.wait(max(0.0, every_s - times[-1]))

    thread = threading.Thread(target=honest, daemon=True)
    thread.start()
    return thread, times


def crowd(app: App, event: str, clients: list[str], each: int) -> tuple[Counter[int], list[str]]:
    """`testkit.attackers.crowd_joins` from a process of its own, so the crowd's threads do not slow this process's
    app by holding its interpreter: the statuses it got and what the refusals said."""
    answer = crowd_answer(app, event, clients, each)
    return Counter(answer["statuses"]), answer["details"]


def crowd_answer(app: App, event: str, clients: list[str], each: int) -> dict[str, Any]:
    run = subprocess.run([sys.executable, "-m", "testkit.attackers", app.url, event, str(each), *clients],
                         capture_output=True, text=True, timeout=120, check=True, cwd=PROJECT_ROOT)
    answer: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return answer


@pytest.mark.e2e  # a storm of hundreds of sign-ins (over a minute): the end-to-end step, not the default run
def test_a_storm_of_refused_sign_ins_is_answered_before_the_queue(app: App) -> None:
    """8 addresses locked out by their failures each send 16 sign-ins at once: every one is refused at its join
    (429, never queued), another visitor classifying on the page meanwhile stays under 1 s, and the real admin
    (slowed by the global throttle, not refused) signs in within 3 s. Times asserted with MARGIN, printed."""
    guessers = [address() for _ in range(8)]
    for guesser in guessers:  # the per-address limit: 5 failures lock an address out
        visitor = Visitor(app.url, forwarded_for=guesser)
        assert [visitor.call("login", f"guess {i}")[0] for i in range(5)] == ["Wrong password."] * 5
    done = threading.Event()
    thread, times = page_visitor_times(app, done)
    admin_s: list[float] = []

    def admin_signs_in() -> None:
        time.sleep(0.5)  # into the storm
        admin = Visitor(app.url, forwarded_for=address())
        started = time.perf_counter()
        assert sign_in(admin) == "Signed in."
        admin_s.append(time.perf_counter() - started)

    admin_thread = threading.Thread(target=admin_signs_in, daemon=True)
    try:
        admin_thread.start()
        statuses, details = crowd(app, "login", guessers, 16)
        admin_thread.join(timeout=60)
        time.sleep(0.3)
    finally:
        done.set()
        thread.join(timeout=30)
    print(f"storm {dict(statuses)} {details}; the visitor's {len(times)} classifications: "
          f"slowest {max(times):.3f} s; the admin signed in in {admin_s[0]:.2f} s")
    # Refused at the join: the address is locked out, or (joins arriving together) has its queue share in flight.
    assert statuses == {429: 128}
    assert set(details) <= {d for d in details if d.startswith(("Too many failed attempts", "Too many of your requests"))}
    assert any(d.startswith("Too many failed attempts") for d in details)
    assert times and max(times) < 1.0 * MARGIN, f"the other visitor waited {max(times):.2f} s"
    assert admin_s and admin_s[0] < 3.0 * MARGIN, f"the admin waited {admin_s[0]:.2f} s"


def test_twenty_addresses_joining_at_once_leave_a_visitor_served(app: App) -> None:
    """20 addresses each join 16 classifications at once, each from a new page, and never read the results; the
    server admits only a few (new pages are bounded per address and for everyone, and each address's share
    of the queue shrinks as more addresses wait), and another visitor's
    classification on the page meanwhile stays under 2 s (asserted with MARGIN, printed)."""
    done = threading.Event()
    thread, times = page_visitor_times(app, done)
    try:
        time.sleep(0.3)
        statuses, details = crowd(app, "classify", [address() for _ in range(20)], 16)
        time.sleep(3.0)  # the queue works through what it took while the visitor goes on classifying
    finally:
        done.set()
        thread.join(timeout=60)
    print(f"crowd joins {dict(statuses)} {details}; the visitor's {len(times)} classifications: "
          f"slowest {max(times):.3f} s")
    # 429: an address's share; 503: everyone's new pages this second (each new page costs the server ~25 ms).
    assert set(statuses) <= {200, 429, 503} and 0 < statuses[200] <= 60
    assert times and max(times) < 2.0 * MARGIN, f"the other visitor waited {max(times):.2f} s"


@pytest.mark.e2e  # 128 page loads spread over 10 s, beside a visitor and a sign-in: the end-to-end step
def test_a_crowd_opening_the_page_leaves_a_visitor_and_the_admins_sign_in_served(app: App) -> None:
    """A shared link's crowd: 128 fresh visitors from 8 addresses open / (its page and theme) within about 10 s,
    while a visitor classifies once a second and the admin signs in 2 s into it. Every load is served (the page
    is built once and compressed; the admin's view is not in it), the visitor waits at most 1 s on any request and
    the admin's sign-in at most 3 s (asserted with MARGIN, printed)."""
    done = threading.Event()
    thread, times = page_visitor_times(app, done, every_s=1.0)
    admin_s: list[float] = []

    def admin_signs_in() -> None:
        time.sleep(2.0)  # into the crowd
        admin = Visitor(app.url, forwarded_for=address())
        started = time.perf_counter()
        assert sign_in(admin) == "Signed in."
        admin_s.append(time.perf_counter() - started)

    admin_thread = threading.Thread(target=admin_signs_in, daemon=True)
    try:
        admin_thread.start()
        answer = crowd_answer(app, CROWD, [address() for _ in range(8)], 16)
        admin_thread.join(timeout=60)
    finally:
        done.set()
        thread.join(timeout=30)
    print(f"page crowd {dict(Counter(answer['statuses']))}, slowest load {answer['slowest_s']:.3f} s; the visitor's "
          f"{len(times)} classifications: slowest {max(times):.3f} s; the admin signed in in {admin_s[0]:.2f} s")
    assert Counter(answer["statuses"]) == {200: 128}
    assert times and max(times) < 1.0 * MARGIN, f"the visitor waited {max(times):.2f} s"
    assert admin_s and admin_s[0] < 3.0 * MARGIN, f"the admin waited {admin_s[0]:.2f} s"


# Issue 60: every route under the same guards, bounded work for every input --------------------------------------
def flood(app: App, route: str, chars: int, connections: int, seconds: float, client: str) -> Counter[int]:
    """`testkit.attackers.flood` from a process of its own: the statuses the flood was answered."""
    run = subprocess.run([sys.executable, "-m", "testkit.attackers", app.url, "flood", route, str(chars),
                          str(connections), str(seconds), client], capture_output=True, text=True,
                         timeout=seconds + 120, check=True, cwd=PROJECT_ROOT)
    return Counter(json.loads(run.stdout.strip().splitlines()[-1])["statuses"])


def assert_visitor_fast(times: list[float], what: str) -> None:
    """The issue's bounds on the page visitor's classifications, p50 <= 100 ms and max <= 1 s, with MARGIN for a
    loaded machine (the broken server gave 0.8 s / 6 s, and 11.7 s, under these floods)."""
    ordered = sorted(times)
    p50, slowest = ordered[len(ordered) // 2], ordered[-1]
    print(f"{what}: the visitor's {len(times)} classifications: p50 {1000 * p50:.0f} ms, slowest {1000 * slowest:.0f} ms")
    assert len(times) >= 5, f"the visitor classified only {len(times)} times"
    assert p50 < 0.1 * MARGIN and slowest < 1.0 * MARGIN, f"{what}: p50 {p50:.2f} s, slowest {slowest:.2f} s"


def test_a_flood_of_calls_by_name_meets_the_same_guards_and_leaves_a_page_visitor_fast(app: App) -> None:
    done = threading.Event()
    thread, times = page_visitor_times(app, done, every_s=0.2)
    try:
        statuses = flood(app, "call", 40, 32, 6.0, address())  # /gradio_api/call/classify on 32 connections
    finally:
        done.set()
        thread.join(timeout=60)
    print(f"call flood {dict(statuses)}")
    assert statuses[429] > statuses[200] and set(statuses) <= {200, 429, 503}
    assert_visitor_fast(times, "call flood")


def test_large_bodies_by_either_route_are_refused_unparsed_and_leave_a_page_visitor_fast(app: App) -> None:
    done = threading.Event()
    thread, times = page_visitor_times(app, done, every_s=0.2)
    try:
        joins = flood(app, "join", 2_100_000, 8, 4.0, address())  # 2.1 MB: under the old 4 MB cap
        calls = flood(app, "call", 2_100_000, 8, 4.0, address())
    finally:
        done.set()
        thread.join(timeout=60)
    print(f"2.1 MB bodies: joins {dict(joins)}, calls {dict(calls)}")
    # 413 unread; 429 for the address's share of the queue while its refusals are answered (each after a pause).
    assert joins[413] > 0 and calls[413] > 0 and set(joins) | set(calls) <= {413, 429}
    assert_visitor_fast(times, "2.1 MB bodies")


@pytest.mark.e2e  # a storm of sign-ins over 5 s, beside a visitor and the admin: the end-to-end step
def test_the_real_admin_opens_the_page_and_signs_in_during_a_storm_of_fresh_guessers(app: App) -> None:
    """The issue's storm: 8 addresses, none locked out yet, send 128 wrong passwords over about 5 s, each from a new
    page. The real admin, on its own address, opens the maintainers' page 2 s in (never refused: at worst it waits
    its turn for a new page) and signs in within 3 s (MARGIN x); a page visitor stays fast meanwhile."""
    done = threading.Event()
    thread, times = page_visitor_times(app, done, every_s=0.2)
    admin: dict[str, float] = {}

    def admin_signs_in() -> None:
        time.sleep(2.0)  # into the storm
        visitor = Visitor(app.url, forwarded_for=address())
        started = time.perf_counter()
        visitor.call("restore")  # the page's first event: a new page, while the storm takes everyone's new pages
        admin["opened"], started = time.perf_counter() - started, time.perf_counter()
        assert sign_in(visitor) == "Signed in."
        admin["signed_in"] = time.perf_counter() - started

    admin_thread = threading.Thread(target=admin_signs_in, daemon=True)
    try:
        admin_thread.start()
        run = subprocess.run([sys.executable, "-m", "testkit.attackers", app.url, "storm", "login", "16", "5",
                              *[address() for _ in range(8)]], capture_output=True, text=True, timeout=180,
                             check=True, cwd=PROJECT_ROOT)
        admin_thread.join(timeout=60)
    finally:
        done.set()
        thread.join(timeout=60)
    storm = Counter(json.loads(run.stdout.strip().splitlines()[-1])["statuses"])
    print(f"storm {dict(storm)}; the admin opened the page in {admin['opened']:.2f} s and signed in in "
          f"{admin['signed_in']:.2f} s")
    assert sum(storm.values()) == 128 and storm[429] > 0
    assert admin["opened"] < 3.0 * MARGIN and admin["signed_in"] < 3.0 * MARGIN, admin
    assert_visitor_fast(times, "sign-in storm")


def test_the_no_topic_panel_opens_bounded_with_12000_answers_waiting_and_refuses_more(app: App) -> None:
    """12,000 "None of these" answers in the store (past the caps: what a flood from before them leaves): the admin's
    panel opens within 2 s (MARGIN x) and the app grows under 100 MB; a labeller's new one is refused, saying why."""
    unlisted_flood(app.store, 12_000)
    admin = Visitor(app.url, forwarded_for=address())
    assert sign_in(admin) == "Signed in."
    before, started = rss_mb(), time.perf_counter()
    shown = admin.call("show")
    took, grew = time.perf_counter() - started, rss_mb() - before
    print(f"the panel opened in {took:.2f} s, memory {grew:+.0f} MB: {shown[0][:120]}")
    assert shown[0].startswith("**12,000** answer(s)") and "of **1,000** of them" in shown[0]
    assert took < 2.0 * MARGIN and grew < 100, (took, grew)
    labeller = Visitor(app.url, forwarded_for=address())
    shown_id = labeller.call("classify", "A story no topic fits, about a village fete.")[2]
    answer = labeller.call("handler", "|none|Fetes", shown_id, "A story no topic fits, about a village fete.")[0]
    assert answer.startswith('Not saved: 5,000 "None of these" answers are waiting for a maintainer already')
